// RUN: kiln-opt %s --kiln-remat=budget-fraction=0.6 --kiln-plan-memory | FileCheck %s

// Row chunking of a large kernel: three vertical 3-tap stencils (a 3x1
// convolution with one row of zero padding at each end) at batch 1, whose
// peak (8 KiB: the middle stencil's input and output) neither recomputation
// nor batch chunking lowers. At 0.6x (4915 bytes) the run is launched in 2
// bands of rows of the output y: band 0 writes y's rows [0, 32), so the last
// stencil reads u's rows [0, 33), which the middle one computes from t's
// rows [0, 34), computed from x's rows [0, 35) (the halo: one row more per
// stencil); band 1 likewise from the bottom. t and u exist only as bands
// (34 and 33 rows); the zero padding stays only at the image's border. The
// peak is 4288 bytes (t's and u's bands), 2 rows of t and u being computed
// twice.
// CHECK-LABEL: module attributes {kiln.arena_size = 4288 : i64
// CHECK-SAME: kiln.peak_live_bytes = 4288 : i64
// The bottom band's kernels: the last stencil writes y's rows [32, 64)
// through a subview, from u's band (rows 31 to 64: its first row is u's row
// 31), padded below only.
// CHECK: func.func private @stencil_rows32_64(%{{.*}}: memref<1x33x16xf32>, %{{.*}}: memref<3xf32>, %[[Y:.*]]: memref<1x64x16xf32>) attributes {kiln.chunk_of = "stencil", kiln.num_outputs = 1 : i64}
// CHECK: memref.subview %[[Y]][0, 32, 0] [1, 32, 16] [1, 1, 1] : memref<1x64x16xf32> to memref<1x32x16xf32, strided<[1024, 16, 1], offset: 512>>
// CHECK: tensor.pad %{{.*}} low[0, 0, 0] high[0, 1, 0]
// CHECK: func.func private @stencil_rows31_64(%{{.*}}: memref<1x34x16xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<1x33x16xf32>)
// The first stencil of the bottom band reads x's rows [29, 64) in place,
// the slice right after the argument's to_tensor (before any computation,
// as CPU codegen's epilogue fusion expects of what a kernel reads).
// CHECK: func.func private @stencil_rows30_64(%[[X30:.*]]: memref<1x64x16xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<1x34x16xf32>)
// CHECK: %[[XT30:.*]] = bufferization.to_tensor %[[X30]]
// CHECK-NEXT: %[[XS30:.*]] = tensor.extract_slice %[[XT30]][0, 29, 0] [1, 35, 16] [1, 1, 1] : tensor<1x64x16xf32> to tensor<1x35x16xf32>
// CHECK: tensor.pad %[[XS30]] low[0, 0, 0] high[0, 1, 0]
// CHECK: func.func private @stencil_rows0_32(%{{.*}}: memref<1x33x16xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<1x64x16xf32>)
// CHECK: tensor.pad %{{.*}} low[0, 1, 0] high[0, 0, 0]
// CHECK: func.func private @stencil_rows0_34(%{{.*}}: memref<1x64x16xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<1x34x16xf32>)
// CHECK: %[[XS0:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [1, 35, 16] [1, 1, 1] : tensor<1x64x16xf32> to tensor<1x35x16xf32>
// CHECK: tensor.pad %[[XS0]] low[0, 1, 0] high[0, 0, 0]
// The original kernel is gone.
// CHECK-NOT: func.func private @stencil(
// CHECK: %[[X:.*]] = kiln.input
// CHECK: %[[OUT:.*]] = kiln.output
// CHECK-NEXT: %[[T0:.*]] = kiln.buffer {{.*}} : memref<1x34x16xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows0_34(%[[X]], %{{.*}}, %[[T0]]) {kiln.chunk = array<i64: 0, 2>, kiln.chunk_rows = array<i64: 1, 0, 34>, kiln.launch_nodes = "t"}
// CHECK-NEXT: %[[U0:.*]] = kiln.buffer {{.*}} : memref<1x33x16xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows0_33(%[[T0]], %{{.*}}, %[[U0]]) {kiln.chunk = array<i64: 0, 2>, kiln.chunk_rows = array<i64: 1, 0, 33>, kiln.launch_nodes = "u"}
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows0_32(%[[U0]], %{{.*}}, %[[OUT]]) {kiln.chunk = array<i64: 0, 2>, kiln.chunk_rows = array<i64: 1, 0, 32>, kiln.launch_nodes = "y"}
// CHECK-NEXT: %[[T1:.*]] = kiln.buffer {{.*}} : memref<1x34x16xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows30_64(%[[X]], %{{.*}}, %[[T1]]) {kiln.chunk = array<i64: 1, 2>, kiln.chunk_rows = array<i64: 1, 30, 64>, kiln.launch_nodes = "t"}
// CHECK-NEXT: %[[U1:.*]] = kiln.buffer {{.*}} : memref<1x33x16xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows31_64(%[[T1]], %{{.*}}, %[[U1]]) {kiln.chunk = array<i64: 1, 2>, kiln.chunk_rows = array<i64: 1, 31, 64>, kiln.launch_nodes = "u"}
// CHECK-NEXT: kiln.launch %{{.*}} @stencil_rows32_64(%[[U1]], %{{.*}}, %[[OUT]]) {kiln.chunk = array<i64: 1, 2>, kiln.chunk_rows = array<i64: 1, 32, 64>, kiln.launch_nodes = "y"}
// CHECK-NOT: kiln.launch %
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1 + d3, d2)>
#w = affine_map<(d0, d1, d2, d3) -> (d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
module {
  func.func private @stencil(%x: memref<1x64x16xf32>, %k: memref<3xf32>, %o: memref<1x64x16xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %cst = arith.constant 0.0 : f32
    %0 = bufferization.to_tensor %x restrict : memref<1x64x16xf32> to tensor<1x64x16xf32>
    %1 = bufferization.to_tensor %k restrict : memref<3xf32> to tensor<3xf32>
    %p = tensor.pad %0 low[0, 1, 0] high[0, 1, 0] {
    ^bb0(%a: index, %b: index, %c: index):
      tensor.yield %cst : f32
    } : tensor<1x64x16xf32> to tensor<1x66x16xf32>
    %2 = tensor.empty() : tensor<1x64x16xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<1x64x16xf32>) -> tensor<1x64x16xf32>
    %4 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %1 : tensor<1x66x16xf32>, tensor<3xf32>) outs(%3 : tensor<1x64x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x64x16xf32>
    bufferization.materialize_in_destination %4 in restrict writable %o : (tensor<1x64x16xf32>, memref<1x64x16xf32>) -> ()
    return
  }
  memref.global "private" constant @taps : memref<3xf32> = dense<[0.25, 0.5, 0.25]>
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 3 1 64 16\0Aoutput y f32 3 1 64 16\0A"} {
    %x = kiln.input %ctx [0] : memref<1x64x16xf32>
    %k = memref.get_global @taps : memref<3xf32>
    %t = kiln.buffer %ctx : memref<1x64x16xf32>
    kiln.launch %ctx @stencil(%x, %k, %t) {kiln.launch_nodes = "t"} : memref<1x64x16xf32>, memref<3xf32>, memref<1x64x16xf32>
    %u = kiln.buffer %ctx : memref<1x64x16xf32>
    kiln.launch %ctx @stencil(%t, %k, %u) {kiln.launch_nodes = "u"} : memref<1x64x16xf32>, memref<3xf32>, memref<1x64x16xf32>
    %y = kiln.output %ctx [0] : memref<1x64x16xf32>
    kiln.launch %ctx @stencil(%u, %k, %y) {kiln.launch_nodes = "y"} : memref<1x64x16xf32>, memref<3xf32>, memref<1x64x16xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
