//===- InferShapesSoftmax.cpp - Softmax, LogSoftmax, Hardmax ---------------===//
//
// Shape inference of the Softmax family (OnnxFamilies.def): the input's type,
// after checking the axis.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

InferredTypes SoftmaxOp::inferResultTypes() {
  if (std::optional<ArrayRef<int64_t>> in = getShapeOf(getInput())) {
    int64_t axis = (int64_t)getAxis();
    if (failed(normalizeAxis(axis, in->size())))
      return emitOpError() << "axis " << axis << " is out of range for rank "
                           << in->size();
  }
  return SmallVector<Type>{getInput().getType()};
}

template <typename AxisOp> static InferredTypes inferSameAlongAxis(AxisOp op) {
  if (std::optional<ArrayRef<int64_t>> in = getShapeOf(op.getInput())) {
    int64_t axis = (int64_t)op.getAxis();
    if (failed(normalizeAxis(axis, in->size())))
      return op.emitOpError()
             << "axis " << axis << " is out of range for rank " << in->size();
  }
  return SmallVector<Type>{op.getInput().getType()};
}

InferredTypes LogSoftmaxOp::inferResultTypes() {
  return inferSameAlongAxis(*this);
}
InferredTypes HardmaxOp::inferResultTypes() {
  return inferSameAlongAxis(*this);
}
