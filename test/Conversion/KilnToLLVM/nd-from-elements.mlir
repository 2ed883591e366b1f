// RUN: kiln-opt %s --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s

// A 2-D vector.from_elements (canonicalization folds a transposed tile's
// row inserts into one; kilnc --precision=fp16 --expose-intermediates=all
// made one on a conv net) becomes rows: the LLVM lowering takes 1-D
// from_elements only, and the translation failed on the op before.
// CHECK-LABEL: llvm.func @k(
// CHECK-NOT: vector.from_elements
// CHECK: llvm.insertelement
// CHECK-NOT: vector.from_elements
// CHECK: llvm.return
func.func private @k(%m: memref<2x2xf32>, %a: f32, %b: f32, %c: f32, %d: f32) attributes {kiln.kernel, llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = vector.from_elements %a, %b, %c, %d : vector<2x2xf32>
  %e = arith.extf %v : vector<2x2xf32> to vector<2x2xf64>
  %t = arith.truncf %e : vector<2x2xf64> to vector<2x2xf32>
  %r0 = vector.extract %t[0] : vector<2xf32> from vector<2x2xf32>
  %r1 = vector.extract %t[1] : vector<2xf32> from vector<2x2xf32>
  vector.store %r0, %m[%c0, %c0] : memref<2x2xf32>, vector<2xf32>
  vector.store %r1, %m[%c1, %c0] : memref<2x2xf32>, vector<2xf32>
  return
}
