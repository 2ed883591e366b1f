// RUN: kiln-opt %s --kiln-expose-intermediates | FileCheck %s
// RUN: kiln-opt %s --kiln-expose-intermediates="nodes=relu,split:1" | FileCheck %s --check-prefix=SOME
// RUN: kiln-opt %s --kiln-expose-intermediates="nodes=nothere" 2>&1 | FileCheck %s --check-prefix=WARN

// Every float result of an onnx op becomes an extra output named by its node
// key (":I" for one result of several; "#2" for a repeated node name; the
// model output name "out" is reserved, so a node named "out" becomes "out#2").
// Values already returned and integer values (the shape) are not repeated.
// CHECK-LABEL: func @f
// CHECK-SAME: -> (tensor<2x4xf32> {kiln.name = "out"}, tensor<2x4xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "out#2"}, tensor<2x4xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "relu"}, tensor<2x4xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "relu#2"}, tensor<2x2xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "split:0"}, tensor<2x2xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "split:1"})
// CHECK: return %{{.*}}, %[[M:.*]], %[[R1:.*]], %[[R2:.*]], %[[S0:.*]], %[[S1:.*]] :
// SOME-LABEL: func @f
// SOME-SAME: -> (tensor<2x4xf32> {kiln.name = "out"}, tensor<2x4xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "relu"}, tensor<2x2xf32> {kiln.dim_names = ["", ""], kiln.exposed, kiln.name = "split:1"})
// WARN: warning: --expose-intermediates: no float value of node 'nothere'
func.func @f(%x: tensor<2x4xf32> {kiln.name = "x"}) -> (tensor<2x4xf32> {kiln.name = "out"}) {
  %w = arith.constant dense<1.0> : tensor<4x4xf32>
  %0 = "onnx.MatMul"(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("out")
  %1 = "onnx.Relu"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("relu")
  %2 = "onnx.Relu"(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("relu")
  %split = arith.constant dense<2> : tensor<2xi64>
  %3:2 = "onnx.Split"(%2, %split) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x2xf32>) loc("split")
  %s = "onnx.Shape"(%2) : (tensor<2x4xf32>) -> tensor<2xi64> loc("shape")
  %4 = "onnx.Concat"(%3#1, %3#0) {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32> loc("out_node")
  return %4 : tensor<2x4xf32>
}
