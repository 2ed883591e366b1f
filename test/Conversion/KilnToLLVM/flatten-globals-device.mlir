// RUN: kiln-opt %s --kiln-flatten-globals | FileCheck %s

// A device target's copy of a weight (kiln.weight) holds the same bytes as
// its global (the op's verifier wants the two types equal), viewed as the
// old type by its users.

// CHECK: memref.global "private" constant @w : memref<24xi8>
// CHECK-LABEL: func.func @device
// CHECK: %[[DW:.*]] = kiln.weight %{{.*}} @w[0] : memref<24xi8>
// CHECK: %[[E:.*]] = memref.view %[[DW]][%{{.*}}][] : memref<24xi8> to memref<2x3xf32>
// CHECK: return %[[E]]
module {
  memref.global "private" constant @w : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>
  func.func @device(%ctx: !llvm.ptr) -> memref<2x3xf32> {
    %w = kiln.weight %ctx @w[0] : memref<2x3xf32>
    return %w : memref<2x3xf32>
  }
}
