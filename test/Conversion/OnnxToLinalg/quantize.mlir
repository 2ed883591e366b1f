// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// uint8 DequantizeLinear: bitcast to i8, zero-extended arithmetic.
// CHECK-LABEL: func @dequantize_u8
// CHECK: tensor.bitcast %{{.*}} : tensor<4xui8> to tensor<4xi8>
// CHECK: arith.extui
// CHECK: arith.mulf
func.func @dequantize_u8(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<4xf32> {
  %0 = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<4xui8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
