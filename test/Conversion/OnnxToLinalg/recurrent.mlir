// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Forward LSTM: one scf.for over the time steps carrying the step outputs,
// H and C; per step a gather of X's rows, X·Wᵀ and H·Rᵀ contractions and one
// generic for the gates with three results (H, output, C).
// CHECK-LABEL: func @lstm_forward
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<?x1x3x5xf32>, tensor<1x3x5xf32>, tensor<1x3x5xf32>)
// CHECK:   tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<?x3x4xf32>
// CHECK:   iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:   iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:   %{{.*}}:3 = linalg.generic
// CHECK:     math.tanh
// CHECK:   tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0] [1, 3, 5] [1, 1, 1] : tensor<3x5xf32> into tensor<1x3x5xf32>
// CHECK:   tensor.insert_slice %{{.*}} into %{{.*}}[%[[S]], 0, 0, 0] [1, 1, 3, 5] [1, 1, 1, 1] : tensor<3x5xf32> into tensor<?x1x3x5xf32>
// CHECK:   scf.yield
// CHECK: return %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2
func.func @lstm_forward(%x: tensor<?x3x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x20x5xf32>) -> (tensor<?x1x3x5xf32>, tensor<1x3x5xf32>, tensor<1x3x5xf32>) {
  %n = "onnx.NoValue"() : () -> none
  %y, %h, %c = "onnx.LSTM"(%x, %w, %r, %n, %n, %n, %n, %n) : (tensor<?x3x4xf32>, tensor<1x20x4xf32>, tensor<1x20x5xf32>, none, none, none, none, none) -> (tensor<?x1x3x5xf32>, tensor<1x3x5xf32>, tensor<1x3x5xf32>)
  return %y, %h, %c : tensor<?x1x3x5xf32>, tensor<1x3x5xf32>, tensor<1x3x5xf32>
}

// -----

// Bidirectional GRU: both directions in the same step; Y is put back in
// time order after the loop (the reverse direction's steps run backwards).
// CHECK-LABEL: func @gru_bidirectional
// CHECK: %[[LOOP:.*]]:2 = scf.for
// CHECK:   tensor.insert_slice %{{.*}}[0, 0, 0] [1, 2, 4]
// CHECK:   tensor.insert_slice %{{.*}}[1, 0, 0] [1, 2, 4]
// CHECK: linalg.generic
// CHECK:   tensor.extract %[[LOOP]]#0
// CHECK: return
func.func @gru_bidirectional(%x: tensor<6x2x3xf32>, %w: tensor<2x12x3xf32>, %r: tensor<2x12x4xf32>) -> (tensor<6x2x2x4xf32>, tensor<2x2x4xf32>) {
  %n = "onnx.NoValue"() : () -> none
  %y, %h = "onnx.GRU"(%x, %w, %r, %n, %n, %n) {direction = "bidirectional"} : (tensor<6x2x3xf32>, tensor<2x12x3xf32>, tensor<2x12x4xf32>, none, none, none) -> (tensor<6x2x2x4xf32>, tensor<2x2x4xf32>)
  return %y, %h : tensor<6x2x2x4xf32>, tensor<2x2x4xf32>
}
