// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Col2Im gathers: each image element reduces over the block offsets.
// CHECK-LABEL: func @col2im
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK: tensor.extract %{{.*}} : tensor<1x9x4xf32>
// CHECK: arith.addf
func.func @col2im(%x: tensor<1x9x4xf32>, %i: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<1x1x5x5xf32> {
  %0 = "onnx.Col2Im"(%x, %i, %b) {strides = [2, 2]} : (tensor<1x9x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x5x5xf32>
  return %0 : tensor<1x1x5x5xf32>
}

// -----

// MaxUnpool selects the input whose index is the output's flat position.
// CHECK-LABEL: func @maxunpool
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: tensor.extract %{{.*}} : tensor<1x1x2x2xi64>
// CHECK: arith.select
func.func @maxunpool(%x: tensor<1x1x2x2xf32>, %i: tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.MaxUnpool"(%x, %i, %none) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}
