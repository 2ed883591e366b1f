// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// A run-time condition: an scf.if whose branches hold the lowered bodies.
// CHECK-LABEL: func @if_runtime
// CHECK: %[[C:.*]] = tensor.extract %{{.*}}[] : tensor<i1>
// CHECK: scf.if %[[C]] -> (tensor<4xf32>)
// CHECK:   linalg.generic
// CHECK:   scf.yield
// CHECK: } else {
// CHECK:   scf.yield %{{.*}} : tensor<4xf32>
func.func @if_runtime(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.If"(%c) ({
    %1 = "onnx.Relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %1 : tensor<4xf32>
  }, {
    onnx.Yield %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A constant condition: the taken branch is inlined.
// CHECK-LABEL: func @if_constant
// CHECK-NOT: scf.if
// CHECK: math.exp
func.func @if_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<false> : tensor<i1>
  %0 = "onnx.If"(%c) ({
    %1 = "onnx.Relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %1 : tensor<4xf32>
  }, {
    %1 = "onnx.Exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %1 : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Scan: an scf.for over the scan axis; the state is copied into its
// iteration argument, the scan output inserted at the step.
// CHECK-LABEL: func @scan
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S:.*]] = %{{.*}}, %[[O:.*]] = %{{.*}}) -> (tensor<2xf32>, tensor<3x2xf32>)
// CHECK:   tensor.extract_slice %{{.*}}[%[[T]], 0] [1, 2] [1, 1] : tensor<3x2xf32> to tensor<2xf32>
// CHECK:   linalg.generic
// CHECK:   linalg.copy
// CHECK:   tensor.insert_slice %{{.*}} into %[[O]][%[[T]], 0] [1, 2] [1, 1]
func.func @scan(%s0: tensor<2xf32>, %x: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  %0:2 = "onnx.Scan"(%s0, %x) <{num_scan_inputs = 1 : i64}> ({
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %1 = "onnx.Add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    onnx.Yield %1, %1 : tensor<2xf32>, tensor<2xf32>
  }) : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
  return %0#0, %0#1 : tensor<2xf32>, tensor<3x2xf32>
}
