// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// NonMaxSuppression: a sequential kernel (one scf.for over batch x class
// pairs, one more than needed so it is never unrolled) writes the selected
// rows and their count; the host reads the count and a copy kernel takes the
// first rows.
// CHECK-LABEL: func @nms
// CHECK-NOT: onnx.NonMaxSuppression
// CHECK: %[[LOOP:.*]]:3 = scf.for
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: tensor.insert
// CHECK: %[[N:.*]] = tensor.extract %[[LOOP]]#1
// CHECK: tensor.extract_slice %[[LOOP]]#0
// CHECK: linalg.copy
func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %m: tensor<1xi64>, %iou: tensor<1xf32>) -> tensor<?x3xi64> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.NonMaxSuppression"(%b, %s, %m, %iou, %n) {center_point_box = 1 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, none) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

// Unique: a first kernel finds each slice's first occurrence and numbers the
// distinct slices, a second ranks them (sorted), the host reads the number
// of distinct slices and generics gather Y, indices and counts.
// CHECK-LABEL: func @unique
// CHECK-NOT: onnx.Unique
// CHECK: %[[K1:.*]]:3 = scf.for
// CHECK: %[[K2:.*]] = scf.for
// CHECK: %[[U:.*]] = tensor.extract %[[K1]]#2
// CHECK: linalg.generic
// CHECK: arith.minsi
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK: arith.addi
func.func @unique(%x: tensor<6xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>) {
  %0:4 = "onnx.Unique"(%x) : (tensor<6xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>
}

// -----

// Unique along an axis, unsorted (first-occurrence order: no ranking
// kernel), Y only.
// CHECK-LABEL: func @unique_axis_unsorted
// CHECK: %[[K1:.*]]:3 = scf.for
// CHECK-NOT: scf.for {{.*}} -> (tensor<?xi64>)
// CHECK: tensor.extract %[[K1]]#2
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @unique_axis_unsorted(%x: tensor<2x3xi32>) -> tensor<2x?xi32> {
  %0:4 = "onnx.Unique"(%x) {axis = 1 : i64, sorted = 0 : i64} : (tensor<2x3xi32>) -> (tensor<2x?xi32>, none, none, none)
  return %0#0 : tensor<2x?xi32>
}
