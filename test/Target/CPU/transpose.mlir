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

  // A transpose fused with computation (a quantization after it): not in
  // squares (their 2-D vectors go straight to the stores); rows of the
  // output, which the lowering takes.
  // CHECK-LABEL: func.func private @tr_quantize(
  // CHECK-NOT: vector.shuffle
  // CHECK: math.roundeven {{.*}} : vector<32xf32>
  // CHECK: return
  func.func private @tr_quantize(%x: memref<1x32x56x56xf32>, %y: memref<1x56x56x32xi8>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#in, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x32x56x56xf32>) outs(%y : memref<1x56x56x32xi8>) {
    ^bb0(%a: f32, %b: i8):
      %r = math.roundeven %a : f32
      %i = arith.fptosi %r : f32 to i8
      linalg.yield %i : i8
    }
    return
  }
}
