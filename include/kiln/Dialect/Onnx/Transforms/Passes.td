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

#endif // KILN_DIALECT_ONNX_TRANSFORMS_PASSES_TD
