// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg -verify-diagnostics

// An unknown activation is one error naming the node.
func.func @rnn_bad_activation(%x: tensor<2x1x3xf32>, %w: tensor<1x4x3xf32>, %r: tensor<1x4x4xf32>) -> tensor<1x1x4xf32> {
  %n = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{unknown activation 'swish'}}
  %y, %h = "onnx.RNN"(%x, %w, %r, %n, %n, %n) {activations = ["Swish"]} : (tensor<2x1x3xf32>, tensor<1x4x3xf32>, tensor<1x4x4xf32>, none, none, none) -> (none, tensor<1x1x4xf32>)
  return %h : tensor<1x1x4xf32>
}

// -----

// A wrong number of activations for the direction.
func.func @lstm_activation_count(%x: tensor<2x1x3xf32>, %w: tensor<1x8x3xf32>, %r: tensor<1x8x2xf32>) -> tensor<1x1x2xf32> {
  %n = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{expects 3 activations, got 2}}
  %y, %h, %c = "onnx.LSTM"(%x, %w, %r, %n, %n, %n, %n, %n) {activations = ["Sigmoid", "Tanh"]} : (tensor<2x1x3xf32>, tensor<1x8x3xf32>, tensor<1x8x2xf32>, none, none, none, none, none) -> (none, tensor<1x1x2xf32>, none)
  return %h : tensor<1x1x2xf32>
}
