//===- InferShapesTensor.cpp - Shape and layout onnx ops -------------------===//
//
// Shape inference of the Tensor family (OnnxFamilies.def): Reshape, Flatten,
// Transpose, Concat, Squeeze, Unsqueeze, Slice, Gather, Shape and Size (ONNX
// spec, latest opset; the importer makes axes/starts/ends/steps operands).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"
#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

#include <limits>

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static Type elementTypeOf(Value v) { return getElementTypeOrSelf(v.getType()); }

/// The static length of a 1-D operand (e.g. a shape or axes tensor).
static std::optional<int64_t> staticLength(Value v) {
  std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
  if (!s || s->size() != 1 || ShapedType::isDynamic((*s)[0]))
    return std::nullopt;
  return (*s)[0];
}

/// Normalizes and checks a list of axes for `rank`; no duplicates.
static FailureOr<SmallVector<int64_t>>
normalizeAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  llvm::SmallBitVector seen(rank);
  for (int64_t a : axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank);
    if (failed(n))
      return op->emitOpError()
             << "axis " << a << " is out of range for rank " << rank;
    if (seen.test(*n))
      return op->emitOpError() << "axis " << a << " is repeated";
    seen.set(*n);
    result.push_back(*n);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Reshape, Flatten, Transpose
//===----------------------------------------------------------------------===//

InferredTypes ReshapeOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  // The shape through the arithmetic that computed it: known elements, dims
  // of other values, unknowns.
  std::optional<SmallVector<ShapeElement>> shape =
      evaluateShapeValue(getShape());
  if (!shape) {
    std::optional<int64_t> len = staticLength(getShape());
    if (!len)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    return SmallVector<Type>{
        RankedTensorType::get(SmallVector<int64_t>(*len, kDynamic), elemTy)};
  }
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getData());
  bool allowZero = getAllowzero() != 0;
  SmallVector<int64_t> out;
  // Per output dim, the input dim it is known to equal (-1: none).
  SmallVector<int64_t> sameAsInput;
  int64_t inferIndex = -1;
  bool unknownElement = false;
  for (auto [i, e] : llvm::enumerate(*shape)) {
    int64_t same = -1;
    if (e.isDimOf() && e.source == getData())
      same = e.axis;
    if (!e.value) {
      // A run-time -1 or 0 could hide behind an unknown element.
      unknownElement |= !e.isDimOf();
      out.push_back(kDynamic);
      sameAsInput.push_back(same);
      continue;
    }
    int64_t s = *e.value;
    if (s == -1) {
      if (inferIndex >= 0)
        return emitOpError("shape has more than one -1");
      inferIndex = i;
      out.push_back(kDynamic);
    } else if (s < -1) {
      return emitOpError() << "shape value " << s << " is invalid";
    } else if (s == 0 && !allowZero) {
      if (in && i >= in->size())
        return emitOpError()
               << "shape value 0 at index " << i
               << " has no matching input dim in " << getData().getType();
      out.push_back(in ? (*in)[i] : kDynamic);
      same = i;
    } else {
      out.push_back(s);
    }
    sameAsInput.push_back(same);
  }
  if (allowZero && inferIndex >= 0 &&
      llvm::any_of(*shape, [](const ShapeElement &e) {
        return e.value && *e.value == 0;
      }))
    return emitOpError("shape has both 0 and -1 with allowzero = 1");
  if (!in || unknownElement)
    return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
  auto shapeText = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(*shape, os, [&](const ShapeElement &e) {
      if (e.value)
        os << *e.value;
      else
        os << "?";
    });
    return text;
  };
  // Element counts: static factors, and the dynamic input dims the output
  // dims are known to equal (they cancel).
  int64_t total = 1, known = 1;
  SmallVector<bool> cancelled(in->size(), false);
  bool outDynamic = false;
  for (auto [i, d] : llvm::enumerate(out)) {
    if ((int64_t)i == inferIndex)
      continue;
    if (!ShapedType::isDynamic(d)) {
      known *= d;
      continue;
    }
    int64_t a = sameAsInput[i];
    if (a >= 0 && a < (int64_t)in->size() && ShapedType::isDynamic((*in)[a]) &&
        !cancelled[a]) {
      cancelled[a] = true;
      continue;
    }
    outDynamic = true;
  }
  bool inDynamic = false;
  for (auto [a, d] : llvm::enumerate(*in)) {
    if (!ShapedType::isDynamic(d))
      total *= d;
    else if (!cancelled[a])
      inDynamic = true;
  }
  if (outDynamic)
    return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
  if (inferIndex >= 0) {
    if (known == 0 || total % known != 0) {
      if (inDynamic)
        return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
      return emitOpError() << "cannot reshape " << getData().getType()
                           << " to shape [" << shapeText() << "]";
    }
    // What the -1 holds: the remaining static count, times the dynamic
    // input dims that did not cancel.
    if (!inDynamic)
      out[inferIndex] = total / known;
  } else if (!inDynamic && known != total) {
    return emitOpError() << "cannot reshape " << getData().getType() << " ("
                         << total
                         << (llvm::is_contained(cancelled, true)
                                 ? " elements besides the dims they share"
                                 : " elements")
                         << ") to shape [" << shapeText() << "]";
  }
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes FlattenOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getInput());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getInput());
  if (!in)
    return SmallVector<Type>{
        RankedTensorType::get({kDynamic, kDynamic}, elemTy)};
  int64_t rank = in->size();
  int64_t axis = (int64_t)getAxis();
  // axis is in [-r, r].
  FailureOr<int64_t> a =
      axis < 0 ? normalizeAxis(axis, rank) : normalizeAxis(axis, rank + 1);
  if (failed(a))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (ShapedType::isDynamic(d))
        return kDynamic;
      p *= d;
    }
    return p;
  };
  return SmallVector<Type>{RankedTensorType::get(
      {product(in->take_front(*a)), product(in->drop_front(*a))}, elemTy)};
}

