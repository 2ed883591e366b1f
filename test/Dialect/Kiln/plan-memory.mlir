// RUN: kiln-opt %s --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s --kiln-plan-memory=alignment=16 | FileCheck %s --check-prefix=ALIGN16

// Each static buffer gets its own 64-byte aligned slot; dynamic ones are left
// to the runtime; the arena size is recorded on the module.
// CHECK: module attributes {kiln.arena_size = 192 : i64}
// CHECK: kiln.buffer %{{.*}} {offset = 0 : i64} : memref<3x5xf32>
// CHECK: kiln.buffer %{{.*}}(%{{.*}}) : memref<?x8xf32>
// CHECK: kiln.buffer %{{.*}} {offset = 64 : i64} : memref<2xi8>
// CHECK: kiln.buffer %{{.*}} {offset = 128 : i64} : memref<4xf64>
// ALIGN16: module attributes {kiln.arena_size = 112 : i64}
// ALIGN16: {offset = 64 : i64} : memref<2xi8>
// ALIGN16: {offset = 80 : i64} : memref<4xf64>
module {
  func.func @host(%ctx: !llvm.ptr, %n: index) {
    %a = kiln.buffer %ctx : memref<3x5xf32>
    %b = kiln.buffer %ctx (%n) : memref<?x8xf32>
    %c = kiln.buffer %ctx : memref<2xi8>
    %d = kiln.buffer %ctx : memref<4xf64>
    return
  }
}
