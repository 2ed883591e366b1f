// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-onnx-convert-layout),canonicalize,cse)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-onnx-convert-layout{layout=nchw}))' | FileCheck %s --check-prefix=NCHW
// RUN: not kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-onnx-convert-layout{layout=nchwc}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-onnx-convert-layout{filter-first-int8=1}),canonicalize,cse)' | FileCheck %s --check-prefix=FF

// BAD: unknown layout 'nchwc' (expected nchw or nhwc)

// A block as CNNs have it: Conv, Relu, a per-channel constant scale, a 1x1
// Conv, a residual Add and a MaxPool. One transpose to channels-last at the
// input and one back at the output are all that stays: the scale's
// constant is permuted to broadcast along the last dim, the weights to
// <kernel>CF, and the pool becomes channels-last.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:.*]]: tensor<1x3x8x8xf32>
// CHECK-DAG: %[[W1:.*]] = arith.constant dense_resource<layout_w_hwcf> : tensor<3x3x3x4xf32>
// CHECK-DAG: %[[S:.*]] = arith.constant dense<[{{\[}}{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>
// CHECK: %[[T:.*]] = "onnx.Transpose"(%[[X]]) <{perm = [0, 2, 3, 1]}> : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK: %[[C1:.*]] = "onnx.Conv"(%[[T]], %[[W1]], %{{.*}}) {{.*}} {kiln.channels_last} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[R:.*]] = "onnx.Relu"(%[[C1]]) : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[M:.*]] = "onnx.Mul"(%[[R]], %[[S]]) : (tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[C2:.*]] = "onnx.Conv"(%[[M]], %{{.*}}, %{{.*}}) {{.*}} {kiln.channels_last} : (tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>, none) -> tensor<1x8x8x4xf32>
// CHECK: %[[A:.*]] = "onnx.Add"(%[[C2]], %[[M]]) : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[P:.*]], %{{.*}} = "onnx.MaxPool"(%[[A]]) {{.*}} {kiln.channels_last} : (tensor<1x8x8x4xf32>) -> (tensor<1x4x4x4xf32>, none)
// CHECK: %[[B:.*]] = "onnx.Transpose"(%[[P]]) <{perm = [0, 3, 1, 2]}> : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: return %[[B]]
// CHECK-NOT: onnx.Transpose
// NCHW-LABEL: func.func @block(
// NCHW-NOT: onnx.Transpose
// NCHW-NOT: kiln.channels_last
func.func @block(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<4x3x3x3xf32>
  %b = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = "onnx.Conv"(%x, %w, %b) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r = "onnx.Relu"(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %s = arith.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %m = "onnx.Mul"(%r, %s) : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %w2 = arith.constant dense<0.5> : tensor<4x4x1x1xf32>
  %n = "onnx.NoValue"() : () -> none
  %c2 = "onnx.Conv"(%m, %w2, %n) {kernel_shape = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, none) -> tensor<1x4x8x8xf32>
  %a = "onnx.Add"(%c2, %m) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p, %i = "onnx.MaxPool"(%a) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, none)
  return %p : tensor<1x4x4x4xf32>
}

// -----

// The weights are permuted element by element: w[f][c][kh][kw] lands at
// [kh][kw][c][f] (f = 2 filters, c = 1, a 1x2 kernel).
// CHECK-LABEL: func.func @weights(
// NCHW-LABEL: func.func @weights(
// CHECK: arith.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00, 3.000000e+00]], {{\[}}[2.000000e+00, 4.000000e+00]]]]> : tensor<1x2x1x2xf32>
func.func @weights(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x3xf32> {
  %w = arith.constant dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>
  %n = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %n) {kernel_shape = [1, 2]} : (tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32>, none) -> tensor<1x2x4x3xf32>
  return %c : tensor<1x2x4x3xf32>
}

// -----