InferredTypes TransposeOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getData());
  std::optional<ArrayAttr> permAttr = getPerm();
  if (!in && !permAttr)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  int64_t rank = in ? (int64_t)in->size() : (int64_t)permAttr->size();
  SmallVector<int64_t> perm;
  if (permAttr) {
    for (Attribute a : *permAttr)
      perm.push_back(cast<IntegerAttr>(a).getInt());
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  if ((int64_t)perm.size() != rank)
    return emitOpError() << "perm has " << perm.size()
                         << " values for an input of rank " << rank;
  llvm::SmallBitVector seen(rank);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen.test(p))
      return emitOpError() << "perm [" << perm
                           << "] is not a permutation of [0, " << rank << ")";
    seen.set(p);
  }
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(in ? (*in)[p] : kDynamic);
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

//===----------------------------------------------------------------------===//
// Concat
//===----------------------------------------------------------------------===//

InferredTypes ConcatOp::inferResultTypes() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  Type elemTy = elementTypeOf(getInputs().front());
  std::optional<SmallVector<int64_t>> out;
  int64_t axis = (int64_t)getAxis();
  int64_t normAxis = 0;
  for (Value v : getInputs()) {
    if (elementTypeOf(v) != elemTy)
      return emitOpError() << "inputs have different element types: "
                           << getInputs().front().getType() << " and "
                           << v.getType();
    std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
    if (!s)
      continue;
    if (!out) {
      FailureOr<int64_t> a = normalizeAxis(axis, s->size());
      if (failed(a))
        return emitOpError()
               << "axis " << axis << " is out of range for rank " << s->size();
      normAxis = *a;
      out = SmallVector<int64_t>(*s);
      out->data()[normAxis] = 0;
    }
    if (s->size() != out->size())
      return emitOpError() << "inputs have different ranks: "
                           << getInputs().front().getType() << " and "
                           << v.getType();
    for (int64_t i = 0, e = s->size(); i < e; ++i) {
      int64_t d = (*s)[i];
      int64_t &o = (*out)[i];
      if (i == normAxis) {
        o = (ShapedType::isDynamic(o) || ShapedType::isDynamic(d)) ? kDynamic
                                                                   : o + d;
        continue;
      }
      if (!ShapedType::isDynamic(o) && !ShapedType::isDynamic(d) && o != d)
        return emitOpError() << "non-axis dimension " << i
                             << " differs between inputs: " << o << " vs " << d;
      if (ShapedType::isDynamic(o))
        o = d;
    }
  }
  if (!out)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  // An unranked input makes the axis size unknown.
  if (llvm::any_of(getInputs(), [](Value v) { return !getShapeOf(v); }))
    (*out)[normAxis] = kDynamic;
  return SmallVector<Type>{RankedTensorType::get(*out, elemTy)};
}

//===----------------------------------------------------------------------===//
// Squeeze, Unsqueeze
//===----------------------------------------------------------------------===//

InferredTypes SqueezeOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getData());
  if (isNoValue(getAxes())) {
    // Remove every dim of size 1: unknowable with a dynamic dim.
    if (!in || llvm::any_of(*in, ShapedType::isDynamic))
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    SmallVector<int64_t> out;
    for (int64_t d : *in)
      if (d != 1)
        out.push_back(d);
    return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
  }
  std::optional<SmallVector<int64_t>> axes = getConstantIntValues(getAxes());
  if (!in) {
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  }
  int64_t rank = in->size();
  if (!axes) {
    std::optional<int64_t> len = staticLength(getAxes());
    if (!len)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    if (*len > rank)
      return emitOpError() << "cannot squeeze " << *len
                           << " axes from a tensor of rank " << rank;
    return SmallVector<Type>{RankedTensorType::get(
        SmallVector<int64_t>(rank - *len, kDynamic), elemTy)};
  }
  FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*this, *axes, rank);
  if (failed(norm))
    return failure();
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(*norm, i)) {
      if (!ShapedType::isDynamic((*in)[i]) && (*in)[i] != 1)
        return emitOpError()
               << "cannot squeeze dimension " << i << " of size " << (*in)[i];
      continue;
    }
    out.push_back((*in)[i]);
  }
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes UnsqueezeOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getData());
  std::optional<SmallVector<int64_t>> axes = getConstantIntValues(getAxes());
  std::optional<int64_t> len =
      axes ? std::optional<int64_t>(axes->size()) : staticLength(getAxes());
  if (!in || !len)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  int64_t outRank = in->size() + *len;
  if (!axes)
    return SmallVector<Type>{
        RankedTensorType::get(SmallVector<int64_t>(outRank, kDynamic), elemTy)};
  FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*this, *axes, outRank);
  if (failed(norm))
    return failure();
  SmallVector<int64_t> out;
  const int64_t *next = in->begin();
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(llvm::is_contained(*norm, i) ? 1 : *next++);
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

