// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// Conv with padding, stride 2 and groups: pad, then one generic over
// (n, f, oh, ow, c, kh, kw) that reads input channel (f floordiv 4) * 2 + c.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 4) * 2 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-LABEL: func @conv_grouped
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: } -> tensor<1x8x4x4xf32>
func.func @conv_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Conv"(%x, %w, %none) {group = 2 : i64, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x8x8xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// -----

// MaxPool pads with -inf and reduces with maximumf over a window operand.
// CHECK-LABEL: func @maxpool
// CHECK: tensor.pad
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: %[[W:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[W]] : tensor<1x2x7x7xf32>, tensor<3x3xf32>)
// CHECK: arith.maximumf
func.func @maxpool(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, none)
  return %y : tensor<1x2x3x3xf32>
}

// -----

// MaxPool of uint8 (a quantized pool): padded with 0, the type's minimum,
// reduced with maxui on the signless view.
// CHECK-LABEL: func @maxpool_u8
// CHECK: %[[X:.*]] = tensor.bitcast %{{.*}} : tensor<1x2x5x5xui8> to tensor<1x2x5x5xi8>
// CHECK: tensor.pad %[[X]]
// CHECK: arith.constant 0 : i8
// CHECK: linalg.generic
// CHECK: arith.maxui
// CHECK: tensor.bitcast %{{.*}} : tensor<1x2x3x3xi8> to tensor<1x2x3x3xui8>
func.func @maxpool_u8(%x: tensor<1x2x5x5xui8>) -> tensor<1x2x3x3xui8> {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x2x5x5xui8>) -> (tensor<1x2x3x3xui8>, none)
  return %y : tensor<1x2x3x3xui8>
}

// -----

// int8: padded with -128, maxsi.
// CHECK-LABEL: func @maxpool_i8
// CHECK: arith.constant -128 : i8
// CHECK: arith.maxsi
func.func @maxpool_i8(%x: tensor<1x2x5x5xi8>) -> tensor<1x2x3x3xi8> {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x2x5x5xi8>) -> (tensor<1x2x3x3xi8>, none)
  return %y : tensor<1x2x3x3xi8>
}

// -----

// CHECK-LABEL: func @global_max_pool
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @global_max_pool(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32> {
  %0 = "onnx.GlobalMaxPool"(%x) : (tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32>
  return %0 : tensor<1x3x1x1xf32>
}
