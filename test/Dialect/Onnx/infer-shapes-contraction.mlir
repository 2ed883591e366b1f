// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-onnx-infer-shapes | FileCheck %s

// Einsum: explicit and implicit outputs, ellipsis, broadcast size-1 labels,
// dynamic labels that another input fixes.
// CHECK-LABEL: func @einsum
// CHECK: "onnx.Einsum"{{.*}} -> tensor<2x3x6xf32>
// CHECK: "onnx.Einsum"{{.*}} -> tensor<5x7xf32>
// CHECK: "onnx.Einsum"{{.*}} -> tensor<?x4x6xf32>
// CHECK: "onnx.Einsum"{{.*}} -> tensor<8x3x5xf32>
func.func @einsum(%a: tensor<2x3x4x5xf32>, %b: tensor<4x5x6xf32>, %c: tensor<5x3xf32>, %d: tensor<3x7xf32>,
                  %e: tensor<?x4x5xf32>, %f: tensor<?x5x6xf32>, %g: tensor<8x3x4xf32>, %h: tensor<1x4x5xf32>) {
  %0 = "onnx.Einsum"(%a, %b) {equation = "abcd,cde->abe"} : (tensor<2x3x4x5xf32>, tensor<4x5x6xf32>) -> tensor<*xf32>
  %1 = "onnx.Einsum"(%c, %d) {equation = "ij,jk"} : (tensor<5x3xf32>, tensor<3x7xf32>) -> tensor<*xf32>
  %2 = "onnx.Einsum"(%e, %f) {equation = "...ij,...jk->...ik"} : (tensor<?x4x5xf32>, tensor<?x5x6xf32>) -> tensor<*xf32>
  %3 = "onnx.Einsum"(%g, %h) {equation = "bij,bjk->bik"} : (tensor<8x3x4xf32>, tensor<1x4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_rank(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{equation 'ijk,jk->ik': term 'ijk' does not match the rank of input 0}}
  %0 = "onnx.Einsum"(%a, %b) {equation = "ijk,jk->ik"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{equation 'ij,jk->ik': inputs give a label sizes 3 and 4}}
  %0 = "onnx.Einsum"(%a, %b) {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_output(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{equation 'ij->ik': an output label appears in no input}}
  %0 = "onnx.Einsum"(%a) {equation = "ij->ik"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}
