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
