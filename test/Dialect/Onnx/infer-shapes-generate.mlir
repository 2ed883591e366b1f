// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Generators and broadcasting copies read constant shape operands.
// CHECK-LABEL: func @generate
// CHECK: "onnx.ConstantOfShape"{{.*}} -> tensor<2x5xi64>
// CHECK: "onnx.Expand"{{.*}} -> tensor<2x4x3xf32>
// CHECK: "onnx.Tile"{{.*}} -> tensor<8x3xf32>
// CHECK: "onnx.Range"{{.*}} -> tensor<3xi32>
// CHECK: "onnx.Range"{{.*}} -> tensor<?xi32>
// CHECK: "onnx.OneHot"{{.*}} -> tensor<10x4xf32>
// CHECK: "onnx.EyeLike"{{.*}} -> tensor<4x3xf64>
// CHECK: "onnx.Size"{{.*}} -> tensor<i64>
// CHECK: "onnx.Dropout"{{.*}} -> (tensor<4x3xf32>, tensor<4x3xi1>)
func.func @generate(%x: tensor<4x3xf32>, %i: tensor<4xi64>, %v: tensor<2xf32>, %n: tensor<i32>) {
  %shape = arith.constant dense<[2, 5]> : tensor<2xi64>
  %0 = "onnx.ConstantOfShape"(%shape) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<*xi64>
  %s3 = arith.constant dense<[2, 1, 1]> : tensor<3xi64>
  %1 = "onnx.Expand"(%x, %s3) : (tensor<4x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  %reps = arith.constant dense<[2, 1]> : tensor<2xi64>
  %2 = "onnx.Tile"(%x, %reps) : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  %start = arith.constant dense<1> : tensor<i32>
  %limit = arith.constant dense<10> : tensor<i32>
  %delta = arith.constant dense<3> : tensor<i32>
  %3 = "onnx.Range"(%start, %limit, %delta) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<*xi32>
  %4 = "onnx.Range"(%start, %n, %delta) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<*xi32>
  %depth = arith.constant dense<10> : tensor<i64>
  %5 = "onnx.OneHot"(%i, %depth, %v) {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>, tensor<2xf32>) -> tensor<*xf32>
  %6 = "onnx.EyeLike"(%x) {dtype = 11 : i64} : (tensor<4x3xf32>) -> tensor<*xf64>
  %7 = "onnx.Size"(%x) : (tensor<4x3xf32>) -> tensor<*xi64>
  %none = onnx.NoValue
  %8:2 = "onnx.Dropout"(%x, %none, %none) : (tensor<4x3xf32>, none, none) -> (tensor<*xf32>, tensor<*xi1>)
  return
}
