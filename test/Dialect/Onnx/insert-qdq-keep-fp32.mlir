// RUN: %python -c "import json; json.dump({'tensors': {'a': {'min': 0.0, 'max': 2.048, 'absmax': 2.048, 'hist': [1] * 2048}, 'b': {'min': 0.0, 'max': 20.48, 'absmax': 20.48, 'hist': [0] + [1000] * 100 + [0] * 1946 + [1]}, 'c': {'min': -1.0, 'max': 1.0, 'absmax': 1.0}}}, open('%t.json', 'w'))"
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax keep-fp32-count=1" | FileCheck %s --check-prefix=KEEP1
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax keep-fp32-count=2" | FileCheck %s --check-prefix=KEEP2
// RUN: kiln-opt %s --split-input-file --kiln-onnx-insert-qdq="ranges=%t.json method=minmax" | FileCheck %s --check-prefix=NONE

// kilnc --int8-keep-fp32=N: the N contractions of the largest estimated
// own error stay fp32. Each layer's estimate is sqrt(e_x + e_w), e the
// relative mean squared error of its quantized input (from the histogram)
// and weights:
//  - a: 2048 values spread evenly over [0, 2.048] (minmax: scale
//    2.048 / 255); rounding error scale^2 / 12 = 5.375e-6 for each but the
//    first bin (a Relu's zeros, exact), against E[x^2] = 2.048^2 / 3:
//    e_x = 3.843e-6;
//  - b: 100000 values below 1 and one outlier at 20.48, which sets the
//    step (20.48 / 255): e_x = 100001 * 5.375e-4 / 34762 = 1.546e-3;
//  - w: 1, 0.5 exact at scale 1 / 127, 0.25 -> 32 / 127 (0.25197):
//    e_w = 8.38e-6; v: 0.003 -> 0 and 0.004 -> 1 / 127 as well: 1.20e-5.
// mm_b: sqrt(1.546e-3 + 8.4e-6) = 0.0394, mm_v 0.00398, mm_a 0.00350.
// KEEP1: node = "mm_a", op = "MatMul", precision = "int8", {{.*}} sensitivity = 0.0034958{{[0-9]*}} : f64, sensitivity_rank = 3 : i64
// KEEP1-SAME: input_error = 0.0015463{{[0-9]*}} : f64, node = "mm_b", op = "MatMul", precision = "fp32", reason = "sensitivity: --int8-keep-fp32=1, rank 1 of 3, estimated rel L2 0.0394298", sensitivity = 0.03942{{[0-9]*}} : f64, sensitivity_rank = 1 : i64, weight_error = 8.378{{[0-9]*}}E-6 : f64
// KEEP1-SAME: node = "mm_v", op = "MatMul", precision = "int8", {{.*}} sensitivity = 0.0039807{{[0-9]*}} : f64, sensitivity_rank = 2 : i64, {{.*}} weight_error = 1.2003{{[0-9]*}}E-5 : f64
// KEEP1-LABEL: func.func @ranked
// KEEP1-SAME: %[[B:[^:]*]]: tensor<3x4xf32> {kiln.name = "b"}
// KEEP1: "onnx.MatMul"(%{{.*}}) {kiln.precision = "int8"}
// KEEP1: "onnx.MatMul"(%[[B]], %{{.*}}) {kiln.fp32_reason = "sensitivity: {{.*}}", kiln.precision = "fp32"}
// KEEP1: "onnx.MatMul"(%{{.*}}) {kiln.precision = "int8"}
// KEEP2-LABEL: func.func @ranked
// KEEP2: "onnx.MatMul"(%{{.*}}) {kiln.precision = "int8"}
// KEEP2: "onnx.MatMul"(%{{.*}}) {kiln.fp32_reason = "sensitivity: --int8-keep-fp32=2, rank 1 of 3, {{.*}}", kiln.precision = "fp32"}
// KEEP2: "onnx.MatMul"(%{{.*}}) {kiln.fp32_reason = "sensitivity: --int8-keep-fp32=2, rank 2 of 3, {{.*}}", kiln.precision = "fp32"}
// Without the option nothing is ranked.
// NONE-NOT: sensitivity
// NONE-LABEL: func.func @ranked
// NONE-COUNT-3: {kiln.precision = "int8"}
func.func @ranked(%a: tensor<3x4xf32> {kiln.name = "a"}, %b: tensor<3x4xf32> {kiln.name = "b"}) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [0.5, 0.25], [0.0, 0.0]]> : tensor<4x2xf32>
  %v = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [0.003, 0.004], [0.0, 0.0]]> : tensor<4x2xf32>
  %0 = "onnx.MatMul"(%a, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm_a")
  %1 = "onnx.MatMul"(%b, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm_b")
  %2 = "onnx.MatMul"(%a, %v) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm_v")
  return %0, %1, %2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// The ranking reads histograms: an activation recorded without one (an
// fp16 calibration's ranges) keeps its layer fp32, saying so, even where
// minmax alone could quantize it.
// KEEP1-LABEL: func.func @no_histogram
// KEEP1: "onnx.MatMul"(%{{.*}}) {kiln.fp32_reason = "calibration: input 'c' has no histogram, which --int8-keep-fp32 ranks by", kiln.precision = "fp32"}
// NONE-LABEL: func.func @no_histogram
// NONE: "onnx.MatMul"(%{{.*}}) {kiln.precision = "int8"}
func.func @no_histogram(%c: tensor<3x4xf32> {kiln.name = "c"}) -> tensor<3x2xf32> {
  %w = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [0.5, 0.25], [0.0, 0.0]]> : tensor<4x2xf32>
  %0 = "onnx.MatMul"(%c, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32> loc("mm_c")
  return %0 : tensor<3x2xf32>
}
