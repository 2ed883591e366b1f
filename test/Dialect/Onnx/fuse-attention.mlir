// RUN: kiln-opt %s --split-input-file --kiln-onnx-fuse-attention --canonicalize | FileCheck %s

// torch.onnx's spelling: heads split by Transpose, Kᵀ as Transpose(perm
// [0, 2, 3, 1]) of [B, L, H, D], Div by sqrt(D), an additive mask, Softmax
// over the last axis, the product with V. One onnx.Attention with scale
// 1/8, the mask, and K brought to [B, H, L, D]; no Softmax or MatMul left.
// CHECK-LABEL: func.func @torch_spelling
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x64xf32>, %[[KS:.*]]: tensor<2x16x4x64xf32>, %[[V:.*]]: tensor<2x4x16x64xf32>, %[[M:.*]]: tensor<2x1x1x16xf32>)
// CHECK: %[[K:.*]] = "onnx.Transpose"(%[[KS]]) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x4x64xf32>) -> tensor<2x4x16x64xf32>
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}} = "onnx.Attention"(%[[Q]], %[[K]], %[[V]], %[[M]], %{{.*}}, %{{.*}}, %{{.*}}) <{is_causal = 0 : i64, qk_matmul_output_mode = 0 : i64, scale = 1.250000e-01 : f32, softcap = 0.000000e+00 : f32}>
// CHECK-NOT: onnx.Softmax
// CHECK-NOT: onnx.MatMul
// CHECK: return %[[Y]]
func.func @torch_spelling(%q: tensor<2x4x16x64xf32>, %ks: tensor<2x16x4x64xf32>, %v: tensor<2x4x16x64xf32>, %mask: tensor<2x1x1x16xf32>) -> tensor<2x4x16x64xf32> {
  %c = arith.constant dense<8.0> : tensor<f32>
  %kt = "onnx.Transpose"(%ks) <{perm = [0, 2, 3, 1]}> : (tensor<2x16x4x64xf32>) -> tensor<2x4x64x16xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x4x16x64xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x16x16xf32>
  %d = "onnx.Div"(%s, %c) : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %a = "onnx.Add"(%d, %mask) : (tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32>
  %p = "onnx.Softmax"(%a) <{axis = -1 : i64}> : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<2x4x16x16xf32>, tensor<2x4x16x64xf32>) -> tensor<2x4x16x64xf32>
  return %y : tensor<2x4x16x64xf32>
}

// -----

