// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// --precision=tf32 marks contractions kiln.precision = "tf32" (kept f32);
// their lowering puts the unit attribute kiln.tf32 on the f32 contractions
// it builds (acc + a * b), not on the other ops of the same node (Gemm's
// alpha and C, Conv's bias, attention's scaling and softmax), and nothing
// on unmarked or fp32-marked nodes.

// CHECK-LABEL: func @matmul_2d
// CHECK: linalg.matmul {kiln.tf32} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x3xf32>)
func.func @matmul_2d(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %0 = "onnx.MatMul"(%a, %b) {kiln.precision = "tf32"} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func @matmul_3d
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>) attrs = {kiln.tf32}
func.func @matmul_3d(%a: tensor<2x4x8xf32>, %b: tensor<8x3xf32>) -> tensor<2x4x3xf32> {
  %0 = "onnx.MatMul"(%a, %b) {kiln.precision = "tf32"} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

// Gemm: the product is marked, alpha and beta * C are not.
// CHECK-LABEL: func @gemm
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<3x8xf32>) outs(%{{.*}} : tensor<4x3xf32>) attrs = {kiln.tf32}
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : tensor<4x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4x3xf32>) {
// CHECK-NOT: kiln.tf32
// CHECK: return
func.func @gemm(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>, %c: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = "onnx.Gemm"(%a, %b, %c) {alpha = 0.5 : f32, transB = 1 : i64, kiln.precision = "tf32"} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Conv: the window product is marked, the bias is not.
// CHECK-LABEL: func @conv
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) outs(%{{.*}} : tensor<1x3x3x3xf32>) attrs = {kiln.tf32}
// CHECK-NOT: kiln.tf32
// CHECK: return
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = "onnx.Conv"(%x, %w, %b) {kiln.precision = "tf32"} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// Attention: Q.K^T and P.V are marked (two of its ops), the softmax's
// reductions (max, sum) are not.
// CHECK-LABEL: func @attention
// CHECK-COUNT-2: attrs = {kiln.tf32}
// CHECK-NOT: kiln.tf32
// CHECK: return
func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %none = onnx.NoValue
  %0, %1, %2, %3 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) {kiln.precision = "tf32"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none, none, none, none) -> (tensor<1x2x4x8xf32>, none, none, none)
  return %0 : tensor<1x2x4x8xf32>
}

// -----

// Einsum: the one contraction is marked.
// CHECK-LABEL: func @einsum
// CHECK: linalg.generic {{.*}} attrs = {kiln.tf32}
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "onnx.Einsum"(%a, %b) <{equation = "bij, bjk -> bik"}> {kiln.precision = "tf32"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Unmarked, or kept fp32: exact f32 contractions.
// CHECK-LABEL: func @unmarked
// CHECK-NOT: kiln.tf32
// CHECK: return
func.func @unmarked(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = "onnx.MatMul"(%a, %b) {kiln.precision = "fp32"} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}
