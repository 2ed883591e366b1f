// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

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

// -----

// CHECK-LABEL: func @dequantize_f8
// CHECK-DAG: tensor.bitcast %{{.*}} : tensor<5xf8E4M3FN> to tensor<5xi8>
// CHECK-DAG: tensor.bitcast %{{.*}} : tensor<f8E4M3FN> to tensor<i8>
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @dequantize_f8(%x: tensor<5xf8E4M3FN>, %s: tensor<f32>, %z: tensor<f8E4M3FN>) -> tensor<5xf32> {
  %0 = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<5xf8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// CHECK-LABEL: func @quantize_f8
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: tensor.bitcast %{{.*}} : tensor<5xi8> to tensor<5xf8E5M2FNUZ>
func.func @quantize_f8(%x: tensor<5xf32>, %s: tensor<f32>, %z: tensor<f8E5M2FNUZ>) -> tensor<5xf8E5M2FNUZ> {
  %0 = "onnx.QuantizeLinear"(%x, %s, %z) {saturate = 1 : i64} : (tensor<5xf32>, tensor<f32>, tensor<f8E5M2FNUZ>) -> tensor<5xf8E5M2FNUZ>
  return %0 : tensor<5xf8E5M2FNUZ>
}
