// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// A window's size is read on the host; the values are computed in f64.
// CHECK-LABEL: func @hann
// CHECK: tensor.extract %{{.*}}[] : tensor<i32>
// CHECK: linalg.generic
// CHECK: math.cos
// CHECK: arith.truncf %{{.*}} : f64 to f32
func.func @hann(%n: tensor<i32>) -> tensor<10xf32> {
  %0 = "onnx.HannWindow"(%n) {output_datatype = 1 : i64, periodic = 1 : i64} : (tensor<i32>) -> tensor<10xf32>
  return %0 : tensor<10xf32>
}
