//===- InferShapesCast.cpp - Cast, CastLike --------------------------------===//
//
// Shape inference of the Cast family (OnnxFamilies.def): the operand's shape
// with the target element type.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

InferredTypes CastOp::inferResultTypes() {
  Type elemTy = getElementTypeForOnnxDataType(getContext(), (int64_t)getTo());
  if (!elemTy)
    return emitOpError() << "unsupported target data type 'to' = "
                         << (int64_t)getTo();
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getInput());
  if (!isa<TensorType>(getInput().getType()))
    return emitOpError() << "expects a tensor input, got "
                         << getInput().getType();
  return SmallVector<Type>{makeTensorType(in, elemTy)};
}

InferredTypes CastLikeOp::inferResultTypes() {
  Operation *op = getOperation();
  return SmallVector<Type>{
      withElem(op->getOperand(0).getType(),
               getElementTypeOrSelf(op->getOperand(1).getType()))};
}
