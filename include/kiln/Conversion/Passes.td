//===- Passes.td - Kiln conversions ------------------------*- tablegen -*-===//
#ifndef KILN_CONVERSION_PASSES_TD
#define KILN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnConvertOnnxToLinalg : Pass<"kiln-convert-onnx-to-linalg", "func::FuncOp"> {
  let summary = "Lowers onnx ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites each supported `onnx` op into target-independent tensor algebra.
    An op without a lowering is an error that names the ONNX node, its op
    type and the opset it was imported from.

    With `fused-attention` (set from the target's
    `Target::hasFusedAttention`), an Attention the target's fused kernel
    takes (f16/bf16 Q, K, V, head size a multiple of 16 up to 128, no
    past/present or extra outputs, no softcap, an additive float mask, causal
    or none) becomes one `kiln.attention` instead of its generics.
  }];
  let options = [
    Option<"fusedAttention", "fused-attention", "bool", "false",
           "Attention the target runs fused becomes kiln.attention">,
    Option<"kMajorInt8Weights", "int8-weights-k-major", "bool", "false",
           "MatMulInteger's constant 8-bit B is laid out [N, K] (K-major) "
           "at compile time">];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::kiln::KilnDialect"];
}

def KilnConvertHostToLLVM : Pass<"kiln-convert-host-to-llvm", "ModuleOp"> {
  let summary = "Lowers the host program and CPU kernels to the LLVM dialect";
  let description = [{
    Lowers `kiln.input`, `kiln.output`, `kiln.buffer` and `kiln.launch` to
    calls of Kiln's runtime ABI (`kiln_rt_*`), together with the func, memref,
    arith, math, cf and index conversions to LLVM. Each kernel function gets a
    packed entry `<kernel>_packed(void **args)` that the runtime calls.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def KilnFlattenGlobals : Pass<"kiln-flatten-globals", "ModuleOp"> {
  let summary = "Makes constant memref globals arrays of bytes";
  let description = [{
    Rewrites each initialized `memref.global` of the module with a static
    shape, an identity layout and elements of whole bytes (not i8 already,
    not i1, not a splat of zeros) into a 1-D `i8` global of the same bytes, and each
    `memref.get_global` (and `kiln.weight`) of it into one of the bytes
    and a `memref.view` as the old type. LLVM IR holds an array of bytes as
    one ConstantDataArray that the AsmPrinter emits as one blob; a nested
    array of floats is a ConstantArray per row of the last dim and is
    emitted one element at a time, which for a model's weights (ResNet-50:
    millions of rows of 3 or 1 floats) is where the compile's time and
    memory went.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // KILN_CONVERSION_PASSES_TD
