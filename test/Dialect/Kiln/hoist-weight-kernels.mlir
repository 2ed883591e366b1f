// RUN: kiln-opt %s --kiln-hoist-weight-kernels --kiln-plan-memory | FileCheck %s

// A kernel reading only an external weight (here: a cast to f16) runs once
// per instance in kiln_model_init, writing a persistent buffer placed after
// the planned arena; kiln_model_main reads that buffer. A kernel reading a
// model input is not hoisted, nor one whose output another launch writes.
// CHECK: module attributes {kiln.arena_size = 16384 : i64
// CHECK-SAME: kiln.persistent_size = 8192 : i64
// CHECK-LABEL: func.func @kiln_model_init(%{{.*}}: !llvm.ptr) -> i32
// CHECK: %[[W:.*]] = kiln.external_weight %arg0[0] : memref<64x64xf32>
// CHECK: %[[H:.*]] = kiln.buffer %arg0 {kiln.persistent = 0 : i64, offset = 8192 : i64} : memref<64x64xf16>
// CHECK: kiln.launch %arg0 @cast(%[[W]], %[[H]])
// CHECK-NOT: kiln.launch
// CHECK: return
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: %[[H2:.*]] = kiln.buffer %arg0 {kiln.persistent = 0 : i64, offset = 8192 : i64} : memref<64x64xf16>
// CHECK-NOT: kiln.launch %arg0 @cast
// CHECK: kiln.launch %arg0 @matmul(%{{.*}}, %[[H2]], %{{.*}})
// CHECK: kiln.launch %arg0 @cast(%{{.*}}, %[[X16:.*]]) :
// CHECK: kiln.launch %arg0 @cast(%{{.*}}, %[[TWICE:.*]]) :
// CHECK: kiln.launch %arg0 @cast(%{{.*}}, %[[TWICE]]) :
module {
  func.func private @cast(%a: memref<64x64xf32>, %b: memref<64x64xf16>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @matmul(%x: memref<1x64xf16>, %w: memref<64x64xf16>, %y: memref<1x64xf16>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 64 64\0A"} {
    %c0 = arith.constant 0 : i32
    %x = kiln.input %ctx[0] : memref<64x64xf32>
    %w = kiln.external_weight %ctx[0] : memref<64x64xf32>
    %w2 = kiln.external_weight %ctx[1] : memref<64x64xf32>
    %h = kiln.buffer %ctx : memref<64x64xf16>
    kiln.launch %ctx @cast(%w, %h) : memref<64x64xf32>, memref<64x64xf16>
    %in = kiln.buffer %ctx : memref<1x64xf16>
    %out = kiln.buffer %ctx : memref<1x64xf16>
    kiln.launch %ctx @matmul(%in, %h, %out) : memref<1x64xf16>, memref<64x64xf16>, memref<1x64xf16>
    // Reads a model input: every run.
    %x16 = kiln.buffer %ctx : memref<64x64xf16>
    kiln.launch %ctx @cast(%x, %x16) : memref<64x64xf32>, memref<64x64xf16>
    // Written again later: not invariant.
    %t = kiln.buffer %ctx : memref<64x64xf16>
    kiln.launch %ctx @cast(%w2, %t) : memref<64x64xf32>, memref<64x64xf16>
    kiln.launch %ctx @cast(%x, %t) : memref<64x64xf32>, memref<64x64xf16>
    return %c0 : i32
  }
}