// Weights that are not constants (--external-weights: an argument) get a
// Transpose, which the host stage runs at load time. A global average
// pool becomes channels-last; the transpose back then moves only size-1
// dims and is a Reshape, which the Flatten reads.
// CHECK-LABEL: func.func @external(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x5x5xf32>, %[[W:[^:]*]]: tensor<8x3x3x3xf32>
// CHECK-DAG: %[[SHAPE:.*]] = arith.constant dense<[2, 8, 1, 1]> : tensor<4xi64>
// CHECK-DAG: %[[WT:.*]] = "onnx.Transpose"(%[[W]]) <{perm = [2, 3, 1, 0]}> : (tensor<8x3x3x3xf32>) -> tensor<3x3x3x8xf32>
// CHECK-DAG: %[[XT:.*]] = "onnx.Transpose"(%[[X]]) <{perm = [0, 2, 3, 1]}>
// CHECK: %[[C:.*]] = "onnx.Conv"(%[[XT]], %[[WT]], %{{.*}}) {{.*}} {kiln.channels_last} : (tensor<2x5x5x3xf32>, tensor<3x3x3x8xf32>, none) -> tensor<2x3x3x8xf32>
// CHECK: %[[G:.*]] = "onnx.GlobalAveragePool"(%[[C]]) {kiln.channels_last} : (tensor<2x3x3x8xf32>) -> tensor<2x1x1x8xf32>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[G]], %[[SHAPE]])
// CHECK: "onnx.Flatten"(%[[R]])
// CHECK-NOT: "onnx.Transpose"
func.func @external(%x: tensor<2x3x5x5xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<2x8xf32> {
  %n = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %n) {kernel_shape = [3, 3]} : (tensor<2x3x5x5xf32>, tensor<8x3x3x3xf32>, none) -> tensor<2x8x3x3xf32>
  %g = "onnx.GlobalAveragePool"(%c) : (tensor<2x8x3x3xf32>) -> tensor<2x8x1x1xf32>
  %f = "onnx.Flatten"(%g) {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
  return %f : tensor<2x8xf32>
}

// -----

// Concat of two channels-last values along the channels concatenates
// along the last dim. A Softmax over the channels needs NC<spatial>: the
// transpose back stays before it. The model's own Transpose (of the
// input) does not move.
// CHECK-LABEL: func.func @concat_softmax(
// CHECK-SAME: %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK: %[[OWN:.*]] = "onnx.Transpose"(%[[X]]) <{perm = [0, 1, 3, 2]}>
// CHECK: %[[IN:.*]] = "onnx.Transpose"(%[[OWN]]) <{perm = [0, 2, 3, 1]}>
// CHECK: %[[A:.*]] = "onnx.Conv"(%[[IN]]
// CHECK: %[[B:.*]] = "onnx.Conv"(%[[IN]]
// CHECK: %[[CAT:.*]] = "onnx.Concat"(%[[A]], %[[B]]) <{axis = 3 : i64}> : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[BACK:.*]] = "onnx.Transpose"(%[[CAT]]) <{perm = [0, 3, 1, 2]}>
// CHECK: "onnx.Softmax"(%[[BACK]]) <{axis = 1 : i64}>
func.func @concat_softmax(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %own = "onnx.Transpose"(%x) {perm = [0, 1, 3, 2]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<0.25> : tensor<2x2x1x1xf32>
  %n = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%own, %w, %n) {kernel_shape = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %b = "onnx.Conv"(%own, %w, %n) {kernel_shape = [1, 1], pads = [0, 0, 0, 0]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %cat = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %s = "onnx.Softmax"(%cat) {axis = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %s : tensor<1x4x4x4xf32>
}

// -----

// A U-Net decoder step: Resize (linear, x2) of a convolution's output, a
// Concat with a graph input (channels-first: not from a convolution), then
// a convolution. The transpose sinks through the Resize (the axes its
// scales name move with the dims: [0, 3, 1, 2]) and the Concat (half its
// operands came channels-last; the input gets a transpose of its own),
// where it meets the next convolution's: no transpose of the concatenated
// value is left.
// CHECK-LABEL: func.func @resize_concat(
// CHECK-SAME: %[[X:.*]]: tensor<1x4x8x8xf32>, %[[SKIP:.*]]: tensor<1x4x16x16xf32>
// CHECK: %[[A:.*]] = "onnx.Conv"(%{{.*}}) {{.*}} -> tensor<1x8x8x4xf32>
// CHECK: %[[UP:.*]] = "onnx.Resize"(%[[A]], %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}axes = [0, 3, 1, 2],{{.*}} -> tensor<1x16x16x4xf32>
// CHECK: %[[S:.*]] = "onnx.Transpose"(%[[SKIP]]) <{perm = [0, 2, 3, 1]}>
// CHECK: %[[CAT:.*]] = "onnx.Concat"(%[[UP]], %[[S]]) <{axis = 3 : i64}> {{.*}} -> tensor<1x16x16x8xf32>
// CHECK-NEXT: %[[Y:.*]] = "onnx.Conv"(%[[CAT]]
// CHECK: "onnx.Transpose"(%[[Y]]) <{perm = [0, 3, 1, 2]}>
func.func @resize_concat(%x: tensor<1x4x8x8xf32>, %skip: tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> {
  %w = arith.constant dense<0.25> : tensor<4x4x1x1xf32>
  %w2 = arith.constant dense<0.125> : tensor<4x8x3x3xf32>
  %n = "onnx.NoValue"() : () -> none
  %scales = arith.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %a = "onnx.Conv"(%x, %w, %n) {kernel_shape = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, none) -> tensor<1x4x8x8xf32>
  %up = "onnx.Resize"(%a, %n, %scales, %n) {mode = "linear"} : (tensor<1x4x8x8xf32>, none, tensor<4xf32>, none) -> tensor<1x4x16x16xf32>
  %cat = "onnx.Concat"(%up, %skip) {axis = 1 : i64} : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x8x16x16xf32>
  %y = "onnx.Conv"(%cat, %w2, %n) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : (tensor<1x8x16x16xf32>, tensor<4x8x3x3xf32>, none) -> tensor<1x4x16x16xf32>
  return %y : tensor<1x4x16x16xf32>
}

// -----

// A depthwise convolution (group = channels) with dynamic batch and
// spatial dims: its weights [F, 1, kh, kw] become [kh, kw, 1, F].
// CHECK-LABEL: func.func @depthwise_dynamic(
// CHECK: "onnx.Conv"({{.*}}) <{{.*}}group = 4 : i64{{.*}}> {kiln.channels_last} : (tensor<?x?x?x4xf32>, tensor<3x3x1x4xf32>, none) -> tensor<?x?x?x4xf32>
func.func @depthwise_dynamic(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %w = arith.constant dense<1.0> : tensor<4x1x3x3xf32>
  %n = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %n) {kernel_shape = [3, 3], group = 4 : i64, pads = [1, 1, 1, 1]} : (tensor<?x4x?x?xf32>, tensor<4x1x3x3xf32>, none) -> tensor<?x4x?x?xf32>
  %r = "onnx.Relu"(%c) : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  return %r : tensor<?x4x?x?xf32>
}

// -----

// A quantized layer after kiln-onnx-fuse-qdq: ConvInteger becomes
// channels-last like Conv (its zero points stay), and the transposes sink
// through its rescaling (an int32 Add, Cast, Mul, QuantizeLinear with one
// scale and zero point), a per-tensor DequantizeLinear and MaxPool, up to
// the next ConvInteger, where they cancel.
// CHECK-LABEL: func.func @quantized
// CHECK: "onnx.Transpose"(%{{.*}}) <{perm = [0, 2, 3, 1]}> : (tensor<1x4x8x8xui8>)
// CHECK: %[[C:.*]] = "onnx.ConvInteger"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} {kiln.channels_last} : (tensor<1x8x8x4xui8>, tensor<1x1x4x4xi8>, tensor<ui8>, none) -> tensor<1x8x8x4xi32>
// CHECK: %[[A:.*]] = "onnx.Add"(%[[C]], %{{.*}}) : (tensor<1x8x8x4xi32>, tensor<1x1x1x4xi32>)
// CHECK: "onnx.Cast"(%[[A]]) {{.*}} -> tensor<1x8x8x4xf32>
// CHECK: %[[Q:.*]] = "onnx.QuantizeLinear"({{.*}}) {{.*}} -> tensor<1x8x8x4xui8>
// CHECK: %[[D:.*]] = "onnx.DequantizeLinear"(%[[Q]], {{.*}} -> tensor<1x8x8x4xf32>
// CHECK: "onnx.MaxPool"(%[[D]]) {{.*}} {kiln.channels_last}
// CHECK: "onnx.QuantizeLinear"({{.*}}) {{.*}} -> tensor<1x4x4x4xui8>
// CHECK: "onnx.ConvInteger"({{.*}}) {{.*}} {kiln.channels_last} : (tensor<1x4x4x4xui8>
// CHECK: "onnx.Transpose"(%{{.*}}) <{perm = [0, 3, 1, 2]}> : (tensor<1x4x4x4xi32>)
// CHECK-NOT: onnx.Transpose
// With filter-first-int8 (sm_90a) the 8-bit weights are F<kernel>C instead.
// FF-LABEL: func.func @quantized
// FF: "onnx.ConvInteger"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} {kiln.channels_last, kiln.filter_first} : (tensor<1x8x8x4xui8>, tensor<4x1x1x4xi8>, tensor<ui8>, none)
func.func @quantized(%x: tensor<1x4x8x8xui8>) -> tensor<1x4x4x4xi32> {
  %w = arith.constant dense<1> : tensor<4x4x1x1xi8>
  %zx = arith.constant dense<3> : tensor<ui8>
  %none = onnx.NoValue
  %b = arith.constant dense<[[[1]], [[2]], [[3]], [[4]]]> : tensor<4x1x1xi32>
  %m = arith.constant dense<0.5> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %zy = arith.constant dense<0> : tensor<ui8>
  %c = "onnx.ConvInteger"(%x, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64}> : (tensor<1x4x8x8xui8>, tensor<4x4x1x1xi8>, tensor<ui8>, none) -> tensor<1x4x8x8xi32>
  %a = "onnx.Add"(%c, %b) : (tensor<1x4x8x8xi32>, tensor<4x1x1xi32>) -> tensor<1x4x8x8xi32>
  %f = "onnx.Cast"(%a) <{to = 1 : i64}> : (tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xf32>
  %y = "onnx.Mul"(%f, %m) : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %q = "onnx.QuantizeLinear"(%y, %one, %zy) : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x8x8xui8>
  %d = "onnx.DequantizeLinear"(%q, %m, %zy) : (tensor<1x4x8x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x8x8xf32>
  %p, %i = "onnx.MaxPool"(%d) <{kernel_shape = [2, 2], strides = [2, 2]}> : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, none)
  %q2 = "onnx.QuantizeLinear"(%p, %m, %zy) : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x4xui8>
  %c2 = "onnx.ConvInteger"(%q2, %w, %zx, %none) <{auto_pad = "NOTSET", group = 1 : i64}> : (tensor<1x4x4x4xui8>, tensor<4x4x1x1xi8>, tensor<ui8>, none) -> tensor<1x4x4x4xi32>
  return %c2 : tensor<1x4x4x4xi32>
}
