// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Comparisons and IsNaN give bool; variadic ops and Where broadcast.
// CHECK-LABEL: func @logic
// CHECK: "onnx.Less"{{.*}} -> tensor<2x3xi1>
// CHECK: "onnx.Equal"{{.*}} -> tensor<?x3xi1>
// CHECK: "onnx.Not"{{.*}} -> tensor<2x3xi1>
// CHECK: "onnx.IsNaN"{{.*}} -> tensor<2x3xi1>
// CHECK: "onnx.Max"{{.*}} -> tensor<4x2x3xf32>
// CHECK: "onnx.Where"{{.*}} -> tensor<2x3xf32>
// CHECK: "onnx.CastLike"{{.*}} -> tensor<2x3xui8>
func.func @logic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<?x1xf32>, %d: tensor<4x1x1xf32>, %u: tensor<1xui8>) {
  %0 = "onnx.Less"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<*xi1>
  %1 = "onnx.Equal"(%c, %b) : (tensor<?x1xf32>, tensor<3xf32>) -> tensor<*xi1>
  %2 = "onnx.Not"(%0) : (tensor<*xi1>) -> tensor<*xi1>
  %3 = "onnx.IsNaN"(%a) : (tensor<2x3xf32>) -> tensor<*xi1>
  %4 = "onnx.Max"(%a, %b, %d) : (tensor<2x3xf32>, tensor<3xf32>, tensor<4x1x1xf32>) -> tensor<*xf32>
  %5 = "onnx.Where"(%2, %a, %b) : (tensor<*xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  %6 = "onnx.CastLike"(%a, %u) : (tensor<2x3xf32>, tensor<1xui8>) -> tensor<*xui8>
  return
}
