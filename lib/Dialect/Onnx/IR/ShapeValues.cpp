//===- ShapeValues.cpp - What shape arithmetic computes -------------------===//

#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

namespace {
using Elements = SmallVector<ShapeElement>;

/// How far back through the producers of a shape an evaluation looks.
constexpr unsigned kMaxDepth = 24;

std::optional<int64_t> staticLengthOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !isa<IntegerType>(t.getElementType()) || t.getRank() > 1 ||
      !t.hasStaticShape())
    return std::nullopt;
  return t.getRank() == 0 ? 1 : t.getDimSize(0);
}

Elements unknowns(int64_t n) { return Elements(n, ShapeElement::unknown()); }

std::optional<Elements> evaluate(Value v, unsigned depth);

/// `a op b` elementwise with a 1-element side broadcast.
std::optional<Elements> binary(Operation *op, unsigned depth, int64_t len) {
  std::optional<Elements> a = evaluate(op->getOperand(0), depth + 1);
  std::optional<Elements> b = evaluate(op->getOperand(1), depth + 1);
  if (!a || !b)
    return unknowns(len);
  if ((int64_t)a->size() != len && a->size() != 1)
    return unknowns(len);
  if ((int64_t)b->size() != len && b->size() != 1)
    return unknowns(len);
  Elements out;
  for (int64_t i = 0; i < len; ++i) {
    const ShapeElement &x = (*a)[a->size() == 1 ? 0 : i];
    const ShapeElement &y = (*b)[b->size() == 1 ? 0 : i];
    if (x.value && y.value) {
      int64_t p = *x.value, q = *y.value;
      std::optional<int64_t> r;
      if (isa<AddOp>(op))
        r = p + q;
      else if (isa<SubOp>(op))
        r = p - q;
      else if (isa<MulOp>(op))
        r = p * q;
      else if (isa<DivOp>(op) && q != 0)
        r = p / q; // integer Div truncates, as ONNX's does
      else if (isa<MaxOp>(op))
        r = std::max(p, q);
      else if (isa<MinOp>(op))
        r = std::min(p, q);
      else if (isa<EqualOp>(op))
        r = p == q;
      else if (isa<GreaterOp>(op))
        r = p > q;
      else if (isa<LessOp>(op))
        r = p < q;
      else if (isa<AndOp>(op))
        r = p && q;
      else if (isa<OrOp>(op))
        r = p || q;
      out.push_back(r ? ShapeElement::known(*r) : ShapeElement::unknown());
      continue;
    }
    // Identities keep a dim reference: d + 0, d - 0, d * 1, d / 1.
    bool keepX = y.value && ((isa<AddOp, SubOp>(op) && *y.value == 0) ||
                             (isa<MulOp, DivOp>(op) && *y.value == 1));
    bool keepY = x.value && ((isa<AddOp>(op) && *x.value == 0) ||
                             (isa<MulOp>(op) && *x.value == 1));
    out.push_back(keepX ? x : keepY ? y : ShapeElement::unknown());
  }
  return out;
}

