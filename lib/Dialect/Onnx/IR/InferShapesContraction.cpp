//===- InferShapesContraction.cpp - MatMul, Gemm ---------------------------===//
//
// Shape inference of the Contraction family (OnnxFamilies.def): MatMul (numpy
// matmul), Gemm and Einsum (its equation's labels, Einsum.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/Einsum.h"
#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static bool staticMismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

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

InferredTypes EinsumOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getInputs().front().getType());
  SmallVector<int64_t> ranks;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : getInputs()) {
    std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
    if (!s)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    ranks.push_back(s->size());
    shapes.push_back(*s);
  }
  std::string error;
  FailureOr<EinsumLabels> labels = parseEinsum(getEquation(), ranks, error);
  if (failed(labels))
    return emitOpError() << "equation '" << getEquation() << "': " << error;
  // A label's size: the inputs' static sizes other than 1 agree (1
  // broadcasts); dynamic unless one is static.
  std::map<int, int64_t> size;
  for (auto [ls, shape] : llvm::zip(labels->inputs, shapes))
    for (auto [l, d] : llvm::zip(ls, shape)) {
      auto [it, inserted] = size.emplace(l, d);
      if (inserted || ShapedType::isDynamic(d) || d == 1)
        continue;
      if (ShapedType::isDynamic(it->second) || it->second == 1)
        it->second = d;
      else if (it->second != d)
        return emitOpError()
               << "equation '" << getEquation()
               << "': inputs give a label sizes " << it->second << " and " << d;
    }
  SmallVector<int64_t> out;
  for (int l : labels->output)
    out.push_back(size.at(l));
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}
