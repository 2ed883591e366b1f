// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

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

// A row of more than 4096 f32 elements (or of a run-time length) sums its
// exponentials in f64 and rounds the sum once; 4096 or fewer stay f32.
// CHECK-LABEL: func @softmax_long_rows
// CHECK: math.exp
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: arith.addf {{.*}} : f64
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: arith.divf
// CHECK: math.exp
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: math.exp
// CHECK-NOT: f64
// CHECK: return
func.func @softmax_long_rows(%x: tensor<2x18385xf32>, %d: tensor<2x?xf32>, %s: tensor<2x4096xf32>) -> (tensor<2x18385xf32>, tensor<2x?xf32>, tensor<2x4096xf32>) {
  %0 = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<2x18385xf32>) -> tensor<2x18385xf32>
  %1 = "onnx.Softmax"(%d) {axis = -1 : i64} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %2 = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<2x4096xf32>) -> tensor<2x4096xf32>
  return %0, %1, %2 : tensor<2x18385xf32>, tensor<2x?xf32>, tensor<2x4096xf32>
}
