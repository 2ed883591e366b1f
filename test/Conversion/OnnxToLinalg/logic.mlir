// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Comparisons produce i1 with the signedness-aware predicate: unsigned
// operands are viewed as signless through tensor.bitcast.
// CHECK-LABEL: func @less_unsigned
// CHECK: %[[A:.*]] = tensor.bitcast %{{.*}} : tensor<4xui8> to tensor<4xi8>
// CHECK: %[[B:.*]] = tensor.bitcast %{{.*}} : tensor<4xui8> to tensor<4xi8>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<4xi8>, tensor<4xi8>)
// CHECK: arith.cmpi ult
func.func @less_unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xi1> {
  %0 = "onnx.Less"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Where selects between X and Y with the condition broadcast.
// CHECK-LABEL: func @where
// CHECK: linalg.generic
// CHECK: arith.select
func.func @where(%c: tensor<1x3xi1>, %x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Where"(%c, %x, %y) : (tensor<1x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
