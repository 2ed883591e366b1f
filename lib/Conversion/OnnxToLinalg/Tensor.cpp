//===- Tensor.cpp - Lowering of shape and data-movement ops ---------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// Row-major reshape to the op's result type; `sizes` gives every result dim.
LogicalResult finishReshape(Operation *op, OpBuilder &b, ArrayRef<Value> sizes,
                            SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  Location loc = op->getLoc();
  SmallVector<Value> fixed(sizes);
  for (int64_t i = 0; i < ty->getRank(); ++i) {
    if (ty->isDynamicDim(i))
      continue;
    // A static dim (inferred or declared) must be the computed one, or the
    // view would read past the input (folds away when both are known).
    fixed[i] = idx(b, loc, ty->getDimSize(i));
    checkAtRunTime(b, op,
                   cmpI(b, loc, arith::CmpIPredicate::eq, sizes[i], fixed[i]),
                   "the result's dim {0} is {1}, but the model declares {2}",
                   {idx(b, loc, i), sizes[i], fixed[i]});
  }
  results.push_back(reshapeTo(b, loc, op->getOperand(0), *ty, fixed));
  return success();
}

/// Product of dims [from, to) of `v`.
Value dimProduct(OpBuilder &b, Location loc, Value v, int64_t from,
                 int64_t to) {
  Value p = idx(b, loc, 1);
  for (int64_t i = from; i < to; ++i)
    p = arith::MulIOp::create(b, loc, p, dimValue(b, loc, v, i));
  return p;
}

LogicalResult lowerReshape(onnxops::ReshapeOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Value x = op->getOperand(0), shape = op->getOperand(1);
  bool allowZero = asInt(op.getAllowzero());
  int64_t rank = ty->getRank();
  // Requested dims as index values (read at run time when not constant).
  SmallVector<Value> req = readHostIndices(b, loc, shape, rank);
  // 0 copies the input dim (unless allowzero); -1 is inferred.
  SmallVector<Value> sizes;
  Value known = idx(b, loc, 1);
  Value zero = idx(b, loc, 0), minusOne = idx(b, loc, -1);
  for (int64_t i = 0; i < rank; ++i) {
    Value r = req[i];
    if (!allowZero && i < tx->getRank()) {
      Value isZero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, zero);
      r = arith::SelectOp::create(b, loc, isZero, dimValue(b, loc, x, i), r);
    }
    sizes.push_back(r);
    Value isNeg =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, minusOne);
    known = arith::MulIOp::create(
        b, loc, known,
        arith::SelectOp::create(b, loc, isNeg, idx(b, loc, 1), r));
  }
  Value total = dimProduct(b, loc, x, 0, tx->getRank());
  // What the spec requires of the shape, checked before anything reads
  // the input through it: dims of at least -1, at most one -1 (not beside
  // a 0 with allowzero), and as many elements as the input.
  Value negs = idx(b, loc, 0), zeros = idx(b, loc, 0);
  for (auto [i, r] : llvm::enumerate(sizes)) {
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, r, minusOne);
    checkAtRunTime(b, op, ok,
                   "shape element {0} is {1}; expected -1, 0 or more",
                   {idx(b, loc, i), r});
    auto countIf = [&](Value acc, Value v) {
      Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, v);
      return arith::AddIOp::create(
          b, loc, acc,
          arith::SelectOp::create(b, loc, is, idx(b, loc, 1), zero));
    };
    negs = countIf(negs, minusOne);
    zeros = countIf(zeros, zero);
  }
  checkAtRunTime(b, op,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, negs,
                                       idx(b, loc, 1)),
                 "shape has {0} dims of -1; at most one may be inferred",
                 {negs});
  if (allowZero)
    checkAtRunTime(
        b, op,
        arith::OrIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, negs, zero),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, zeros,
                                  zero)),
        "shape has both -1 and 0 dims with allowzero=1");
  // Guard the division: a zero-sized known part leaves -1 dims at 0.
  Value knownIsZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, known, zero);
  Value safeKnown =
      arith::SelectOp::create(b, loc, knownIsZero, idx(b, loc, 1), known);
  Value inferred = arith::DivSIOp::create(b, loc, total, safeKnown);
  for (Value &s : sizes) {
    Value isNeg =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s, minusOne);
    s = arith::SelectOp::create(b, loc, isNeg, inferred, s);
  }
  // The element count, with a multiplication that would overflow counted
  // as a mismatch (dims are non-negative here).
  Value count = idx(b, loc, 1),
        fits = arith::ConstantIntOp::create(b, loc, 1, 1);
  Value maxCount = idx(b, loc, std::numeric_limits<int64_t>::max());
  for (Value s : sizes) {
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s, zero);
    Value divisor = arith::SelectOp::create(b, loc, isZero, idx(b, loc, 1), s);
    Value room = arith::DivSIOp::create(b, loc, maxCount, divisor);
    fits = arith::AndIOp::create(
        b, loc, fits,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, count, room));
    count = arith::MulIOp::create(b, loc, count, s);
  }
  Value same = arith::AndIOp::create(
      b, loc, fits,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count, total));
  std::string dims;
  SmallVector<Value> values = {count, total};
  for (int64_t i = 0; i < rank && i < 6; ++i) {
    dims += (i ? ", {" : "{") + std::to_string(i + 2) + "}";
    values.push_back(sizes[i]);
  }
  if (rank > 6)
    dims += ", ...";
  checkAtRunTime(b, op, same,
                 "the shape [" + dims +
                     "] has {0} elements, the input has {1} (the counts "
                     "must match)",
                 values);
  return finishReshape(op, b, sizes, results);
}

