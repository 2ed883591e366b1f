// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Broadcasting: the [3] operand is read along the last dim only.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @add_broadcast
// CHECK-SAME: %[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<3xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<?x3xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[A]], %[[B]] : tensor<?x3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<?x3xf32>)
// CHECK: arith.addf
// CHECK-NOT: onnx.
func.func @add_broadcast(%a: tensor<?x3xf32>, %b: tensor<3xf32>) -> tensor<?x3xf32> {
  %0 = "onnx.Add"(%a, %b) : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// A size-1 dim broadcasts through a constant index.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func @mul_size_one
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[COL]], #{{.*}}]
// CHECK: arith.mulf
func.func @mul_size_one(%a: tensor<4x3xf32>, %b: tensor<4x1xf32>) -> tensor<4x3xf32> {
  %0 = "onnx.Mul"(%a, %b) : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func @int_div_guards_zero
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.divsi
func.func @int_div_guards_zero(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "onnx.Div"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func @activations
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.tanh
// CHECK: arith.cmpf olt
// CHECK: arith.select
func.func @activations(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.Relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "onnx.Sigmoid"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "onnx.Tanh"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "onnx.LeakyRelu"(%2) {alpha = 0.2 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// Clip with only a max: the missing min is onnx.NoValue.
// CHECK-LABEL: func @clip_max_only
// CHECK: linalg.generic
// CHECK-NOT: arith.maximumf
// CHECK: arith.minimumf
// CHECK-NOT: onnx.NoValue
func.func @clip_max_only(%a: tensor<4xf32>, %hi: tensor<f32>) -> tensor<4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Clip"(%a, %none, %hi) : (tensor<4xf32>, none, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A dynamic dim against a static result dim other than 1 may be 1 at run
// time: that operand is read at index 0 when its dim is 1 (the ReduceMean
// over run-time axes feeding a Div in RMSNormalization's expansion).
// CHECK-LABEL: func @div_runtime_broadcast
// CHECK-SAME: %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<?x?xf32>
// CHECK-DAG: %[[D0:.*]] = tensor.dim %[[B]], %c0
// CHECK-DAG: %[[ONE0:.*]] = arith.cmpi eq, %[[D0]], %c1
// CHECK-DAG: %[[D1:.*]] = tensor.dim %[[B]], %c1
// CHECK-DAG: %[[ONE1:.*]] = arith.cmpi eq, %[[D1]], %c1
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<2x3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: %[[I0:.*]] = linalg.index 0
// CHECK: %[[R0:.*]] = arith.select %[[ONE0]], %{{.*}}, %[[I0]]
// CHECK: %[[I1:.*]] = linalg.index 1
// CHECK: %[[R1:.*]] = arith.select %[[ONE1]], %{{.*}}, %[[I1]]
// CHECK: tensor.extract %[[B]][%[[R0]], %[[R1]]]
// CHECK: arith.divf
func.func @div_runtime_broadcast(%a: tensor<2x3xf32>, %b: tensor<?x?xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Div"(%a, %b) : (tensor<2x3xf32>, tensor<?x?xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @shrink
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK: arith.select
func.func @shrink(%x: tensor<5xf32>) -> tensor<5xf32> {
  %0 = "onnx.Shrink"(%x) {lambd = 1.5 : f32, bias = 0.0 : f32} : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Unsigned Div computes on signless views with divui.
// CHECK-LABEL: func @div_unsigned
// CHECK: tensor.bitcast %{{.*}} : tensor<3xui8> to tensor<3xi8>
// CHECK: arith.divui
// CHECK: tensor.bitcast %{{.*}} : tensor<3xi8> to tensor<3xui8>
func.func @div_unsigned(%a: tensor<3xui8>, %b: tensor<3xui8>) -> tensor<3xui8> {
  %0 = "onnx.Div"(%a, %b) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// Integer Pow goes through f64.
// CHECK-LABEL: func @pow_int
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: math.powf
// CHECK: arith.fptosi %{{.*}} : f64 to i32
func.func @pow_int(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  %0 = "onnx.Pow"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
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
