// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// NonMaxSuppression: the number of selected boxes is known only at run time.
// CHECK-LABEL: func @nms
// CHECK: "onnx.NonMaxSuppression"{{.*}} -> tensor<?x3xi64>
func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %m: tensor<1xi64>) {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.NonMaxSuppression"(%b, %s, %m, %n, %n) : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, none, none) -> tensor<*xi64>
  return
}

// -----

// Unique: without an axis the outputs are 1-D; inverse_indices has one
// entry per input element (per slice along the axis).
// CHECK-LABEL: func @unique
// CHECK: "onnx.Unique"{{.*}} -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
// CHECK: "onnx.Unique"{{.*}} -> (tensor<2x?xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
// CHECK: "onnx.Unique"{{.*}} -> (tensor<?xf32>, none, none, none)
func.func @unique(%x: tensor<2x3xf32>) {
  %0:4 = "onnx.Unique"(%x) : (tensor<2x3xf32>) -> (tensor<*xf32>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>)
  %1:4 = "onnx.Unique"(%x) {axis = -1 : i64} : (tensor<2x3xf32>) -> (tensor<*xf32>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>)
  %2:4 = "onnx.Unique"(%x) {sorted = 0 : i64} : (tensor<2x3xf32>) -> (tensor<*xf32>, none, none, none)
  return
}
