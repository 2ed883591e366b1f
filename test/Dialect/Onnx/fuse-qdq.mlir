// RUN: kiln-opt %s --split-input-file --kiln-onnx-fuse-qdq --canonicalize | FileCheck %s

// onnxruntime's quantize_static spelling of a MatMul: a uint8 activation
// with a zero point, int8 weights per output column (axis 1), the result
// quantized. One MatMulInteger (uint8 x int8, no zero points), then Cast,
// Mul by sx*sw[n]/sy = 0.5*[0.25, 0.125] / 0.0625 = [2, 1], the activation's
// zero point as a float bias -zx * colsum[n] * M[n] = -128 * [16, -20] *
// [2, 1] = [-4096, 2560], QuantizeLinear of scale 1 and the output zero
// point.
// CHECK-LABEL: func.func @matmul_per_channel
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xui8>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZY:.*]] = arith.constant dense<7> : tensor<ui8>
// CHECK-DAG: %[[M:.*]] = arith.constant dense<[2.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[ZB:.*]] = arith.constant dense<[-4.096000e+03, 2.560000e+03]> : tensor<2xf32>
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[\[}}1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
// CHECK: %[[ACC:.*]] = "onnx.MatMulInteger"(%[[X]], %[[W]], %{{.*}}, %{{.*}}) : (tensor<3x4xui8>, tensor<4x2xi8>, none, none) -> tensor<3x2xi32>
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]]) <{{{.*}}to = 1 : i64}> : (tensor<3x2xi32>) -> tensor<3x2xf32>
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %[[M]])
// CHECK: %[[B:.*]] = "onnx.Add"(%[[Y]], %[[ZB]])
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[B]], %[[ONE]], %[[ZY]])
// CHECK-NOT: onnx.MatMul"
// CHECK-NOT: onnx.DequantizeLinear
// CHECK: return %[[Q]] : tensor<3x2xui8>
func.func @matmul_per_channel(%x: tensor<3x4xui8>) -> tensor<3x2xui8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %zx = arith.constant dense<128> : tensor<ui8>
  %w = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %sw = arith.constant dense<[0.25, 0.125]> : tensor<2xf32>
  %zw = arith.constant dense<0> : tensor<2xi8>
  %sy = arith.constant dense<0.0625> : tensor<f32>
  %zy = arith.constant dense<7> : tensor<ui8>
  %xf = "onnx.DequantizeLinear"(%x, %sx, %zx) <{axis = 1 : i64}> : (tensor<3x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<3x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %zw) <{axis = 1 : i64}> : (tensor<4x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %q = "onnx.QuantizeLinear"(%m, %sy, %zy) <{axis = 1 : i64}> : (tensor<3x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x2xui8>
  return %q : tensor<3x2xui8>
}

// -----

// A float bias Add and a Relu between the product and the QuantizeLinear
// (per-tensor weights): the bias divided by sy (0.5 / 0.25 = 2) after the
// Mul by sx*sw/sy = 0.5 * 0.5 / 0.25 = 1, then the Relu.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK: %[[ACC:.*]] = "onnx.MatMulInteger"
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]])
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %{{.*}}) : (tensor<2x5x2xf32>, tensor<f32>)
// CHECK: %[[B:.*]] = "onnx.Add"(%[[Y]], %{{.*}}) : (tensor<2x5x2xf32>, tensor<2xf32>)
// CHECK: %[[R:.*]] = "onnx.Relu"(%[[B]])
// CHECK: "onnx.QuantizeLinear"(%[[R]],
func.func @matmul_bias_relu(%x: tensor<2x5x4xui8>) -> tensor<2x5x2xui8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %zx = arith.constant dense<3> : tensor<ui8>
  %w = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %sw = arith.constant dense<0.5> : tensor<f32>
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<0> : tensor<ui8>
  %xf = "onnx.DequantizeLinear"(%x, %sx, %zx) : (tensor<2x5x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x5x4xf32>
  %none = onnx.NoValue
  %wf = "onnx.DequantizeLinear"(%w, %sw, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x5x4xf32>, tensor<4x2xf32>) -> tensor<2x5x2xf32>
  %a = "onnx.Add"(%b, %m) : (tensor<2xf32>, tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  %r = "onnx.Relu"(%a) : (tensor<2x5x2xf32>) -> tensor<2x5x2xf32>
  %q = "onnx.QuantizeLinear"(%r, %sy, %zy) : (tensor<2x5x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x5x2xui8>
  return %q : tensor<2x5x2xui8>
}

// -----

// Gemm with transB = 1 and C the DequantizeLinear of an int32 bias whose
// scale is sx*sw (in the accumulator's units): the weights transposed to
// [K, N] at compile time, the bias in the float one after the Mul by
// sx*sw[n]/sy = 0.5 * [0.25, 0.5] / 0.25 = [0.5, 1]: [10, -20] * [0.5, 1] =
// [5, -20]; no integer addition.
// CHECK-LABEL: func.func @gemm_transb_int_bias
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[\[}}1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>
// CHECK-DAG: %[[FB:.*]] = arith.constant dense<[5.000000e+00, -2.000000e+01]> : tensor<2xf32>
// CHECK: %[[ACC:.*]] = "onnx.MatMulInteger"(%{{.*}}, %[[W]], %{{.*}}, %{{.*}}) : (tensor<2x3xui8>, tensor<3x2xi8>, none, none) -> tensor<2x2xi32>
// CHECK-NOT: tensor<2xi32>
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]])
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %{{.*}})
// CHECK: "onnx.Add"(%[[Y]], %[[FB]])
// CHECK-NOT: onnx.Gemm
func.func @gemm_transb_int_bias(%x: tensor<2x3xui8>) -> tensor<2x2xi8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<[[1, 3, 5], [2, 4, 6]]> : tensor<2x3xi8>
  %sw = arith.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %bq = arith.constant dense<[10, -20]> : tensor<2xi32>
  %sb = arith.constant dense<[0.125, 0.25]> : tensor<2xf32>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<-3> : tensor<i8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %sx, %none) : (tensor<2x3xui8>, tensor<f32>, none) -> tensor<2x3xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %none) <{axis = 0 : i64}> : (tensor<2x3xi8>, tensor<2xf32>, none) -> tensor<2x3xf32>
  %bf = "onnx.DequantizeLinear"(%bq, %sb, %none) <{axis = 0 : i64}> : (tensor<2xi32>, tensor<2xf32>, none) -> tensor<2xf32>
  %g = "onnx.Gemm"(%xf, %wf, %bf) <{transB = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %q = "onnx.QuantizeLinear"(%g, %sy, %zy) : (tensor<2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<2x2xi8>
  return %q : tensor<2x2xi8>
}

// -----

// onnxruntime's Conv: per-filter int8 weights (axis 0) with zero points of
// 0, the int32 bias DequantizeLinear'd at sx*sw[f]. ConvInteger with the
// Conv's attributes, the bias as [F, 1, 1] int32, the scale [F, 1, 1]. Its
// padding keeps the activation's zero point in the product (a padded
// position adds no zx * w), and so the int32 bias in integers.
// CHECK-LABEL: func.func @conv_per_filter
// CHECK: %[[ACC:.*]] = "onnx.ConvInteger"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{auto_pad = "NOTSET", group = 1 : i64, pads = [1, 1, 1, 1], strides = [2, 2]}> : (tensor<1x2x6x6xui8>, tensor<2x2x3x3xi8>, tensor<ui8>, none) -> tensor<1x2x3x3xi32>
// CHECK: %[[B:.*]] = "onnx.Add"(%[[ACC]], %{{.*}}) : (tensor<1x2x3x3xi32>, tensor<2x1x1xi32>)
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[B]])
// CHECK: "onnx.Mul"(%[[F]], %{{.*}}) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>)
// CHECK-NOT: "onnx.Conv"
func.func @conv_per_filter(%x: tensor<1x2x6x6xui8>) -> tensor<1x2x3x3xui8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %zx = arith.constant dense<10> : tensor<ui8>
  %w = arith.constant dense<1> : tensor<2x2x3x3xi8>
  %sw = arith.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %zw = arith.constant dense<0> : tensor<2xi8>
  %bq = arith.constant dense<[4, 8]> : tensor<2xi32>
  %sb = arith.constant dense<[0.125, 0.25]> : tensor<2xf32>
  %zb = arith.constant dense<0> : tensor<2xi32>
  %sy = arith.constant dense<0.5> : tensor<f32>
  %zy = arith.constant dense<0> : tensor<ui8>
  %xf = "onnx.DequantizeLinear"(%x, %sx, %zx) : (tensor<1x2x6x6xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x6x6xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %zw) <{axis = 0 : i64}> : (tensor<2x2x3x3xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2x3x3xf32>
  %bf = "onnx.DequantizeLinear"(%bq, %sb, %zb) <{axis = 0 : i64}> : (tensor<2xi32>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  %c = "onnx.Conv"(%xf, %wf, %bf) <{auto_pad = "NOTSET", group = 1 : i64, pads = [1, 1, 1, 1], strides = [2, 2]}> : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %q = "onnx.QuantizeLinear"(%c, %sy, %zy) : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xui8>
  return %q : tensor<1x2x3x3xui8>
}

// -----

// No QuantizeLinear after it (a layer whose output stays float): the
// float value sx*sw * acc, then the Relu; nothing quantizes it.
// CHECK-LABEL: func.func @conv_relu_float_output
// CHECK: %[[ACC:.*]] = "onnx.ConvInteger"
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]])
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %{{.*}}) : (tensor<1x2x4x4xf32>, tensor<f32>)
// CHECK: %[[R:.*]] = "onnx.Relu"(%[[Y]])
// CHECK-NOT: onnx.QuantizeLinear
// CHECK: return %[[R]]
func.func @conv_relu_float_output(%x: tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<2x2x1x1xi8>
  %sw = arith.constant dense<0.5> : tensor<f32>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %sx, %none) : (tensor<1x2x4x4xui8>, tensor<f32>, none) -> tensor<1x2x4x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %none) : (tensor<2x2x1x1xi8>, tensor<f32>, none) -> tensor<2x2x1x1xf32>
  %c = "onnx.Conv"(%xf, %wf, %none) <{group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %r = "onnx.Relu"(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}

// -----

// int8 activations from a QuantizeLinear: produced as uint8 by a twin
// QuantizeLinear with the zero point + 128 (-3 + 128 = 125), which the
// product reads; uint8 weights become int8 (w - 128) with zero point
// 130 - 128 = 2; Clip's bounds divided by sy (0 and 6 / 0.5 = 12). The
// activation's zero point goes into the float bias.
// CHECK-LABEL: func.func @int8_activation_uint8_weights_clip
// CHECK-SAME: (%[[XF:.*]]: tensor<2x4xf32>)
// CHECK-DAG: %[[Z125:.*]] = arith.constant dense<125> : tensor<ui8>
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[\[}}-128, -127], [0, 1], [126, 127], [2, 3]]> : tensor<4x2xi8>
// CHECK-DAG: %[[ZW:.*]] = arith.constant dense<2> : tensor<i8>
// CHECK-DAG: %[[HI:.*]] = arith.constant dense<1.200000e+01> : tensor<f32>
// CHECK: %[[XU:.*]] = "onnx.QuantizeLinear"(%[[XF]], %{{.*}}, %[[Z125]]) {{.*}} -> tensor<2x4xui8>
// CHECK: "onnx.MatMulInteger"(%[[XU]], %[[W]], %{{.*}}, %[[ZW]]) : (tensor<2x4xui8>, tensor<4x2xi8>, none, tensor<i8>)
// CHECK: "onnx.Clip"(%{{.*}}, %{{.*}}, %[[HI]])
func.func @int8_activation_uint8_weights_clip(%xf: tensor<2x4xf32>) -> tensor<2x2xi8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %zx = arith.constant dense<-3> : tensor<i8>
  %w = arith.constant dense<[[0, 1], [128, 129], [254, 255], [130, 131]]> : tensor<4x2xui8>
  %sw = arith.constant dense<0.5> : tensor<f32>
  %zw = arith.constant dense<130> : tensor<ui8>
  %lo = arith.constant dense<0.0> : tensor<f32>
  %hi = arith.constant dense<6.0> : tensor<f32>
  %sy = arith.constant dense<0.5> : tensor<f32>
  %zy = arith.constant dense<-128> : tensor<i8>
  %xq = "onnx.QuantizeLinear"(%xf, %sx, %zx) : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  %x = "onnx.DequantizeLinear"(%xq, %sx, %zx) : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %zw) : (tensor<4x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%x, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %c = "onnx.Clip"(%m, %lo, %hi) : (tensor<2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  %q = "onnx.QuantizeLinear"(%c, %sy, %zy) : (tensor<2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<2x2xi8>
  return %q : tensor<2x2xi8>
}

// -----

// The product also read by another op: the chain stops at it (the fused
// value is the float one); the Relu and the QuantizeLinear stay.
// CHECK-LABEL: func.func @two_users
// CHECK: %[[ACC:.*]] = "onnx.MatMulInteger"
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]])
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %{{.*}})
// CHECK: %[[R:.*]] = "onnx.Relu"(%[[Y]])
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[R]], %{{.*}}, %{{.*}})
// CHECK: return %[[Q]], %[[Y]]
func.func @two_users(%x: tensor<2x4xui8>) -> (tensor<2x2xui8>, tensor<2x2xf32>) {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<4x2xi8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %none) : (tensor<2x4xui8>, tensor<f32>, none) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %s, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %r = "onnx.Relu"(%m) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %q = "onnx.QuantizeLinear"(%r, %s, %none) : (tensor<2x2xf32>, tensor<f32>, none) -> tensor<2x2xui8>
  return %q, %m : tensor<2x2xui8>, tensor<2x2xf32>
}

