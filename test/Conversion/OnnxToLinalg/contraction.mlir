// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// CHECK-LABEL: func @matmul_2d
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<8x4xf32>) outs(%[[F]] : tensor<?x4xf32>)
func.func @matmul_2d(%a: tensor<?x8xf32>, %b: tensor<8x4xf32>) -> tensor<?x4xf32> {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Batched with a broadcast batch dim: one contraction with k as reduction.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-LABEL: func @matmul_batched
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
func.func @matmul_batched(%a: tensor<2x5x8xf32>, %b: tensor<8x4xf32>) -> tensor<2x5x4xf32> {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
  return %0 : tensor<2x5x4xf32>
}

// -----

// transB reads B as [n, k]; alpha and beta·C in an epilogue.
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func @gemm_trans_b
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BT]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @gemm_trans_b(%a: tensor<3x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "onnx.Gemm"(%a, %b, %c) {transB = 1 : i64, alpha = 2.0 : f32, beta = 1.0 : f32} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Conv with padding, stride 2 and groups: pad, then one generic over
// (n, f, oh, ow, c, kh, kw) that reads input channel (f floordiv 4) * 2 + c.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 4) * 2 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-LABEL: func @conv_grouped
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: } -> tensor<1x8x4x4xf32>
func.func @conv_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Conv"(%x, %w, %none) {group = 2 : i64, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x8x8xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// -----

// MaxPool pads with -inf and reduces with maximumf over a window operand.
// CHECK-LABEL: func @maxpool
// CHECK: tensor.pad
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: %[[W:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<1x2x7x7xf32>, tensor<3x3xf32>)
// CHECK: arith.maximumf
func.func @maxpool(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, none)
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Softmax: max, exp(x - max), sum, divide.
// CHECK-LABEL: func @softmax
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

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
