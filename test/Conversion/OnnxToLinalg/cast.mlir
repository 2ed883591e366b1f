// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// CHECK-LABEL: func @cast
// CHECK: arith.fptosi %{{.*}} : f32 to i64
func.func @cast(%a: tensor<4xf32>) -> tensor<4xi64> {
  %0 = "onnx.Cast"(%a) {to = 7 : i64} : (tensor<4xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Cast from unsigned reads the integer unsigned.
// CHECK-LABEL: func @cast_u32_to_f32
// CHECK: tensor.bitcast %{{.*}} : tensor<2xui32> to tensor<2xi32>
// CHECK: arith.uitofp %{{.*}} : i32 to f32
func.func @cast_u32_to_f32(%a: tensor<2xui32>) -> tensor<2xf32> {
  %0 = "onnx.Cast"(%a) {to = 1 : i64} : (tensor<2xui32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// f8 -> f32: the input is viewed as i8 and decoded with integer ops.
// CHECK-LABEL: func @cast_from_f8e4m3fn
// CHECK: tensor.bitcast %{{.*}} : tensor<4xf8E4M3FN> to tensor<4xi8>
// CHECK: linalg.generic
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: f8E4M3FN
func.func @cast_from_f8e4m3fn(%a: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
  %0 = "onnx.Cast"(%a) {to = 1 : i64} : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f16 -> f8: widened to f32, rounded on the bits to i8, viewed as f8.
// CHECK-LABEL: func @cast_to_f8e5m2
// CHECK: linalg.generic
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: tensor.bitcast %{{.*}} : tensor<2x3xi8> to tensor<2x3xf8E5M2>
func.func @cast_to_f8e5m2(%a: tensor<2x3xf16>) -> tensor<2x3xf8E5M2> {
  %0 = "onnx.Cast"(%a) {to = 19 : i64, saturate = 0 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf8E5M2>
  return %0 : tensor<2x3xf8E5M2>
}
