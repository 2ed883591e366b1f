// RUN: %python -c "import json; json.dump({'tensors': {'qkv': {'min': -2.0, 'max': 2.0, 'absmax': 2.0}}}, open('%t.json', 'w'))"
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax attention-inputs=1" | FileCheck %s
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax attention-inputs=1" --kiln-onnx-fuse-attention --canonicalize --cse | FileCheck %s --check-prefix=FUSED
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax attention-inputs=1" --kiln-onnx-fuse-attention --canonicalize --kiln-mixed-precision="precision=fp16" --kiln-convert-onnx-to-linalg="fused-attention=1" --canonicalize | FileCheck %s --check-prefix=LOWER
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax" | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax attention-inputs=1 exclude=scores" | FileCheck %s --check-prefix=OFF

// BERT's attention: Q, K and V the Split of one value (here an Add named
// qkv, calibrated to [-2, 2]: uint8 with scale 4 / 255 and zero point
// 127, as int8::uint8Params rounds 127.5), each through Reshape and
// Transpose. With
// attention-inputs the value is quantized once right after its producer;
// the Split reads the DequantizeLinear.
// CHECK: kiln.precision_plan = {attention_inputs = 1 : i64, attentions = 1 : i64,
// CHECK-LABEL: func.func @bert_attention
// CHECK: %[[QKV:.*]] = "onnx.Add"
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[QKV]], %[[S:.*]], %[[Z:.*]]) {{.*}} -> tensor<2x16x192xui8>
// CHECK: %[[DQ:.*]] = "onnx.DequantizeLinear"(%[[Q]], %[[S]], %[[Z]]) {{.*}} -> tensor<2x16x192xf32>
// CHECK: "onnx.Split"(%[[DQ]],
// CHECK-NOT: QuantizeLinear

// kiln-onnx-fuse-attention moves the DequantizeLinear below the Split: the
// 3-D attention's Q, K and V are dequantized slices of the uint8 tensor.
// FUSED-LABEL: func.func @bert_attention
// FUSED: %[[Q:.*]] = "onnx.QuantizeLinear"
// FUSED: %[[P:.*]]:3 = "onnx.Split"(%[[Q]], %{{.*}}) <{axis = -1 : i64}> : (tensor<2x16x192xui8>, tensor<3xi64>) -> (tensor<2x16x64xui8>, tensor<2x16x64xui8>, tensor<2x16x64xui8>)
// FUSED-DAG: %[[DQ0:.*]] = "onnx.DequantizeLinear"(%[[P]]#0,
// FUSED-DAG: %[[DQ1:.*]] = "onnx.DequantizeLinear"(%[[P]]#1,
// FUSED-DAG: %[[DQ2:.*]] = "onnx.DequantizeLinear"(%[[P]]#2,
// FUSED: "onnx.Attention"(%[[DQ0]], %[[DQ1]], %[[DQ2]],
// FUSED-NOT: onnx.Softmax

// Lowered for a fused-attention target (after mixed precision's half
// conversion): kiln.attention reads the 8-bit slices as signless i8, with
// the scale, the zero point and the unsignedness of each.
// LOWER-LABEL: func.func @bert_attention
// LOWER: kiln.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x4x16xi8>, tensor<2x16x4x16xi8>, tensor<2x16x4x16xi8>) outs(%{{.*}} : tensor<2x16x4x16xf16>) scale = 2.500000e-01 seq_major = [true, true, true, true] dequant(scales = [1.568628e-02, 1.568628e-02, 1.568628e-02], zero_points = [127, 127, 127], unsigned = [true, true, true])

// Without attention-inputs, or with the scores' product excluded: no QDQ.
// OFF-LABEL: func.func @bert_attention
// OFF-NOT: QuantizeLinear
func.func @bert_attention(%x: tensor<2x16x192xf32> {kiln.name = "x"}, %b: tensor<192xf32> {kiln.name = "b"}) -> tensor<2x16x64xf32> {
  %sizes = arith.constant dense<[64, 64, 64]> : tensor<3xi64>
  %split = arith.constant dense<[2, 16, 4, 16]> : tensor<4xi64>
  %merge = arith.constant dense<[2, 16, 64]> : tensor<3xi64>
  %c = arith.constant dense<4.0> : tensor<f32>
  %qkv = "onnx.Add"(%x, %b) : (tensor<2x16x192xf32>, tensor<192xf32>) -> tensor<2x16x192xf32> loc("qkv")
  %s:3 = "onnx.Split"(%qkv, %sizes) <{axis = -1 : i64}> : (tensor<2x16x192xf32>, tensor<3xi64>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) loc("split")
  %q4 = "onnx.Reshape"(%s#0, %split) : (tensor<2x16x64xf32>, tensor<4xi64>) -> tensor<2x16x4x16xf32> loc("rq")
  %q = "onnx.Transpose"(%q4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32> loc("tq")
  %k4 = "onnx.Reshape"(%s#1, %split) : (tensor<2x16x64xf32>, tensor<4xi64>) -> tensor<2x16x4x16xf32> loc("rk")
  %kt = "onnx.Transpose"(%k4) <{perm = [0, 2, 3, 1]}> : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32> loc("tk")
  %v4 = "onnx.Reshape"(%s#2, %split) : (tensor<2x16x64xf32>, tensor<4xi64>) -> tensor<2x16x4x16xf32> loc("rv")
  %v = "onnx.Transpose"(%v4) <{perm = [0, 2, 1, 3]}> : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32> loc("tv")
  %sc = "onnx.MatMul"(%q, %kt) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> loc("scores")
  %d = "onnx.Div"(%sc, %c) : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32> loc("div")
  %p = "onnx.Softmax"(%d) <{axis = -1 : i64}> : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> loc("softmax")
  %y = "onnx.MatMul"(%p, %v) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> loc("pv")
  %yt = "onnx.Transpose"(%y) <{perm = [0, 2, 1, 3]}> : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32> loc("ty")
  %y3 = "onnx.Reshape"(%yt, %merge) : (tensor<2x16x4x16xf32>, tensor<3xi64>) -> tensor<2x16x64xf32> loc("ry")
  return %y3 : tensor<2x16x64xf32>
}
