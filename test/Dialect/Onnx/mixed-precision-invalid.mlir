// RUN: not kiln-opt %s --kiln-mixed-precision="precision=fp8" 2>&1 | FileCheck %s --check-prefix=PREC
// RUN: not kiln-opt %s --kiln-mixed-precision="precision=fp16 ranges=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo '{"tensors": {"mm": {"min": 0}}}' > %t.bad.json
// RUN: not kiln-opt %s --kiln-mixed-precision="precision=fp16 ranges=%t.bad.json" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: echo 'not json' > %t.notjson.json
// RUN: not kiln-opt %s --kiln-mixed-precision="precision=fp16 ranges=%t.notjson.json" 2>&1 | FileCheck %s --check-prefix=NOTJSON
// RUN: kiln-opt %s --kiln-mixed-precision="precision=fp16 keep-fp32=Softmax,nonode" 2>&1 | FileCheck %s --check-prefix=PIN

// PREC: error: unknown precision 'fp8' (expected fp32, tf32, fp16 or bf16)
// MISSING: error: cannot read calibration ranges '{{.*}}missing.json'
// BAD: error: calibration ranges '{{.*}}bad.json': tensor 'mm' has no "absmax"
// NOTJSON: error: calibration ranges '{{.*}}notjson.json' are not JSON
// A pin that names nothing is a warning; the other pin applies.
// PIN: warning: --keep-fp32: 'nonode' names no node or op type of the model
// PIN-NOT: warning: --keep-fp32: 'Softmax'
func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("mm")
  return %0 : tensor<2x4xf32>
}
