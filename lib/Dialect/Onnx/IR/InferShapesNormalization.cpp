//===- InferShapesNormalization.cpp - Norms, losses -----------------------===//
//
// Shape inference of the normalizations (LayerNormalization,
// RMSNormalization, InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization, LpNormalization, LRN) and of the losses
// (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

/// `t`, or no type (nothing to refine) for an absent optional result.
static Type ifPresent(Operation *op, unsigned i, Type t) {
  return isa<NoneType>(op->getResult(i).getType()) ? Type() : t;
}

InferredTypes LayerNormalizationOp::inferResultTypes() {
  Type xTy = getX().getType();
  Type stash = getElementTypeForOnnxDataType(getContext(), getStashType());
  if (!stash)
    stash = getElementTypeOrSelf(xTy);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getX());
  if (!in)
    return SmallVector<Type>{
        xTy, ifPresent(*this, 1, UnrankedTensorType::get(stash)),
        ifPresent(*this, 2, UnrankedTensorType::get(stash))};
  int64_t axis = getAxis();
  FailureOr<int64_t> n = normalizeAxis(axis, in->size());
  if (failed(n))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << in->size();
  SmallVector<int64_t> stat(*in);
  for (size_t i = *n; i < stat.size(); ++i)
    stat[i] = 1;
  Type statTy = RankedTensorType::get(stat, stash);
  return SmallVector<Type>{xTy, ifPresent(*this, 1, statTy),
                           ifPresent(*this, 2, statTy)};
}

template <typename NormOp> static InferredTypes sameAsFirst(NormOp op) {
  return SmallVector<Type>{op->getOperand(0).getType()};
}

InferredTypes RMSNormalizationOp::inferResultTypes() {
  return sameAsFirst(*this);
}
InferredTypes InstanceNormalizationOp::inferResultTypes() {
  return sameAsFirst(*this);
}
InferredTypes GroupNormalizationOp::inferResultTypes() {
  return sameAsFirst(*this);
}
InferredTypes MeanVarianceNormalizationOp::inferResultTypes() {
  return sameAsFirst(*this);
}
InferredTypes LpNormalizationOp::inferResultTypes() {
  return sameAsFirst(*this);
}
InferredTypes LRNOp::inferResultTypes() { return sameAsFirst(*this); }

/// Loss shape: the labels' shape with reduction "none", else a scalar.
static Type lossType(Value labels, StringRef reduction, Type elem) {
  if (reduction != "none")
    return RankedTensorType::get({}, elem);
  return makeTensorType(getShapeOf(labels), elem);
}

InferredTypes SoftmaxCrossEntropyLossOp::inferResultTypes() {
  Type elem = getElementTypeOrSelf(getScores().getType());
  return SmallVector<Type>{lossType(getLabels(), getReduction(), elem),
                           ifPresent(*this, 1, getScores().getType())};
}

InferredTypes NegativeLogLikelihoodLossOp::inferResultTypes() {
  Type elem = getElementTypeOrSelf(getInput().getType());
  return SmallVector<Type>{lossType(getTarget(), getReduction(), elem)};
}
