// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Quantization: the zero point's type, output_dtype, uint8 by default.
// CHECK-LABEL: func @quantize
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xi8>
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xui8>
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xui16>
// CHECK: "onnx.DequantizeLinear"{{.*}} -> tensor<?x4xf32>
// CHECK: "onnx.DequantizeLinear"{{.*}} -> tensor<?x4xf16>
// CHECK: "onnx.DynamicQuantizeLinear"{{.*}} -> (tensor<?x4xui8>, tensor<f32>, tensor<ui8>)
func.func @quantize(%x: tensor<?x4xf32>, %s: tensor<f32>, %z: tensor<i8>) {
  %none = onnx.NoValue
  %0 = "onnx.QuantizeLinear"(%x, %s, %z) : (tensor<?x4xf32>, tensor<f32>, tensor<i8>) -> tensor<*xi8>
  %1 = "onnx.QuantizeLinear"(%x, %s, %none) : (tensor<?x4xf32>, tensor<f32>, none) -> tensor<*xui8>
  %2 = "onnx.QuantizeLinear"(%x, %s, %none) {output_dtype = 4 : i64} : (tensor<?x4xf32>, tensor<f32>, none) -> tensor<*xui16>
  %3 = "onnx.DequantizeLinear"(%0, %s, %z) : (tensor<*xi8>, tensor<f32>, tensor<i8>) -> tensor<*xf32>
  %4 = "onnx.DequantizeLinear"(%0, %s, %z) {output_dtype = 10 : i64} : (tensor<*xi8>, tensor<f32>, tensor<i8>) -> tensor<*xf16>
  %5:3 = "onnx.DynamicQuantizeLinear"(%x) : (tensor<?x4xf32>) -> (tensor<*xui8>, tensor<*xf32>, tensor<*xui8>)
  return
}
