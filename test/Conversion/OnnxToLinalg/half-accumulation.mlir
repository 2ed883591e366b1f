// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Half-precision contractions accumulate in f32 and round once
// (kiln-mixed-precision's "half with fp32 accumulation").

// Gemm: f32 accumulator; alpha and C (extended) applied in f32; one truncf.
// CHECK-LABEL: func @gemm
// CHECK: %[[ACC:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x3xf16>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : tensor<4x3xf32>, tensor<3xf16>) outs(%{{.*}} : tensor<4x3xf16>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[C:.*]]: f16, %{{.*}}: f16):
// CHECK: arith.mulf %[[A]], %{{.*}} : f32
// CHECK: arith.extf %[[C]] : f16 to f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @gemm(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>, %c: tensor<3xf16>) -> tensor<4x3xf16> {
  %0 = "onnx.Gemm"(%a, %b, %c) {alpha = 0.5 : f32} : (tensor<4x8xf16>, tensor<8x3xf16>, tensor<3xf16>) -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

// transB: the generic contraction extends both operands.
// CHECK-LABEL: func @gemm_trans
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<3x8xbf16>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
func.func @gemm_trans(%a: tensor<4x8xbf16>, %b: tensor<3x8xbf16>) -> tensor<4x3xbf16> {
  %none = onnx.NoValue
  %0 = "onnx.Gemm"(%a, %b, %none) {transB = 1 : i64} : (tensor<4x8xbf16>, tensor<3x8xbf16>, none) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// Conv: products and sums in f32, the bias added in f32, then one truncf.
// CHECK-LABEL: func @conv
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x5x5xbf16>, tensor<3x2x3x3xbf16>) outs(%{{.*}} : tensor<1x3x3x3xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} : tensor<1x3x3x3xf32>, tensor<3x1x1xbf16>) outs(%{{.*}} : tensor<1x3x3x3xbf16>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
func.func @conv(%x: tensor<1x2x5x5xbf16>, %w: tensor<3x2x3x3xbf16>, %b: tensor<3xbf16>) -> tensor<1x3x3x3xbf16> {
  %0 = "onnx.Conv"(%x, %w, %b) : (tensor<1x2x5x5xbf16>, tensor<3x2x3x3xbf16>, tensor<3xbf16>) -> tensor<1x3x3x3xbf16>
  return %0 : tensor<1x3x3x3xbf16>
}

// -----

// ConvTranspose (gather form): the extracted input and the weight are
// extended, the guarded sum is f32.
// CHECK-LABEL: func @conv_transpose
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x3x4x4xf32>)
// CHECK: %[[X:.*]] = tensor.extract %{{.*}} : tensor<1x2x3x3xf16>
// CHECK: arith.extf %[[X]] : f16 to f32
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @conv_transpose(%x: tensor<1x2x3x3xf16>, %w: tensor<2x3x2x2xf16>) -> tensor<1x3x4x4xf16> {
  %none = onnx.NoValue
  %0 = "onnx.ConvTranspose"(%x, %w, %none) : (tensor<1x2x3x3xf16>, tensor<2x3x2x2xf16>, none) -> tensor<1x3x4x4xf16>
  return %0 : tensor<1x3x4x4xf16>
}

// -----

// Einsum (an attention product written as one): f32 accumulator.
// CHECK-LABEL: func @einsum
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x8xf16>, tensor<2x5x8xf16>) outs(%{{.*}} : tensor<2x4x5xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @einsum(%q: tensor<2x4x8xf16>, %k: tensor<2x5x8xf16>) -> tensor<2x4x5xf16> {
  %0 = "onnx.Einsum"(%q, %k) {equation = "bid,bjd->bij"} : (tensor<2x4x8xf16>, tensor<2x5x8xf16>) -> tensor<2x4x5xf16>
  return %0 : tensor<2x4x5xf16>
}

// -----

// Attention: Q·Kᵀ accumulates in f32, the scores and softmax stay f32, P·V
// multiplies f32 probabilities by the extended V in f32; one truncf at the end.
// CHECK-LABEL: func @attention
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) outs(%{{.*}} : tensor<?x?x?x?xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: math.exp %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x?x?x?xf32>, tensor<1x2x4x8xf16>) outs(%{{.*}} : tensor<?x?x?x?xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @attention(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %none = onnx.NoValue
  %0, %1, %2, %3 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, none, none, none, none) -> (tensor<1x2x4x8xf16>, none, none, none)
  return %0 : tensor<1x2x4x8xf16>
}