// -----

// An output scale that is not a constant: the product is fused in its
// float form and the QuantizeLinear stays as it is.
// CHECK-LABEL: func.func @runtime_output_scale
// CHECK-SAME: (%{{.*}}: tensor<2x4xui8>, %[[SY:.*]]: tensor<f32>)
// CHECK: "onnx.MatMulInteger"
// CHECK: %[[Y:.*]] = "onnx.Mul"
// CHECK: "onnx.QuantizeLinear"(%[[Y]], %[[SY]], %{{.*}})
func.func @runtime_output_scale(%x: tensor<2x4xui8>, %sy: tensor<f32>) -> tensor<2x2xui8> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<4x2xi8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %none) : (tensor<2x4xui8>, tensor<f32>, none) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %s, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %q = "onnx.QuantizeLinear"(%m, %sy, %none) : (tensor<2x2xf32>, tensor<f32>, none) -> tensor<2x2xui8>
  return %q : tensor<2x2xui8>
}

// -----

// Left alone: weights quantized per row of K (axis 0 of a MatMul's [K, N]
// weights: the scale does not factor out of the sum).
// CHECK-LABEL: func.func @per_k_axis
// CHECK-NOT: onnx.MatMulInteger
// CHECK: "onnx.MatMul"
func.func @per_k_axis(%x: tensor<2x4xui8>) -> tensor<2x2xui8> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<4x2xi8>
  %sw = arith.constant dense<[0.5, 0.25, 0.5, 0.25]> : tensor<4xf32>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %none) : (tensor<2x4xui8>, tensor<f32>, none) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %none) <{axis = 0 : i64}> : (tensor<4x2xi8>, tensor<4xf32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %q = "onnx.QuantizeLinear"(%m, %s, %none) : (tensor<2x2xf32>, tensor<f32>, none) -> tensor<2x2xui8>
  return %q : tensor<2x2xui8>
}

