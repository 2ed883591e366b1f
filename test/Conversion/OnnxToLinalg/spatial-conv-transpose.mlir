// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// ConvTranspose in gather form with a guarded input read.
// CHECK-LABEL: func @conv_transpose
// CHECK: linalg.generic
// CHECK: arith.remui
// CHECK: tensor.extract
// CHECK: arith.select
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.ConvTranspose"(%x, %w, %n) {strides = [2, 2]} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, none) -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}
