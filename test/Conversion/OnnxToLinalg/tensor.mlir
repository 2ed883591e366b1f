// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// A constant shape with -1 and a dynamic batch: the -1 is computed at run
// time from the element count.
// CHECK-LABEL: func @reshape_dynamic
// CHECK: tensor.dim
// CHECK: arith.divsi
// CHECK: tensor.from_elements
// CHECK: tensor.reshape %{{.*}}(%{{.*}}) : (tensor<?x4x5xf32>, tensor<2xindex>) -> tensor<?x20xf32>
func.func @reshape_dynamic(%x: tensor<?x4x5xf32>) -> tensor<?x20xf32> {
  %s = arith.constant dense<[-1, 20]> : tensor<2xi64>
  %0 = "onnx.Reshape"(%x, %s) : (tensor<?x4x5xf32>, tensor<2xi64>) -> tensor<?x20xf32>
  return %0 : tensor<?x20xf32>
}

// -----

// A shape that is only known at run time is read with tensor.extract.
// CHECK-LABEL: func @reshape_runtime_shape
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<2xi64>
// CHECK: tensor.reshape
func.func @reshape_runtime_shape(%x: tensor<4x5xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = "onnx.Reshape"(%x, %s) : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func @transpose
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = "onnx.Transpose"(%x) {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func @concat
// CHECK: tensor.concat dim(1) %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = "onnx.Concat"(%a, %b) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Slice with a negative step reads input[start + i * step].
// CHECK-LABEL: func @slice_reverse
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.muli
// CHECK: tensor.extract
func.func @slice_reverse(%x: tensor<6xf32>) -> tensor<3xf32> {
  %starts = arith.constant dense<[-1]> : tensor<1xi64>
  %ends = arith.constant dense<[-7]> : tensor<1xi64>
  %axes = arith.constant dense<[0]> : tensor<1xi64>
  %steps = arith.constant dense<[-2]> : tensor<1xi64>
  %0 = "onnx.Slice"(%x, %starts, %ends, %axes, %steps) : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Gather checks its indices at run time first (their least and largest,
// two full reductions, against [-5, 5): a kiln.check that fails the run),
// then clamps them into range (no wild read even so) after adding the dim
// to negative ones.
// CHECK-LABEL: func @gather
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK: arith.minsi
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]
// CHECK: arith.maxsi
// CHECK: kiln.check %{{.*}}, "node '{{.*}}' (Gather, opset {{[0-9]+}}): indices from {0} to {1} are out of range for a dim of size {2} (valid indices lie in [-{2}, {2}))"
// CHECK: linalg.generic
// CHECK: arith.cmpi slt
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: tensor.extract
func.func @gather(%x: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = "onnx.Gather"(%x, %i) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Shape of a static tensor folds to a constant; of a dynamic one it is built
// from tensor.dim.
// CHECK-LABEL: func @shape
// CHECK-DAG: arith.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-DAG: tensor.dim
// CHECK: tensor.from_elements
func.func @shape(%x: tensor<2x3xf32>, %y: tensor<?x3xf32>) -> (tensor<2xi64>, tensor<2xi64>) {
  %0 = "onnx.Shape"(%x) : (tensor<2x3xf32>) -> tensor<2xi64>
  %1 = "onnx.Shape"(%y) : (tensor<?x3xf32>) -> tensor<2xi64>
  return %0, %1 : tensor<2xi64>, tensor<2xi64>
}

// -----

// Slice whose starts/ends come from graph inputs: read on the host.
// CHECK-LABEL: func @slice_runtime
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<1xi64>
// CHECK: linalg.generic
func.func @slice_runtime(%x: tensor<10xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>) -> tensor<?xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Slice"(%x, %s, %e, %n, %n) : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