// -----

// Left alone: a Conv's weights quantized per input channel (axis 1).
// CHECK-LABEL: func.func @conv_input_channel_axis
// CHECK-NOT: onnx.ConvInteger
// CHECK: "onnx.Conv"
func.func @conv_input_channel_axis(%x: tensor<1x2x4x4xui8>) -> tensor<1x3x4x4xf32> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<3x2x1x1xi8>
  %sw = arith.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %none) : (tensor<1x2x4x4xui8>, tensor<f32>, none) -> tensor<1x2x4x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %none) <{axis = 1 : i64}> : (tensor<3x2x1x1xi8>, tensor<2xf32>, none) -> tensor<3x2x1x1xf32>
  %c = "onnx.Conv"(%xf, %wf, %none) <{group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, none) -> tensor<1x3x4x4xf32>
  return %c : tensor<1x3x4x4xf32>
}

// -----

// Left alone: an activation scale that is not a constant.
// CHECK-LABEL: func.func @runtime_activation_scale
// CHECK-NOT: onnx.MatMulInteger
// CHECK: "onnx.MatMul"
func.func @runtime_activation_scale(%x: tensor<2x4xui8>, %sx: tensor<f32>) -> tensor<2x2xf32> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<4x2xi8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %sx, %none) : (tensor<2x4xui8>, tensor<f32>, none) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %s, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %m : tensor<2x2xf32>
}

