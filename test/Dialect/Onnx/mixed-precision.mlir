// RUN: kiln-opt %s -split-input-file --kiln-mixed-precision="precision=fp16" --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-mixed-precision="precision=bf16" --canonicalize | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s -split-input-file --kiln-mixed-precision="precision=fp16 keep-fp32=mm1,Relu" --canonicalize | FileCheck %s --check-prefix=PIN
// RUN: kiln-opt %s -split-input-file --kiln-mixed-precision="precision=tf32" | FileCheck %s --check-prefix=TF32
// RUN: echo '{"tensors": {"big": {"absmax": 300000.0}, "tiny": {"absmax": 1e-6}, "ok": {"absmax": 60000.0}, "logits": {"absmax": 1e6}}}' > %t.ranges.json
// RUN: kiln-opt %s -split-input-file --kiln-mixed-precision="precision=fp16 ranges=%t.ranges.json" --canonicalize | FileCheck %s --check-prefix=CAL

// Contractions run in half with their weights converted at compile time;
// elementwise ops follow them; Softmax stays fp32 (an fp32 island with one
// cast on each border); the model's input and output keep f32.
// CHECK: kiln.precision_plan = {casts = 4 : i64, converted_bytes = 144 : i64, converted_constants = 2 : i64, nodes = [{node = "mm1", op = "MatMul", precision = "fp16"}, {node = "bias1", op = "Add", precision = "fp16"}, {node = "relu1", op = "Relu", precision = "fp16"}, {node = "softmax", op = "Softmax", precision = "fp32", reason = "rule: softmax stays fp32"}, {node = "mm2", op = "MatMul", precision = "fp16"}], precision = "fp16"}
// CHECK-LABEL: func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[W1:.*]] = arith.constant dense<5.000000e-01> : tensor<8x8xf16>
// CHECK-DAG: %[[B1:.*]] = arith.constant dense<[9.997550e-02, {{.*}}]> : tensor<8xf16>
// CHECK: %[[XH:.*]] = "onnx.Cast"(%[[X]]) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK: %[[M1:.*]] = "onnx.MatMul"(%[[XH]], %[[W1]]) {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
// CHECK: %[[A1:.*]] = "onnx.Add"(%[[M1]], %[[B1]]) {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK: %[[R1:.*]] = "onnx.Relu"(%[[A1]]) {kiln.precision = "fp16"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: %[[RF:.*]] = "onnx.Cast"(%[[R1]]) <{{{.*}}to = 1 : i64}> {kiln.cast} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = "onnx.Softmax"(%[[RF]]) <{axis = -1 : i64}> {kiln.fp32_reason = "rule: softmax stays fp32", kiln.precision = "fp32"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[SH:.*]] = "onnx.Cast"(%[[S]]) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK: %[[M2:.*]] = "onnx.MatMul"(%[[SH]], %[[W1]]) {kiln.precision = "fp16"}
// CHECK: %[[OUT:.*]] = "onnx.Cast"(%[[M2]]) <{{{.*}}to = 1 : i64}> {kiln.cast} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK: return %[[OUT]] : tensor<4x8xf32>
// BF16-LABEL: func @mlp
// BF16: "onnx.MatMul"(%{{.*}}, %{{.*}}) {kiln.precision = "bf16"} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// BF16: "onnx.Softmax"(%{{.*}}) <{axis = -1 : i64}> {{.*}}kiln.precision = "fp32"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// Pins by node name (mm1) and op type (Relu): the Add after the fp32 MatMul
// follows its fp32 input; mm2 is still half.
// PIN-LABEL: func @mlp
// PIN: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "pin: --keep-fp32=mm1", kiln.precision = "fp32"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// PIN: "onnx.Add"({{.*}}) {kiln.fp32_reason = "inputs: follows its fp32 inputs", kiln.precision = "fp32"}
// PIN: "onnx.Relu"({{.*}}) {kiln.fp32_reason = "pin: --keep-fp32=Relu", kiln.precision = "fp32"}
// PIN: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
// tf32: fp32 storage, contractions marked, no casts.
// TF32-LABEL: func @mlp
// TF32-NOT: kiln.cast
// TF32: "onnx.MatMul"({{.*}}) {kiln.precision = "tf32"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// TF32: "onnx.Add"({{.*}}) {kiln.fp32_reason = "rule: tf32 applies to contractions only", kiln.precision = "fp32"}
// TF32-NOT: kiln.cast
func.func @mlp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = arith.constant dense<0.5> : tensor<8x8xf32>
  %b1 = arith.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %0 = "onnx.MatMul"(%x, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm1")
  %1 = "onnx.Add"(%0, %b1) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("bias1")
  %2 = "onnx.Relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu1")
  %3 = "onnx.Softmax"(%2) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")
  %4 = "onnx.MatMul"(%3, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  return %4 : tensor<4x8xf32>
}

