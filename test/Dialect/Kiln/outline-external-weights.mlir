// RUN: kiln-opt %s --split-input-file --kiln-outline-kernels --verify-diagnostics | FileCheck %s

// kilnc --external-weights: arguments with kiln.weight_offset are weights,
// not inputs. They become kiln.external_weight (numbered in argument order,
// apart from the inputs) and `weight` signature records after a
// `weights-file` record; only the real input is an `input` record.

// CHECK: func.func @kiln_model_main(%[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-SAME: kiln.signature_io = "input x f32 2 ?N 4\0Aoutput y f32 2 ?N 4\0Aweights-file net.weights 0123456789abcdef 192\0Aweight w f32 2 4 4 64 64\0Aweight b%20bias f32 1 4 128 16\0A"
// CHECK-DAG: %[[W:.*]] = kiln.external_weight %[[CTX]][0] : memref<4x4xf32>
// CHECK-DAG: %[[X:.*]] = kiln.input %[[CTX]][0] : memref<?x4xf32>
// CHECK-DAG: %[[B:.*]] = kiln.external_weight %[[CTX]][1] : memref<4xf32>
// CHECK: kiln.launch %[[CTX]] @main_graph_kernel_0(%[[X]], %[[W]], %[[B]],
module attributes {kiln.external_weights = {file = "net.weights", file_bytes = 192 : i64, layout_hash = "0123456789abcdef"}} {
  func.func @main_graph(%w: tensor<4x4xf32> {kiln.name = "w", kiln.weight_offset = 64 : i64},
                        %arg0: tensor<?x4xf32> {kiln.dim_names = ["N", ""], kiln.name = "x"},
                        %b: tensor<4xf32> {kiln.name = "b bias", kiln.weight_offset = 128 : i64})
      -> (tensor<?x4xf32> {kiln.dim_names = ["N", ""], kiln.name = "y"}) {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
    %0 = kiln.kernel "kernel_0" ins(%arg0, %w, %b, %dim : tensor<?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, index) dims(%dim) -> (tensor<?x4xf32>) {
    ^bb0(%a: tensor<?x4xf32>, %ww: tensor<4x4xf32>, %bb: tensor<4xf32>, %n: index):
      %cst = arith.constant 0.000000e+00 : f32
      %2 = tensor.empty(%n) : tensor<?x4xf32>
      %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<?x4xf32>) -> tensor<?x4xf32>
      %4 = linalg.matmul ins(%a, %ww : tensor<?x4xf32>, tensor<4x4xf32>) outs(%3 : tensor<?x4xf32>) -> tensor<?x4xf32>
      kiln.yield %4 : tensor<?x4xf32>
    }
    return %0 : tensor<?x4xf32>
  }
}

// -----

// Weight arguments need the weights file's record.
module {
  // expected-error @below {{external weights without a module attribute 'kiln.external_weights' = {file, layout_hash, file_bytes}}}
  func.func @main_graph(%w: tensor<4xf32> {kiln.name = "w", kiln.weight_offset = 64 : i64}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// A weight has static dims.
module attributes {kiln.external_weights = {file = "net.weights", file_bytes = 192 : i64, layout_hash = "0123456789abcdef"}} {
  // expected-error @below {{external weight 0 has no static shape: 'tensor<?xf32>'}}
  func.func @main_graph(%w: tensor<?xf32> {kiln.name = "w", kiln.weight_offset = 64 : i64}) -> tensor<?xf32> {
    return %w : tensor<?xf32>
  }
}
