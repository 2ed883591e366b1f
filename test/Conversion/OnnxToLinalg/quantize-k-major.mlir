// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg="int8-weights-k-major=1" --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg --canonicalize | FileCheck %s --check-prefix=KN

// For a target whose 8-bit products read constant weights K-major (sm_90a's
// wgmma; Target::wantsKMajorInt8Weights), MatMulInteger's constant B [K, N]
// becomes a [N, K] constant at compile time and the product reads it at
// (n, k): the kernel then needs no transpose launch. The column sums are
// the same: -10 * [16, -20].
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func @matmul_integer_constant_b
// CHECK-DAG: %[[C:.*]] = arith.constant dense<[-160, 200]> : tensor<2xi32>
// CHECK-DAG: %[[W:.*]] = arith.constant dense_resource<weights_k_major> : tensor<2x4xi8>
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[W]] : tensor<3x4xi8>, tensor<2x4xi8>)
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT: arith.extsi %{{.*}} : i8 to i32
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %[[C]] : tensor<3x2xi32>, tensor<2xi32>)
// Without the option B stays [K, N].
// KN-LABEL: func @matmul_integer_constant_b
// KN: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3x4xi8>, tensor<4x2xi8>)
func.func @matmul_integer_constant_b(%a: tensor<3x4xui8>) -> tensor<3x2xi32> {
  %b = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %za = arith.constant dense<10> : tensor<ui8>
  %none = onnx.NoValue
  %y = "onnx.MatMulInteger"(%a, %b, %za, %none) : (tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, none) -> tensor<3x2xi32>
  return %y : tensor<3x2xi32>
}
// The values, column by column: 1 3 5 7, -2 -4 -6 -8.
// CHECK: weights_k_major: "0x{{[0-9A-F]*}}01030507FEFCFAF8"

// -----

// Weight zero points (per column): the i16 differences, transposed:
// 0 2 4 6 and -4 -6 -8 -10.
// CHECK-LABEL: func @matmul_integer_b_zero_points
// CHECK: %[[W:.*]] = arith.constant dense_resource<weights_k_major> : tensor<2x4xi16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<3x4xi8>, tensor<2x4xi16>)
// CHECK: arith.extsi %{{.*}} : i16 to i32
func.func @matmul_integer_b_zero_points(%a: tensor<3x4xui8>) -> tensor<3x2xi32> {
  %b = arith.constant dense<[[1, -2], [3, -4], [5, -6], [7, -8]]> : tensor<4x2xi8>
  %zb = arith.constant dense<[1, 2]> : tensor<2xi8>
  %none = onnx.NoValue
  %y = "onnx.MatMulInteger"(%a, %b, %none, %zb) : (tensor<3x4xui8>, tensor<4x2xi8>, none, tensor<2xi8>) -> tensor<3x2xi32>
  return %y : tensor<3x2xi32>
}
// CHECK: weights_k_major: "0x{{[0-9A-F]*}}0000020004000600FCFFFAFFF8FFF6FF"
