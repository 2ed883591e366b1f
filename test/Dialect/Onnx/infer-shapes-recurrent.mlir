// RUN: kiln-opt %s -split-input-file --kiln-onnx-infer-shapes | FileCheck %s

// LSTM, layout 0: Y [seq, dirs, batch, hidden], Y_h/Y_c [dirs, batch, hidden];
// the hidden size comes from R.
// CHECK-LABEL: func @lstm_bidirectional
// CHECK: "onnx.LSTM"{{.*}} -> (tensor<?x2x3x5xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>)
func.func @lstm_bidirectional(%x: tensor<?x3x4xf32>, %w: tensor<2x20x4xf32>, %r: tensor<2x20x5xf32>) {
  %n = "onnx.NoValue"() : () -> none
  %y, %h, %c = "onnx.LSTM"(%x, %w, %r, %n, %n, %n, %n, %n) {direction = "bidirectional"} : (tensor<?x3x4xf32>, tensor<2x20x4xf32>, tensor<2x20x5xf32>, none, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

// GRU, layout 1: Y [batch, seq, dirs, hidden], Y_h [batch, dirs, hidden];
// an omitted output stays none.
// CHECK-LABEL: func @gru_batchwise
// CHECK: "onnx.GRU"{{.*}} -> (none, tensor<3x1x6xf32>)
func.func @gru_batchwise(%x: tensor<3x7x2xf32>, %w: tensor<1x18x2xf32>, %r: tensor<1x18x6xf32>) {
  %n = "onnx.NoValue"() : () -> none
  %y, %h = "onnx.GRU"(%x, %w, %r, %n, %n, %n) {layout = 1 : i64, hidden_size = 6 : i64} : (tensor<3x7x2xf32>, tensor<1x18x2xf32>, tensor<1x18x6xf32>, none, none, none) -> (none, tensor<*xf32>)
  return
}

// -----

// RNN: the hidden size from the attribute when W and R are unranked.
// CHECK-LABEL: func @rnn_attr
// CHECK: "onnx.RNN"{{.*}} -> (tensor<2x1x4x8xf32>, tensor<1x4x8xf32>)
func.func @rnn_attr(%x: tensor<2x4x3xf32>, %w: tensor<*xf32>, %r: tensor<*xf32>) {
  %n = "onnx.NoValue"() : () -> none
  %y, %h = "onnx.RNN"(%x, %w, %r, %n, %n, %n) {hidden_size = 8 : i64, direction = "reverse"} : (tensor<2x4x3xf32>, tensor<*xf32>, tensor<*xf32>, none, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  return
}
