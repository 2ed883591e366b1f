// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Resize: constant scales (floor(in * scale)), constant sizes (stretch and
// not_larger), axes, run-time scales.
// CHECK-LABEL: func @resize
// CHECK: "onnx.Resize"{{.*}} -> tensor<?x3x8x12xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<?x3x5x7xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<1x3x5x8xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<1x3x?x?xf32>
func.func @resize(%x: tensor<?x3x4x5xf32>, %y: tensor<1x3x4x6xf32>, %rs: tensor<2xf32>) {
  %none = onnx.NoValue
  %scales = arith.constant dense<[1.0, 1.0, 2.0, 2.5]> : tensor<4xf32>
  %0 = "onnx.Resize"(%x, %none, %scales, %none) {mode = "linear"} : (tensor<?x3x4x5xf32>, none, tensor<4xf32>, none) -> tensor<*xf32>
  %sizes = arith.constant dense<[5, 7]> : tensor<2xi64>
  %1 = "onnx.Resize"(%x, %none, %none, %sizes) {axes = [2, 3]} : (tensor<?x3x4x5xf32>, none, none, tensor<2xi64>) -> tensor<*xf32>
  %sizes2 = arith.constant dense<[5, 9]> : tensor<2xi64>
  %2 = "onnx.Resize"(%y, %none, %none, %sizes2) {axes = [2, 3], keep_aspect_ratio_policy = "not_larger"} : (tensor<1x3x4x6xf32>, none, none, tensor<2xi64>) -> tensor<*xf32>
  %3 = "onnx.Resize"(%y, %none, %rs, %none) {axes = [-2, -1]} : (tensor<1x3x4x6xf32>, none, tensor<2xf32>, none) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @grid
// CHECK: "onnx.GridSample"{{.*}} -> tensor<2x3x5x?xf32>
// CHECK: "onnx.AffineGrid"{{.*}} -> tensor<2x8x9x2xf32>
// CHECK: "onnx.AffineGrid"{{.*}} -> tensor<2x?x?x?x3xf32>
func.func @grid(%x: tensor<?x3x4x4xf32>, %g: tensor<2x5x?x2xf32>, %t: tensor<2x2x3xf32>, %t3: tensor<2x3x4xf32>, %s: tensor<5xi64>) {
  %0 = "onnx.GridSample"(%x, %g) : (tensor<?x3x4x4xf32>, tensor<2x5x?x2xf32>) -> tensor<*xf32>
  %size = arith.constant dense<[2, 3, 8, 9]> : tensor<4xi64>
  %1 = "onnx.AffineGrid"(%t, %size) : (tensor<2x2x3xf32>, tensor<4xi64>) -> tensor<*xf32>
  %2 = "onnx.AffineGrid"(%t3, %s) : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<*xf32>
  return
}

// -----

// Resize sizes from shape arithmetic: Concat(Shape(x)[0:2], computed H, W)
// keeps the static channel count.
// CHECK-LABEL: func @resize_sizes_from_shape
// CHECK: "onnx.Resize"{{.*}} -> tensor<?x96x?x?xf32>
func.func @resize_sizes_from_shape(%x: tensor<?x96x?x?xf32>, %hw: tensor<2xi64>) {
  %none = onnx.NoValue
  %s = "onnx.Shape"(%x) {end = 2 : i64} : (tensor<?x96x?x?xf32>) -> tensor<*xi64>
  %sizes = "onnx.Concat"(%s, %hw) {axis = 0 : i64} : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %0 = "onnx.Resize"(%x, %none, %none, %sizes) {mode = "nearest"} : (tensor<?x96x?x?xf32>, none, none, tensor<*xi64>) -> tensor<*xf32>
  return
}
