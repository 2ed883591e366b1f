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

// Einsum: one generic, output labels first, summed labels last.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @einsum_bmm
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @einsum_bmm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "onnx.Einsum"(%a, %b) <{equation = "bij, bjk -> bik"}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A repeated label reads a diagonal.
// CHECK-DAG: #[[D:.*]] = affine_map<(d0) -> (d0, d0)>
// CHECK-LABEL: func @einsum_trace
// CHECK: linalg.generic {indexing_maps = [#[[D]], #{{.*}}], iterator_types = ["reduction"]}
func.func @einsum_trace(%a: tensor<3x3xf32>) -> tensor<f32> {
  %0 = "onnx.Einsum"(%a) <{equation = "ii"}> : (tensor<3x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Batch dims that are dynamic in both operands broadcast at run time (one
// of them may be 1) unless they are the same size by construction: here
// both come from %x's dim 0 (through an elementwise op and a transpose),
// so the product reads both operands directly, without the broadcasting
// copies of the next case.
// CHECK-LABEL: func @matmul_same_batch
// CHECK-NOT: linalg.index
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %transposed : tensor<?x?x16xf32>, tensor<?x16x?xf32>)
func.func @matmul_same_batch(%x: tensor<?x?x16xf32>) -> tensor<?x?x?xf32> {
  %a = "onnx.Relu"(%x) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %k = "onnx.Transpose"(%x) {perm = [0, 2, 1]} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %0 = "onnx.MatMul"(%a, %k) : (tensor<?x?x16xf32>, tensor<?x16x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// Two inputs' dynamic batch dims: either may be 1 at run time, so both
// operands are broadcast to the common batch first (a copy that reads
// index 0 where an operand's batch dim is 1).
// CHECK-LABEL: func @matmul_other_batch
// CHECK: linalg.index 0
// CHECK: arith.select
// CHECK: linalg.index 0
// CHECK: arith.select
func.func @matmul_other_batch(%x: tensor<?x?x16xf32>, %y: tensor<?x16x?xf32>) -> tensor<?x?x?xf32> {
  %0 = "onnx.MatMul"(%x, %y) : (tensor<?x?x16xf32>, tensor<?x16x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// Attention heads as exporters write them: Q and K are Reshapes of two
// different tensors to [batch, seq, heads, dim] by shapes computed from
// Shape(x) (each its own Concat), then Transposes. The shape arithmetic
// knows the shapes' elements as dims of %x, so the Reshapes take them
// directly, and the product sees both batch dims measure %x's dim 0:
// no broadcasting copies (the shapes' own arithmetic is left unused).
// CHECK-LABEL: func @matmul_heads
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0
// CHECK: arith.index_cast %[[D0]] : index to i64
// CHECK: tensor.from_elements
// CHECK-NOT: linalg.index 0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%transposed{{.*}}, %transposed{{.*}} : tensor<?x2x?x16xf32>, tensor<?x2x16x?xf32>)
func.func @matmul_heads(%x: tensor<?x?x32xf32>) -> tensor<?x2x?x?xf32> {
  %s = "onnx.Shape"(%x) : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %c0 = arith.constant dense<0> : tensor<i64>
  %c1 = arith.constant dense<1> : tensor<i64>
  %ax = arith.constant dense<[0]> : tensor<1xi64>
  %g0 = "onnx.Gather"(%s, %c0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %g1 = "onnx.Gather"(%s, %c1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %u0 = "onnx.Unsqueeze"(%g0, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %u1 = "onnx.Unsqueeze"(%g1, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %h = arith.constant dense<[2]> : tensor<1xi64>
  %d = arith.constant dense<[16]> : tensor<1xi64>
  %shape_q = "onnx.Concat"(%u0, %u1, %h, %d) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %shape_k = "onnx.Concat"(%u0, %u1, %h, %d) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %xr = "onnx.Relu"(%x) : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %q = "onnx.Reshape"(%xr, %shape_q) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %k = "onnx.Reshape"(%x, %shape_k) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %qt = "onnx.Transpose"(%q) {perm = [0, 2, 1, 3]} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %kt = "onnx.Transpose"(%k) {perm = [0, 2, 3, 1]} : (tensor<?x?x2x16xf32>) -> tensor<?x2x16x?xf32>
  %0 = "onnx.MatMul"(%qt, %kt) : (tensor<?x2x?x16xf32>, tensor<?x2x16x?xf32>) -> tensor<?x2x?x?xf32>
  return %0 : tensor<?x2x?x?xf32>
}
