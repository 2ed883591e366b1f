//===- InferShapesReduction.cpp - Reductions, Softmax, MatMul, Gemm -------===//
//
// Shape inference of the reducing ops: ReduceMean/ReduceSum (axes operand),
// Softmax, and the contractions MatMul (numpy matmul) and Gemm.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static bool staticMismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

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
// Softmax
//===----------------------------------------------------------------------===//

InferredTypes SoftmaxOp::inferResultTypes() {
  if (std::optional<ArrayRef<int64_t>> in = getShapeOf(getInput())) {
    int64_t axis = (int64_t)getAxis();
    if (failed(normalizeAxis(axis, in->size())))
      return emitOpError() << "axis " << axis << " is out of range for rank "
                           << in->size();
  }
  return SmallVector<Type>{getInput().getType()};
}

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

InferredTypes MatMulOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getA().getType());
  if (getElementTypeOrSelf(getB().getType()) != elemTy)
    return emitOpError() << "operands have different element types: "
                         << getA().getType() << " and " << getB().getType();
  std::optional<ArrayRef<int64_t>> a = getShapeOf(getA()),
                                   b = getShapeOf(getB());
  if (!a || !b)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  if (a->empty() || b->empty())
    return emitOpError("operands must have rank >= 1");
  // 1-D operands are promoted ([k] -> [1, k] / [k, 1]) and the added dim is
  // dropped from the result.
  SmallVector<int64_t> aS(*a), bS(*b);
  bool aVec = aS.size() == 1, bVec = bS.size() == 1;
  if (aVec)
    aS.insert(aS.begin(), 1);
  if (bVec)
    bS.push_back(1);
  int64_t k1 = aS.back(), k2 = bS[bS.size() - 2];
  if (staticMismatch(k1, k2))
    return emitOpError() << "inner dimensions mismatch: " << getA().getType()
                         << " and " << getB().getType();
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef(aS).drop_back(2), ArrayRef(bS).drop_back(2));
  if (failed(batch))
    return emitOpError() << "batch dimensions are not broadcast-compatible: "
                         << getA().getType() << " and " << getB().getType();
  SmallVector<int64_t> out(*batch);
  if (!aVec)
    out.push_back(aS[aS.size() - 2]);
  if (!bVec)
    out.push_back(bS.back());
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes GemmOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getA().getType());
  std::optional<ArrayRef<int64_t>> a = getShapeOf(getA()),
                                   b = getShapeOf(getB());
  if ((a && a->size() != 2) || (b && b->size() != 2))
    return emitOpError() << "A and B must be 2-D, got " << getA().getType()
                         << " and " << getB().getType();
  int64_t m = kDynamic, n = kDynamic, ka = kDynamic, kb = kDynamic;
  if (a) {
    m = getTransA() ? (*a)[1] : (*a)[0];
    ka = getTransA() ? (*a)[0] : (*a)[1];
  }
  if (b) {
    kb = getTransB() ? (*b)[1] : (*b)[0];
    n = getTransB() ? (*b)[0] : (*b)[1];
  }
  if (staticMismatch(ka, kb))
    return emitOpError() << "inner dimensions mismatch: A " << getA().getType()
                         << (getTransA() ? " (transposed)" : "") << " and B "
                         << getB().getType()
                         << (getTransB() ? " (transposed)" : "");
  if (!isNoValue(getC())) {
    if (std::optional<ArrayRef<int64_t>> c = getShapeOf(getC())) {
      // C is unidirectionally broadcastable to [M, N].
      SmallVector<int64_t> mn{m, n};
      bool ok = c->size() <= 2;
      for (size_t i = 0; ok && i < c->size(); ++i) {
        int64_t d = (*c)[c->size() - 1 - i];
        int64_t t = mn[1 - i];
        if (d != 1 && staticMismatch(d, t))
          ok = false;
        else if (ShapedType::isDynamic(t) && !ShapedType::isDynamic(d) &&
                 d != 1)
          mn[1 - i] = d;
      }
      if (!ok)
        return emitOpError() << "C " << getC().getType()
                             << " is not broadcastable to [M, N] = [" << m
                             << ", " << n << "]";
      m = mn[0];
      n = mn[1];
    }
  }
  return SmallVector<Type>{RankedTensorType::get({m, n}, elemTy)};
}

//===----------------------------------------------------------------------===//
// The other Reduce* ops, ArgMax/ArgMin, LogSoftmax, Hardmax, CumSum
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
InferredTypes CumSumOp::inferResultTypes() {
  return SmallVector<Type>{getX().getType()};
}

InferredTypes TopKOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getX().getType());
  Type i64 = IntegerType::get(getContext(), 64);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getX());
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy),
                             UnrankedTensorType::get(i64)};
  int64_t axis = getAxis();
  FailureOr<int64_t> n = normalizeAxis(axis, in->size());
  if (failed(n))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << in->size();
  SmallVector<int64_t> out(*in);
  out[*n] = kDynamic;
  if (std::optional<SmallVector<int64_t>> k = getConstantIntValues(getK()))
    if (k->size() == 1 && (*k)[0] >= 0)
      out[*n] = (*k)[0];
  return SmallVector<Type>{RankedTensorType::get(out, elemTy),
                           RankedTensorType::get(out, i64)};
}
