// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

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
