//===- Passes.td - onnx dialect passes ---------------------*- tablegen -*-===//
#ifndef KILN_DIALECT_ONNX_TRANSFORMS_PASSES_TD
#define KILN_DIALECT_ONNX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnOnnxInferShapes : Pass<"kiln-onnx-infer-shapes", "func::FuncOp"> {
  let summary = "Refines the result types of onnx ops from their operands";
  let description = [{
    Walks the function in order and calls `inferShapes()` on every op that
    implements `InferShapesOpInterface`, so each op sees the refined types of
    its producers. Then updates the function's result types where a returned
    value became more precise.
  }];
}

def KilnOnnxSimplify : Pass<"kiln-onnx-simplify", "func::FuncOp"> {
  let summary = "Graph simplification: constant folding, identities, BN folding";
  let description = [{
    Folds small constant computations, shape arithmetic included (a
    Shape → Gather → Concat → Reshape chain becomes a constant when the
    shapes are known); removes algebraic identities (Identity, inference
    Dropout, Cast to the same type, identity Transpose and Reshape,
    Reshape of Reshape, x·1, x+0); folds an inference BatchNormalization into
    the Conv or Gemm before it, and a constant per-channel Mul or Add after a
    Conv into its weights and bias. Folded weights stay resource blobs. Dead
    code and common subexpressions go with the canonicalizer and CSE that
    follow in the pipeline (the onnx ops are Pure).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnOnnxFuseAttention : Pass<"kiln-onnx-fuse-attention", "func::FuncOp"> {
  let summary = "Rewrite exported attention chains into one onnx.Attention";
  let description = [{
    Softmax(Q·Kᵀ·scale [+ mask])·V chains as exporters write them (the
    scale as Div or Mul after the product or folded into Q, an additive
    float mask, Kᵀ from a head-splitting Transpose) become one
    `onnx.Attention` with that scale and mask, so a target can compute it
    as one kernel (lib/Dialect/Onnx/Transforms/FuseAttention.cpp lists the
    spellings). Other chains are left alone.
  }];
}

def KilnOnnxFuseQDQ : Pass<"kiln-onnx-fuse-qdq", "func::FuncOp"> {
  let summary = "Quantized (QDQ) layers as integer products";
  let description = [{
    DequantizeLinear of an 8-bit activation and of constant 8-bit weights
    (per tensor or per output channel) into MatMul, Gemm or Conv, with an
    optional bias (Gemm's C, Conv's B, or an Add of a per-channel constant),
    Relu or Clip, and QuantizeLinear of the result (one scale and zero
    point), become MatMulInteger or ConvInteger (uint8 activations, int8
    weights, int32 accumulation) followed by their rescaling: an int32 bias
    add when its scale is the accumulator's, a Cast to float, a Mul by
    sx·sw[c]/sy, the float bias, the activation and a QuantizeLinear of
    scale 1 (round half to even, then the zero point, then saturation).
    Without a QuantizeLinear after it the layer's float value is computed
    (the scale sx·sw[c]). uint8 weights become int8 (w - 128), int8
    activations produced by a QuantizeLinear are produced as uint8
    (zero point + 128). Anything else (non-constant scales or weights,
    per-channel axes other than the output channels', blocked
    quantization) is left as it is. docs/int8.md has the arithmetic.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def KilnOnnxInsertQDQ : Pass<"kiln-onnx-insert-qdq", "::mlir::ModuleOp"> {
  let summary = "Post-training int8 quantization: QDQ around the contractions";
  let description = [{
    kilnc --precision=int8. Each MatMul, Gemm and Conv with constant f32
    weights and a calibrated f32 activation becomes a QDQ layer that
    kiln-onnx-fuse-qdq (after it) turns into an int8 product:

    * weights: per output channel, symmetric int8 (scale max|w[c]| / 127,
      zero point 0), computed here from the constants, and read through a
      DequantizeLinear;
    * the activation: QuantizeLinear to uint8 (asymmetric: scale and zero
      point of the range [lo, hi] that `method` picks from the calibration
      record in `ranges`: minmax, percentile[:P] or entropy), placed right
      after its producer and shared by every contraction that reads it,
      then a DequantizeLinear.

    Everything else stays fp32. A contraction stays fp32 when `exclude`
    names it (node name or op type), when its weights are not constants,
    when its activation has no calibration record, or when it is already
    quantized; so do the `keep-fp32-count` contractions of the largest
    sensitivity, their own quantization error estimated from the histogram
    of the activation and the weights (relative L2 of the output
    sqrt(e_x + e_w), e the relative mean squared error of the quantized
    input and weights). With `quantize-residuals` (the default), an Add of
    two activations of the same shape (a residual connection) that reads a
    value quantized for a contraction reads its DequantizeLinear too, so
    the value leaves its producer in uint8 only (a block's end writes one
    8-bit tensor instead of that and a float copy for the next block's
    Add); an Add of two int8 contractions' values that only it reads (a
    downsampling shortcut's) quantizes the earlier one over its own range,
    so that the later product reads it as a uint8 residual. With
    `attention-inputs` (kilnc sets it for a target with a fused attention
    kernel), the Q, K and V of each attention chain (Softmax(Q·Kᵀ ...)·V)
    are quantized too, where each is data movement (Split, Reshape,
    Transpose, ...) of one calibrated value that nothing else reads: a
    QuantizeLinear right after that value (its producer, BERT's QKV
    product, then writes uint8) and a DequantizeLinear that
    kiln-onnx-fuse-attention moves down to the attention's inputs (the
    fused kernel reads the 8-bit values). Each decided
    contraction gets `kiln.precision`
    ("int8" or "fp32", with `kiln.fp32_reason`); the module gets
    `kiln.precision_plan` with the ranges, scales and zero points
    (what the compile report lists). docs/int8.md.
  }];
  let options = [
    Option<"ranges", "ranges", "std::string", "\"\"",
           "Calibration ranges (JSON from kilnc --calibrate)">,
    Option<"method", "method", "std::string", "\"percentile\"",
           "Activation range: minmax, percentile, percentile:P or entropy">,
    ListOption<"exclude", "exclude", "std::string",
               "Node names or op types kept in fp32">,
    Option<"keepCount", "keep-fp32-count", "int64_t", "0",
           "Keep this many of the most sensitive contractions in fp32">,
    Option<"quantizeResiduals", "quantize-residuals", "bool", "true",
           "Residual Adds read the quantized value of an activation that "
           "contractions read quantized">,
    Option<"attentionInputs", "attention-inputs", "bool", "false",
           "Quantize the Q, K and V of attention chains (for a fused "
           "attention kernel that reads 8-bit operands)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def KilnOnnxConvertLayout
    : Pass<"kiln-onnx-convert-layout", "func::FuncOp"> {
  let summary = "Convolutions and pools in the target's activation layout";
  let description = [{
    With `layout=nhwc`, every Conv (1 to 3 spatial dims, static weights)
    becomes its channels-last form (attribute `kiln.channels_last`:
    N<spatial>C activations, <kernel>CF weights, or F<kernel>C for a
    ConvInteger with `filter-first-int8`) between a transpose to
    channels-last and one back. Constant weights are permuted in place;
    others get a Transpose (hoisted to load time for external weights).
    The transposes back then sink through elementwise ops (broadcast
    operands reshaped or permuted), Concat (axis permuted) and pools (made
    channels-last), and cancel against the next convolution's; what is left
    sits at the model's inputs and outputs, or before an op that needs
    NC<spatial>. A transpose that moves only size-1 dims becomes a Reshape.
    The model's own transposes never move. `layout=nchw` changes nothing.
    docs/layout.md has the rules and what they leave.
  }];
  let options = [
    Option<"layout", "layout", "std::string", "\"nhwc\"",
           "nhwc or nchw (nothing to do)">,
    Option<"filterFirstInt8", "filter-first-int8", "bool", "false",
           "ConvInteger (group 1) weights as F<kernel>C, K-major for the "
           "implicit GEMM (attribute kiln.filter_first)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def KilnExposeIntermediates
    : Pass<"kiln-expose-intermediates", "::mlir::ModuleOp"> {
  let summary = "Returns intermediate values as extra model outputs";
  let description = [{
    Appends the floating-point results of onnx ops (in program order) to the
    results of each function, so a compiled model also returns them: what
    `kilnc --calibrate` runs to record every tensor's range and what
    `kiln-accuracy` compares layer by layer. Each extra output is named by
    its node's key (the ONNX node name, `#N` added to repeated names, `:I`
    for result I of a node with several results; the same keys
    `kiln-mixed-precision` reads calibration ranges by) and carries the
    result attribute `kiln.exposed`. Values the model already returns are not
    repeated.
  }];
  let options = [
    ListOption<"nodes", "nodes", "std::string",
               "Only these node keys (default: every float value)">,
  ];
}

def KilnMixedPrecision : Pass<"kiln-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Assigns each onnx op a compute type (fp16/bf16 with fp32 islands)";
  let description = [{
    Runs the model in half precision where that keeps accuracy, in program
    order:

    * contractions (MatMul, Gemm, Conv, ConvTranspose, Einsum, Attention) run
      in the half type; their lowering accumulates in fp32 and rounds once;
    * elementwise and data-movement ops follow their inputs: half when every
      non-constant float input is half, else fp32;
    * numerically sensitive ops stay fp32: Softmax/LogSoftmax,
      normalizations (statistics), accumulating reductions over more than
      `reduction-limit` elements, Exp/Log/Pow/Erf (and ops built on them),
      and ops without a half rule (recurrences, control flow, ...);
    * an op whose constant operands (finite values) exceed the half type's
      range stays fp32, and so does one pinned by `keep-fp32` (node names or
      op types);
    * with calibration ranges (`ranges`, JSON written by `kilnc
      --calibrate`), an op stays fp32 when a float input or result would
      overflow the half type (max |x| · headroom > 65504 for fp16) or lie
      wholly in its subnormal range.

    Casts (onnx.Cast) are placed only at the borders of the fp32 islands,
    then cleaned: a cast of a cast through an exactly representable middle
    type becomes one cast (f16→f32→f16 disappears; f32→f16→f32 stays),
    casts are hoisted through Reshape, Transpose, Flatten, Squeeze, Unsqueeze
    and Concat when that makes them narrow sooner or meet another cast, and
    casts of constants are folded (weights are converted once, at compile
    time). Model inputs and outputs keep their declared types.

    Each decided op gets `kiln.precision` ("fp16", "bf16", "fp32", or "tf32"
    for contractions in tf32 mode) and, when kept fp32, `kiln.fp32_reason`;
    the module gets `kiln.precision_plan` (what the compile report lists).
    `tf32` keeps fp32 storage and only marks the contractions as allowed
    TF32 math; kiln-convert-onnx-to-linalg puts the unit attribute
    `kiln.tf32` on the f32 contractions they lower to, which a GPU target
    with a TF32 matrix instruction runs on it (NVIDIA's tensor cores:
    docs/gpu.md); other targets compute them in exact fp32.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"fp16\"",
           "fp32, tf32, fp16 or bf16">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Node names or op types kept in fp32">,
    Option<"ranges", "ranges", "std::string", "\"\"",
           "Calibration ranges (JSON from kilnc --calibrate)">,
    Option<"headroom", "headroom", "double", "1.0",
           "Calibrated |x| is multiplied by this before the range check">,
    Option<"reductionLimit", "reduction-limit", "int64_t", "16",
           "Accumulating reductions over more elements stay fp32">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // KILN_DIALECT_ONNX_TRANSFORMS_PASSES_TD
