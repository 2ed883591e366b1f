// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// ConvTranspose: s*(in-1) + output_padding + (k-1)*d + 1 - pads, groups,
// output_shape, SAME (in * s), dynamic spatial dims.
// CHECK-LABEL: func @conv_transpose
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x10x7xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x9x9xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x8x8xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x4x?x5xf32>
func.func @conv_transpose(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %d: tensor<?x2x?x3xf32>) {
  %none = onnx.NoValue
  %0 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], pads = [0, 1, 0, 1], output_padding = [1, 0]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %1 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], output_shape = [9, 9]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %2 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], auto_pad = "SAME_UPPER"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %3 = "onnx.ConvTranspose"(%d, %w, %none) {group = 2 : i64} : (tensor<?x2x?x3xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  return
}
