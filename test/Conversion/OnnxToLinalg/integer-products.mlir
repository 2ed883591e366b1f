// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s

// MatMulInteger with constant weights: the product of the raw uint8 and
// int8 values (a plain `acc + ext(a) * ext(b)` contraction), then the
// column sums of B times -a_zero_point, computed at compile time:
// -10 * [16, -20] = [-160, 200].
// CHECK-LABEL: func @matmul_integer_constant_b
// CHECK-DAG: %[[C:.*]] = arith.constant dense<[-160, 200]> : tensor<2xi32>
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT: arith.extsi %{{.*}} : i8 to i32
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[C]] : tensor<3x2xi32>, tensor<2xi32>)
// CHECK: arith.addi
func.func @matmul_integer_constant_b(%a: tensor<3x4xui8>) -> tensor<3x2xi32> {
  %b = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %za = arith.constant dense<10> : tensor<ui8>
  %none = onnx.NoValue
  %y = "onnx.MatMulInteger"(%a, %b, %za, %none) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, none) -> tensor<3x2xi32>
  return %y : tensor<3x2xi32>
}

// -----

// Weight zero points (per column) are subtracted from the constant at
// compile time (int16: the differences may not fit 8 bits).
// CHECK-LABEL: func @matmul_integer_b_zero_points
// CHECK: %[[W:.*]] = arith.constant dense_resource<{{.*}}> : tensor<4x2xi16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<3x4xi8>, tensor<4x2xi16>)
// CHECK: arith.extsi %{{.*}} : i16 to i32
func.func @matmul_integer_b_zero_points(%a: tensor<3x4xui8>) -> tensor<3x2xi32> {
  %b = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %zb = arith.constant dense<[1, 2]> : tensor<2xi8>
  %none = onnx.NoValue
  %y = "onnx.MatMulInteger"(%a, %b, %none, %zb) : (tensor<3x4xui8>, tensor<4x2xi8>, none, tensor<2xi8>) -> tensor<3x2xi32>
  return %y : tensor<3x2xi32>
}

// -----

// ConvInteger with constant weights: the input padded with its zero point
// (5; spatially, and its 2 channels to 4), the raw product, then -5 times
// each filter's sum (2 * 3 * 3 ones).
// CHECK-LABEL: func @conv_integer_constant
// CHECK-DAG: %[[C:.*]] = arith.constant dense<-90> : tensor<3x1x1xi32>
// CHECK-DAG: %[[Z:.*]] = arith.constant 5 : i8
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 2, 1, 1]
// CHECK: tensor.yield %[[Z]] : i8
// CHECK: %[[ACC:.*]] = linalg.generic
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT: arith.extsi %{{.*}} : i8 to i32
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[C]] : tensor<1x3x4x4xi32>, tensor<3x1x1xi32>)
func.func @conv_integer_constant(%x: tensor<1x2x4x4xui8>) -> tensor<1x3x4x4xi32> {
  %w = arith.constant dense<1> : tensor<3x2x3x3xi8>
  %zx = arith.constant dense<5> : tensor<ui8>
  %none = onnx.NoValue
  %y = "onnx.ConvInteger"(%x, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64, pads = [1, 1, 1, 1]}> : (tensor<1x2x4x4xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, none) -> tensor<1x3x4x4xi32>
  return %y : tensor<1x3x4x4xi32>
}

// -----

// The same channels-last with filter-first weights (kiln.filter_first:
// F<kernel>C, K-major for the implicit GEMM): the channels (2, padded to
// 4 with the zero point) are the weights' last dim, the filters their
// first.
// CHECK-DAG: #[[WMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>
// CHECK-LABEL: func @conv_integer_filter_first
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 2]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[WMAP]], #{{.*}}]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x6x6x4xi8>, tensor<3x3x3x4xi8>) outs(%{{.*}} : tensor<1x4x4x3xi32>)
func.func @conv_integer_filter_first(%x: tensor<1x4x4x2xui8>) -> tensor<1x4x4x3xi32> {
  %w = arith.constant dense<1> : tensor<3x3x3x2xi8>
  %zx = arith.constant dense<5> : tensor<ui8>
  %none = onnx.NoValue
  %y = "onnx.ConvInteger"(%x, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64, pads = [1, 1, 1, 1]}> {kiln.channels_last, kiln.filter_first} : (tensor<1x4x4x2xui8>, tensor<3x3x3x2xi8>, tensor<ui8>, none) -> tensor<1x4x4x3xi32>
  return %y : tensor<1x4x4x3xi32>
}

// -----

// ConvInteger with weights and zero point known at run time: the zero
// point subtracted in the loop body.
// CHECK-LABEL: func @conv_integer_runtime
// CHECK: %[[ZX:.*]] = tensor.extract
// CHECK: linalg.generic
// CHECK: %[[Z:.*]] = arith.extui %[[ZX]] : i8 to i32
// CHECK: arith.subi %{{.*}}, %[[Z]] : i32
func.func @conv_integer_runtime(%x: tensor<1x2x4x4xui8>, %w: tensor<3x2x3x3xui8>, %zx: tensor<ui8>) -> tensor<1x3x2x2xi32> {
  %none = onnx.NoValue
  %y = "onnx.ConvInteger"(%x, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64}> : (tensor<1x2x4x4xui8>, tensor<3x2x3x3xui8>, tensor<ui8>, none) -> tensor<1x3x2x2xi32>
  return %y : tensor<1x3x2x2xi32>
}

// -----

// Three input channels (an RGB image) are padded to four, with the input's
// zero point and zero weights: the reduction groups by four bytes.
// CHECK-LABEL: func @conv_integer_rgb
// CHECK-DAG: %[[Z:.*]] = arith.constant 7 : i8
// CHECK-DAG: %[[W:.*]] = arith.constant dense_resource<{{.*}}> : tensor<2x4x3x3xi8>
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 1, 0, 0]
// CHECK: tensor.yield %[[Z]] : i8
// CHECK: } : tensor<1x3x5x5xi8> to tensor<1x4x5x5xi8>
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[W]] : tensor<1x4x5x5xi8>, tensor<2x4x3x3xi8>)
func.func @conv_integer_rgb(%x: tensor<1x3x5x5xui8>) -> tensor<1x2x3x3xi32> {
  %w = arith.constant dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 2, 3], [4, 5, 6], [7, 8, -9]]]]> : tensor<2x3x3x3xi8>
  %zx = arith.constant dense<7> : tensor<ui8>
  %none = onnx.NoValue
  %y = "onnx.ConvInteger"(%x, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64}> : (tensor<1x3x5x5xui8>, tensor<2x3x3x3xi8>, tensor<ui8>, none) -> tensor<1x2x3x3xi32>
  return %y : tensor<1x2x3x3xi32>
}