// -----

// Left alone: a weight scale that is not a constant, and weights that are
// not constants (two activations multiplied: attention's products).
// CHECK-LABEL: func.func @runtime_weights
// CHECK-NOT: onnx.MatMulInteger
// CHECK: "onnx.MatMul"
// CHECK: "onnx.MatMul"
func.func @runtime_weights(%x: tensor<2x4xui8>, %w: tensor<4x2xi8>, %sw: tensor<f32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %s = arith.constant dense<0.5> : tensor<f32>
  %c = arith.constant dense<1> : tensor<4x2xi8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %none) : (tensor<2x4xui8>, tensor<f32>, none) -> tensor<2x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %s, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %cf = "onnx.DequantizeLinear"(%c, %sw, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %m2 = "onnx.MatMul"(%xf, %cf) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %m, %m2 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// A MaxPool between a DequantizeLinear and a QuantizeLinear of the same
// scale and zero point: a MaxPool of the uint8 tensor.
// CHECK-LABEL: func.func @maxpool_folded
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xui8>)
// CHECK: %[[P:.*]], %{{.*}} = "onnx.MaxPool"(%[[X]]) {{.*}} : (tensor<1x2x4x4xui8>) -> (tensor<1x2x2x2xui8>, none)
// CHECK: return %[[P]]
func.func @maxpool_folded(%x: tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %z = arith.constant dense<3> : tensor<ui8>
  %xf = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %p, %i = "onnx.MaxPool"(%xf) <{kernel_shape = [2, 2], strides = [2, 2]}> : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, none)
  %q = "onnx.QuantizeLinear"(%p, %s, %z) : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  return %q : tensor<1x2x2x2xui8>
}

