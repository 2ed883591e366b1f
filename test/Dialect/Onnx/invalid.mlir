// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.Add' op operands are not broadcast-compatible: 'tensor<2x3xf32>' and 'tensor<4xf32>'}}
  %0 = "onnx.Add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @sub_element_types(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{'onnx.Sub' op operands have different element types}}
  %0 = "onnx.Sub"(%a, %b) : (tensor<2xf32>, tensor<2xf16>) -> tensor<*xf32>
  return
}

// -----

func.func @mul_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'onnx.Mul' op result #0 of type 'tensor<3x2xf32>' is incompatible with the inferred type 'tensor<2x3xf32>'}}
  %0 = "onnx.Mul"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @div_dynamic_mismatch(%a: tensor<?x3xf32>, %b: tensor<2x?xf32>) {
  // expected-error @+1 {{'onnx.Div' op result #0 of type 'tensor<?x4xf32>' is incompatible with the inferred type 'tensor<2x3xf32>'}}
  %0 = "onnx.Div"(%a, %b) : (tensor<?x3xf32>, tensor<2x?xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @pow_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'onnx.Pow' op operands are not broadcast-compatible}}
  %0 = "onnx.Pow"(%a, %b) : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @clip_non_scalar(%x: tensor<4xf32>, %m: tensor<2xf32>) {
  %none = onnx.NoValue
  // expected-error @+1 {{'onnx.Clip' op min/max must be scalars, got 'tensor<2xf32>'}}
  %0 = "onnx.Clip"(%x, %m, %none) : (tensor<4xf32>, tensor<2xf32>, none) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'onnx.MatMul' op inner dimensions mismatch: 'tensor<2x3xf32>' and 'tensor<4x5xf32>'}}
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @gemm_inner(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  %none = onnx.NoValue
  // expected-error @+1 {{'onnx.Gemm' op inner dimensions mismatch}}
  %0 = "onnx.Gemm"(%a, %b, %none) {transB = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) {
  %none = onnx.NoValue
  // expected-error @+1 {{'onnx.Conv' op input channels (4) must equal weight channels (3) times group (2)}}
  %0 = "onnx.Conv"(%x, %w, %none) {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  %none = onnx.NoValue
  // expected-error @+1 {{'onnx.Conv' op number of output channels (6) is not divisible by group (4)}}
  %0 = "onnx.Conv"(%x, %w, %none) {group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @maxpool_kernel_too_big(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{'onnx.MaxPool' op spatial dimension 0 of size 2 (padded 2) is smaller than the effective kernel size 3}}
  %0:2 = "onnx.MaxPool"(%x) {kernel_shape = [3, 3]} : (tensor<1x1x2x2xf32>) -> (tensor<*xf32>, none)
  return
}

// -----

func.func @averagepool_rank(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'onnx.AveragePool' op input 'tensor<1x1x4x4xf32>' must have rank 3 (2 + size of kernel_shape)}}
  %0 = "onnx.AveragePool"(%x) {kernel_shape = [2]} : (tensor<1x1x4x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @global_average_pool_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.GlobalAveragePool' op expects an input of rank >= 2}}
  %0 = "onnx.GlobalAveragePool"(%x) : (tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @batchnorm_channels(%x: tensor<1x3x4x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.BatchNormalization' op scale, B, mean and var must be 1-D of size C}}
  %0:3 = "onnx.BatchNormalization"(%x, %s, %s, %s, %s) : (tensor<1x3x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<*xf32>, none, none)
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  %shape = arith.constant dense<[4, 2]> : tensor<2xi64>
  // expected-error @+1 {{'onnx.Reshape' op cannot reshape 'tensor<2x3xf32>' (6 elements) to shape [4, 2]}}
  %0 = "onnx.Reshape"(%x, %shape) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.Flatten' op axis 3 is out of range for rank 2}}
  %0 = "onnx.Flatten"(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.Transpose' op perm [0, 0] is not a permutation of [0, 2)}}
  %0 = "onnx.Transpose"(%x) {perm = [0, 0]} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{'onnx.Concat' op non-axis dimension 0 differs between inputs: 2 vs 4}}
  %0 = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.Concat' op axis 2 is out of range for rank 2}}
  %0 = "onnx.Concat"(%a, %a) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @squeeze_not_one(%x: tensor<2x3xf32>) {
  %axes = arith.constant dense<[0]> : tensor<1xi64>
  // expected-error @+1 {{'onnx.Squeeze' op cannot squeeze dimension 0 of size 2}}
  %0 = "onnx.Squeeze"(%x, %axes) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @unsqueeze_repeated(%x: tensor<2x3xf32>) {
  %axes = arith.constant dense<[1, -3]> : tensor<2xi64>
  // expected-error @+1 {{'onnx.Unsqueeze' op axis -3 is repeated}}
  %0 = "onnx.Unsqueeze"(%x, %axes) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @slice_step_zero(%x: tensor<4xf32>) {
  %s = arith.constant dense<[0]> : tensor<1xi64>
  %e = arith.constant dense<[4]> : tensor<1xi64>
  %p = arith.constant dense<[0]> : tensor<1xi64>
  %none = onnx.NoValue
  // expected-error @+1 {{'onnx.Slice' op slice step must not be 0}}
  %0 = "onnx.Slice"(%x, %s, %e, %none, %p) : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, none, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'onnx.Gather' op axis -3 is out of range for rank 2}}
  %0 = "onnx.Gather"(%x, %i) {axis = -3 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'onnx.Softmax' op axis 2 is out of range for rank 2}}
  %0 = "onnx.Softmax"(%x) {axis = 2 : i64} : (tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reducemean_axis(%x: tensor<4x5xf32>) {
  %axes = arith.constant dense<[2]> : tensor<1xi64>
  // expected-error @+1 {{'onnx.ReduceMean' op axis 2 is out of range for rank 2}}
  %0 = "onnx.ReduceMean"(%x, %axes) : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @reducesum_keepdims_result(%x: tensor<4x5xf32>) {
  %axes = arith.constant dense<[1]> : tensor<1xi64>
  // expected-error @+1 {{'onnx.ReduceSum' op result #0 of type 'tensor<4xf32>' is incompatible with the inferred type 'tensor<4x1xf32>'}}
  %0 = "onnx.ReduceSum"(%x, %axes) : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_to(%x: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.Cast' op result #0 of type 'tensor<4xf32>' is incompatible with the inferred type 'tensor<4xi64>'}}
  %0 = "onnx.Cast"(%x) {to = 7 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_string(%x: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.Cast' op unsupported target data type 'to' = 8}}
  %0 = "onnx.Cast"(%x) {to = 8 : i64} : (tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @shape_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'onnx.Shape' op result #0 of type 'tensor<2xi64>' is incompatible with the inferred type 'tensor<3xi64>'}}
  %0 = "onnx.Shape"(%x) : (tensor<2x3x4xf32>) -> tensor<2xi64>
  return
}

// -----

func.func @missing_required_attr(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.Concat' op requires attribute 'axis'}}
  %0 = "onnx.Concat"(%x) : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @wrong_operand_type(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'onnx.Sqrt' op operand #0 must be tensor of}}
  %0 = "onnx.Sqrt"(%x) : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return
}

// -----

// A channels-last Conv's weights are <kernel>CF ([3, 3, 3, 8] here): the
// ONNX layout [8, 3, 3, 3] reads as an 8x3 kernel of 3 filters.
func.func @conv_channels_last_weights(%x: tensor<1x8x8x3xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x6x6x8xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{result #0 of type 'tensor<1x6x6x8xf32>' is incompatible with the inferred type 'tensor<1x1x6x3xf32>'}}
  %0 = "onnx.Conv"(%x, %w, %none) {kiln.channels_last} : (tensor<1x8x8x3xf32>, tensor<8x3x3x3xf32>, none) -> tensor<1x6x6x8xf32>
  return %0 : tensor<1x6x6x8xf32>
}
