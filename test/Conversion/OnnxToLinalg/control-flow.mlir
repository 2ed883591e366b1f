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

// -----

// Einsum: one generic, output labels first, summed labels last.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @einsum_bmm
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @einsum_bmm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "onnx.Einsum"(%a, %b) <{equation = "bij, bjk -> bik"}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A repeated label reads a diagonal.
// CHECK-DAG: #[[D:.*]] = affine_map<(d0) -> (d0, d0)>
// CHECK-LABEL: func @einsum_trace
// CHECK: linalg.generic {indexing_maps = [#[[D]], #{{.*}}], iterator_types = ["reduction"]}
func.func @einsum_trace(%a: tensor<3x3xf32>) -> tensor<f32> {
  %0 = "onnx.Einsum"(%a) <{equation = "ii"}> : (tensor<3x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
