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

#endif // KILN_DIALECT_ONNX_TRANSFORMS_PASSES_TD
