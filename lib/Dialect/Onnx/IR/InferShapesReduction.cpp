//===- InferShapesReduction.cpp - Reductions -------------------------------===//
//
// Shape inference of the Reduction family (OnnxFamilies.def): the Reduce*
// ops (axes operand), ArgMax/ArgMin and CumSum.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// ReduceMean, ReduceSum
//===----------------------------------------------------------------------===//

template <typename ReduceOp> static InferredTypes inferReduce(ReduceOp op) {
  Value data = op.getData(), axesValue = op.getAxes();
  Type elemTy = getElementTypeOrSelf(data.getType());
  bool keepDims = op.getKeepdims() != 0;
  bool noopWithEmptyAxes = op.getNoopWithEmptyAxes() != 0;
  std::optional<ArrayRef<int64_t>> in = getShapeOf(data);

  std::optional<SmallVector<int64_t>> axes;
  if (isNoValue(axesValue)) {
    axes = SmallVector<int64_t>();
  } else {
    axes = getConstantIntValues(axesValue);
    if (!axes) {
      // Unknown axes: each dim may or may not be reduced.
      if (!in)
        return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
      if (keepDims)
        return SmallVector<Type>{RankedTensorType::get(
            SmallVector<int64_t>(in->size(), kDynamic), elemTy)};
      auto len = getShapeOf(axesValue);
      if (len && len->size() == 1 && !ShapedType::isDynamic((*len)[0]) &&
          (*len)[0] > 0)
        return SmallVector<Type>{RankedTensorType::get(
            SmallVector<int64_t>(in->size() -
                                     std::min<int64_t>((*len)[0], in->size()),
                                 kDynamic),
            elemTy)};
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    }
  }
  if (axes->empty() && noopWithEmptyAxes)
    return SmallVector<Type>{data.getType()};
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  int64_t rank = in->size();
  llvm::SmallBitVector reduced(rank, axes->empty());
  for (int64_t a : *axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank);
    if (failed(n))
      return op.emitOpError()
             << "axis " << a << " is out of range for rank " << rank;
    if (reduced.test(*n))
      return op.emitOpError() << "axis " << a << " is repeated";
    reduced.set(*n);
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.test(i))
      out.push_back((*in)[i]);
    else if (keepDims)
      out.push_back(1);
  }
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes ReduceMeanOp::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceSumOp::inferResultTypes() { return inferReduce(*this); }

//===----------------------------------------------------------------------===//
// The other Reduce* ops, ArgMax/ArgMin, CumSum
//===----------------------------------------------------------------------===//

InferredTypes ReduceMaxOp::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceMinOp::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceProdOp::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceL1Op::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceL2Op::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceLogSumOp::inferResultTypes() { return inferReduce(*this); }
InferredTypes ReduceLogSumExpOp::inferResultTypes() {
  return inferReduce(*this);
}
InferredTypes ReduceSumSquareOp::inferResultTypes() {
  return inferReduce(*this);
}

template <typename ArgOp> static InferredTypes inferArgReduce(ArgOp op) {
  Type i64 = IntegerType::get(op.getContext(), 64);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(op.getData());
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(i64)};
  int64_t rank = in->size();
  int64_t axis = op.getAxis();
  FailureOr<int64_t> n = normalizeAxis(axis, rank);
  if (failed(n))
    return op.emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != *n)
      out.push_back((*in)[i]);
    else if (op.getKeepdims())
      out.push_back(1);
  }
  return SmallVector<Type>{RankedTensorType::get(out, i64)};
}

InferredTypes ArgMaxOp::inferResultTypes() { return inferArgReduce(*this); }
InferredTypes ArgMinOp::inferResultTypes() { return inferArgReduce(*this); }

InferredTypes CumSumOp::inferResultTypes() {
  return SmallVector<Type>{getX().getType()};
}
