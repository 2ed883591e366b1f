// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// Split into two outputs along axis 1 with a constant split: two generics
// reading the input at an offset.
// CHECK-LABEL: func @split
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: onnx.Split
func.func @split(%x: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  %s = arith.constant dense<[2, 3]> : tensor<2xi64>
  %0:2 = "onnx.Split"(%x, %s) {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x3xf32>
}

// -----

// Reflect padding: the source index is folded into range, then clamped.
// CHECK-LABEL: func @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: tensor.extract
func.func @pad_reflect(%x: tensor<3x4xf32>) -> tensor<5x6xf32> {
  %p = arith.constant dense<[1, 1, 1, 1]> : tensor<4xi64>
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Pad"(%x, %p, %n, %n) {mode = "reflect"} : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}

// -----

// ScatterElements is a gather over the updates: a reduction loop per output
// (after the run-time check of its indices' range).
// CHECK-LABEL: func @scatter_elements
// CHECK: kiln.check
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.addf
func.func @scatter_elements(%x: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = "onnx.ScatterElements"(%x, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
