// RUN: kiln-opt %s --split-input-file --kiln-convert-onnx-to-linalg="fused-attention=1" --canonicalize | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s --check-prefix=OFF

// Attention for a target with a fused kernel (Target::hasFusedAttention):
// one kiln.attention where its conditions hold (f16/bf16, head size a
// multiple of 16 up to 128, no past/present, no softcap, an additive float
// mask), the generics everywhere else and without the option.

// CHECK-LABEL: func @bhsd
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x4x128x64xf16>
// CHECK: kiln.attention ins(%arg0, %arg1, %arg2 : tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>) outs(%[[INIT]] : tensor<2x4x128x64xf16>) scale = 1.250000e-01 seq_major = [false, false, false, false]
// CHECK-NOT: linalg.generic
// OFF-LABEL: func @bhsd
// OFF-NOT: kiln.attention
// OFF: math.exp
func.func @bhsd(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x128x64xf16>, %v: tensor<2x4x128x64xf16>) -> tensor<2x4x128x64xf16> {
  %none = onnx.NoValue
  %0, %1, %2, %3 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) : (tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, none, none, none, none) -> (tensor<2x4x128x64xf16>, none, none, none)
  return %0 : tensor<2x4x128x64xf16>
}

// -----

// 3-D [B, S, H·D] operands are read as [B, S, H, D] views (seq_major), the
// output written as one and viewed back; grouped-query heads (8 / 2), a 2-D
// mask as [1, 1, S, L], causal, the scale attribute.
// CHECK-LABEL: func @bsd_gqa_mask_causal
// CHECK-DAG: %[[Q:.*]] = tensor.reshape %arg0{{.*}} -> tensor<1x77x8x32xbf16>
// CHECK-DAG: %[[K:.*]] = tensor.reshape %arg1{{.*}} -> tensor<1x77x2x32xbf16>
// CHECK-DAG: %[[M:.*]] = tensor.reshape %arg3{{.*}} -> tensor<1x1x77x77xf32>
// CHECK: %[[Y:.*]] = kiln.attention ins(%[[Q]], %[[K]], %{{.*}}, mask %[[M]] : {{.*}}) outs(%{{.*}} : tensor<1x77x8x32xbf16>) scale = 5.000000e-01 causal seq_major = [true, true, true, true] -> tensor<1x77x8x32xbf16>
// CHECK: tensor.reshape %[[Y]]{{.*}} -> tensor<1x77x256xbf16>
func.func @bsd_gqa_mask_causal(%q: tensor<1x77x256xbf16>, %k: tensor<1x77x64xbf16>, %v: tensor<1x77x64xbf16>, %m: tensor<77x77xf32>) -> tensor<1x77x256xbf16> {
  %none = onnx.NoValue
  %0, %1, %2, %3 = "onnx.Attention"(%q, %k, %v, %m, %none, %none, %none) {q_num_heads = 8 : i64, kv_num_heads = 2 : i64, is_causal = 1 : i64, scale = 5.000000e-01 : f32} : (tensor<1x77x256xbf16>, tensor<1x77x64xbf16>, tensor<1x77x64xbf16>, tensor<77x77xf32>, none, none, none) -> (tensor<1x77x256xbf16>, none, none, none)
  return %0 : tensor<1x77x256xbf16>
}

// -----

// A head-splitting transpose is read through: the kernel takes the
// [B, S, H, D] tensor with its strides and the copy dies.
// CHECK-LABEL: func @through_transpose
// CHECK-NOT: linalg.transpose
// CHECK: kiln.attention ins(%arg0, %arg1, %arg2 : tensor<2x16x4x64xf16>, tensor<2x16x4x64xf16>, tensor<2x16x4x64xf16>) {{.*}} seq_major = [true, true, true, false]
func.func @through_transpose(%q: tensor<2x16x4x64xf16>, %k: tensor<2x16x4x64xf16>, %v: tensor<2x16x4x64xf16>) -> tensor<2x4x16x64xf16> {
  %none = onnx.NoValue
  %qt = "onnx.Transpose"(%q) {perm = [0, 2, 1, 3]} : (tensor<2x16x4x64xf16>) -> tensor<2x4x16x64xf16>
  %kt = "onnx.Transpose"(%k) {perm = [0, 2, 1, 3]} : (tensor<2x16x4x64xf16>) -> tensor<2x4x16x64xf16>
  %vt = "onnx.Transpose"(%v) {perm = [0, 2, 1, 3]} : (tensor<2x16x4x64xf16>) -> tensor<2x4x16x64xf16>
  %0, %1, %2, %3 = "onnx.Attention"(%qt, %kt, %vt, %none, %none, %none, %none) : (tensor<2x4x16x64xf16>, tensor<2x4x16x64xf16>, tensor<2x4x16x64xf16>, none, none, none, none) -> (tensor<2x4x16x64xf16>, none, none, none)
  return %0 : tensor<2x4x16x64xf16>
}