// -----

// Numerically sensitive ops stay fp32, each with its rule: normalization
// statistics, exp/log/pow/erf, an accumulating reduction over many elements.
// A small reduction (a 2x2 average pool) and a max pool follow their input.
// CHECK-LABEL: func @sensitive
// CHECK: "onnx.Conv"({{.*}}) <{{.*}}> {kiln.precision = "fp16"} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, none) -> tensor<1x4x8x8xf16>
// CHECK: "onnx.MaxPool"({{.*}}) <{{.*}}> {kiln.precision = "fp16"} : (tensor<1x4x8x8xf16>) -> (tensor<1x4x4x4xf16>, none)
// CHECK: "onnx.AveragePool"({{.*}}) <{{.*}}> {kiln.precision = "fp16"} : (tensor<1x4x4x4xf16>) -> tensor<1x4x2x2xf16>
// CHECK: "onnx.GlobalAveragePool"({{.*}}) {kiln.fp32_reason = "rule: reduction over 64 elements (> 16)", kiln.precision = "fp32"}
// CHECK: "onnx.InstanceNormalization"({{.*}}) <{{.*}}> {kiln.fp32_reason = "rule: normalization statistics stay fp32"
// CHECK: "onnx.Exp"({{.*}}) {kiln.fp32_reason = "rule: exp/log/pow/erf stay fp32"
// CHECK: "onnx.Erf"({{.*}}) {kiln.fp32_reason = "rule: exp/log/pow/erf stay fp32"
// CHECK: "onnx.Add"({{.*}}) {kiln.fp32_reason = "inputs: follows its fp32 inputs (mixed with half)", kiln.precision = "fp32"}
func.func @sensitive(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x1x1xf32>, tensor<1x4x8x8xf32>, tensor<1x4x2x2xf32>) {
  %w = arith.constant dense<0.25> : tensor<4x3x3x3xf32>
  %none = onnx.NoValue
  %c = "onnx.Conv"(%x, %w, %none) {pads = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32> loc("conv")
  %mp, %idx = "onnx.MaxPool"(%c) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, none) loc("maxpool")
  %ap = "onnx.AveragePool"(%mp) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32> loc("avgpool")
  %g = "onnx.GlobalAveragePool"(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32> loc("gap")
  %s = arith.constant dense<1.0> : tensor<4xf32>
  %b = arith.constant dense<0.0> : tensor<4xf32>
  %n = "onnx.InstanceNormalization"(%c, %s, %b) : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("inorm")
  %e = "onnx.Exp"(%n) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("exp")
  %r = "onnx.Erf"(%e) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("erf")
  %sum = "onnx.Add"(%r, %c) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("residual")
  return %g, %sum, %ap : tensor<1x4x1x1xf32>, tensor<1x4x8x8xf32>, tensor<1x4x2x2xf32>
}

// -----

// A constant beyond the half range keeps its op fp32 (the op after it then
// follows its fp32 input); in bf16 the same constant fits. Infinite
// constants (attention masks) are representable and do not count.
// CHECK-LABEL: func @constant_range
// CHECK: "onnx.Mul"({{.*}}) {kiln.fp32_reason = "constant range: constant operand 1 reaches |x| = 100000 > 65504", kiln.precision = "fp32"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK: "onnx.Add"({{.*}}) {kiln.fp32_reason = "inputs: follows its fp32 inputs", kiln.precision = "fp32"}
// CHECK: "onnx.Where"({{.*}}) {kiln.precision = "fp16"} : (tensor<2x4xi1>, tensor<f16>, tensor<2x4xf16>) -> tensor<2x4xf16>
// BF16-LABEL: func @constant_range
// BF16: "onnx.Mul"({{.*}}) {kiln.precision = "bf16"} : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>
func.func @constant_range(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>, %m: tensor<2x4xi1>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %mm = "onnx.MatMul"(%a, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("mm")
  %big = arith.constant dense<100000.0> : tensor<f32>
  %0 = "onnx.Mul"(%mm, %big) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("scale")
  %one = arith.constant dense<1.0> : tensor<f32>
  %1 = "onnx.Add"(%0, %one) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("shift")
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %2 = "onnx.Where"(%m, %ninf, %mm) : (tensor<2x4xi1>, tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("mask")
  return %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Calibration: a result measured beyond 65504 keeps its op fp32 (and the
// op reading it); one wholly below the smallest normal fp16 too; 60000 fits.
// CAL-LABEL: func @calibrated
// CAL: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "calibration: result 'big' reaches |x| = 300000 > 65504", kiln.precision = "fp32"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// CAL: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "calibration: input 'big' reaches |x| = 300000 > 65504", kiln.precision = "fp32"}
// CAL: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "calibration: result 'tiny' stays below |x| = 1e-06, under the smallest normal fp16 (6.10352e-05)", kiln.precision = "fp32"}
// CAL: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"} : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
// Without ranges the same ops run in half.
// CHECK-LABEL: func @calibrated
// CHECK-COUNT-4: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"}
func.func @calibrated(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("big")
  %1 = "onnx.MatMul"(%0, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("after_big")
  %2 = "onnx.MatMul"(%a, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("tiny")
  %3 = "onnx.MatMul"(%a, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("ok")
  return %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A model output's range is recorded under the output's name.
// CAL-LABEL: func @by_output_name
// CAL: "onnx.MatMul"({{.*}}) {kiln.fp32_reason = "calibration: result 'logits' reaches |x| = 1e+06 > 65504", kiln.precision = "fp32"}
func.func @by_output_name(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>) -> (tensor<2x4xf32> {kiln.name = "logits"}) {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("fc")
  return %0 : tensor<2x4xf32>
}

// -----

// Cast cleanup: a narrowing cast is hoisted through a single-use Reshape
// and Transpose (they move f16); a Concat of a half and an f32 value
// gets its casts hoisted so f16→f32→f16 cancels; the model's own
// f16→f32→f16 pair disappears while f32→f16→f32 (lossy) stays.
// CHECK-LABEL: func @cleanup
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[Y:.*]]: tensor<4x4xf32>, %[[H:.*]]: tensor<4x4xf16>, %[[Z:.*]]: tensor<4x4xf32>)
// CHECK: %[[XH:.*]] = "onnx.Cast"(%[[X]]) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[XH]], %{{.*}}) <{{.*}}> {kiln.precision = "fp16"} : (tensor<2x8xf16>, tensor<2xi64>) -> tensor<4x4xf16>
// CHECK: %[[T:.*]] = "onnx.Transpose"(%[[R]]) <{perm = [1, 0]}> {kiln.precision = "fp16"} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK: %[[MM:.*]] = "onnx.MatMul"(%[[T]], %{{.*}}) {kiln.precision = "fp16"}
// CHECK: %[[YH:.*]] = "onnx.Cast"(%[[Y]]) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<4x4xf32>) -> tensor<4x4xf16>
// CHECK: %[[C:.*]] = "onnx.Concat"(%[[MM]], %[[YH]]) <{axis = 0 : i64}> {kiln.precision = "fp16"} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<8x4xf16>
// CHECK: "onnx.MatMul"(%[[C]], %{{.*}}) {kiln.precision = "fp16"}
// CHECK-NOT: "onnx.Cast"(%[[H]])
// CHECK: %[[L1:.*]] = "onnx.Cast"(%[[Z]]) <{{{.*}}to = 10 : i64}> : (tensor<4x4xf32>) -> tensor<4x4xf16>
// CHECK: %[[L2:.*]] = "onnx.Cast"(%[[L1]]) <{{{.*}}to = 1 : i64}> : (tensor<4x4xf16>) -> tensor<4x4xf32>
// CHECK: return {{.*}}, %[[H]], %[[L2]]
func.func @cleanup(%x: tensor<2x8xf32>, %y: tensor<4x4xf32>, %h: tensor<4x4xf16>, %z: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf16>, tensor<4x4xf32>) {
  %shape = arith.constant dense<[4, 4]> : tensor<2xi64>
  %r = "onnx.Reshape"(%x, %shape) : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<4x4xf32> loc("reshape")
  %t = "onnx.Transpose"(%r) {perm = [1, 0]} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("transpose")
  %w = arith.constant dense<0.5> : tensor<4x4xf32>
  %mm = "onnx.MatMul"(%t, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm")
  %c = "onnx.Concat"(%mm, %y) {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32> loc("concat")
  %mm2 = "onnx.MatMul"(%c, %w) : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32> loc("mm2")
  %h1 = "onnx.Cast"(%h) {to = 1 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf32> loc("up")
  %h2 = "onnx.Cast"(%h1) {to = 10 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf16> loc("down")
  %l1 = "onnx.Cast"(%z) {to = 10 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf16> loc("lossy_down")
  %l2 = "onnx.Cast"(%l1) {to = 1 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf32> loc("lossy_up")
  return %mm2, %h2, %l2 : tensor<8x4xf32>, tensor<4x4xf16>, tensor<4x4xf32>
}

// -----

// An op whose ONNX schema lacks the half type stays fp32: Einsum has fp16
// but no bf16.
// CHECK-LABEL: func @schema
// CHECK: "onnx.Einsum"({{.*}}) <{{.*}}> {kiln.precision = "fp16"} : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
// BF16-LABEL: func @schema
// BF16: "onnx.Einsum"({{.*}}) <{{.*}}> {kiln.fp32_reason = "rule: the onnx schema of Einsum has no bf16", kiln.precision = "fp32"}
func.func @schema(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Einsum"(%a, %b) {equation = "ij,jk->ik"} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("einsum")
  return %0 : tensor<2x3xf32>
}

// -----

// External weights (arguments with kiln.weight_offset) do not vote, as
// constants do not: the bias added to a half product runs in half with it
// (its weight converted by a cast of the argument), where a caller's f32
// input added to the product keeps the Add in fp32.
// CHECK-LABEL: func @external_bias
// CHECK: %[[B:.*]] = "onnx.Cast"(%arg2) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<8xf32>) -> tensor<8xf16>
// CHECK: "onnx.Add"({{.*}}, %[[B]]) {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK: "onnx.Add"({{.*}}) {kiln.fp32_reason = "inputs: follows its fp32 inputs (mixed with half)", kiln.precision = "fp32"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @external_bias(%x: tensor<4x16xf32>, %w: tensor<16x8xf32> {kiln.weight_offset = 64 : i64}, %b: tensor<8xf32> {kiln.weight_offset = 576 : i64}, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %mm = "onnx.MatMul"(%x, %w) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("mm")
  %a = "onnx.Add"(%mm, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("bias")
  %s = "onnx.Add"(%a, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("residual")
  return %s : tensor<4x8xf32>
}

// -----

// A dequantized integer product (Mul of an int32 -> f32 Cast by constant
// scales, as kiln-onnx-fuse-qdq writes it) stays fp32, its sums being
// beyond the half type's range, but its result is an activation: the bias,
// ReLU and residual Add after it run in half, one cast after the Mul.
// CHECK-LABEL: func @dequantized
// CHECK: %[[F:.*]] = "onnx.Cast"(%arg0)
// CHECK: %[[D:.*]] = "onnx.Mul"(%[[F]], %{{.*}}) {kiln.fp32_reason = "inputs: follows its fp32 inputs", kiln.precision = "fp32"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: %[[H:.*]] = "onnx.Cast"(%[[D]]) <{{{.*}}to = 10 : i64}> {kiln.cast} : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK: "onnx.Add"(%[[H]], %{{.*}}) {kiln.precision = "fp16"} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK: "onnx.Relu"({{.*}}) {kiln.precision = "fp16"} : (tensor<2x8xf16>) -> tensor<2x8xf16>
func.func @dequantized(%sums: tensor<2x8xi32>) -> tensor<2x8xf32> {
  %scale = arith.constant dense<0.01> : tensor<8xf32>
  %bias = arith.constant dense<0.5> : tensor<8xf32>
  %f = "onnx.Cast"(%sums) {to = 1 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32> loc("sums")
  %d = "onnx.Mul"(%f, %scale) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("dequant")
  %b = "onnx.Add"(%d, %bias) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("bias")
  %r = "onnx.Relu"(%b) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("relu")
  return %r : tensor<2x8xf32>
}

// -----

// A quantized residual stream (kiln-onnx-insert-qdq quantize-residuals):
// the residual Add reads a DequantizeLinear of the uint8 activation and
// the dequantized product. Both are activations: the Add runs in half, one
// cast after each (not the whole residual stream in fp32).
// CHECK-LABEL: func @dequantized_residual
// CHECK: %[[DQ:.*]] = "onnx.DequantizeLinear"
// CHECK: %[[H:.*]] = "onnx.Cast"(%[[DQ]]) <{{{.*}}to = 10 : i64}> {kiln.cast}
// CHECK: "onnx.Add"(%{{.*}}, %[[H]]) {kiln.precision = "fp16"} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
func.func @dequantized_residual(%sums: tensor<2x8xi32>, %q: tensor<2x8xui8>) -> tensor<2x8xf32> {
  %scale = arith.constant dense<0.01> : tensor<8xf32>
  %s = arith.constant dense<0.02> : tensor<f32>
  %z = arith.constant dense<128> : tensor<ui8>
  %f = "onnx.Cast"(%sums) {to = 1 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32> loc("sums")
  %d = "onnx.Mul"(%f, %scale) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("dequant")
  %r = "onnx.DequantizeLinear"(%q, %s, %z) : (tensor<2x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x8xf32> loc("residual_dq")
  %y = "onnx.Add"(%d, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("residual")
  return %y : tensor<2x8xf32>
}

// -----

// A post-LN residual stream in half, as the half models of PyTorch and
// TensorRT keep it: the embedding lookup in a weight is half (its table is
// converted like a contraction's weight); LayerNormalization with
// stash_type 1 follows its half input (its lowering keeps the mean and
// variance in f32), so the residual Add after the product stays half. With
// stash_type 0, or when its Mean output is used, it stays fp32.
// CHECK-LABEL: func @residual_stream
// CHECK: "onnx.Gather"({{.*}}) <{axis = 0 : i64}> {kiln.precision = "fp16"} : (tensor<16x8xf16>, tensor<4xi64>) -> tensor<4x8xf16>
// CHECK: "onnx.LayerNormalization"({{.*}}) <{{{.*}}}> {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, none, none)
// CHECK: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"}
// CHECK: "onnx.Add"({{.*}}) {kiln.precision = "fp16"} : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: "onnx.LayerNormalization"({{.*}}) <{{{.*}}stash_type = 0 : i64}> {kiln.fp32_reason = "rule: normalization statistics stay fp32", kiln.precision = "fp32"}
// CHECK: "onnx.LayerNormalization"({{.*}}) <{{{.*}}}> {kiln.fp32_reason = "rule: normalization statistics stay fp32", kiln.precision = "fp32"} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, none)
func.func @residual_stream(%ids: tensor<4xi64>, %table: tensor<16x8xf32> {kiln.weight_offset = 64 : i64}, %w: tensor<8x8xf32> {kiln.weight_offset = 1024 : i64}) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) {
  %g = arith.constant dense<1.0> : tensor<8xf32>
  %b = arith.constant dense<0.0> : tensor<8xf32>
  %e = "onnx.Gather"(%table, %ids) {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32> loc("embed")
  %n:3 = "onnx.LayerNormalization"(%e, %g, %b) {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, none, none) loc("ln0")
  %m = "onnx.MatMul"(%n#0, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %r = "onnx.Add"(%m, %n#0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("residual")
  %s:3 = "onnx.LayerNormalization"(%r, %g, %b) {axis = -1 : i64, epsilon = 1.0e-5 : f32, stash_type = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, none, none) loc("ln_stash0")
  %t:3 = "onnx.LayerNormalization"(%r, %g, %b) {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, none) loc("ln_mean")
  return %s#0, %t#0, %t#1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Ops read only by QuantizeLinear stay fp32 (fused with it, their values
// never reach memory): an integer product's dequantization, bias and GELU
// before its requantization, and a LayerNormalization before its
// quantization. The normalization's input is stored for its row kernel:
// the Relu computing it stays half. An op also read by something else
// (the returned Mul) decides as usual.
// CHECK-LABEL: func @requantized
// CHECK: "onnx.Mul"({{.*}}) {kiln.fp32_reason = "rule: read only by QuantizeLinear (fused with it: no half storage to save)", kiln.precision = "fp32"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: "onnx.Add"({{.*}}) {kiln.fp32_reason = "rule: read only by QuantizeLinear {{.*}}", kiln.precision = "fp32"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: "onnx.Div"({{.*}}) {kiln.fp32_reason = "rule: read only by QuantizeLinear {{.*}}", kiln.precision = "fp32"}
// CHECK: "onnx.Erf"({{.*}}) {kiln.fp32_reason = "rule: read only by QuantizeLinear {{.*}}", kiln.precision = "fp32"}
// CHECK: "onnx.Mul"({{.*}}) {kiln.fp32_reason = "rule: read only by QuantizeLinear {{.*}}", kiln.precision = "fp32"}
// CHECK: "onnx.QuantizeLinear"
// CHECK: "onnx.MatMul"({{.*}}) {kiln.precision = "fp16"}
// CHECK: "onnx.Relu"({{.*}}) {kiln.precision = "fp16"} : (tensor<2x8xf16>) -> tensor<2x8xf16>
// CHECK: "onnx.LayerNormalization"({{.*}}) <{{{.*}}}> {kiln.fp32_reason = "rule: read only by QuantizeLinear {{.*}}", kiln.precision = "fp32"} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, none, none)
// CHECK: "onnx.QuantizeLinear"
// CHECK: "onnx.Mul"({{.*}}) {kiln.precision = "fp16"} : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
func.func @requantized(%sums: tensor<2x8xi32>, %x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x8xui8>, tensor<2x8xui8>, tensor<2x8xui8>, tensor<2x8xf32>) {
  %scale = arith.constant dense<0.01> : tensor<8xf32>
  %bias = arith.constant dense<0.5> : tensor<8xf32>
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %s = arith.constant dense<0.02> : tensor<f32>
  %z = arith.constant dense<128> : tensor<ui8>
  %g = arith.constant dense<1.0> : tensor<8xf32>
  %b = arith.constant dense<0.0> : tensor<8xf32>
  %f = "onnx.Cast"(%sums) {to = 1 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32> loc("sums")
  %d = "onnx.Mul"(%f, %scale) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("dequant")
  %a = "onnx.Add"(%d, %bias) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("bias")
  %y = "onnx.Div"(%a, %sqrt2) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("div")
  %e = "onnx.Erf"(%y) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("erf")
  %e1 = "onnx.Add"(%e, %one) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("plus_one")
  %gl = "onnx.Mul"(%a, %e1) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("gelu")
  %q = "onnx.QuantizeLinear"(%gl, %s, %z) : (tensor<2x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x8xui8> loc("q_gelu")
  %m = "onnx.MatMul"(%x, %w) : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("mm")
  %r = "onnx.Relu"(%m) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("relu")
  %n:3 = "onnx.LayerNormalization"(%r, %g, %b) {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, none, none) loc("ln")
  %qn = "onnx.QuantizeLinear"(%n#0, %s, %z) : (tensor<2x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x8xui8> loc("q_ln")
  %sq = "onnx.Mul"(%r, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("square")
  %qs = "onnx.QuantizeLinear"(%sq, %s, %z) : (tensor<2x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x8xui8> loc("q_square")
  return %q, %qn, %qs, %sq : tensor<2x8xui8>, tensor<2x8xui8>, tensor<2x8xui8>, tensor<2x8xf32>
}
