// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// CHECK-LABEL: func @int_matmul
// CHECK: "onnx.MatMulInteger"{{.*}} -> tensor<3x?x5xi32>
// CHECK: "onnx.QLinearMatMul"{{.*}} -> tensor<?x5xui8>
func.func @int_matmul(%a: tensor<3x?x4xui8>, %b: tensor<4x5xi8>, %a2: tensor<?x4xui8>, %s: tensor<f32>, %za: tensor<ui8>, %zb: tensor<i8>, %zy: tensor<ui8>) {
  %none = onnx.NoValue
  %0 = "onnx.MatMulInteger"(%a, %b, %none, %none) : (tensor<3x?x4xui8>, tensor<4x5xi8>, none, none) -> tensor<*xi32>
  %1 = "onnx.QLinearMatMul"(%a2, %s, %za, %b, %s, %zb, %s, %zy) : (tensor<?x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x5xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>) -> tensor<*xui8>
  return
}
