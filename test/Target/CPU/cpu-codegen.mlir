// kiln-cpu-codegen: tasks for the thread pool, register tiles of FMAs for
// contractions, strided convolutions through a dense view, rows of
// reductions vectorized whole, i1 kept scalar.
// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512 cpu=x86-64-v4 requires=avx512f" | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=256" | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s --kiln-cpu-codegen="parallel=false vectorize=false" | FileCheck %s --check-prefix=OFF

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK: module attributes {kiln.cpu = "x86-64-v4", kiln.cpu_features = "", kiln.cpu_requires = "avx512f", kiln.cpu_vector_bits = 512 : i64}

// The matmul's tile of 8 rows x 2 vectors: split into 8 tasks of one tile
// row each, its 16 accumulators carried through the reduction.
// CHECK-LABEL: func.func private @matmul_p0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<64x32xf32>, %{{.*}}: memref<32x64xf32>, %{{.*}}: memref<64x64xf32>)
// CHECK-SAME: kiln.parallel_body
// CHECK: scf.for %{{.*}} = %arg0 to %arg1
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: memref.load
// CHECK-NEXT: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK-NEXT: vector.fma %{{.*}} : vector<16xf32>
// CHECK-LABEL: func.func private @matmul(
// CHECK-SAME: kiln.cpu_parallel = 1 : i64, kiln.cpu_vector_bits = 512 : i64
// CHECK: kiln.parallel_for @matmul_p0(%arg0, %arg1, %arg2) tasks 8
// AVX2-LABEL: func.func private @matmul_p0
// AVX2: vector.fma %{{.*}} : vector<8xf32>
// OFF-LABEL: func.func private @matmul(
// OFF-SAME: kiln.cpu_parallel = 0 : i64, kiln.cpu_vector_bits = 0 : i64
// OFF: linalg.matmul
func.func private @matmul(%a: memref<64x32xf32>, %b: memref<32x64xf32>,
                          %c: memref<64x64xf32>) attributes {kiln.kernel} {
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>)
                outs(%c : memref<64x64xf32>)
  return
}

// A 3x3 convolution of stride 2: one register tile over the whole window
// (c, kh, kw carried in registers); each input row read 2 vectors wide,
// bounds checked, and deinterleaved.
// CHECK-LABEL: func.func private @conv_p0(
// CHECK: scf.for {{.*}} iter_args(
// CHECK: scf.for {{.*}} iter_args(
// CHECK: scf.for {{.*}} iter_args(
// CHECK: vector.maskedload {{.*}} vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: vector.fma
// CHECK-LABEL: func.func private @conv(
// CHECK-SAME: kiln.cpu_parallel = 1 : i64, kiln.cpu_vector_bits = 512 : i64
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw)>
#w = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#out = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func private @conv(%x: memref<1x8x33x33xf32>, %w: memref<32x8x3x3xf32>,
                        %y: memref<1x32x16x16xf32>) attributes {kiln.kernel} {
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x8x33x33xf32>, memref<32x8x3x3xf32>)
      outs(%y : memref<1x32x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A 2x2 max pool of stride 2: a loop over the window around an
// elementwise max whose strided reads become one wide read and a shuffle.
// CHECK-LABEL: func.func private @maxpool(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.reinterpret_cast
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
// CHECK: arith.maximumf %{{.*}} : vector<8xf32>
#pin = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw)>
#pwin = affine_map<(n, c, oh, ow, kh, kw) -> (kh, kw)>
#pout = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh, ow)>
func.func private @maxpool(%x: memref<1x4x16x16xf32>, %win: memref<2x2xf32>,
                           %y: memref<1x4x8x8xf32>) attributes {kiln.kernel} {
  linalg.generic {indexing_maps = [#pin, #pwin, #pout],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "reduction", "reduction"]}
      ins(%x, %win : memref<1x4x16x16xf32>, memref<2x2xf32>)
      outs(%y : memref<1x4x8x8xf32>) {
  ^bb0(%a: f32, %w: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A 3x3 max pool of stride 2 on channels-last data (NHWC, as the CPU
// layout and TF-exported models have it), with the parallel split: each
// task's plane is one output row [W, C] and the window's steps are
// elementwise maxima along C, 64 lanes wide, reading the window's columns
// at stride 2 * C; C is not cut into one-lane vectors (it was: 9x slower).
// CHECK-LABEL: func.func private @maxpool_nhwc_p{{[0-9]+}}(
// CHECK-NOT: vector<1xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.subview {{.*}} to memref<1x1x8x64xf32, strided<[{{[0-9]+}}, {{[0-9]+}}, 128, 1], offset: ?>>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<64xf32>
// CHECK-NOT: vector<1xf32>
// CHECK: return
#nin = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh * 2 + kh, ow * 2 + kw, c)>
#nwin = affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>
#nout = affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>
func.func private @maxpool_nhwc(%x: memref<1x17x17x64xf32>, %win: memref<3x3xf32>,
                                %y: memref<1x8x8x64xf32>) attributes {kiln.kernel} {
  linalg.generic {indexing_maps = [#nin, #nwin, #nout],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "reduction", "reduction"]}
      ins(%x, %win : memref<1x17x17x64xf32>, memref<3x3xf32>)
      outs(%y : memref<1x8x8x64xf32>) {
  ^bb0(%a: f32, %w: f32, %m: f32):
    %r = arith.maximumf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A row maximum (softmax's first step): each row of 128 one vector op.
// CHECK-LABEL: func.func private @rowmax_p0(
// CHECK: vector.load %{{.*}} : memref<128xf32, {{.*}}>, vector<128xf32>
// CHECK: vector.reduction <maxnumf>, %{{.*}}, %{{.*}} : vector<128xf32> into f32
// CHECK-LABEL: func.func private @rowmax(
// CHECK: kiln.parallel_for @rowmax_p0(%arg0, %arg1) tasks 16
func.func private @rowmax(%x: memref<256x128xf32>, %y: memref<256xf32>)
    attributes {kiln.kernel} {
  linalg.generic {indexing_maps = [#id2, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<256x128xf32>) outs(%y : memref<256xf32>) {
  ^bb0(%a: f32, %m: f32):
    %r = arith.maxnumf %a, %m : f32
    linalg.yield %r : f32
  }
  return
}

// Booleans are bytes in memory, bits in vectors: left scalar.
// CHECK-LABEL: func.func private @logical_not(
// CHECK-SAME: kiln.cpu_vector_bits = 0 : i64
// CHECK: linalg.generic
func.func private @logical_not(%x: memref<4x8xi1>, %y: memref<4x8xi1>)
    attributes {kiln.kernel} {
  %true = arith.constant true
  linalg.generic {indexing_maps = [#id2, #id2],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xi1>) outs(%y : memref<4x8xi1>) {
  ^bb0(%a: i1, %b: i1):
    %r = arith.xori %a, %true : i1
    linalg.yield %r : i1
  }
  return
}
