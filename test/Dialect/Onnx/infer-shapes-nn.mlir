// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-onnx-infer-shapes | FileCheck %s

// LpPool like the other pools (dynamic spatial dims stay dynamic);
// GlobalMaxPool of any rank >= 2.
// CHECK-LABEL: func @pools
// CHECK: "onnx.LpPool"{{.*}} -> tensor<1x3x4x5xf32>
// CHECK: "onnx.LpPool"{{.*}} -> tensor<?x3x?x?xf32>
// CHECK: "onnx.GlobalMaxPool"{{.*}} -> tensor<2x5x1xf32>
// CHECK: "onnx.GlobalMaxPool"{{.*}} -> tensor<?x3x1x1xf32>
func.func @pools(%x: tensor<1x3x8x10xf32>, %y: tensor<?x3x?x?xf32>, %z: tensor<2x5x7xf32>) {
  %0 = "onnx.LpPool"(%x) {kernel_shape = [2, 2], strides = [2, 2], p = 2 : i64} : (tensor<1x3x8x10xf32>) -> tensor<*xf32>
  %1 = "onnx.LpPool"(%y) {kernel_shape = [3, 3], auto_pad = "SAME_UPPER"} : (tensor<?x3x?x?xf32>) -> tensor<*xf32>
  %2 = "onnx.GlobalMaxPool"(%z) : (tensor<2x5x7xf32>) -> tensor<*xf32>
  %3 = "onnx.GlobalMaxPool"(%y) : (tensor<?x3x?x?xf32>) -> tensor<*xf32>
  return
}
