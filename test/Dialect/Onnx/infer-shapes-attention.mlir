// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-onnx-infer-shapes | FileCheck %s

// Attention on 4-D Q/K/V: Y [B, Hq, S, Dv]; with a past, present_key/value
// hold P + L rows and qk_matmul_output is [B, Hq, S, P + L]. Dynamic head
// counts stay dynamic.
// CHECK-LABEL: func @attention_4d
// CHECK: "onnx.Attention"{{.*}} -> (tensor<2x8x5x16xf32>, tensor<2x2x7x32xf32>, tensor<2x2x7x16xf32>, tensor<2x8x5x7xf32>)
// CHECK: "onnx.Attention"{{.*}} -> (tensor<2x8x5x16xf32>, tensor<2x2x10x32xf32>, tensor<2x2x10x16xf32>, tensor<2x8x5x10xf32>)
// CHECK: "onnx.Attention"{{.*}} -> (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>)
func.func @attention_4d(%q: tensor<2x8x5x32xf32>, %k: tensor<2x2x7x32xf32>, %v: tensor<2x2x7x16xf32>,
                        %pk: tensor<2x2x3x32xf32>, %pv: tensor<2x2x3x16xf32>,
                        %dq: tensor<?x?x?x?xf32>, %dk: tensor<?x?x?x?xf32>) {
  %none = onnx.NoValue
  %0:4 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) : (tensor<2x8x5x32xf32>, tensor<2x2x7x32xf32>, tensor<2x2x7x16xf32>, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %1:4 = "onnx.Attention"(%q, %k, %v, %none, %pk, %pv, %none) : (tensor<2x8x5x32xf32>, tensor<2x2x7x32xf32>, tensor<2x2x7x16xf32>, none, tensor<2x2x3x32xf32>, tensor<2x2x3x16xf32>, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %2:4 = "onnx.Attention"(%dq, %dk, %dk, %none, %none, %none, %none) : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

// 3-D Q/K/V with the head counts as attributes: Y [B, S, Hq * Dv]; present
// [B, Hkv, L, D]. RotaryEmbedding keeps its input's type.
// CHECK-LABEL: func @attention_3d
// CHECK: "onnx.Attention"{{.*}} -> (tensor<?x5x64xf32>, tensor<?x2x7x16xf32>, tensor<?x2x7x8xf32>, tensor<?x8x5x7xf32>)
// CHECK: "onnx.RotaryEmbedding"{{.*}} -> tensor<1x4x?x8xf32>
func.func @attention_3d(%q: tensor<?x5x64xf32>, %k: tensor<?x7x32xf32>, %v: tensor<?x7x16xf32>,
                        %x: tensor<1x4x?x8xf32>, %c: tensor<1x?x4xf32>) {
  %none = onnx.NoValue
  %0:4 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) {q_num_heads = 8  : i64, kv_num_heads = 2  : i64} : (tensor<?x5x64xf32>, tensor<?x7x32xf32>, tensor<?x7x16xf32>, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %1 = "onnx.RotaryEmbedding"(%x, %c, %c, %none) : (tensor<1x4x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @attention_bad_hidden(%q: tensor<1x5x30xf32>, %k: tensor<1x7x32xf32>) {
  %none = onnx.NoValue
  // expected-error @+1 {{Q hidden size 30 is not a multiple of the number of heads 8}}
  %0:4 = "onnx.Attention"(%q, %k, %k, %none, %none, %none, %none) {q_num_heads = 8  : i64, kv_num_heads = 2  : i64} : (tensor<1x5x30xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}
