//===- InferShapes.cpp - Shape inference over a function ------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXINFERSHAPES
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct InferShapesPass
    : public kiln::impl::KilnOnnxInferShapesBase<InferShapesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    WalkResult r = func.walk<WalkOrder::PreOrder>([](Operation *op) {
      if (auto infer = dyn_cast<onnxops::InferShapesOpInterface>(op))
        if (failed(infer.inferShapes()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    Operation *ret = func.getBody().back().getTerminator();
    func.setFunctionType(FunctionType::get(
        &getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
  }
};
} // namespace