/// Number of elements selected along a dim of static size `dim`.
static int64_t sliceSize(int64_t dim, int64_t start, int64_t end,
                         int64_t step) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) {
    return std::min(std::max(v, lo), hi);
  };
  // Negative indices count from the end (computed without overflow: the
  // spec's INT64_MIN/INT64_MAX mean "from the very start/end").
  if (start < 0)
    start = start < -dim ? -1 : start + dim;
  if (end < 0)
    end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = clamp(start, 0, dim - 1);
  end = clamp(end, -1, dim - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

InferredTypes SliceOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getData());
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  int64_t rank = in->size();
  std::optional<int64_t> nStarts = staticLength(getStarts());
  std::optional<int64_t> nEnds = staticLength(getEnds());
  if (nStarts && nEnds && *nStarts != *nEnds)
    return emitOpError() << "starts and ends have different lengths ("
                         << *nStarts << " vs " << *nEnds << ")";
  std::optional<SmallVector<int64_t>> starts =
      getConstantIntValues(getStarts());
  std::optional<SmallVector<int64_t>> ends = getConstantIntValues(getEnds());
  std::optional<SmallVector<int64_t>> axes, steps;
  bool axesKnown = true, stepsKnown = true;
  if (!isNoValue(getAxes())) {
    axes = getConstantIntValues(getAxes());
    axesKnown = axes.has_value();
  }
  if (!isNoValue(getSteps())) {
    steps = getConstantIntValues(getSteps());
    stepsKnown = steps.has_value();
  }
  if (!starts || !ends || !axesKnown || !stepsKnown) {
    // Rank is kept; sliced dims are unknown. Only untouched dims could be
    // kept, which needs the axes.
    SmallVector<int64_t> out(rank, kDynamic);
    if (axes) {
      FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*this, *axes, rank);
      if (failed(norm))
        return failure();
      for (int64_t i = 0; i < rank; ++i)
        if (!llvm::is_contained(*norm, i))
          out[i] = (*in)[i];
    }
    return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
  }
  int64_t n = starts->size();
  if ((int64_t)ends->size() != n || (axes && (int64_t)axes->size() != n) ||
      (steps && (int64_t)steps->size() != n))
    return emitOpError(
        "starts, ends, axes and steps must have the same length");
  SmallVector<int64_t> normAxes;
  if (axes) {
    FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*this, *axes, rank);
    if (failed(norm))
      return failure();
    normAxes = *norm;
  } else {
    if (n > rank)
      return emitOpError() << n << " starts for an input of rank " << rank;
    for (int64_t i = 0; i < n; ++i)
      normAxes.push_back(i);
  }
  SmallVector<int64_t> out(*in);
  for (int64_t i = 0; i < n; ++i) {
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0)
      return emitOpError("slice step must not be 0");
    int64_t axis = normAxes[i];
    int64_t dim = (*in)[axis];
    out[axis] = ShapedType::isDynamic(dim)
                    ? kDynamic
                    : sliceSize(dim, (*starts)[i], (*ends)[i], step);
  }
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

//===----------------------------------------------------------------------===//
// Gather, Shape, Cast
//===----------------------------------------------------------------------===//

InferredTypes GatherOp::inferResultTypes() {
  Type elemTy = elementTypeOf(getData());
  std::optional<ArrayRef<int64_t>> data = getShapeOf(getData());
  std::optional<ArrayRef<int64_t>> indices = getShapeOf(getIndices());
  int64_t axis = (int64_t)getAxis();
  if (!data)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  int64_t rank = data->size();
  if (rank < 1)
    return emitOpError("data must have rank >= 1");
  FailureOr<int64_t> a = normalizeAxis(axis, rank);
  if (failed(a))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  if (!indices)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  SmallVector<int64_t> out(data->take_front(*a));
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *a + 1, data->end());
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes ShapeOp::inferResultTypes() {
  Type i64 = IntegerType::get(getContext(), 64);
  std::optional<ArrayRef<int64_t>> data = getShapeOf(getData());
  if (!data)
    return SmallVector<Type>{RankedTensorType::get({kDynamic}, i64)};
  int64_t rank = data->size();
  auto clampIndex = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clampIndex((int64_t)getStart());
  int64_t end = getEnd() ? clampIndex((int64_t)*getEnd()) : rank;
  return SmallVector<Type>{
      RankedTensorType::get({std::max<int64_t>(end - start, 0)}, i64)};
}

InferredTypes SizeOp::inferResultTypes() {
  return SmallVector<Type>{
      RankedTensorType::get({}, IntegerType::get(getContext(), 64))};
}
