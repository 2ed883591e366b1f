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

// -----

// Col2Im gathers: each image element reduces over the block offsets.
// CHECK-LABEL: func @col2im
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK: tensor.extract %{{.*}} : tensor<1x9x4xf32>
// CHECK: arith.addf
func.func @col2im(%x: tensor<1x9x4xf32>, %i: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<1x1x5x5xf32> {
  %0 = "onnx.Col2Im"(%x, %i, %b) {strides = [2, 2]} : (tensor<1x9x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x5x5xf32>
  return %0 : tensor<1x1x5x5xf32>
}

// -----

// MaxUnpool selects the input whose index is the output's flat position.
// CHECK-LABEL: func @maxunpool
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: tensor.extract %{{.*}} : tensor<1x1x2x2xi64>
// CHECK: arith.select
func.func @maxunpool(%x: tensor<1x1x2x2xf32>, %i: tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.MaxUnpool"(%x, %i, %none) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// CHECK-LABEL: func @global_max_pool
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @global_max_pool(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32> {
  %0 = "onnx.GlobalMaxPool"(%x) : (tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32>
  return %0 : tensor<1x3x1x1xf32>
}

// -----

// CHECK-LABEL: func @shrink
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK: arith.select
func.func @shrink(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = "onnx.Shrink"(%x) {lambd = 1.5 : f32, bias = 0.0 : f32} : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Unsigned Div computes on signless views with divui.
// CHECK-LABEL: func @div_unsigned
// CHECK: tensor.bitcast %{{.*}} : tensor<3xui8> to tensor<3xi8>
// CHECK: arith.divui
// CHECK: tensor.bitcast %{{.*}} : tensor<3xi8> to tensor<3xui8>
func.func @div_unsigned(%a: tensor<3xui8>, %b: tensor<3xui8>) -> tensor<3xui8> {
  %0 = "onnx.Div"(%a, %b) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// Integer Pow goes through f64.
// CHECK-LABEL: func @pow_int
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: math.powf
// CHECK: arith.fptosi %{{.*}} : f64 to i32
func.func @pow_int(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  %0 = "onnx.Pow"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}
