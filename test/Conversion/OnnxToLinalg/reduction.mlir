// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// ReduceMean without keepdims: reduce (kept as size 1), divide, reshape.
// CHECK-LABEL: func @reduce_mean
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.divf
// CHECK: tensor.reshape {{.*}} -> tensor<4xf32>
func.func @reduce_mean(%x: tensor<4x6xf32>) -> tensor<4xf32> {
  %axes = arith.constant dense<[1]> : tensor<1xi64>
  %0 = "onnx.ReduceMean"(%x, %axes) {keepdims = 0 : i64} : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
