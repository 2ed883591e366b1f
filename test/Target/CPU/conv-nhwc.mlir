// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512 parallel=false" | FileCheck %s

// Channels-last convolutions (kiln-onnx-convert-layout) as register tiles.

// A depthwise 3x3 convolution on N<spatial>C: input, weights and output
// all innermost along the channels. Rows along the output's columns, two
// vectors of 16 channels each; per window step one vector of the weights
// per column serves every row (no broadcast scalar), one vector of the
// input per row and column. The fill is taken in: the accumulators start
// at zero.
// CHECK-LABEL: func.func private @dw_nhwc(
// CHECK-NOT: linalg.
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]],
// CHECK: %[[W0:.*]] = vector.load %{{.*}} : memref<3x3x32xf32>, vector<16xf32>
// CHECK: %[[W1:.*]] = vector.load %{{.*}} : memref<3x3x32xf32>, vector<16xf32>
// CHECK-NOT: vector.broadcast
// CHECK: %[[X0:.*]] = vector.load %{{.*}} : memref<1x18x18x32xf32>, vector<16xf32>
// CHECK: %[[X1:.*]] = vector.load %{{.*}} : memref<1x18x18x32xf32>, vector<16xf32>
// CHECK: vector.fma %[[W0]], %[[X0]], %{{.*}} : vector<16xf32>
// CHECK: vector.fma %[[W1]], %[[X1]], %{{.*}} : vector<16xf32>
// CHECK: %[[X2:.*]] = vector.load %{{.*}} : memref<1x18x18x32xf32>, vector<16xf32>
// CHECK-NOT: memref<3x3x32xf32>, vector<16xf32>
// CHECK: vector.fma %[[W0]], %[[X2]], %{{.*}} : vector<16xf32>
// CHECK-NOT: linalg.
// CHECK: return
#in = affine_map<(n, h, w, c, kh, kw) -> (n, h + kh, w + kw, c)>
#wt = affine_map<(n, h, w, c, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, h, w, c, kh, kw) -> (n, h, w, c)>
module {
  func.func private @dw_nhwc(%x: memref<1x18x18x32xf32>, %w: memref<3x3x32xf32>, %y: memref<1x16x16x32xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
    linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<1x18x18x32xf32>, memref<3x3x32xf32>) outs(%y : memref<1x16x16x32xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// A 3x3 convolution of stride 2 on N<spatial>C with <kernel>CF weights:
// the filters along the vectors (the weights' innermost dim), one scalar
// of the input per row broadcast, read at the stencil index 2 * ow + kw;
// the window and the input channels are reductions inside the tile, and
// the bias + ReLU epilogue is applied to the accumulators before the one
// store.
// CHECK-LABEL: func.func private @conv_nhwc(
// CHECK-NOT: linalg.
// CHECK: scf.for
// CHECK: %[[WV:.*]] = vector.load %{{.*}} : memref<3x3x8x32xf32>, vector<16xf32>
// CHECK: %[[S:.*]] = memref.load %{{.*}} : memref<1x17x17x8xf32>
// CHECK: %[[B:.*]] = vector.broadcast %[[S]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[B]], %[[WV]], %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}} : memref<1x8x8x32xf32>, vector<16xf32>
// CHECK-NOT: linalg.
// CHECK: return
#in = affine_map<(n, h, w, f, kh, kw, c) -> (n, h * 2 + kh, w * 2 + kw, c)>
#wt = affine_map<(n, h, w, f, kh, kw, c) -> (kh, kw, c, f)>
#out = affine_map<(n, h, w, f, kh, kw, c) -> (n, h, w, f)>
#id = affine_map<(n, h, w, f) -> (n, h, w, f)>
#bias = affine_map<(n, h, w, f) -> (f)>
module {
  func.func private @conv_nhwc(%x: memref<1x17x17x8xf32>, %w: memref<3x3x8x32xf32>, %b: memref<32xf32>, %y: memref<1x8x8x32xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %acc = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x32xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x8x32xf32>)
    linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x17x17x8xf32>, memref<3x3x8x32xf32>) outs(%acc : memref<1x8x8x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %m = arith.mulf %a, %bb : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %b : memref<1x8x8x32xf32>, memref<32xf32>) outs(%y : memref<1x8x8x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %s = arith.addf %a, %bb : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %acc : memref<1x8x8x32xf32>
    return
  }
}