// -----

// Left alone: the QuantizeLinear after the MaxPool has another scale.
// CHECK-LABEL: func.func @maxpool_rescaled
// CHECK: "onnx.DequantizeLinear"
// CHECK: "onnx.MaxPool"(%{{.*}}) {{.*}} : (tensor<1x2x4x4xf32>)
// CHECK: "onnx.QuantizeLinear"
func.func @maxpool_rescaled(%x: tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %s2 = arith.constant dense<0.25> : tensor<f32>
  %z = arith.constant dense<3> : tensor<ui8>
  %xf = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %p, %i = "onnx.MaxPool"(%xf) <{kernel_shape = [2, 2], strides = [2, 2]}> : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, none)
  %q = "onnx.QuantizeLinear"(%p, %s2, %z) : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  return %q : tensor<1x2x2x2xui8>
}

// -----

// A Gather of a dequantized (per-tensor) table, as an embedding quantized
// like a weight: the rows are gathered as int8 and only they dequantized.
// CHECK-LABEL: func.func @gather_dequantized
// CHECK-SAME: (%[[IDS:.*]]: tensor<1x3xi64>)
// CHECK: %[[G:.*]] = "onnx.Gather"(%{{.*}}, %[[IDS]]) <{axis = 0 : i64}> : (tensor<10x4xi8>, tensor<1x3xi64>) -> tensor<1x3x4xi8>
// CHECK: %[[D:.*]] = "onnx.DequantizeLinear"(%[[G]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x3x4xf32>
// CHECK: return %[[D]]
func.func @gather_dequantized(%ids: tensor<1x3xi64>) -> tensor<1x3x4xf32> {
  %t = arith.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, -8]]> : tensor<10x4xi8>
  %s = arith.constant dense<0.5> : tensor<f32>
  %z = arith.constant dense<1> : tensor<i8>
  %tf = "onnx.DequantizeLinear"(%t, %s, %z) : (tensor<10x4xi8>, tensor<f32>, tensor<i8>) -> tensor<10x4xf32>
  %g = "onnx.Gather"(%tf, %ids) <{axis = 0 : i64}> : (tensor<10x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>
  return %g : tensor<1x3x4xf32>
}

