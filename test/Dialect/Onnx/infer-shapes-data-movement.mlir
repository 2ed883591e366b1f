// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// Split by constant sizes, by num_outputs (last chunk smaller) and along a
// dynamic axis.
// CHECK-LABEL: func @split
// CHECK: "onnx.Split"{{.*}} -> (tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK: "onnx.Split"{{.*}} -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x1xf32>)
// CHECK: "onnx.Split"{{.*}} -> (tensor<?x3xf32>, tensor<?x3xf32>)
// CHECK: "onnx.Split"{{.*}} -> (tensor<2x?xf32>, tensor<2x?xf32>)
func.func @split(%x: tensor<2x5xf32>, %d: tensor<?x3xf32>, %s: tensor<2xi64>) {
  %none = onnx.NoValue
  %sizes = arith.constant dense<[2, 3]> : tensor<2xi64>
  %0:2 = "onnx.Split"(%x, %sizes) {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  %1:3 = "onnx.Split"(%x, %none) {axis = -1 : i64, num_outputs = 3 : i64} : (tensor<2x5xf32>, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %2:2 = "onnx.Split"(%d, %none) {num_outputs = 2 : i64} : (tensor<?x3xf32>, none) -> (tensor<*xf32>, tensor<*xf32>)
  %3:2 = "onnx.Split"(%x, %s) {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

// Pad: constant pads (negative ones crop), axes, run-time pads.
// CHECK-LABEL: func @pad
// CHECK: "onnx.Pad"{{.*}} -> tensor<4x4xf32>
// CHECK: "onnx.Pad"{{.*}} -> tensor<?x7xf32>
// CHECK: "onnx.Pad"{{.*}} -> tensor<?x?xf32>
func.func @pad(%x: tensor<3x4xf32>, %d: tensor<?x4xf32>, %p: tensor<4xi64>) {
  %none = onnx.NoValue
  %pads = arith.constant dense<[1, 1, 0, -1]> : tensor<4xi64>
  %0 = "onnx.Pad"(%x, %pads, %none, %none) : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<*xf32>
  %pads1 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %axes = arith.constant dense<[-1]> : tensor<1xi64>
  %1 = "onnx.Pad"(%d, %pads1, %none, %axes) {mode = "reflect"} : (tensor<?x4xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<*xf32>
  %2 = "onnx.Pad"(%x, %p, %none, %none) : (tensor<3x4xf32>, tensor<4xi64>, none, none) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @center_crop_pad
// CHECK: "onnx.CenterCropPad"{{.*}} -> tensor<5x2x3xf32>
// CHECK: "onnx.CenterCropPad"{{.*}} -> tensor<?x?x3xf32>
func.func @center_crop_pad(%x: tensor<?x4x3xf32>, %s: tensor<2xi64>) {
  %shape = arith.constant dense<[5, 2]> : tensor<2xi64>
  %0 = "onnx.CenterCropPad"(%x, %shape) {axes = [0, 1]} : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = "onnx.CenterCropPad"(%x, %s) {axes = [0, -2]} : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @depth_space
// CHECK: "onnx.DepthToSpace"{{.*}} -> tensor<?x2x6x8xf32>
// CHECK: "onnx.SpaceToDepth"{{.*}} -> tensor<?x8x3x4xf32>
func.func @depth_space(%x: tensor<?x8x3x4xf32>) {
  %0 = "onnx.DepthToSpace"(%x) {blocksize = 2 : i64, mode = "CRD"} : (tensor<?x8x3x4xf32>) -> tensor<*xf32>
  %1 = "onnx.SpaceToDepth"(%0) {blocksize = 2 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @reverse_sequence
// CHECK: "onnx.ReverseSequence"{{.*}} -> tensor<4x?x2xf32>
func.func @reverse_sequence(%x: tensor<4x?x2xf32>, %l: tensor<?xi64>) {
  %0 = "onnx.ReverseSequence"(%x, %l) : (tensor<4x?x2xf32>, tensor<?xi64>) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @gather_elements
// CHECK: "onnx.GatherElements"{{.*}} -> tensor<2x?xf32>
func.func @gather_elements(%x: tensor<3x4xf32>, %i: tensor<2x?xi64>) {
  %0 = "onnx.GatherElements"(%x, %i) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x?xi64>) -> tensor<*xf32>
  return
}

// -----

// GatherND: indices.shape[:-1] + data.shape[batch_dims + k:].
// CHECK-LABEL: func @gather_nd
// CHECK: "onnx.GatherND"{{.*}} -> tensor<?x5x6xf32>
// CHECK: "onnx.GatherND"{{.*}} -> tensor<4x3x6xf32>
// CHECK: "onnx.GatherND"{{.*}} -> tensor<*xf32>
func.func @gather_nd(%x: tensor<4x5x6xf32>, %i: tensor<?x1xi64>, %j: tensor<4x3x1xi64>, %k: tensor<2x?xi64>) {
  %0 = "onnx.GatherND"(%x, %i) : (tensor<4x5x6xf32>, tensor<?x1xi64>) -> tensor<*xf32>
  %1 = "onnx.GatherND"(%x, %j) {batch_dims = 1 : i64} : (tensor<4x5x6xf32>, tensor<4x3x1xi64>) -> tensor<*xf32>
  %2 = "onnx.GatherND"(%x, %k) : (tensor<4x5x6xf32>, tensor<2x?xi64>) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @scatter
// CHECK: "onnx.ScatterElements"{{.*}} -> tensor<?x4xf32>
// CHECK: "onnx.ScatterND"{{.*}} -> tensor<?x4xf32>
func.func @scatter(%x: tensor<?x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>, %j: tensor<2x1xi64>) {
  %0 = "onnx.ScatterElements"(%x, %i, %u) {reduction = "add"} : (tensor<?x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<*xf32>
  %1 = "onnx.ScatterND"(%x, %j, %u) : (tensor<?x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<*xf32>
  return
}

// -----

// Compress and NonZero: sizes known only at run time.
// CHECK-LABEL: func @compress_nonzero
// CHECK: "onnx.Compress"{{.*}} -> tensor<3x?xf32>
// CHECK: "onnx.Compress"{{.*}} -> tensor<?xf32>
// CHECK: "onnx.NonZero"{{.*}} -> tensor<2x?xi64>
func.func @compress_nonzero(%x: tensor<3x4xf32>, %c: tensor<?xi1>) {
  %0 = "onnx.Compress"(%x, %c) {axis = -1 : i64} : (tensor<3x4xf32>, tensor<?xi1>) -> tensor<*xf32>
  %1 = "onnx.Compress"(%x, %c) : (tensor<3x4xf32>, tensor<?xi1>) -> tensor<*xf32>
  %2 = "onnx.NonZero"(%x) : (tensor<3x4xf32>) -> tensor<*xi64>
  return
}

// -----

// Resize: constant scales (floor(in * scale)), constant sizes (stretch and
// not_larger), axes, run-time scales.
// CHECK-LABEL: func @resize
// CHECK: "onnx.Resize"{{.*}} -> tensor<?x3x8x12xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<?x3x5x7xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<1x3x5x8xf32>
// CHECK: "onnx.Resize"{{.*}} -> tensor<1x3x?x?xf32>
func.func @resize(%x: tensor<?x3x4x5xf32>, %y: tensor<1x3x4x6xf32>, %rs: tensor<2xf32>) {
  %none = onnx.NoValue
  %scales = arith.constant dense<[1.0, 1.0, 2.0, 2.5]> : tensor<4xf32>
  %0 = "onnx.Resize"(%x, %none, %scales, %none) {mode = "linear"} : (tensor<?x3x4x5xf32>, none, tensor<4xf32>, none) -> tensor<*xf32>
  %sizes = arith.constant dense<[5, 7]> : tensor<2xi64>
  %1 = "onnx.Resize"(%x, %none, %none, %sizes) {axes = [2, 3]} : (tensor<?x3x4x5xf32>, none, none, tensor<2xi64>) -> tensor<*xf32>
  %sizes2 = arith.constant dense<[5, 9]> : tensor<2xi64>
  %2 = "onnx.Resize"(%y, %none, %none, %sizes2) {axes = [2, 3], keep_aspect_ratio_policy = "not_larger"} : (tensor<1x3x4x6xf32>, none, none, tensor<2xi64>) -> tensor<*xf32>
  %3 = "onnx.Resize"(%y, %none, %rs, %none) {axes = [-2, -1]} : (tensor<1x3x4x6xf32>, none, tensor<2xf32>, none) -> tensor<*xf32>
  return
}

// -----

// CHECK-LABEL: func @grid
// CHECK: "onnx.GridSample"{{.*}} -> tensor<2x3x5x?xf32>
// CHECK: "onnx.AffineGrid"{{.*}} -> tensor<2x8x9x2xf32>
// CHECK: "onnx.AffineGrid"{{.*}} -> tensor<2x?x?x?x3xf32>
func.func @grid(%x: tensor<?x3x4x4xf32>, %g: tensor<2x5x?x2xf32>, %t: tensor<2x2x3xf32>, %t3: tensor<2x3x4xf32>, %s: tensor<5xi64>) {
  %0 = "onnx.GridSample"(%x, %g) : (tensor<?x3x4x4xf32>, tensor<2x5x?x2xf32>) -> tensor<*xf32>
  %size = arith.constant dense<[2, 3, 8, 9]> : tensor<4xi64>
  %1 = "onnx.AffineGrid"(%t, %size) : (tensor<2x2x3xf32>, tensor<4xi64>) -> tensor<*xf32>
  %2 = "onnx.AffineGrid"(%t3, %s) : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<*xf32>
  return
}

// -----

// ConvTranspose: s*(in-1) + output_padding + (k-1)*d + 1 - pads, groups,
// output_shape, SAME (in * s), dynamic spatial dims.
// CHECK-LABEL: func @conv_transpose
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x10x7xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x9x9xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<1x4x8x8xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x4x?x5xf32>
func.func @conv_transpose(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %d: tensor<?x2x?x3xf32>) {
  %none = onnx.NoValue
  %0 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], pads = [0, 1, 0, 1], output_padding = [1, 0]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %1 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], output_shape = [9, 9]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %2 = "onnx.ConvTranspose"(%x, %w, %none) {group = 2 : i64, strides = [2, 2], auto_pad = "SAME_UPPER"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  %3 = "onnx.ConvTranspose"(%d, %w, %none) {group = 2 : i64} : (tensor<?x2x?x3xf32>, tensor<2x2x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

// Quantization: the zero point's type, output_dtype, uint8 by default.
// CHECK-LABEL: func @quantize
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xi8>
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xui8>
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x4xui16>
// CHECK: "onnx.DequantizeLinear"{{.*}} -> tensor<?x4xf32>
// CHECK: "onnx.DequantizeLinear"{{.*}} -> tensor<?x4xf16>
// CHECK: "onnx.DynamicQuantizeLinear"{{.*}} -> (tensor<?x4xui8>, tensor<f32>, tensor<ui8>)
func.func @quantize(%x: tensor<?x4xf32>, %s: tensor<f32>, %z: tensor<i8>) {
  %none = onnx.NoValue
  %0 = "onnx.QuantizeLinear"(%x, %s, %z) : (tensor<?x4xf32>, tensor<f32>, tensor<i8>) -> tensor<*xi8>
  %1 = "onnx.QuantizeLinear"(%x, %s, %none) : (tensor<?x4xf32>, tensor<f32>, none) -> tensor<*xui8>
  %2 = "onnx.QuantizeLinear"(%x, %s, %none) {output_dtype = 4 : i64} : (tensor<?x4xf32>, tensor<f32>, none) -> tensor<*xui16>
  %3 = "onnx.DequantizeLinear"(%0, %s, %z) : (tensor<*xi8>, tensor<f32>, tensor<i8>) -> tensor<*xf32>
  %4 = "onnx.DequantizeLinear"(%0, %s, %z) {output_dtype = 10 : i64} : (tensor<*xi8>, tensor<f32>, tensor<i8>) -> tensor<*xf16>
  %5:3 = "onnx.DynamicQuantizeLinear"(%x) : (tensor<?x4xf32>) -> (tensor<*xui8>, tensor<*xf32>, tensor<*xui8>)
  return
}

// -----

// CHECK-LABEL: func @int_matmul
// CHECK: "onnx.MatMulInteger"{{.*}} -> tensor<3x?x5xi32>
// CHECK: "onnx.QLinearMatMul"{{.*}} -> tensor<?x5xui8>
func.func @int_matmul(%a: tensor<3x?x4xui8>, %b: tensor<4x5xi8>, %a2: tensor<?x4xui8>, %s: tensor<f32>, %za: tensor<ui8>, %zb: tensor<i8>, %zy: tensor<ui8>) {
  %none = onnx.NoValue
  %0 = "onnx.MatMulInteger"(%a, %b, %none, %none) : (tensor<3x?x4xui8>, tensor<4x5xi8>, none, none) -> tensor<*xi32>
  %1 = "onnx.QLinearMatMul"(%a2, %s, %za, %b, %s, %zb, %s, %zy) : (tensor<?x4xui8>, tensor<f32>, tensor<ui8>, tensor<4x5xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>) -> tensor<*xui8>
  return
}