LogicalResult lowerFlatten(onnxops::FlattenOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  int64_t rank = tx->getRank();
  int64_t axis = asInt(op.getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return nodeError(op) << "axis out of range", failure();
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  return finishReshape(
      op, b,
      {dimProduct(b, loc, x, 0, axis), dimProduct(b, loc, x, axis, rank)},
      results);
}

/// The result sizes of a Squeeze or Unsqueeze whose axes are read at run
/// time (the ranks are static: the axes' length is): each axis is checked
/// to lie in range and to appear once, and a squeezed dim to be 1; then
/// result dim o is the o-th kept input dim (Squeeze), or 1 at an axis and
/// the next input dim elsewhere (Unsqueeze), chosen by selects.
static SmallVector<Value> squeezeLikeSizesAtRunTime(Operation *op, OpBuilder &b,
                                                    Value axesIn,
                                                    bool squeeze) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  int64_t rx = cast<RankedTensorType>(x.getType()).getRank();
  int64_t ry = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  int64_t n = squeeze ? rx - ry : ry - rx;
  SmallVector<Value> raw = readHostIndices(b, loc, axesIn, n), axes;
  for (auto [k, a] : llvm::enumerate(raw))
    axes.push_back(normalizeAxisAtRunTime(b, op, a, k, squeeze ? rx : ry));
  checkDistinctAxesAtRunTime(b, op, axes);
  auto isAxis = [&](int64_t i) {
    Value f = arith::ConstantIntOp::create(b, loc, 0, 1);
    for (Value a : axes)
      f = arith::OrIOp::create(
          b, loc, f, cmpI(b, loc, arith::CmpIPredicate::eq, a, idx(b, loc, i)));
    return f;
  };
  auto sel = [&](Value c, Value t, Value f) {
    return arith::SelectOp::create(b, loc, c, t, f).getResult();
  };
  Value one = idx(b, loc, 1), zero = idx(b, loc, 0);
  SmallVector<Value> sizes(ry, zero);
  if (squeeze) {
    // Input dim i, when kept, is result dim i - (squeezed dims before it).
    Value before = zero;
    for (int64_t i = 0; i < rx; ++i) {
      Value dim = dimValue(b, loc, x, i), squeezed = isAxis(i);
      checkAtRunTime(
          b, op,
          arith::OrIOp::create(
              b, loc,
              cmpI(b, loc, arith::CmpIPredicate::ne, squeezed,
                   arith::ConstantIntOp::create(b, loc, 1, 1)),
              cmpI(b, loc, arith::CmpIPredicate::eq, dim, one)),
          "dim {0} is squeezed but has size {1} (only dims of size 1 may be)",
          {idx(b, loc, i), dim});
      Value at = arith::SubIOp::create(b, loc, idx(b, loc, i), before);
      for (int64_t o = 0; o < ry && o <= i; ++o) {
        Value here = arith::AndIOp::create(
            b, loc,
            cmpI(b, loc, arith::CmpIPredicate::ne, squeezed,
                 arith::ConstantIntOp::create(b, loc, 1, 1)),
            cmpI(b, loc, arith::CmpIPredicate::eq, at, idx(b, loc, o)));
        sizes[o] = sel(here, dim, sizes[o]);
      }
      before = arith::AddIOp::create(
          b, loc, before,
          arith::IndexCastUIOp::create(b, loc, b.getIndexType(), squeezed));
    }
    return sizes;
  }
  // Result dim i takes input dim i - (axes before it) unless it is an axis.
  Value before = zero;
  for (int64_t i = 0; i < ry; ++i) {
    Value inserted = isAxis(i);
    Value j = arith::SubIOp::create(b, loc, idx(b, loc, i), before);
    Value dim = zero;
    for (int64_t d = 0; d < rx && d <= i; ++d)
      dim = sel(cmpI(b, loc, arith::CmpIPredicate::eq, j, idx(b, loc, d)),
                dimValue(b, loc, x, d), dim);
    sizes[i] = sel(inserted, one, dim);
    before = arith::AddIOp::create(
        b, loc, before,
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), inserted));
  }
  return sizes;
}

