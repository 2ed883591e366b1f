// RUN: kiln-opt %s -split-input-file --kiln-fuse-kernels | FileCheck %s

// A TF32 contraction (kiln.tf32, --precision=tf32) keeps its mark when
// fusion inside the kernel replaces it by a new op (a transpose folded
// into its operand); the mark rides on the contraction's multiply
// meanwhile and is gone from the body afterwards. The scaling of its other
// operand stays an op of its own: folded in, it would be computed again
// for every column of the product (and the body would no longer be a
// plain multiply-add). An unmarked contraction stays unmarked.

#qk = affine_map<(b, i, j, d) -> (b, i, d)>
#kt = affine_map<(b, i, j, d) -> (b, d, j)>
#out = affine_map<(b, i, j, d) -> (b, i, j)>
#id = affine_map<(b, i, d) -> (b, i, d)>

// CHECK-LABEL: func @scores
// CHECK: kiln.kernel "kernel_0"
// CHECK-NOT: linalg.transpose
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<2x16x8xf32>, tensor<2x16x8xf32>) outs(%{{.*}} : tensor<2x16x16xf32>) attrs = {kiln.tf32}
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.addf
// CHECK: kiln.yield
// CHECK-LABEL: func @scores_fp32
// CHECK: kiln.kernel "kernel_0"
// CHECK-NOT: kiln.tf32
// CHECK: return
func.func @scores(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>) -> tensor<2x16x16xf32> {
  %0 = kiln.kernel "k0" ins(%q, %k : tensor<2x16x8xf32>, tensor<2x16x8xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x8xf32>, %c: tensor<2x16x8xf32>):
    %z = arith.constant 0.0 : f32
    %h = arith.constant 0.5 : f32
    %es = tensor.empty() : tensor<2x16x8xf32>
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x16x8xf32>) outs(%es : tensor<2x16x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %h : f32
      linalg.yield %y : f32
    } -> tensor<2x16x8xf32>
    %et = tensor.empty() : tensor<2x8x16xf32>
    %t = linalg.transpose ins(%c : tensor<2x16x8xf32>) outs(%et : tensor<2x8x16xf32>) permutation = [0, 2, 1]
    %e = tensor.empty() : tensor<2x16x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %m = linalg.generic {indexing_maps = [#qk, #kt, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s, %t : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%f : tensor<2x16x16xf32>) attrs = {kiln.tf32} {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %p : f32
      linalg.yield %r : f32
    } -> tensor<2x16x16xf32>
    kiln.yield %m : tensor<2x16x16xf32>
  }
  return %0 : tensor<2x16x16xf32>
}

func.func @scores_fp32(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>) -> tensor<2x16x16xf32> {
  %0 = kiln.kernel "k0" ins(%q, %k : tensor<2x16x8xf32>, tensor<2x16x8xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x8xf32>, %c: tensor<2x16x8xf32>):
    %z = arith.constant 0.0 : f32
    %et = tensor.empty() : tensor<2x8x16xf32>
    %t = linalg.transpose ins(%c : tensor<2x16x8xf32>) outs(%et : tensor<2x8x16xf32>) permutation = [0, 2, 1]
    %e = tensor.empty() : tensor<2x16x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %m = linalg.generic {indexing_maps = [#qk, #kt, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %t : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%f : tensor<2x16x16xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %r = arith.addf %acc, %p : f32
      linalg.yield %r : f32
    } -> tensor<2x16x16xf32>
    kiln.yield %m : tensor<2x16x16xf32>
  }
  return %0 : tensor<2x16x16xf32>
}
