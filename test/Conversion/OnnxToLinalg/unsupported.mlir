// RUN: not kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg 2>&1 | FileCheck %s

// An op without a lowering: the message names the node, op type and opset.
// CHECK: error: {{.*}}node 'det_node' (Det, opset 17): operator 'Det' is not supported by Kiln yet
module attributes {onnx.opset = 17 : i64} {
  func.func @no_lowering(%x: tensor<3x3xf32>) -> tensor<f32> {
    %0 = "onnx.Det"(%x) : (tensor<3x3xf32>) -> tensor<f32> loc("det_node")
    return %0 : tensor<f32>
  }
}

// -----

// A configuration Kiln does not lower.
// CHECK: error: {{.*}}node 'pool' (MaxPool, opset 13): storage_order=1 is not supported
module attributes {onnx.opset = 13 : i64} {
  func.func @unsupported_config(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
    %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [2, 2], strides = [2, 2], storage_order = 1 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, none) loc("pool")
    return %y : tensor<1x2x2x2xf32>
  }
}
