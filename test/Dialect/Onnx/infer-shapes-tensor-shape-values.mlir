// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-onnx-infer-shapes | FileCheck %s

// Shapes computed from Shape / Gather / Slice / Concat / Unsqueeze / Cast and
// integer arithmetic keep what they know: the static channel count of a
// Reshape target, a -1 whose dynamic dims cancel, Expand / ConstantOfShape /
// Tile sizes from the same arithmetic.
// CHECK-LABEL: func @reshape_through_shape
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x64x?xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x3136xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x4x16x?x?xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?xf32>
func.func @reshape_through_shape(%x: tensor<?x64x?x?xf32>, %y: tensor<?x64x7x7xf32>, %other: tensor<?x5xf32>) {
  %none = onnx.NoValue
  %s = "onnx.Shape"(%x) : (tensor<?x64x?x?xf32>) -> tensor<*xi64>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %cm1 = arith.constant dense<-1> : tensor<1xi64>
  %n = "onnx.Gather"(%s, %c0) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %c = "onnx.Gather"(%s, %c1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  // [N, 64, -1]
  %t0 = "onnx.Concat"(%n, %c, %cm1) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %0 = "onnx.Reshape"(%x, %t0) : (tensor<?x64x?x?xf32>, tensor<*xi64>) -> tensor<*xf32>
  // [N, -1] of [N, 64, 7, 7]: the -1 is 3136.
  %sy = "onnx.Shape"(%y) {end = 1 : i64} : (tensor<?x64x7x7xf32>) -> tensor<*xi64>
  %t1 = "onnx.Concat"(%sy, %cm1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %1 = "onnx.Reshape"(%y, %t1) : (tensor<?x64x7x7xf32>, tensor<*xi64>) -> tensor<*xf32>
  // [N, C / 16, 16, H, W] with C / 16 computed by Div and the tail sliced.
  %c16 = arith.constant dense<16> : tensor<1xi64>
  %g = "onnx.Div"(%c, %c16) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c4 = arith.constant dense<4> : tensor<1xi64>
  %hw = "onnx.Slice"(%s, %c2, %c4, %none, %none) : (tensor<*xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<*xi64>
  %t2 = "onnx.Concat"(%n, %g, %c16, %hw) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<1xi64>, tensor<*xi64>) -> tensor<*xi64>
  %2 = "onnx.Reshape"(%x, %t2) : (tensor<?x64x?x?xf32>, tensor<*xi64>) -> tensor<*xf32>
  // A -1 next to another value's dynamic dim stays dynamic.
  %so = "onnx.Shape"(%other) {end = 1 : i64} : (tensor<?x5xf32>) -> tensor<*xi64>
  %t3 = "onnx.Concat"(%so, %cm1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %3 = "onnx.Reshape"(%y, %t3) : (tensor<?x64x7x7xf32>, tensor<*xi64>) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @expand_fill_tile
// CHECK: "onnx.Expand"{{.*}} -> tensor<?x8x?xf32>
// CHECK: "onnx.ConstantOfShape"{{.*}} -> tensor<?x8xf32>
// CHECK: "onnx.Tile"{{.*}} -> tensor<?x24xf32>
func.func @expand_fill_tile(%x: tensor<?x1x?xf32>, %v: tensor<?x8xf32>) {
  %sx = "onnx.Shape"(%x) : (tensor<?x1x?xf32>) -> tensor<*xi64>
  %c0 = arith.constant dense<0> : tensor<i64>
  %c8 = arith.constant dense<8> : tensor<1xi64>
  %n = "onnx.Gather"(%sx, %c0) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %ax = arith.constant dense<0> : tensor<1xi64>
  %n1 = "onnx.Unsqueeze"(%n, %ax) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %one = arith.constant dense<1> : tensor<1xi64>
  %t = "onnx.Concat"(%n1, %c8, %one) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  %0 = "onnx.Expand"(%x, %t) : (tensor<?x1x?xf32>, tensor<*xi64>) -> tensor<*xf32>
  %sv = "onnx.Shape"(%v) : (tensor<?x8xf32>) -> tensor<*xi64>
  %1 = "onnx.ConstantOfShape"(%sv) : (tensor<*xi64>) -> tensor<*xf32>
  %c3 = arith.constant dense<3> : tensor<1xi64>
  %r = "onnx.Concat"(%one, %c3) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  %rc = "onnx.Cast"(%r) {to = 7 : i64} : (tensor<*xi64>) -> tensor<*xi64>
  %2 = "onnx.Tile"(%v, %rc) : (tensor<?x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return
}

// -----

// A static element that cannot hold the input's elements is an error (the
// batch dims cancel: 64 x 7 x 7 elements per row, not 3000).
func.func @reshape_mismatch(%y: tensor<?x64x7x7xf32>) {
  %s = "onnx.Shape"(%y) {end = 1 : i64} : (tensor<?x64x7x7xf32>) -> tensor<*xi64>
  %c = arith.constant dense<3000> : tensor<1xi64>
  %t = "onnx.Concat"(%s, %c) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  // expected-error @+1 {{cannot reshape 'tensor<?x64x7x7xf32>' (3136 elements besides the dims they share) to shape [?, 3000]}}
  %0 = "onnx.Reshape"(%y, %t) : (tensor<?x64x7x7xf32>, tensor<*xi64>) -> tensor<*xf32>
  return
}