/// Squeeze and Unsqueeze: the result type (from shape inference) tells which
/// dims remain; sizes of kept dims come from the input in order.
LogicalResult lowerSqueezeLike(Operation *op, OpBuilder &b,
                               SmallVectorImpl<Value> &results, bool squeeze) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  int64_t rx = tx->getRank(), ry = ty->getRank();
  SmallVector<int64_t> axes;
  Value axesIn = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
  if (axesIn && !onnxops::isNoValue(axesIn)) {
    std::optional<SmallVector<int64_t>> v =
        onnxops::getConstantIntValues(axesIn);
    if (!v)
      return finishReshape(
          op, b, squeezeLikeSizesAtRunTime(op, b, axesIn, squeeze), results);
    for (int64_t a : *v) {
      FailureOr<int64_t> n = onnxops::normalizeAxis(a, squeeze ? rx : ry);
      if (failed(n))
        return nodeError(op) << "axis " << a << " out of range", failure();
      axes.push_back(*n);
    }
  }
  SmallVector<Value> sizes;
  if (squeeze) {
    for (int64_t i = 0; i < rx; ++i) {
      bool drop =
          axes.empty() ? tx->getDimSize(i) == 1 : llvm::is_contained(axes, i);
      if (!drop) {
        sizes.push_back(dimValue(b, loc, x, i));
      } else if (tx->isDynamicDim(i)) {
        Value dim = dimValue(b, loc, x, i);
        checkAtRunTime(
            b, op, cmpI(b, loc, arith::CmpIPredicate::eq, dim, idx(b, loc, 1)),
            "dim {0} is squeezed but has size {1} (only dims of "
            "size 1 may be)",
            {idx(b, loc, i), dim});
      }
    }
  } else {
    int64_t j = 0;
    for (int64_t i = 0; i < ry; ++i)
      sizes.push_back(llvm::is_contained(axes, i) ? idx(b, loc, 1)
                                                  : dimValue(b, loc, x, j++));
  }
  if (static_cast<int64_t>(sizes.size()) != ry)
    return nodeError(op) << "cannot squeeze a dynamic dim", failure();
  return finishReshape(op, b, sizes, results);
}

LogicalResult lowerTranspose(onnxops::TransposeOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  SmallVector<int64_t> perm;
  if (auto p = intsOf(op.getPerm()))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  Value x = op->getOperand(0);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < rank; ++i)
    if (ty->isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, perm[i]));
  Value init = emptyTensor(b, loc, *ty, dyn);
  results.push_back(
      linalg::TransposeOp::create(b, loc, x, init, perm).getResult()[0]);
  return success();
}

