// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// Round trip of representative onnx ops: NoValue for a missing optional
// input, default-valued and list attributes, a variadic op, ops with
// optional/variadic results, and ops with regions ended by onnx.Yield.

// CHECK-LABEL: func @conv_no_bias
// CHECK: %[[NONE:.*]] = onnx.NoValue
// CHECK: "onnx.Conv"(%{{.*}}, %{{.*}}, %[[NONE]]) <{auto_pad = "NOTSET", dilations = [1, 1], group = 1 : i64, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
func.func @conv_no_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %none = onnx.NoValue
  %y = "onnx.Conv"(%x, %w, %none) {dilations = [1, 1], group = 1 : i64, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func @elementwise
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: "onnx.LeakyRelu"(%{{.*}}) <{alpha = 1.000000e-01 : f32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: "onnx.Relu"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "onnx.LeakyRelu"(%0) {alpha = 0.1 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "onnx.Relu"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// A variadic operand (Concat, Max) and a variadic result (Split).
// CHECK-LABEL: func @variadic
// CHECK: "onnx.Concat"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK: "onnx.Max"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: %{{.*}}:3 = "onnx.Split"(%{{.*}}, %{{.*}}) <{axis = 1 : i64, num_outputs = 3 : i64}> : (tensor<2x3xf32>, none) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x?xf32>, %d: tensor<3xf32>) -> tensor<2x?xf32> {
  %0 = "onnx.Concat"(%a, %b, %c) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %1 = "onnx.Max"(%a, %a, %d) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %none = onnx.NoValue
  %2:3 = "onnx.Split"(%a, %none) {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x3xf32>, none) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0 : tensor<2x?xf32>
}

// Optional results: MaxPool without Indices, Dropout without mask. Attributes
// with a schema default are filled in by the parser.
// CHECK-LABEL: func @optional_results
// CHECK: "onnx.MaxPool"(%{{.*}}) <{auto_pad = "NOTSET", ceil_mode = 0 : i64, kernel_shape = [2, 2], storage_order = 0 : i64, strides = [2, 2]}> : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, none)
// CHECK: "onnx.Dropout"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x1x2x2xf32>, none, none) -> (tensor<1x1x2x2xf32>, none)
func.func @optional_results(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, none)
  %none = onnx.NoValue
  %z, %m = "onnx.Dropout"(%y, %none, %none) : (tensor<1x1x2x2xf32>, none, none) -> (tensor<1x1x2x2xf32>, none)
  return %z : tensor<1x1x2x2xf32>
}

// Regions: If with then/else branches, Loop with a body taking arguments.
// CHECK-LABEL: func @regions
// CHECK: "onnx.If"(%{{.*}}) ({
// CHECK:   onnx.Yield %{{.*}} : tensor<2xf32>
// CHECK: }, {
// CHECK:   "onnx.Neg"
// CHECK:   onnx.Yield %{{.*}} : tensor<2xf32>
// CHECK: }) : (tensor<i1>) -> tensor<2xf32>
// CHECK: "onnx.Loop"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %{{.*}}: tensor<2xf32>):
// CHECK:   onnx.Yield %{{.*}}, %{{.*}} : tensor<i1>, tensor<2xf32>
// CHECK: }) : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
func.func @regions(%c: tensor<i1>, %x: tensor<2xf32>, %n: tensor<i64>) -> tensor<2xf32> {
  %0 = "onnx.If"(%c) ({
    onnx.Yield %x : tensor<2xf32>
  }, {
    %neg = "onnx.Neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    onnx.Yield %neg : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  %1 = "onnx.Loop"(%n, %c, %0) ({
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<2xf32>):
    %s = "onnx.Add"(%v, %v) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    onnx.Yield %cond, %s : tensor<i1>, tensor<2xf32>
  }) : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// Attribute kinds: strings, ints, floats lists, tensor, type.
// CHECK-LABEL: func @attributes
// CHECK: "onnx.Constant"() <{value = dense<[1, 2]> : tensor<2xi64>}> : () -> tensor<2xi64>
// CHECK: "onnx.Cast"(%{{.*}}) <{round_mode = "up", saturate = 1 : i64, to = 10 : i64}> : (tensor<2xf32>) -> tensor<2xf16>
// CHECK: "onnx.Resize"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{{{.*}}mode = "linear"{{.*}}}>
// CHECK: "onnx.Gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}>
func.func @attributes(%x: tensor<2xf32>, %img: tensor<1x1x2x2xf32>, %a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2xf16> {
  %0 = "onnx.Constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<2xf32>) -> tensor<2xf16>
  %none = onnx.NoValue
  %scales = arith.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %2 = "onnx.Resize"(%img, %none, %scales, %none) {mode = "linear"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  %3 = "onnx.Gemm"(%a, %b, %none) {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, none) -> tensor<2x4xf32>
  return %1 : tensor<2xf16>
}
