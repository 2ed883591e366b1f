// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// Linear Resize of the two spatial dims: 2x2 taps, coordinates in f64.
// CHECK-LABEL: func @resize_linear
// CHECK: linalg.generic
// CHECK: math.ceil
// CHECK-COUNT-4: tensor.extract %{{.*}}[%{{.*}}] : tensor<1x1x2x2xf32>
// CHECK: arith.truncf
func.func @resize_linear(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %n = "onnx.NoValue"() : () -> none
  %s = arith.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %0 = "onnx.Resize"(%x, %n, %s, %n) {mode = "linear"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}
