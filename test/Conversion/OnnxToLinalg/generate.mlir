// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Trilu keeps j - i >= k (upper) and zeroes the rest.
// CHECK-LABEL: func @triu
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @triu(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Trilu"(%x, %none) : (tensor<2x3x4xf32>, none) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