std::optional<Elements> evaluate(Value v, unsigned depth) {
  std::optional<int64_t> len = staticLengthOf(v);
  if (!len)
    return std::nullopt;
  if (std::optional<SmallVector<int64_t>> c = getConstantIntValues(v)) {
    Elements out;
    for (int64_t x : *c)
      out.push_back(ShapeElement::known(x));
    return out;
  }
  Operation *op = v.getDefiningOp();
  if (!op || depth > kMaxDepth)
    return unknowns(*len);

  if (auto shape = dyn_cast<ShapeOp>(op)) {
    Value data = shape.getData();
    auto t = dyn_cast<RankedTensorType>(data.getType());
    if (!t)
      return unknowns(*len);
    int64_t rank = t.getRank();
    auto clampIndex = [&](int64_t x) {
      if (x < 0)
        x += rank;
      return std::min(std::max<int64_t>(x, 0), rank);
    };
    int64_t start = clampIndex((int64_t)shape.getStart());
    Elements out;
    for (int64_t i = start; i < start + *len && i < rank; ++i)
      out.push_back(t.isDynamicDim(i) ? ShapeElement::dimOf(data, i)
                                      : ShapeElement::known(t.getDimSize(i)));
    if ((int64_t)out.size() != *len)
      return unknowns(*len);
    return out;
  }
  if (auto size = dyn_cast<SizeOp>(op)) {
    auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (t && t.hasStaticShape())
      return Elements{ShapeElement::known(t.getNumElements())};
    return unknowns(1);
  }
  if (isa<IdentityOp, UnsqueezeOp, SqueezeOp, ReshapeOp, FlattenOp>(op)) {
    std::optional<Elements> in = evaluate(op->getOperand(0), depth + 1);
    if (in && (int64_t)in->size() == *len)
      return in;
    return unknowns(*len);
  }
  if (isa<CastOp>(op)) {
    // Integer to integer keeps the values (shape values fit any width).
    if (!isa<IntegerType>(getElementTypeOrSelf(op->getOperand(0).getType())))
      return unknowns(*len);
    std::optional<Elements> in = evaluate(op->getOperand(0), depth + 1);
    return in ? *in : unknowns(*len);
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    Elements out;
    for (Value in : op->getOperands()) {
      std::optional<Elements> e = evaluate(in, depth + 1);
      if (!e)
        return unknowns(*len);
      out.append(*e);
    }
    if ((int64_t)out.size() != *len)
      return unknowns(*len);
    return out;
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    std::optional<Elements> data = evaluate(op->getOperand(0), depth + 1);
    std::optional<SmallVector<int64_t>> idx =
        getConstantIntValues(op->getOperand(1));
    if (!data || !idx || (int64_t)idx->size() != *len)
      return unknowns(*len);
    Elements out;
    int64_t n = data->size();
    for (int64_t i : *idx) {
      if (i < 0)
        i += n;
      if (i < 0 || i >= n)
        return unknowns(*len);
      out.push_back((*data)[i]);
    }
    return out;
  }
  if (isa<SliceOp>(op)) {
    std::optional<Elements> data = evaluate(op->getOperand(0), depth + 1);
    auto starts = getConstantIntValues(op->getOperand(1));
    auto ends = getConstantIntValues(op->getOperand(2));
    std::optional<SmallVector<int64_t>> steps;
    if (op->getNumOperands() > 4 && !isNoValue(op->getOperand(4)))
      steps = getConstantIntValues(op->getOperand(4));
    else
      steps = SmallVector<int64_t>{1};
    if (op->getNumOperands() > 3 && !isNoValue(op->getOperand(3))) {
      auto axes = getConstantIntValues(op->getOperand(3));
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))
        return unknowns(*len);
    }
    if (!data || !starts || !ends || !steps || starts->size() != 1 ||
        ends->size() != 1 || steps->size() != 1 || (*steps)[0] == 0)
      return unknowns(*len);
    int64_t n = data->size(), step = (*steps)[0];
    auto clampTo = [&](int64_t x, int64_t lo, int64_t hi) {
      if (x < 0)
        x += n;
      return std::min(std::max(x, lo), hi);
    };
    int64_t s = step > 0 ? clampTo((*starts)[0], 0, n)
                         : clampTo((*starts)[0], 0, n - 1);
    int64_t e =
        step > 0 ? clampTo((*ends)[0], 0, n) : clampTo((*ends)[0], -1, n - 1);
    Elements out;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step)
      out.push_back((*data)[i]);
    if ((int64_t)out.size() != *len)
      return unknowns(*len);
    return out;
  }
  if (isa<AddOp, SubOp, MulOp, DivOp, EqualOp, GreaterOp, LessOp, AndOp, OrOp>(
          op) ||
      (isa<MaxOp, MinOp>(op) && op->getNumOperands() == 2))
    return binary(op, depth, *len);
  if (isa<NotOp>(op)) {
    std::optional<Elements> in = evaluate(op->getOperand(0), depth + 1);
    if (!in || (int64_t)in->size() != *len)
      return unknowns(*len);
    Elements out;
    for (const ShapeElement &e : *in)
      out.push_back(e.value ? ShapeElement::known(*e.value == 0)
                            : ShapeElement::unknown());
    return out;
  }
  return unknowns(*len);
}
} // namespace

std::optional<SmallVector<ShapeElement>>
mlir::kiln::onnxops::evaluateShapeValue(Value v) {
  return evaluate(v, 0);
}

SmallVector<int64_t>
mlir::kiln::onnxops::staticDimsOf(ArrayRef<ShapeElement> elements) {
  SmallVector<int64_t> dims;
  for (const ShapeElement &e : elements)
    dims.push_back(e.value ? *e.value : ShapedType::kDynamic);
  return dims;
}

std::optional<bool> mlir::kiln::onnxops::evaluateCondition(Value cond) {
  std::optional<SmallVector<ShapeElement>> e = evaluateShapeValue(cond);
  if (!e || e->size() != 1 || !(*e)[0].value)
    return std::nullopt;
  return *(*e)[0].value != 0;
}
