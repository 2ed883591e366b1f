// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512 parallel=false" | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=256 parallel=false" | FileCheck %s --check-prefix=AVX2

// A transpose that moves the innermost dim (NCHW -> NHWC: the input is
// contiguous along the output's channels' dim, the output along them) is
// tiled in lanes x lanes squares: 16 rows of 16 loaded along the input's
// contiguous dim, transposed in registers by shuffles (64 of them for a
// 16x16 square on AVX-512), 16 rows stored along the output's; no scalar
// load per lane. With AVX2 8x8 squares.
// CHECK-LABEL: func.func private @tr(
// CHECK-NOT: memref.load
// CHECK-COUNT-16: vector.load {{.*}} vector<16xf32>
// CHECK: vector.shuffle
// CHECK-COUNT-16: vector.store {{.*}} vector<16xf32>
// CHECK-NOT: memref.load
// CHECK: return
// AVX2-LABEL: func.func private @tr(
// AVX2-NOT: memref.load
// AVX2-COUNT-8: vector.load {{.*}} vector<8xf32>
// AVX2-NOT: memref.load
// AVX2: return
#in = affine_map<(n, h, w, c) -> (n, c, h, w)>
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
module {
  func.func private @tr(%x: memref<1x32x56x56xf32>, %y: memref<1x56x56x32xf32>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#in, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x32x56x56xf32>) outs(%y : memref<1x56x56x32xf32>) {
    ^bb0(%a: f32, %b: f32):
      linalg.yield %a : f32
    }
    return
  }
}