// -----

// Left to the generics: f32 operands, a head size of 72 (not a multiple of
// 16) or 144 (over 128), a boolean mask, a softcap, present outputs that are
// read.
// CHECK-LABEL: func @fallbacks
// CHECK-NOT: kiln.attention
// CHECK: return
func.func @fallbacks(%q32: tensor<1x2x8x64xf32>, %q72: tensor<1x2x8x72xf16>, %q: tensor<1x2x8x64xf16>, %mb: tensor<8x8xi1>, %q144: tensor<1x2x8x144xf16>) -> (tensor<1x2x8x64xf32>, tensor<1x2x8x72xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x144xf16>) {
  %none = onnx.NoValue
  %a, %a1, %a2, %a3 = "onnx.Attention"(%q32, %q32, %q32, %none, %none, %none, %none) : (tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, none, none, none, none) -> (tensor<1x2x8x64xf32>, none, none, none)
  %b, %b1, %b2, %b3 = "onnx.Attention"(%q72, %q72, %q72, %none, %none, %none, %none) : (tensor<1x2x8x72xf16>, tensor<1x2x8x72xf16>, tensor<1x2x8x72xf16>, none, none, none, none) -> (tensor<1x2x8x72xf16>, none, none, none)
  %g, %g1, %g2, %g3 = "onnx.Attention"(%q144, %q144, %q144, %none, %none, %none, %none) : (tensor<1x2x8x144xf16>, tensor<1x2x8x144xf16>, tensor<1x2x8x144xf16>, none, none, none, none) -> (tensor<1x2x8x144xf16>, none, none, none)
  %c, %c1, %c2, %c3 = "onnx.Attention"(%q, %q, %q, %mb, %none, %none, %none) : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<8x8xi1>, none, none, none) -> (tensor<1x2x8x64xf16>, none, none, none)
  %d, %d1, %d2, %d3 = "onnx.Attention"(%q, %q, %q, %none, %none, %none, %none) {softcap = 3.000000e+01 : f32} : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, none, none, none, none) -> (tensor<1x2x8x64xf16>, none, none, none)
  %e, %e1, %e2, %e3 = "onnx.Attention"(%q, %q, %q, %none, %none, %none, %none) : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, none, none, none, none) -> (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, none, none)
  return %a, %b, %c, %d, %e, %e1, %g : tensor<1x2x8x64xf32>, tensor<1x2x8x72xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x144xf16>
}

// -----

// 8-bit operands (per-tensor DequantizeLinear to half): Q alone takes its
// integers into the kernel with its scale and zero point; a quantized K
// without a quantized V is read dequantized (the kernel stages K and V
// alike), so that op has three half operands.
// CHECK-LABEL: func @quantized_operands
// CHECK: kiln.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x2x8x64xi8>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) {{.*}} dequant(scales = [5.000000e-01, 1.000000e+00, 1.000000e+00], zero_points = [128, 0, 0], unsigned = [true, false, false])
// CHECK: kiln.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs
// CHECK-NOT: dequant
// CHECK: return
func.func @quantized_operands(%x: tensor<1x2x8x64xui8>, %f: tensor<1x2x8x64xf16>) -> (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) {
  %none = onnx.NoValue
  %s = arith.constant dense<0.5> : tensor<f16>
  %z = arith.constant dense<128> : tensor<ui8>
  %dq = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<1x2x8x64xui8>, tensor<f16>, tensor<ui8>) -> tensor<1x2x8x64xf16>
  %a, %a1, %a2, %a3 = "onnx.Attention"(%dq, %f, %f, %none, %none, %none, %none) : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, none, none, none, none) -> (tensor<1x2x8x64xf16>, none, none, none)
  %b, %b1, %b2, %b3 = "onnx.Attention"(%f, %dq, %f, %none, %none, %none, %none) : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, none, none, none, none) -> (tensor<1x2x8x64xf16>, none, none, none)
  return %a, %b : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>
}