// -----

// A ResNet block end: Conv with its bias, an Add of a quantized residual,
// Relu, QuantizeLinear. The residual's DequantizeLinear takes the output's
// 1 / sy too (0.125 / 0.25 = 0.5, its zero point kept), so the
// QuantizeLinear's scale is 1: no division is left in the epilogue.
// CHECK-LABEL: func.func @conv_residual_relu
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xui8>, %[[RQ:.*]]: tensor<1x2x4x4xui8>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[RS:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[RZ:.*]] = arith.constant dense<3> : tensor<ui8>
// CHECK: %[[ACC:.*]] = "onnx.ConvInteger"
// CHECK: %[[F:.*]] = "onnx.Cast"
// CHECK: %[[Y:.*]] = "onnx.Mul"(%[[F]], %{{.*}})
// CHECK: %[[B:.*]] = "onnx.Add"(%[[Y]], %{{.*}}) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>)
// CHECK: %[[R:.*]] = "onnx.DequantizeLinear"(%[[RQ]], %[[RS]], %[[RZ]])
// CHECK: %[[S:.*]] = "onnx.Add"(%[[B]], %[[R]]) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
// CHECK: %[[A:.*]] = "onnx.Relu"(%[[S]])
// CHECK: "onnx.QuantizeLinear"(%[[A]], %[[ONE]],
// CHECK-NOT: "onnx.Conv"
func.func @conv_residual_relu(%x: tensor<1x2x4x4xui8>, %rq: tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xui8> {
  %sx = arith.constant dense<0.5> : tensor<f32>
  %w = arith.constant dense<1> : tensor<2x2x1x1xi8>
  %sw = arith.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %zw = arith.constant dense<0> : tensor<2xi8>
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %sr = arith.constant dense<0.125> : tensor<f32>
  %zr = arith.constant dense<3> : tensor<ui8>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<0> : tensor<ui8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %sx, %none) : (tensor<1x2x4x4xui8>, tensor<f32>, none) -> tensor<1x2x4x4xf32>
  %wf = "onnx.DequantizeLinear"(%w, %sw, %zw) <{axis = 0 : i64}> : (tensor<2x2x1x1xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2x1x1xf32>
  %rf = "onnx.DequantizeLinear"(%rq, %sr, %zr) : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %c = "onnx.Conv"(%xf, %wf, %b) <{group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %s = "onnx.Add"(%c, %rf) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = "onnx.Relu"(%s) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %q = "onnx.QuantizeLinear"(%r, %sy, %zy) : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  return %q : tensor<1x2x4x4xui8>
}

// -----

// The activation's zero point stays in the product where the product
// without it could reach 2^24 (255 * 600 * 127 here: its f32 conversion
// would round), and for a padded Conv (@conv_per_filter above); a 1x1 Conv
// without padding folds it.
// CHECK-LABEL: func.func @zero_point_kept
// CHECK: "onnx.MatMulInteger"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x600xui8>, tensor<600x2xi8>, tensor<ui8>, none)
// CHECK: "onnx.ConvInteger"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>, none, none)
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<1x2x4x4xf32>, tensor<f32>)
func.func @zero_point_kept(%x: tensor<2x600xui8>, %y: tensor<1x2x4x4xui8>) -> (tensor<2x2xf32>, tensor<1x2x4x4xf32>) {
  %s = arith.constant dense<0.5> : tensor<f32>
  %zx = arith.constant dense<5> : tensor<ui8>
  %w = arith.constant dense<127> : tensor<600x2xi8>
  %wc = arith.constant dense<1> : tensor<2x2x1x1xi8>
  %none = onnx.NoValue
  %xf = "onnx.DequantizeLinear"(%x, %s, %zx) : (tensor<2x600xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x600xf32>
  %wf = "onnx.DequantizeLinear"(%w, %s, %none) : (tensor<600x2xi8>, tensor<f32>, none) -> tensor<600x2xf32>
  %m = "onnx.MatMul"(%xf, %wf) : (tensor<2x600xf32>, tensor<600x2xf32>) -> tensor<2x2xf32>
  %yf = "onnx.DequantizeLinear"(%y, %s, %zx) : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %wcf = "onnx.DequantizeLinear"(%wc, %s, %none) : (tensor<2x2x1x1xi8>, tensor<f32>, none) -> tensor<2x2x1x1xf32>
  %c = "onnx.Conv"(%yf, %wcf, %none) <{group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  return %m, %c : tensor<2x2xf32>, tensor<1x2x4x4xf32>
}

// -----

// A LayerNormalization that only a QuantizeLinear reads: its Scale and B
// take the QuantizeLinear's 1 / 0.25, whose scale becomes 1 (no division
// an element). Not where the result has another reader, nor with a scale
// that is not a constant (@layer_norm_kept).
// CHECK-LABEL: func.func @layer_norm_quantized
// CHECK-DAG: %[[G:.*]] = arith.constant dense<[4.000000e+00, 8.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[2.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = "onnx.LayerNormalization"(%{{.*}}, %[[G]], %[[B]])
// CHECK: "onnx.QuantizeLinear"(%[[Y]], %[[ONE]], %{{.*}})
func.func @layer_norm_quantized(%x: tensor<3x2xf32>) -> tensor<3x2xui8> {
  %g = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<128> : tensor<ui8>
  %y, %m, %r = "onnx.LayerNormalization"(%x, %g, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, none, none)
  %q = "onnx.QuantizeLinear"(%y, %sy, %zy) : (tensor<3x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x2xui8>
  return %q : tensor<3x2xui8>
}

// -----

// CHECK-LABEL: func.func @layer_norm_kept
// CHECK-DAG: %[[G:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[SY:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = "onnx.LayerNormalization"(%{{.*}}, %[[G]], %{{.*}})
// CHECK: "onnx.QuantizeLinear"(%[[Y]], %[[SY]], %{{.*}})
// CHECK: %[[Y2:.*]], %{{.*}}, %{{.*}} = "onnx.LayerNormalization"(%{{.*}}, %[[G]], %{{.*}})
// CHECK: "onnx.QuantizeLinear"(%[[Y2]], %{{.*}}, %{{.*}})
func.func @layer_norm_kept(%x: tensor<3x2xf32>, %s: tensor<f32>) -> (tensor<3x2xui8>, tensor<3x2xf32>, tensor<3x2xui8>) {
  %g = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<128> : tensor<ui8>
  %y, %m, %r = "onnx.LayerNormalization"(%x, %g, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, none, none)
  %q = "onnx.QuantizeLinear"(%y, %sy, %zy) : (tensor<3x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x2xui8>
  %y2, %m2, %r2 = "onnx.LayerNormalization"(%y, %g, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, none, none)
  %q2 = "onnx.QuantizeLinear"(%y2, %s, %zy) : (tensor<3x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x2xui8>
  return %q, %y2, %q2 : tensor<3x2xui8>, tensor<3x2xf32>, tensor<3x2xui8>
}

// -----

// A product by a constant that only a QuantizeLinear reads (GELU's last
// product by 0.5 before an FFN's requantization): the constant takes the
// 1 / 0.25, the QuantizeLinear's scale becomes 1.
// CHECK-LABEL: func.func @product_quantized
// CHECK-DAG: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[M:.*]] = "onnx.Mul"(%{{.*}}, %[[C]])
// CHECK: "onnx.QuantizeLinear"(%[[M]], %[[ONE]], %{{.*}})
func.func @product_quantized(%x: tensor<3x2xf32>) -> tensor<3x2xui8> {
  %h = arith.constant dense<0.5> : tensor<f32>
  %sy = arith.constant dense<0.25> : tensor<f32>
  %zy = arith.constant dense<0> : tensor<ui8>
  %m = "onnx.Mul"(%x, %h) : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %q = "onnx.QuantizeLinear"(%m, %sy, %zy) : (tensor<3x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x2xui8>
  return %q : tensor<3x2xui8>
}
