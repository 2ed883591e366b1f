// RUN: %python -c "import json; json.dump({'tensors': {'x': {'min': -1.0, 'max': 3.0, 'absmax': 3.0}, 'k': {'min': -2.0, 'max': 2.0, 'absmax': 2.0}, 'mm1': {'min': -4.0, 'max': 4.0, 'absmax': 4.0}, 'scores': {'min': -8.0, 'max': 8.0, 'absmax': 8.0}}}, open('%t.json', 'w'))"
// RUN: kiln-opt %s --kiln-onnx-insert-qdq="ranges=%t.json method=minmax exclude=mm3" --kiln-onnx-fuse-qdq --canonicalize --kiln-mixed-precision="precision=fp16 ranges=%t.json" | FileCheck %s

// --precision=int8 --int8-float=fp16 (docs/int8.md): after the weights'
// product mm1 became an integer product, kiln-mixed-precision decides the
// float rest. The product of two activations (an attention's Q Kt, which
// int8 leaves in float, and insert-qdq marked fp32 for its rule) becomes
// an fp16 product; mm3, excluded from int8,
// stays fp32 for the reason insert-qdq gave; mm1's requantization (the
// int32 sums' Cast and rescaling) stays fp32 (it follows its fp32
// inputs: the sums would overflow half). The int8 plan keeps its place
// (kiln.precision_plan) and the float rest's plan is
// kiln.float_precision_plan.
// CHECK-DAG: kiln.float_precision_plan = {casts = {{[1-9][0-9]*}} : i64, {{.*}}nodes = [{{.*}}{node = "scores", op = "MatMul", precision = "fp16"}{{.*}}{node = "mm3", op = "MatMul", precision = "fp32", reason = "exclude: --int8-exclude=mm3"}{{.*}}], precision = "fp16"}
// CHECK-DAG: kiln.precision_plan = {calibration_method = "minmax", {{.*}}precision = "int8", residuals = 0 : i64, shortcuts = 0 : i64}
// CHECK-LABEL: func.func @int8_with_fp16_rest
// CHECK: %[[ACC:.*]] = "onnx.MatMulInteger"
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[ACC]]) {{.*}} -> tensor<3x2xf32>
// CHECK: "onnx.Mul"(%[[F]], {{.*}}) {{.*}}kiln.precision = "fp32"{{.*}} -> tensor<3x2xf32>
// CHECK: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"} : (tensor<3x2xf16>, tensor<2x3xf16>) -> tensor<3x3xf16>
// CHECK: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "exclude: --int8-exclude=mm3", kiln.precision = "fp32"} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
func.func @int8_with_fp16_rest(%x: tensor<3x4xf32> {kiln.name = "x"}, %k: tensor<2x3xf32> {kiln.name = "k"}) -> (tensor<3x3xf32>, tensor<3x2xf32>) {
  %w = arith.constant dense<[[1.27, 2.54], [-0.5, 1.0], [0.1, -2.54], [0.0, 0.02]]> : tensor<4x2xf32>
  %w3 = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %0 = "onnx.MatMul"(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm1")
  %1 = "onnx.MatMul"(%0, %k) : (tensor<3x2xf32>, tensor<2x3xf32>) -> tensor<3x3xf32> loc("scores")
  %2 = "onnx.MatMul"(%x, %w3) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm3")
  return %1, %2 : tensor<3x3xf32>, tensor<3x2xf32>
}
