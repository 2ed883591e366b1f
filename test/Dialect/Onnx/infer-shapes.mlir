// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Elementwise: unary ops keep the type; binaries broadcast numpy-style,
// dynamic dims included.
// CHECK-LABEL: func @elementwise
// CHECK: "onnx.Add"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.Mul"{{.*}} -> tensor<3x1xf32>
// CHECK: "onnx.Sub"{{.*}} -> tensor<5x?xf32>
// CHECK: "onnx.Relu"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.Clip"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.Pow"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.Div"{{.*}} -> tensor<*xf32>
func.func @elementwise(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>, %c: tensor<?x1xf32>, %d: tensor<5x?xf32>, %e: tensor<1xf32>, %u: tensor<*xf32>) {
  %0 = "onnx.Add"(%a, %b) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<*xf32>
  %1 = "onnx.Mul"(%c, %b) : (tensor<?x1xf32>, tensor<3x1xf32>) -> tensor<*xf32>
  %2 = "onnx.Sub"(%d, %e) : (tensor<5x?xf32>, tensor<1xf32>) -> tensor<?x?xf32>
  %3 = "onnx.Relu"(%0) : (tensor<*xf32>) -> tensor<*xf32>
  %min = arith.constant dense<0.0> : tensor<f32>
  %none = onnx.NoValue
  %4 = "onnx.Clip"(%3, %min, %none) : (tensor<*xf32>, tensor<f32>, none) -> tensor<*xf32>
  %exp = arith.constant dense<2> : tensor<i64>
  %5 = "onnx.Pow"(%4, %exp) : (tensor<*xf32>, tensor<i64>) -> tensor<*xf32>
  %6 = "onnx.Div"(%5, %u) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// Conv with pads/strides/dilations/group, auto_pad, and a dynamic batch.
// CHECK-LABEL: func @conv
// CHECK: "onnx.Conv"{{.*}} -> tensor<?x16x16x16xf32>
// CHECK: "onnx.Conv"{{.*}} -> tensor<1x8x8x7xf32>
// CHECK: "onnx.Conv"{{.*}} -> tensor<1x8x12x11xf32>
// CHECK: "onnx.Conv"{{.*}} -> tensor<1x8x?x11xf32>
func.func @conv(%x: tensor<?x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
                %x2: tensor<1x4x12x11xf32>, %w2: tensor<8x2x3x3xf32>, %x3: tensor<1x4x?x11xf32>) {
  %0 = "onnx.Conv"(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<*xf32>
  %none = onnx.NoValue
  // Effective kernel (3 - 1) * 2 + 1 = 5: 12 - 5 + 1 = 8, 11 - 5 + 1 = 7.
  %1 = "onnx.Conv"(%x2, %w2, %none) {group = 2 : i64, dilations = [2, 2], strides = [1, 1], pads = [0, 0, 0, 0], kernel_shape = [3, 3]} : (tensor<1x4x12x11xf32>, tensor<8x2x3x3xf32>, none) -> tensor<*xf32>
  %2 = "onnx.Conv"(%x2, %w2, %none) {group = 2 : i64, auto_pad = "SAME_UPPER"} : (tensor<1x4x12x11xf32>, tensor<8x2x3x3xf32>, none) -> tensor<*xf32>
  %3 = "onnx.Conv"(%x3, %w2, %none) {group = 2 : i64, auto_pad = "SAME_LOWER"} : (tensor<1x4x?x11xf32>, tensor<8x2x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

// Pools (ceil_mode, SAME/VALID), global pool, batch norm.
// CHECK-LABEL: func @pool_and_norm
// CHECK: "onnx.MaxPool"{{.*}} -> (tensor<1x3x16x16xf32>, none)
// CHECK: "onnx.MaxPool"{{.*}} -> (tensor<1x3x3x3xf32>, tensor<1x3x3x3xi64>)
// CHECK: "onnx.AveragePool"{{.*}} -> tensor<1x3x2x2xf32>
// CHECK: "onnx.AveragePool"{{.*}} -> tensor<1x3x3x3xf32>
// CHECK: "onnx.GlobalAveragePool"{{.*}} -> tensor<1x3x1x1xf32>
// CHECK: "onnx.BatchNormalization"{{.*}} -> (tensor<1x3x32x32xf32>, none, none)
func.func @pool_and_norm(%x: tensor<1x3x32x32xf32>, %y: tensor<1x3x5x5xf32>, %s: tensor<3xf32>) {
  %0:2 = "onnx.MaxPool"(%x) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x3x32x32xf32>) -> (tensor<*xf32>, none)
  // ceil((5 - 2) / 2) + 1 = 3.
  %1:2 = "onnx.MaxPool"(%y) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1 : i64} : (tensor<1x3x5x5xf32>) -> (tensor<*xf32>, tensor<*xi64>)
  %2 = "onnx.AveragePool"(%y) {kernel_shape = [3, 3], strides = [2, 2], auto_pad = "VALID"} : (tensor<1x3x5x5xf32>) -> tensor<*xf32>
  %3 = "onnx.AveragePool"(%y) {kernel_shape = [3, 3], strides = [2, 2], auto_pad = "SAME_UPPER"} : (tensor<1x3x5x5xf32>) -> tensor<*xf32>
  %4 = "onnx.GlobalAveragePool"(%x) : (tensor<1x3x32x32xf32>) -> tensor<*xf32>
  %5:3 = "onnx.BatchNormalization"(%x, %s, %s, %s, %s) : (tensor<1x3x32x32xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<*xf32>, none, none)
  return
}

// -----

// Reshape (0, -1, from a dense_resource constant, non-constant shape),
// Flatten, Transpose.
// CHECK-LABEL: func @reshape_flatten_transpose
// CHECK: "onnx.Reshape"{{.*}} -> tensor<2x12xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<4x?x6xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<6x4xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?x?xf32>
// CHECK: "onnx.Flatten"{{.*}} -> tensor<6x4xf32>
// CHECK: "onnx.Flatten"{{.*}} -> tensor<?x12xf32>
// CHECK: "onnx.Transpose"{{.*}} -> tensor<4x3x2xf32>
// CHECK: "onnx.Transpose"{{.*}} -> tensor<?x4x3xf32>
func.func @reshape_flatten_transpose(%x: tensor<2x3x4xf32>, %d: tensor<4x?x6xf32>, %s: tensor<3xi64>, %dyn: tensor<?x3x4xf32>) {
  %shape = arith.constant dense<[0, -1]> : tensor<2xi64>
  %0 = "onnx.Reshape"(%x, %shape) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %shape2 = arith.constant dense<[0, -1, 6]> : tensor<3xi64>
  %1 = "onnx.Reshape"(%d, %shape2) : (tensor<4x?x6xf32>, tensor<3xi64>) -> tensor<*xf32>
  %shape3 = arith.constant dense_resource<shape64> : tensor<2xi64>
  %2 = "onnx.Reshape"(%x, %shape3) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %3 = "onnx.Reshape"(%x, %s) : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<*xf32>
  %4 = "onnx.Flatten"(%x) {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  %5 = "onnx.Flatten"(%dyn) : (tensor<?x3x4xf32>) -> tensor<*xf32>
  %6 = "onnx.Transpose"(%x) : (tensor<2x3x4xf32>) -> tensor<*xf32>
  %7 = "onnx.Transpose"(%dyn) {perm = [0, 2, 1]} : (tensor<?x3x4xf32>) -> tensor<?x?x?xf32>
  return
}

{-#
  dialect_resources: {
    builtin: {
      // Alignment 8, then the i64 values 6 and -1.
      shape64: "0x080000000600000000000000FFFFFFFFFFFFFFFF"
    }
  }
#-}

// -----

// Concat, Squeeze/Unsqueeze with constant axes (or none), Gather.
// CHECK-LABEL: func @concat_squeeze_gather
// CHECK: "onnx.Concat"{{.*}} -> tensor<2x7xf32>
// CHECK: "onnx.Concat"{{.*}} -> tensor<2x?xf32>
// CHECK: "onnx.Squeeze"{{.*}} -> tensor<3xf32>
// CHECK: "onnx.Squeeze"{{.*}} -> tensor<1x3xf32>
// CHECK: "onnx.Unsqueeze"{{.*}} -> tensor<1x2x1x7xf32>
// CHECK: "onnx.Gather"{{.*}} -> tensor<2x5x6xf32>
// CHECK: "onnx.Gather"{{.*}} -> tensor<7xf32>
func.func @concat_squeeze_gather(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %c: tensor<?x?xf32>, %s: tensor<1x3x1xf32>, %i: tensor<5x6xi64>, %j: tensor<i64>) {
  %0 = "onnx.Concat"(%a, %b) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<*xf32>
  %1 = "onnx.Concat"(%a, %c) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<?x?xf32>) -> tensor<*xf32>
  %none = onnx.NoValue
  %2 = "onnx.Squeeze"(%s, %none) : (tensor<1x3x1xf32>, none) -> tensor<*xf32>
  %axes = arith.constant dense<[-1]> : tensor<1xi64>
  %3 = "onnx.Squeeze"(%s, %axes) : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<*xf32>
  %axes2 = arith.constant dense<[0, 2]> : tensor<2xi64>
  %4 = "onnx.Unsqueeze"(%0, %axes2) : (tensor<*xf32>, tensor<2xi64>) -> tensor<*xf32>
  %5 = "onnx.Gather"(%0, %i) {axis = 1 : i64} : (tensor<*xf32>, tensor<5x6xi64>) -> tensor<*xf32>
  %6 = "onnx.Gather"(%0, %j) : (tensor<*xf32>, tensor<i64>) -> tensor<*xf32>
  return
}

// -----

// Slice with negative, clamped and INT64_MAX bounds, negative steps,
// non-constant bounds; Shape with start/end; Cast.
// CHECK-LABEL: func @slice_shape_cast
// CHECK: "onnx.Slice"{{.*}} -> tensor<10x2x7xf32>
// CHECK: "onnx.Slice"{{.*}} -> tensor<5x4x7xf32>
// CHECK: "onnx.Slice"{{.*}} -> tensor<10x?x7xf32>
// CHECK: "onnx.Slice"{{.*}} -> tensor<?x?x?xf32>
// CHECK: "onnx.Shape"{{.*}} -> tensor<3xi64>
// CHECK: "onnx.Shape"{{.*}} -> tensor<1xi64>
// CHECK: "onnx.Cast"{{.*}} -> tensor<10x?x7xf16>
func.func @slice_shape_cast(%x: tensor<10x4x7xf32>, %d: tensor<10x?x7xf32>, %st: tensor<1xi64>) {
  %none = onnx.NoValue
  // Axis 1: start -2 -> 2, end INT64_MAX -> 4: 2 elements.
  %s0 = arith.constant dense<[-2]> : tensor<1xi64>
  %e0 = arith.constant dense<[9223372036854775807]> : tensor<1xi64>
  %a0 = arith.constant dense<[1]> : tensor<1xi64>
  %0 = "onnx.Slice"(%x, %s0, %e0, %a0, %none) : (tensor<10x4x7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<*xf32>
  // Axis 0: 100 -> 9 down to INT64_MIN (-> -1), step -2: 5 elements.
  %s1 = arith.constant dense<[100]> : tensor<1xi64>
  %e1 = arith.constant dense<[-9223372036854775808]> : tensor<1xi64>
  %a1 = arith.constant dense<[0]> : tensor<1xi64>
  %p1 = arith.constant dense<[-2]> : tensor<1xi64>
  %1 = "onnx.Slice"(%x, %s1, %e1, %a1, %p1) : (tensor<10x4x7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %2 = "onnx.Slice"(%d, %s0, %e0, %a0, %none) : (tensor<10x?x7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<*xf32>
  %3 = "onnx.Slice"(%x, %st, %e0, %none, %none) : (tensor<10x4x7xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<*xf32>
  %4 = "onnx.Shape"(%d) : (tensor<10x?x7xf32>) -> tensor<?xi64>
  %5 = "onnx.Shape"(%d) {start = -2 : i64, end = -1 : i64} : (tensor<10x?x7xf32>) -> tensor<?xi64>
  %6 = "onnx.Cast"(%2) {to = 10 : i64} : (tensor<*xf32>) -> tensor<*xf16>
  return
}

// -----

// Reductions (keepdims, noop_with_empty_axes, no axes), Softmax, MatMul with
// batch broadcasting and 1-D operands, Gemm with transposes.
// CHECK-LABEL: func @reduce_matmul_gemm
// CHECK: "onnx.ReduceMean"{{.*}} -> tensor<2x1x4xf32>
// CHECK: "onnx.ReduceSum"{{.*}} -> tensor<2xf32>
// CHECK: "onnx.ReduceSum"{{.*}} -> tensor<1x1x1xf32>
// CHECK: "onnx.ReduceMean"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.ReduceSum"{{.*}} -> tensor<?x?x?xf32>
// CHECK: "onnx.Softmax"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.MatMul"{{.*}} -> tensor<5x2x3x6xf32>
// CHECK: "onnx.MatMul"{{.*}} -> tensor<2x3xf32>
// CHECK: "onnx.MatMul"{{.*}} -> tensor<5x1x?x6xf32>
// CHECK: "onnx.Gemm"{{.*}} -> tensor<3x5xf32>
func.func @reduce_matmul_gemm(%x: tensor<2x3x4xf32>, %ax: tensor<1xi64>, %a: tensor<2x3x4xf32>, %b: tensor<5x1x4x6xf32>, %v: tensor<4xf32>, %m: tensor<?x4xf32>, %g: tensor<4x3xf32>, %h: tensor<5x4xf32>, %c: tensor<5xf32>) {
  %axes = arith.constant dense<[1]> : tensor<1xi64>
  %0 = "onnx.ReduceMean"(%x, %axes) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<*xf32>
  %axes2 = arith.constant dense<[-1, 1]> : tensor<2xi64>
  %1 = "onnx.ReduceSum"(%x, %axes2) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %none = onnx.NoValue
  %2 = "onnx.ReduceSum"(%x, %none) : (tensor<2x3x4xf32>, none) -> tensor<*xf32>
  %3 = "onnx.ReduceMean"(%x, %none) {noop_with_empty_axes = 1 : i64} : (tensor<2x3x4xf32>, none) -> tensor<*xf32>
  %4 = "onnx.ReduceSum"(%x, %ax) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<*xf32>
  %5 = "onnx.Softmax"(%x) : (tensor<2x3x4xf32>) -> tensor<*xf32>
  %6 = "onnx.MatMul"(%a, %b) : (tensor<2x3x4xf32>, tensor<5x1x4x6xf32>) -> tensor<*xf32>
  %7 = "onnx.MatMul"(%a, %v) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<*xf32>
  %8 = "onnx.MatMul"(%m, %b) : (tensor<?x4xf32>, tensor<5x1x4x6xf32>) -> tensor<*xf32>
  %9 = "onnx.Gemm"(%g, %h, %c) {transA = 1 : i64, transB = 1 : i64} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<*xf32>
  return
}
