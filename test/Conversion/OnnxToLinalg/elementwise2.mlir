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

// An unsigned result is bitcast back to its declared type.
// CHECK-LABEL: func @max_unsigned
// CHECK: arith.maxui
// CHECK: tensor.bitcast %{{.*}} : tensor<?xi16> to tensor<?xui16>
func.func @max_unsigned(%a: tensor<?xui16>, %b: tensor<?xui16>) -> tensor<?xui16> {
  %0 = "onnx.Max"(%a, %b) : (tensor<?xui16>, tensor<?xui16>) -> tensor<?xui16>
  return %0 : tensor<?xui16>
}

// -----

// Integer Mod guards division by zero and -1, then takes the divisor's sign.
// CHECK-LABEL: func @mod_int
// CHECK: arith.remsi
// CHECK: arith.select
// CHECK: arith.addi
func.func @mod_int(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<6xi32> {
  %0 = "onnx.Mod"(%a, %b) : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// Math on f16 is computed in f32.
// CHECK-LABEL: func @sin_f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.sin %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @sin_f16(%a: tensor<3xf16>) -> tensor<3xf16> {
  %0 = "onnx.Sin"(%a) : (tensor<3xf16>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// Cast from unsigned reads the integer unsigned.
// CHECK-LABEL: func @cast_u32_to_f32
// CHECK: tensor.bitcast %{{.*}} : tensor<2xui32> to tensor<2xi32>
// CHECK: arith.uitofp %{{.*}} : i32 to f32
func.func @cast_u32_to_f32(%a: tensor<2xui32>) -> tensor<2xf32> {
  %0 = "onnx.Cast"(%a) {to = 1 : i64} : (tensor<2xui32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
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

// -----

// Trilu keeps j - i >= k (upper) and zeroes the rest.
// CHECK-LABEL: func @triu
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @triu(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Trilu"(%x, %none) : (tensor<2x3x4xf32>, none) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