LogicalResult lowerConcat(onnxops::ConcatOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  FailureOr<int64_t> axis =
      onnxops::normalizeAxis(asInt(op.getAxis()), ty->getRank());
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  SmallVector<Value> inputs;
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return nodeError(op) << "an input has unknown rank", failure();
    if (t.getDimSize(*axis) == 0)
      continue;
    inputs.push_back(v);
  }
  if (inputs.size() == 1) {
    results.push_back(inputs[0]);
    return success();
  }
  if (inputs.empty())
    inputs.push_back(op->getOperand(0));
  // Off the axis every input has the first one's dims.
  Location loc = op->getLoc();
  auto first = cast<RankedTensorType>(inputs[0].getType());
  for (auto [k, v] : llvm::enumerate(inputs)) {
    auto t = cast<RankedTensorType>(v.getType());
    for (int64_t d = 0; k > 0 && d < t.getRank(); ++d) {
      if (d == *axis || (!t.isDynamicDim(d) && !first.isDynamicDim(d)))
        continue;
      Value a = dimValue(b, loc, inputs[0], d), c = dimValue(b, loc, v, d);
      checkAtRunTime(
          b, op, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c),
          "input " + Twine(k) + " has {0} at dim " + Twine(d) +
              ", the first input {1}: off the axis the dims must match",
          {c, a});
    }
  }
  results.push_back(
      tensor::ConcatOp::create(b, loc, *ty, *axis, inputs).getResult());
  return success();
}

