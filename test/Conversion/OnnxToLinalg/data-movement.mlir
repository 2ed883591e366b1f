// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// Split into two outputs along axis 1 with a constant split: two generics
// reading the input at an offset.
// CHECK-LABEL: func @split
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: onnx.Split
func.func @split(%x: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  %s = arith.constant dense<[2, 3]> : tensor<2xi64>
  %0:2 = "onnx.Split"(%x, %s) {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x3xf32>
}

// -----

// Slice whose starts/ends come from graph inputs: read on the host.
// CHECK-LABEL: func @slice_runtime
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<1xi64>
// CHECK: linalg.generic
func.func @slice_runtime(%x: tensor<10xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>) -> tensor<?xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Slice"(%x, %s, %e, %n, %n) : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Reflect padding: the source index is folded into range, then clamped.
// CHECK-LABEL: func @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: tensor.extract
func.func @pad_reflect(%x: tensor<3x4xf32>) -> tensor<5x6xf32> {
  %p = arith.constant dense<[1, 1, 1, 1]> : tensor<4xi64>
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Pad"(%x, %p, %n, %n) {mode = "reflect"} : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}

// -----

// ScatterElements is a gather over the updates: a reduction loop per output.
// CHECK-LABEL: func @scatter_elements
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.addf
func.func @scatter_elements(%x: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = "onnx.ScatterElements"(%x, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Linear Resize of the two spatial dims: 2x2 taps, coordinates in f64.
// CHECK-LABEL: func @resize_linear
// CHECK: linalg.generic
// CHECK: math.ceil
// CHECK-COUNT-4: tensor.extract %{{.*}}[%{{.*}}] : tensor<1x1x2x2xf32>
// CHECK: arith.truncf
func.func @resize_linear(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %n = "onnx.NoValue"() : () -> none
  %s = arith.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %0 = "onnx.Resize"(%x, %n, %s, %n) {mode = "linear"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// ConvTranspose in gather form with a guarded input read.
// CHECK-LABEL: func @conv_transpose
// CHECK: linalg.generic
// CHECK: arith.remui
// CHECK: tensor.extract
// CHECK: arith.select
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.ConvTranspose"(%x, %w, %n) {strides = [2, 2]} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, none) -> tensor<1x4x7x7xf32>
  return %0 : tensor<1x4x7x7xf32>
}

// -----

// uint8 DequantizeLinear: bitcast to i8, zero-extended arithmetic.
// CHECK-LABEL: func @dequantize_u8
// CHECK: tensor.bitcast %{{.*}} : tensor<4xui8> to tensor<4xi8>
// CHECK: arith.extui
// CHECK: arith.mulf
func.func @dequantize_u8(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<4xf32> {
  %0 = "onnx.DequantizeLinear"(%x, %s, %z) : (tensor<4xui8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