// The scale as a Mul (constant first), the mask first in the Add, Kᵀ the
// transpose of the last two dims of a [B, H, L, D] K (taken as it is), and
// a cross-attention length L = 8 (an attention over keys other than the
// queries).
// CHECK-LABEL: func.func @mul_scale_mask_first
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x32xf32>, %[[K:.*]]: tensor<1x2x8x32xf32>, %[[V:.*]]: tensor<1x2x8x16xf32>, %[[M:.*]]: tensor<4x8xf32>)
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}} = "onnx.Attention"(%[[Q]], %[[K]], %[[V]], %[[M]], %{{.*}}, %{{.*}}, %{{.*}}) <{{{.*}}scale = 2.000000e-01 : f32
// CHECK-NOT: onnx.Transpose
// CHECK: return %[[Y]] : tensor<1x2x4x16xf32>
func.func @mul_scale_mask_first(%q: tensor<1x2x4x32xf32>, %k: tensor<1x2x8x32xf32>, %v: tensor<1x2x8x16xf32>, %mask: tensor<4x8xf32>) -> tensor<1x2x4x16xf32> {
  %c = arith.constant dense<0.2> : tensor<1xf32>
  %kt = "onnx.Transpose"(%k) <{perm = [0, 1, 3, 2]}> : (tensor<1x2x8x32xf32>) -> tensor<1x2x32x8xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x32xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x4x8xf32>
  %m = "onnx.Mul"(%c, %s) : (tensor<1xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %a = "onnx.Add"(%mask, %m) : (tensor<4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %p = "onnx.Softmax"(%a) <{axis = 3 : i64}> : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x4x16xf32>
  return %y : tensor<1x2x4x16xf32>
}

// -----

// The scale folded into Q before the product (an exporter that scales Q),
// no mask, and Kᵀ given as a [B, H, D, L] value: K is its transpose.
// CHECK-LABEL: func.func @scaled_query
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x32xf32>, %[[KT:.*]]: tensor<1x2x32x4xf32>, %[[V:.*]]: tensor<1x2x4x32xf32>)
// CHECK: %[[K:.*]] = "onnx.Transpose"(%[[KT]]) <{perm = [0, 1, 3, 2]}>
// CHECK: "onnx.Attention"(%[[Q]], %[[K]], %[[V]], %[[NONE:.*]], %[[NONE]], %[[NONE]], %[[NONE]]) <{{{.*}}scale = 5.000000e-01 : f32
func.func @scaled_query(%q: tensor<1x2x4x32xf32>, %kt: tensor<1x2x32x4xf32>, %v: tensor<1x2x4x32xf32>) -> tensor<1x2x4x32xf32> {
  %c = arith.constant dense<0.5> : tensor<f32>
  %qs = "onnx.Mul"(%q, %c) : (tensor<1x2x4x32xf32>, tensor<f32>) -> tensor<1x2x4x32xf32>
  %s = "onnx.MatMul"(%qs, %kt) : (tensor<1x2x4x32xf32>, tensor<1x2x32x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x32xf32>) -> tensor<1x2x4x32xf32>
  return %y : tensor<1x2x4x32xf32>
}

// -----

// Left alone: a Softmax over another axis, probabilities read twice, and a
// scale that is not a constant.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: onnx.Attention
// CHECK: return
func.func @not_attention(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %scale: tensor<f32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) {
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "onnx.Softmax"(%s) <{axis = 2 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s2 = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = "onnx.Softmax"(%s2) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y2 = "onnx.MatMul"(%p2, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %s3 = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d3 = "onnx.Div"(%s3, %scale) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p3 = "onnx.Softmax"(%d3) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y3 = "onnx.MatMul"(%p3, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %y2, %p2, %y3 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
}

// -----

// BERT's export: Q, K and V [B, S, H·D] (the QKV product's split), the
// heads split by Reshape to [B, S, H, D] and moved before the sequence by
// Transpose (K's straight to [B, H, D, L]), the output's heads moved back
// and merged by Reshape. One 3-D onnx.Attention (q_num_heads and
// kv_num_heads 12) on the three inputs as they are, its output the merged
// [B, S, H·D]: no Transpose or Reshape left around it.
// CHECK-LABEL: func.func @heads_from_hidden
// CHECK-SAME: (%[[Q:.*]]: tensor<2x16x768xf16>, %[[K:.*]]: tensor<2x16x768xf16>, %[[V:.*]]: tensor<2x16x768xf16>)
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %{{.*}} = "onnx.Attention"(%[[Q]], %[[K]], %[[V]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{is_causal = 0 : i64, kv_num_heads = 12 : i64, q_num_heads = 12 : i64, qk_matmul_output_mode = 0 : i64, scale = 1.250000e-01 : f32, softcap = 0.000000e+00 : f32}> {{.*}}-> (tensor<2x16x768xf16>
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: onnx.Reshape
// CHECK: return %[[Y]]
// A head split the output does not undo (the caller takes [B, H, S, D]):
// the 4-D form, K transposed.
// CHECK-LABEL: func.func @heads_kept
// CHECK: "onnx.Attention"({{.*}}) <{is_causal = 0 : i64, qk_matmul_output_mode = 0 : i64, scale
// CHECK-SAME: -> (tensor<2x12x16x64xf16>
func.func @heads_from_hidden(%q3: tensor<2x16x768xf16>, %k3: tensor<2x16x768xf16>, %v3: tensor<2x16x768xf16>) -> tensor<2x16x768xf16> {
  %split = arith.constant dense<[2, 16, 12, 64]> : tensor<4xi64>
  %merge = arith.constant dense<[2, 16, 768]> : tensor<3xi64>
  %c = arith.constant dense<8.0> : tensor<f16>
  %q4 = "onnx.Reshape"(%q3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %q = "onnx.Transpose"(%q4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x16x64xf16>
  %k4 = "onnx.Reshape"(%k3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %kt = "onnx.Transpose"(%k4) <{perm = [0, 2, 3, 1]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x64x16xf16>
  %v4 = "onnx.Reshape"(%v3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %v = "onnx.Transpose"(%v4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x16x64xf16>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x12x16x64xf16>, tensor<2x12x64x16xf16>) -> tensor<2x12x16x16xf16>
  %d = "onnx.Div"(%s, %c) : (tensor<2x12x16x16xf16>, tensor<f16>) -> tensor<2x12x16x16xf16>
  %p = "onnx.Softmax"(%d) <{axis = -1 : i64}> : (tensor<2x12x16x16xf16>) -> tensor<2x12x16x16xf16>
  %y = "onnx.MatMul"(%p, %v) : (tensor<2x12x16x16xf16>, tensor<2x12x16x64xf16>) -> tensor<2x12x16x64xf16>
  %yt = "onnx.Transpose"(%y) <{perm = [0, 2, 1, 3]}> : (tensor<2x12x16x64xf16>) -> tensor<2x16x12x64xf16>
  %y3 = "onnx.Reshape"(%yt, %merge) : (tensor<2x16x12x64xf16>, tensor<3xi64>) -> tensor<2x16x768xf16>
  return %y3 : tensor<2x16x768xf16>
}
func.func @heads_kept(%q3: tensor<2x16x768xf16>, %k3: tensor<2x16x768xf16>, %v3: tensor<2x16x768xf16>) -> tensor<2x12x16x64xf16> {
  %split = arith.constant dense<[2, 16, 12, 64]> : tensor<4xi64>
  %c = arith.constant dense<8.0> : tensor<f16>
  %q4 = "onnx.Reshape"(%q3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %q = "onnx.Transpose"(%q4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x16x64xf16>
  %k4 = "onnx.Reshape"(%k3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %kt = "onnx.Transpose"(%k4) <{perm = [0, 2, 3, 1]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x64x16xf16>
  %v4 = "onnx.Reshape"(%v3, %split) : (tensor<2x16x768xf16>, tensor<4xi64>) -> tensor<2x16x12x64xf16>
  %v = "onnx.Transpose"(%v4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x12x64xf16>) -> tensor<2x12x16x64xf16>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x12x16x64xf16>, tensor<2x12x64x16xf16>) -> tensor<2x12x16x16xf16>
  %d = "onnx.Div"(%s, %c) : (tensor<2x12x16x16xf16>, tensor<f16>) -> tensor<2x12x16x16xf16>
  %p = "onnx.Softmax"(%d) <{axis = -1 : i64}> : (tensor<2x12x16x16xf16>) -> tensor<2x12x16x16xf16>
  %y = "onnx.MatMul"(%p, %v) : (tensor<2x12x16x16xf16>, tensor<2x12x16x64xf16>) -> tensor<2x12x16x64xf16>
  return %y : tensor<2x12x16x64xf16>
}