/// Slice with constant starts/ends/axes/steps, as a linalg.generic that reads
/// input[start + i*step] (any sign of step).
LogicalResult lowerSlice(onnxops::SliceOp op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  // starts/ends/axes/steps: constants, or read on the host at run time.
  auto present = [&](unsigned i) {
    return i < op->getNumOperands() && !onnxops::isNoValue(op->getOperand(i));
  };
  auto t1 = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  if (!t1 || t1.getRank() != 1 || t1.isDynamicDim(0))
    return nodeError(op) << "starts must be 1-D with a static length",
           failure();
  int64_t n = t1.getDimSize(0);
  auto read = [&](unsigned i, int64_t dflt,
                  std::optional<SmallVector<int64_t>> &cst) {
    SmallVector<Value> v;
    if (!present(i)) {
      cst = SmallVector<int64_t>();
      for (int64_t k = 0; k < n; ++k) {
        cst->push_back(dflt == -1 ? k : dflt);
        v.push_back(idx(b, loc, cst->back()));
      }
      return v;
    }
    Value t = op->getOperand(i);
    cst = onnxops::getConstantIntValues(t);
    for (int64_t k = 0; k < n; ++k) {
      if (cst) {
        int64_t c = k < (int64_t)cst->size() ? (*cst)[k] : 0;
        v.push_back(
            idx(b, loc, std::clamp<int64_t>(c, INT64_MIN / 4, INT64_MAX / 4)));
        continue;
      }
      Value e =
          tensor::ExtractOp::create(b, loc, t, ValueRange{idx(b, loc, k)});
      e = arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
      e = arith::MaxSIOp::create(b, loc, e, idx(b, loc, INT64_MIN / 4));
      v.push_back(
          arith::MinSIOp::create(b, loc, e, idx(b, loc, INT64_MAX / 4)));
    }
    return v;
  };
  for (unsigned i = 2; i <= 4; ++i) {
    if (!present(i))
      continue;
    auto ti = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!ti || ti.getRank() != 1 || ti.getDimSize(0) != n)
      return nodeError(op) << "starts, ends, axes and steps differ in length",
             failure();
  }
  std::optional<SmallVector<int64_t>> cStarts, cEnds, cAxes, cSteps;
  SmallVector<Value> starts = read(1, 0, cStarts), ends = read(2, 0, cEnds);
  SmallVector<Value> axesV = read(3, -1, cAxes), stepsV = read(4, 1, cSteps);
  Value x = op->getOperand(0);
  SmallVector<Value> start(rank), step(rank), size(rank), dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    start[i] = idx(b, loc, 0);
    step[i] = idx(b, loc, 1);
    dims[i] = dimValue(b, loc, x, i);
    size[i] = dims[i];
  }
  auto cmp = [&](arith::CmpIPredicate p, Value l, Value r) {
    return arith::CmpIOp::create(b, loc, p, l, r).getResult();
  };
  auto sel = [&](Value c, Value t, Value f) {
    return arith::SelectOp::create(b, loc, c, t, f).getResult();
  };
  SmallVector<Value> seenAxes;
  SmallVector<int64_t> seenConstAxes;
  for (int64_t k = 0; k < n; ++k) {
    // The axis: static when constant, else every dim selects on it.
    std::optional<int64_t> a;
    if (cAxes) {
      FailureOr<int64_t> na = onnxops::normalizeAxis((*cAxes)[k], rank);
      if (failed(na))
        return nodeError(op) << "axis " << (*cAxes)[k] << " out of range",
               failure();
      a = *na;
    }
    if (cSteps && (*cSteps)[k] == 0)
      return nodeError(op) << "steps must not be 0", failure();
    Value s = stepsV[k];
    if (!cSteps) {
      checkAtRunTime(b, op, cmp(arith::CmpIPredicate::ne, s, idx(b, loc, 0)),
                     "steps[{0}] is 0", {idx(b, loc, k)});
      s = sel(cmp(arith::CmpIPredicate::eq, s, idx(b, loc, 0)), idx(b, loc, 1),
              s);
    }
    Value axisV = axesV[k];
    if (!a) {
      axisV = normalizeAxisAtRunTime(b, op, axisV, k, rank);
      seenAxes.push_back(axisV);
    } else if (llvm::is_contained(seenConstAxes, *a)) {
      return nodeError(op) << "axis " << *a << " appears twice in axes",
             failure();
    } else {
      seenConstAxes.push_back(*a);
    }
    Value dim = dims[a.value_or(0)];
    if (!a)
      for (int64_t i = 1; i < rank; ++i)
        dim = sel(cmp(arith::CmpIPredicate::eq, axisV, idx(b, loc, i)), dims[i],
                  dim);
    // Clamp per the ONNX spec at run time (dims and steps may be dynamic).
    Value pos = cmp(arith::CmpIPredicate::sgt, s, idx(b, loc, 0));
    Value dm1 = arith::SubIOp::create(b, loc, dim, idx(b, loc, 1));
    auto clampIdx = [&](Value v, bool isEnd) -> Value {
      v = sel(cmp(arith::CmpIPredicate::slt, v, idx(b, loc, 0)),
              arith::AddIOp::create(b, loc, v, dim), v);
      Value lo =
          isEnd ? sel(pos, idx(b, loc, 0), idx(b, loc, -1)) : idx(b, loc, 0);
      Value hi = sel(pos, dim, dm1);
      v = arith::MaxSIOp::create(b, loc, v, lo);
      return arith::MinSIOp::create(b, loc, v, hi);
    };
    Value st = clampIdx(starts[k], false);
    Value en = clampIdx(ends[k], true);
    // size = max(0, ceil((en - st) / step))
    Value diff = arith::SubIOp::create(b, loc, en, st);
    Value adj = arith::AddIOp::create(
        b, loc, diff,
        arith::SubIOp::create(b, loc, s,
                              sel(pos, idx(b, loc, 1), idx(b, loc, -1))));
    Value cnt = arith::DivSIOp::create(b, loc, adj, s);
    cnt = arith::MaxSIOp::create(b, loc, cnt, idx(b, loc, 0));
    for (int64_t i = 0; i < rank; ++i) {
      if (a && *a != i)
        continue;
      if (a) {
        start[i] = st;
        step[i] = s;
        size[i] = cnt;
        continue;
      }
      Value is = cmp(arith::CmpIPredicate::eq, axisV, idx(b, loc, i));
      start[i] = sel(is, st, start[i]);
      step[i] = sel(is, s, step[i]);
      size[i] = sel(is, cnt, size[i]);
    }
  }
  checkDistinctAxesAtRunTime(b, op, seenAxes);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < rank; ++i)
    if (ty->isDynamicDim(i))
      dyn.push_back(size[i]);
  Value init = emptyTensor(b, loc, *ty, dyn);
  MLIRContext *ctx = b.getContext();
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{*ty}, ValueRange{}, ValueRange{init},
      {AffineMap::getMultiDimIdentityMap(rank, ctx)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> ix;
        for (int64_t i = 0; i < rank; ++i) {
          Value o = linalg::IndexOp::create(nb, l, i);
          Value p = arith::AddIOp::create(
              nb, l, start[i], arith::MulIOp::create(nb, l, o, step[i]));
          // Only a result size declared larger than the slice could leave
          // the range: clamp so no input reads out of bounds.
          ix.push_back(clampIntoRange(nb, l, p, dims[i]));
        }
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, x, ix).getResult());
      });
  results.push_back(g.getResult(0));
  return success();
}

