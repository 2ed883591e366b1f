// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512 parallel=false" | FileCheck %s

// A depthwise 3x3 convolution over a zero-padded copy of its input, as
// the ONNX lowering bufferizes it (the pad's zeros a linalg.map of no
// inputs, which becomes a fill).
// - The padded buffer's fill covers only the border the copy leaves (four
//   slabs of the 18x18 planes: rows 0 and 17, then columns 0 and 17 of the
//   rows between), not the whole buffer.
// - The convolution is a register tile with rows along the output's rows
//   (the weights have none: one broadcast scalar per window step for all
//   rows, a vector of the input per row), its fill taken in (the
//   accumulators start at zero) and no linalg op left.
// CHECK-LABEL: func.func private @dw(
// CHECK-NOT: linalg.
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-DAG: memref.subview %{{.*}}[0, 0, 0, 0] [1, 4, 1, 18] [1, 1, 1, 1] : memref<1x4x18x18xf32>
// CHECK-DAG: memref.subview %{{.*}}[0, 0, 17, 0] [1, 4, 1, 18] [1, 1, 1, 1] : memref<1x4x18x18xf32>
// CHECK-DAG: memref.subview %{{.*}}[0, 0, 1, 0] [1, 4, 16, 1] [1, 1, 1, 1] : memref<1x4x18x18xf32>
// CHECK-DAG: memref.subview %{{.*}}[0, 0, 1, 17] [1, 4, 16, 1] [1, 1, 1, 1] : memref<1x4x18x18xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]],
// CHECK: %[[W:.*]] = memref.load
// CHECK: %[[B:.*]] = vector.broadcast %[[W]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[B]], %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: memref.load
// CHECK: vector.fma %[[B]], %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: linalg.
// CHECK: return
#in = affine_map<(n, c, h, w, kh, kw) -> (n, c, h + kh, w + kw)>
#wt = affine_map<(n, c, h, w, kh, kw) -> (c, kh, kw)>
#out = affine_map<(n, c, h, w, kh, kw) -> (n, c, h, w)>
module {
  func.func private @dw(%x: memref<1x4x16x16xf32>, %w: memref<4x3x3xf32>, %y: memref<1x4x16x16xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %pad = memref.alloc() {alignment = 64 : i64} : memref<1x4x18x18xf32>
    linalg.map outs(%pad : memref<1x4x18x18xf32>)
      (%init: f32) {
        linalg.yield %zero : f32
      }
    %inner = memref.subview %pad[0, 0, 1, 1] [1, 4, 16, 16] [1, 1, 1, 1] : memref<1x4x18x18xf32> to memref<1x4x16x16xf32, strided<[1296, 324, 18, 1], offset: 19>>
    memref.copy %x, %inner : memref<1x4x16x16xf32> to memref<1x4x16x16xf32, strided<[1296, 324, 18, 1], offset: 19>>
    linalg.fill ins(%zero : f32) outs(%y : memref<1x4x16x16xf32>)
    linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%pad, %w : memref<1x4x18x18xf32>, memref<4x3x3xf32>) outs(%y : memref<1x4x16x16xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    memref.dealloc %pad : memref<1x4x18x18xf32>
    return
  }
}
