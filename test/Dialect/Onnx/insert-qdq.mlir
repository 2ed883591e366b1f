// RUN: %python -c "import json; h=[1000 if i %% 2 == 0 else 10 for i in range(100)] + [0] * 1947 + [1]; json.dump({'tensors': {'x': {'min': -1.0, 'max': 3.0, 'absmax': 3.0}, 'relu': {'min': 0.0, 'max': 20.48, 'absmax': 20.48, 'hist': h}, 'y': {'min': -2.0, 'max': 2.0, 'absmax': 2.0}, 'down': {'min': -1.0, 'max': 1.55, 'absmax': 1.55}, 'pool:0': {'min': 0.0, 'max': 2.55, 'absmax': 2.55}}}, open('%t.json', 'w'))"
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=percentile:99.99" | FileCheck %s --check-prefix=PCT
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=entropy" | FileCheck %s --check-prefix=KL
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax exclude=mm2,Gemm" | FileCheck %s --check-prefix=EXCL
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax" --kiln-onnx-fuse-qdq --canonicalize | FileCheck %s --check-prefix=FUSED
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax quantize-residuals=0" | FileCheck %s --check-prefix=FLOATRES

// A MatMul's weights, per output column (axis 1) and symmetric:
// column 0 max |w| = 1.27 -> scale 0.01, column 1 max 2.54 -> scale 0.02,
// values rounded to [[127, 127], [-50, 50], [10, -127], [0, 1]]. Its
// activation x, calibrated to [-1, 3] (minmax): uint8 with scale 4 / 255
// and zero point round(1 / (4 / 255)) = 64, quantized once after its
// producer (here the function's argument) and shared by both MatMuls.
// CHECK: kiln.precision_plan = {calibration_method = "minmax", casts = 0 : i64, converted_bytes = 16 : i64, converted_constants = 2 : i64, nodes = [{calibrated = [-1.000000e+00, 3.000000e+00], input = "x", node = "mm1", op = "MatMul", precision = "int8", range = [-1.000000e+00, 3.000000e+00], scale = 0.015686275{{[0-9]*}} : f64, weight_channels = 2 : i64, weight_scales = [0.0099999997764825821, 0.019999999552965164], zero_point = 64 : i64}, {{.*}}node = "mm2", op = "MatMul", precision = "int8"{{.*}}}]
// CHECK-LABEL: func.func @matmuls
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>
// CHECK-DAG: %[[SX:.*]] = arith.constant dense<0.0156862754> : tensor<f32>
// CHECK-DAG: %[[ZX:.*]] = arith.constant dense<64> : tensor<ui8>
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[X]], %[[SX]], %[[ZX]]) <{axis = 1 : i64,{{.*}}> : (tensor<3x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<3x4xui8>
// CHECK: %[[DQ:.*]] = "onnx.DequantizeLinear"(%[[Q]], %[[SX]], %[[ZX]]) {{.*}} -> tensor<3x4xf32>
// CHECK-NOT: onnx.QuantizeLinear
// CHECK-DAG: %[[WQ:.*]] = arith.constant dense<{{\[\[}}127, 127], [-50, 50], [10, -127], [0, 1]]> : tensor<4x2xi8>
// CHECK-DAG: %[[SW:.*]] = arith.constant dense<[0.00999999977, 2.000000e-02]> : tensor<2xf32>
// CHECK-DAG: %[[ZW:.*]] = arith.constant dense<0> : tensor<2xi8>
// CHECK: %[[WF:.*]] = "onnx.DequantizeLinear"(%[[WQ]], %[[SW]], %[[ZW]]) <{axis = 1 : i64,{{.*}}> : (tensor<4x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<4x2xf32>
// CHECK: "onnx.MatMul"(%[[DQ]], %[[WF]]) {kiln.precision = "int8"}
// CHECK: "onnx.MatMul"(%[[DQ]], %{{.*}}) {kiln.precision = "int8"}
// percentile and entropy read histograms, which x's record lacks.
// PCT-LABEL: func.func @matmuls
// PCT: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "calibration: input 'x' has no histogram (ranges recorded for another precision: recalibrate with --precision=int8, or use --calibration-method=minmax)", kiln.precision = "fp32"}
// Excluded by name: mm2 keeps its float operands.
// EXCL-LABEL: func.func @matmuls
// EXCL: "onnx.MatMul"(%{{.*}}, %{{.*}}) {kiln.precision = "int8"}
// EXCL: "onnx.MatMul"(%[[X:.*]], %{{.*}}) {kiln.fp32_reason = "exclude: --int8-exclude=mm2", kiln.precision = "fp32"} : (tensor<3x4xf32>, tensor<4x2xf32>)
// The fused form: one integer product per MatMul, both reading the same
// uint8 activation (its zero point folded into each product's float bias).
// FUSED-LABEL: func.func @matmuls
// FUSED: %[[Q:.*]] = "onnx.QuantizeLinear"
// FUSED: "onnx.MatMulInteger"(%[[Q]], %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<3x4xui8>, tensor<4x2xi8>, none, none) -> tensor<3x2xi32>
// FUSED: "onnx.MatMulInteger"(%[[Q]],
// FUSED-NOT: "onnx.MatMul"(
func.func @matmuls(%x: tensor<3x4xf32> {kiln.name = "x"}) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = arith.constant dense<[[1.27, 2.54], [-0.5, 1.0], [0.1, -2.54], [0.0, 0.02]]> : tensor<4x2xf32>
  %w2 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %0 = "onnx.MatMul"(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm1")
  %1 = "onnx.MatMul"(%x, %w2) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm2")
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A Conv after a Relu: its filters per output channel (axis 0: max |w| 2.54
// and 1.27), its activation's range by the method from the histogram of
// the Relu's |x| (2048 bins over [0, 20.48]: 100 bins of values below 1
// and one outlier at 20.48). minmax keeps the outlier (scale 20.48 / 255);
// percentile 99.99 clips at the bin where 99.99% of the values are
// (1.0: scale 1 / 255); entropy at the threshold whose 8-bit histogram
// is closest to the measured one, well below the outlier. A Relu has no
// negative values: zero point 0, all 256 steps on [0, t]. The Gemm
// (transB: weights [N, K], channels along axis 0) reads a value with no
// calibration record and stays fp32.
// CHECK: range = [0.000000e+00, 2.048000e+01], scale = 0.080313{{[0-9]*}} : f64, weight_channels = 2 : i64, weight_scales = [0.0099999997764825821, 0.019999999552965164], zero_point = 0 : i64
// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[WQ:.*]] = "onnx.DequantizeLinear"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 0 : i64,{{.*}}> : (tensor<2x2x1x1xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2x1x1xf32>
// CHECK: %[[R:.*]] = "onnx.Relu"
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[R]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x2x4x4xui8>
// CHECK: %[[DQ:.*]] = "onnx.DequantizeLinear"(%[[Q]],
// CHECK: "onnx.Conv"(%[[DQ]], %[[WQ]], %{{.*}}) {{.*}}kiln.precision = "int8"
// CHECK: "onnx.Gemm"({{.*}}kiln.fp32_reason = "calibration: no range recorded for input 'flat'", kiln.precision = "fp32"
// PCT: calibration_method = "percentile:99.99", {{.*}}node = "conv", op = "Conv", precision = "int8", range = [0.000000e+00, 1.000000e+00], scale = 0.0039215688593685627 : f64
// PCT-LABEL: func.func @conv_relu
// KL: calibration_method = "entropy", {{.*}}node = "conv", op = "Conv", precision = "int8", range = [0.000000e+00, {{[0-4]\.[0-9]+}}e+00]
// KL-LABEL: func.func @conv_relu
// Fused: the Conv is a ConvInteger of the uint8 Relu and the int8 filters.
// FUSED-LABEL: func.func @conv_relu
// FUSED: %[[Q:.*]] = "onnx.QuantizeLinear"
// FUSED: "onnx.ConvInteger"(%[[Q]], %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x2x4x4xui8>, tensor<2x2x1x1xi8>, none, none) -> tensor<1x2x4x4xi32>
// FUSED-NOT: "onnx.Conv"(
// The Gemm excluded by op type: the same reason as any exclusion.
// EXCL-LABEL: func.func @conv_relu
// EXCL: "onnx.Gemm"({{.*}}kiln.fp32_reason = "exclude: --int8-exclude=Gemm"
func.func @conv_relu(%x: tensor<1x2x4x4xf32>) -> tensor<1x3xf32> {
  %w = arith.constant dense<[[[[2.54]], [[-1.0]]], [[[0.5]], [[-1.27]]]]> : tensor<2x2x1x1xf32>
  %b = arith.constant dense<[0.1, -0.1]> : tensor<2xf32>
  %g = arith.constant dense<0.5> : tensor<3x32xf32>
  %r = "onnx.Relu"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  %c = "onnx.Conv"(%r, %w, %b) {kernel_shape = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("conv")
  %f = "onnx.Flatten"(%c) {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32> loc("flat")
  %none = onnx.NoValue
  %y = "onnx.Gemm"(%f, %g, %none) {transB = 1 : i64} : (tensor<1x32xf32>, tensor<3x32xf32>, none) -> tensor<1x3xf32> loc("fc")
  return %y : tensor<1x3xf32>
}

// -----

// Weights that are not constants (a product of two activations) and a
// model that is quantized already stay as they are.
// CHECK-LABEL: func.func @not_taken
// CHECK: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "rule: weights are not constants", kiln.precision = "fp32"}
// CHECK: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "rule: already quantized", kiln.precision = "fp32"}
// CHECK-NOT: onnx.QuantizeLinear
func.func @not_taken(%x: tensor<3x4xf32> {kiln.name = "x"}, %y: tensor<4x2xf32> {kiln.name = "y"}, %q: tensor<4x2xi8>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %0 = "onnx.MatMul"(%x, %y) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("act_act")
  %s = arith.constant dense<0.5> : tensor<f32>
  %none = onnx.NoValue
  %wf = "onnx.DequantizeLinear"(%q, %s, %none) : (tensor<4x2xi8>, tensor<f32>, none) -> tensor<4x2xf32>
  %1 = "onnx.MatMul"(%x, %wf) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("qdq")
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A residual block's end: the Relu's value is read by the next Conv
// (quantized) and by the residual Add. The Add reads the same
// DequantizeLinear (a quantized residual stream): the Relu's only user is
// its QuantizeLinear, so its kernel writes uint8 only. The bias Add (a
// constant operand) is not a residual. quantize-residuals=0 keeps the
// Add on the float value.
// CHECK: kiln.precision_plan = {{.*}}residuals = 1 : i64
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.*]] = "onnx.Relu"
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"(%[[R]],
// CHECK: %[[DQ:.*]] = "onnx.DequantizeLinear"(%[[Q]],
// CHECK: %[[C:.*]] = "onnx.Conv"(%[[DQ]],
// CHECK: %[[B:.*]] = "onnx.Add"(%[[C]], %{{.*}}) :
// CHECK: "onnx.Add"(%[[B]], %[[DQ]])
// FLOATRES: kiln.precision_plan = {{.*}}residuals = 0 : i64
// FLOATRES-LABEL: func.func @residual
// FLOATRES: %[[R:.*]] = "onnx.Relu"
// FLOATRES: "onnx.Add"(%{{.*}}, %[[R]])
func.func @residual(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<[[[[2.54]], [[-1.0]]], [[[0.5]], [[-1.27]]]]> : tensor<2x2x1x1xf32>
  %bias = arith.constant dense<0.25> : tensor<1x2x4x4xf32>
  %r = "onnx.Relu"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
  %none = onnx.NoValue
  %c = "onnx.Conv"(%r, %w, %none) {kernel_shape = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32> loc("conv")
  %b = "onnx.Add"(%c, %bias) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("bias")
  %y = "onnx.Add"(%b, %r) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("res")
  return %y : tensor<1x2x4x4xf32>
}

// -----

// A stem: Relu -> MaxPool -> Conv. The pool's value is what the Conv reads
// quantized (minmax [0, 2.55]: scale 0.01, zero point 0); the Relu's
// value, read only by the pool, is quantized with the same scale and
// zero point, so that the pool runs on uint8 values (max commutes with
// the monotone quantization) and the Relu's kernel writes uint8. Fused:
// the MaxPool reads the Relu's QuantizeLinear and writes uint8, which the
// ConvInteger reads; no float pool is left.
// CHECK: kiln.precision_plan = {{.*}}pools = 1 : i64
// CHECK-LABEL: func.func @pool
// CHECK: %[[R:.*]] = "onnx.Relu"
// CHECK-DAG: %[[S:.*]] = arith.constant dense<0.00999999977> : tensor<f32>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0> : tensor<ui8>
// CHECK: %[[QR:.*]] = "onnx.QuantizeLinear"(%[[R]], %[[S]], %[[Z]]) {{.*}} -> tensor<1x2x4x4xui8>
// CHECK: %[[DR:.*]] = "onnx.DequantizeLinear"(%[[QR]], %[[S]], %[[Z]])
// CHECK: %[[P:.*]], %{{.*}} = "onnx.MaxPool"(%[[DR]])
// CHECK: %[[QP:.*]] = "onnx.QuantizeLinear"(%[[P]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x2x2x2xui8>
// CHECK: %[[DP:.*]] = "onnx.DequantizeLinear"(%[[QP]],
// CHECK: "onnx.Conv"(%[[DP]],
// FUSED-LABEL: func.func @pool
// FUSED: %[[QR:.*]] = "onnx.QuantizeLinear"({{.*}}) {{.*}} -> tensor<1x2x4x4xui8>
// FUSED: %[[P:.*]], %{{.*}} = "onnx.MaxPool"(%[[QR]]) {{.*}} : (tensor<1x2x4x4xui8>) -> (tensor<1x2x2x2xui8>, none)
// FUSED: "onnx.ConvInteger"(%[[P]],
// FUSED-NOT: "onnx.MaxPool"({{.*}}f32
// FLOATRES: kiln.precision_plan = {{.*}}pools = 1 : i64
func.func @pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = arith.constant dense<[[[[2.54]], [[-1.0]]], [[[0.5]], [[-1.27]]]]> : tensor<2x2x1x1xf32>
  %r = "onnx.Relu"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("stem_relu")
  %p, %i = "onnx.MaxPool"(%r) <{kernel_shape = [2, 2], strides = [2, 2]}> : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, none) loc("pool")
  %none = onnx.NoValue
  %c = "onnx.Conv"(%p, %w, %none) {kernel_shape = [1, 1]} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x2x2xf32> loc("conv")
  return %c : tensor<1x2x2x2xf32>
}

// -----

// The first block of a stage: the last convolution's value and the
// downsampling shortcut's, both int8 products read by the Add alone. The
// earlier one (the shortcut) is quantized over its own range (minmax
// [-1, 1.55]: scale 0.01, zero point 100), so that its kernel writes uint8;
// fused, the later product's epilogue adds it as a uint8 residual (a
// DequantizeLinear of scale 0.01 / 1: no QuantizeLinear after the Add
// here) and no float Add of two products is left.
// CHECK: kiln.precision_plan = {{.*}}shortcuts = 1 : i64
// CHECK-LABEL: func.func @shortcut
// CHECK: %[[D:.*]] = "onnx.Conv"({{.*}}) {{.*}}kiln.precision = "int8"
// CHECK-DAG: %[[S:.*]] = arith.constant dense<0.00999999977> : tensor<f32>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<100> : tensor<ui8>
// CHECK: %[[QD:.*]] = "onnx.QuantizeLinear"(%[[D]], %[[S]], %[[Z]]) {{.*}} -> tensor<1x2x4x4xui8>
// CHECK: %[[DD:.*]] = "onnx.DequantizeLinear"(%[[QD]], %[[S]], %[[Z]])
// CHECK: %[[C:.*]] = "onnx.Conv"({{.*}}) {{.*}}kiln.precision = "int8"
// CHECK: "onnx.Add"(%[[C]], %[[DD]])
// FUSED-LABEL: func.func @shortcut
// FUSED: "onnx.ConvInteger"
// FUSED: %[[QD:.*]] = "onnx.QuantizeLinear"({{.*}}) {{.*}} -> tensor<1x2x4x4xui8>
// FUSED: "onnx.ConvInteger"
// FUSED: %[[R:.*]] = "onnx.DequantizeLinear"(%[[QD]],
// FUSED: "onnx.Add"(%{{.*}}, %[[R]])
// FUSED-NOT: "onnx.Conv"(
// FLOATRES: kiln.precision_plan = {{.*}}shortcuts = 0 : i64
func.func @shortcut(%x: tensor<1x2x4x4xf32> {kiln.name = "x"}) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<[[[[2.54]], [[-1.0]]], [[[0.5]], [[-1.27]]]]> : tensor<2x2x1x1xf32>
  %none = onnx.NoValue
  %d = "onnx.Conv"(%x, %w, %none) {kernel_shape = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32> loc("down")
  %c = "onnx.Conv"(%x, %w, %none) {kernel_shape = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32> loc("conv3")
  %y = "onnx.Add"(%c, %d) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("res")
  return %y : tensor<1x2x4x4xf32>
}