/// Gather along `axis`; negative indices count from the end; an index out
/// of range fails the run (checked first; the kernel clamps as well, so
/// it never reads out of bounds).
LogicalResult lowerGather(onnxops::GatherOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t r = tx->getRank(), q = ti->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), r);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0), ind = op->getOperand(1);
  MLIRContext *ctx = b.getContext();
  int64_t ry = ty->getRank();
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i) {
    if (!ty->isDynamicDim(i))
      continue;
    if (i < *axis)
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
    else if (i < *axis + q)
      dyn.push_back(tensor::DimOp::create(b, loc, ind, i - *axis));
    else
      dyn.push_back(tensor::DimOp::create(b, loc, x, i - q + 1));
  }
  Value init = emptyTensor(b, loc, *ty, dyn);
  SmallVector<AffineExpr> ie;
  for (int64_t j = 0; j < q; ++j)
    ie.push_back(getAffineDimExpr(*axis + j, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(ry, 0, ie, ctx),
                                 AffineMap::getMultiDimIdentityMap(ry, ctx)};
  Value axisDim = dimValue(b, loc, x, *axis);
  checkIndicesInRange(b, op, ind, {axisDim});
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{*ty}, ValueRange{ind}, ValueRange{init}, maps,
      SmallVector<IteratorType>(ry, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        Value neg = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, i,
                                          idx(nb, l, 0));
        i = arith::SelectOp::create(
            nb, l, neg, arith::AddIOp::create(nb, l, i, axisDim), i);
        i = clampIntoRange(nb, l, i, axisDim);
        SmallVector<Value> ix;
        for (int64_t d = 0; d < r; ++d) {
          if (d < *axis)
            ix.push_back(linalg::IndexOp::create(nb, l, d));
          else if (d == *axis)
            ix.push_back(i);
          else
            ix.push_back(linalg::IndexOp::create(nb, l, d + q - 1));
        }
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, x, ix).getResult());
      });
  results.push_back(g.getResult(0));
  return success();
}

LogicalResult lowerShape(onnxops::ShapeOp op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  auto clampAxis = [&](int64_t a) {
    if (a < 0)
      a += rank;
    return std::clamp<int64_t>(a, 0, rank);
  };
  int64_t start = clampAxis(asInt(op.getStart()));
  int64_t end = clampAxis(asInt(op.getEnd()).value_or(rank));
  SmallVector<Value> dims;
  bool allStatic = true;
  SmallVector<int64_t> staticDims;
  for (int64_t i = start; i < end; ++i) {
    allStatic &= !tx->isDynamicDim(i);
    staticDims.push_back(tx->getDimSize(i));
    dims.push_back(arith::IndexCastOp::create(
        b, loc, b.getI64Type(), dimValue(b, loc, op->getOperand(0), i)));
  }
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                    b.getI64Type());
  if (allStatic) {
    results.push_back(arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, ArrayRef<int64_t>(staticDims))));
    return success();
  }
  results.push_back(tensor::FromElementsOp::create(b, loc, type, dims));
  return success();
}

LogicalResult lowerSize(onnxops::SizeOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> in = rankedOperand(op, 0);
  if (failed(in))
    return failure();
  Location loc = op->getLoc();
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < in->getRank(); ++i)
    n = arith::MulIOp::create(b, loc, n,
                              dimValue(b, loc, op->getOperand(0), i));
  Value v = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
  results.push_back(tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()), v));
  return success();
}

} // namespace

void lowering::populateTensorLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Tensor> t(patterns);
  t.add<onnxops::SizeOp>(lowerSize);
  t.add<onnxops::ReshapeOp>(lowerReshape);
  t.add<onnxops::FlattenOp>(lowerFlatten);
  t.add<onnxops::SqueezeOp>(
      [](onnxops::SqueezeOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerSqueezeLike(op, b, r, /*squeeze=*/true);
      });
  t.add<onnxops::UnsqueezeOp>(
      [](onnxops::UnsqueezeOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerSqueezeLike(op, b, r, /*squeeze=*/false);
      });
  t.add<onnxops::TransposeOp>(lowerTranspose);
  t.add<onnxops::ConcatOp>(lowerConcat);
  t.add<onnxops::SliceOp>(lowerSlice);
  t.add<onnxops::GatherOp>(lowerGather);
  t.add<onnxops::ShapeOp>(lowerShape);
}
