// RUN: kiln-opt %s -split-input-file --kiln-convert-onnx-to-linalg | FileCheck %s

// A channels-last Conv (kiln-onnx-convert-layout): N<spatial>C input,
// <kernel>CF weights, loops (n, oh, ow, f, kh, kw, c), padding on the
// spatial dims only and the bias [F] broadcast along the last dim as it is.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d6)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func @conv_nhwc
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: } -> tensor<1x4x4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[B]], #{{.*}}]
func.func @conv_nhwc(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x8xf32>, %b: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = "onnx.Conv"(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [2, 2], kiln.channels_last} : (tensor<1x8x8x3xf32>, tensor<3x3x3x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}

// -----

// Depthwise (one input channel per group): no loop over the input
// channel; the weights' size-1 channel dim is folded away, so input,
// weights and output are all innermost along f.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d4, d2 + d5, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5, d3)>
// CHECK-LABEL: func @depthwise_nhwc
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<3x3x1x4xf32> into tensor<3x3x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
func.func @depthwise_nhwc(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32> {
  %none = onnx.NoValue
  %0 = "onnx.Conv"(%x, %w, %none) {group = 4 : i64, pads = [1, 1, 1, 1], kiln.channels_last} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>, none) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// -----

// Channels-last pools: the window slides along dims 1 and 2, the channels
// stay in place; a global pool reduces dims 1 and 2.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-LABEL: func @pools_nhwc
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[X]], #{{.*}}, #{{.*}}]
// CHECK: arith.maximumf
// CHECK: } -> tensor<1x3x3x2xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "parallel"]
// CHECK: } -> tensor<1x1x1x2xf32>
func.func @pools_nhwc(%x: tensor<1x5x5x2xf32>) -> (tensor<1x3x3x2xf32>, tensor<1x1x1x2xf32>) {
  %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2], kiln.channels_last} : (tensor<1x5x5x2xf32>) -> (tensor<1x3x3x2xf32>, none)
  %g = "onnx.GlobalAveragePool"(%x) {kiln.channels_last} : (tensor<1x5x5x2xf32>) -> tensor<1x1x1x2xf32>
  return %y, %g : tensor<1x3x3x2xf32>, tensor<1x1x1x2xf32>
}
