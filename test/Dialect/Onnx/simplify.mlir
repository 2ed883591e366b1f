// RUN: kiln-opt %s -split-input-file --kiln-onnx-simplify --canonicalize | FileCheck %s

// A Shape → Gather → Concat → Reshape chain on a static shape folds into a
// constant shape; the Reshape stays (its input is not constant).
// CHECK-LABEL: func @shape_chain
// CHECK-DAG: %[[S:.*]] = arith.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-NOT: onnx.Shape
// CHECK-NOT: onnx.Gather
// CHECK-NOT: onnx.Concat
// CHECK: "onnx.Reshape"(%{{.*}}, %[[S]])
func.func @shape_chain(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = "onnx.Shape"(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %d0 = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m = arith.constant dense<[12]> : tensor<1xi64>
  %shape = "onnx.Concat"(%d0, %m) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = "onnx.Reshape"(%x, %shape) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// -----

// A Shape of a dynamic input does not fold.
// CHECK-LABEL: func @shape_dynamic
// CHECK: onnx.Shape
func.func @shape_dynamic(%x: tensor<?x3xf32>) -> tensor<2xi64> {
  %s = "onnx.Shape"(%x) : (tensor<?x3xf32>) -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// -----

// Identities disappear.
// CHECK-LABEL: func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Identity"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %none = onnx.NoValue
  %1, %mask = "onnx.Dropout"(%0, %none, %none) : (tensor<2x3xf32>, none, none) -> (tensor<2x3xf32>, none)
  %2 = "onnx.Cast"(%1) {to = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %3 = "onnx.Mul"(%2, %one) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %zero = arith.constant dense<0.0> : tensor<3xf32>
  %4 = "onnx.Add"(%3, %zero) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = "onnx.Transpose"(%4) {perm = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %5 : tensor<2x3xf32>
}

// -----

// BatchNormalization folds into the Conv before it: W' = W·s, b' = b·s + t
// with s = scale/sqrt(var+eps) = 2 and t = bias - mean·s = 1 - 3·2 = -5
// (eps = 0 here to keep the numbers exact).
// CHECK-LABEL: func @bn_into_conv
// CHECK-DAG: %[[W:.*]] = arith.constant dense<2.000000e+00> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[-3.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK: %[[C:.*]] = "onnx.Conv"(%{{.*}}, %[[W]], %[[B]])
// CHECK-NOT: onnx.BatchNormalization
// CHECK: return %[[C]]
func.func @bn_into_conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %b = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = "onnx.Conv"(%x, %w, %b) : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = arith.constant dense<2.0> : tensor<2xf32>
  %bias = arith.constant dense<1.0> : tensor<2xf32>
  %mean = arith.constant dense<3.0> : tensor<2xf32>
  %var = arith.constant dense<1.0> : tensor<2xf32>
  %y, %rm, %rv = "onnx.BatchNormalization"(%c, %scale, %bias, %mean, %var) {epsilon = 0.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf32>, none, none)
  return %y : tensor<1x2x4x4xf32>
}

// -----

// A per-channel constant Mul after a Conv scales its weights and bias.
// CHECK-LABEL: func @mul_into_conv
// CHECK-DAG: arith.constant dense<{{\[}}[{{\[}}[3.000000e+00]]], {{\[}}[{{\[}}5.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK: onnx.Conv
// CHECK-NOT: onnx.Mul
func.func @mul_into_conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %none = onnx.NoValue
  %c = "onnx.Conv"(%x, %w, %none) : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %k = arith.constant dense<[[[3.0]], [[5.0]]]> : tensor<2x1x1xf32>
  %y = "onnx.Mul"(%c, %k) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Must NOT fold: the Conv result has another user, which needs the unscaled
// values.
// CHECK-LABEL: func @conv_two_users
// CHECK: onnx.Conv
// CHECK: onnx.BatchNormalization
func.func @conv_two_users(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %none = onnx.NoValue
  %c = "onnx.Conv"(%x, %w, %none) : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %s = arith.constant dense<2.0> : tensor<2xf32>
  %y, %rm, %rv = "onnx.BatchNormalization"(%c, %s, %s, %s, %s) : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf32>, none, none)
  return %y, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// BatchNormalization after Gemm (features on dim 1) folds into B and C.
// CHECK-LABEL: func @bn_into_gemm
// CHECK: "onnx.Gemm"
// CHECK-SAME: beta = 1.000000e+00
// CHECK-NOT: onnx.BatchNormalization
func.func @bn_into_gemm(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = arith.constant dense<0.5> : tensor<3x4xf32>
  %cb = arith.constant dense<0.25> : tensor<4xf32>
  %g = "onnx.Gemm"(%x, %w, %cb) {beta = 2.0 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = arith.constant dense<2.0> : tensor<4xf32>
  %z = arith.constant dense<0.0> : tensor<4xf32>
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %y, %rm, %rv = "onnx.BatchNormalization"(%g, %s, %z, %z, %one) {epsilon = 0.0 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, none, none)
  return %y : tensor<2x4xf32>
}
