//===- Detection.cpp - NonMaxSuppression, Unique --------------------------===//
//
// Ops whose output sizes depend on the data, computed by sequential kernels
// (one top-level scf.for each, carrying its tensors): a first kernel writes
// its results into scratch tensors sized for the worst case together with a
// count; the host reads the count (tensor.extract) and a second kernel sizes
// the outputs with it. Every index computed from data is clamped into range,
// so no input makes a kernel read or write out of bounds.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;
using LoopBody =
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>;

Value i64c(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value toI64(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
}

Value cmpF(OpBuilder &b, Location loc, arith::CmpFPredicate p, Value x,
           Value y) {
  return arith::CmpFOp::create(b, loc, p, x, y);
}

Value andI(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AndIOp::create(b, loc, x, y);
}

/// min(max(i, 0), n - 1) (0 when n is 0: callers never read then).
Value clampIndex(OpBuilder &b, Location loc, Value i, Value n) {
  Value hi = arith::SubIOp::create(b, loc, n, idx(b, loc, 1));
  Value v = arith::MinSIOp::create(b, loc, i, hi);
  return arith::MaxSIOp::create(b, loc, v, idx(b, loc, 0));
}

/// scf.for from `lb` to `ub` (step 1) carrying `inits`.
ValueRange forLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                   ValueRange inits, LoopBody body) {
  return scf::ForOp::create(
             b, loc, lb, ub, idx(b, loc, 1), inits,
             [&](OpBuilder &nb, Location l, Value iv, ValueRange iters) {
               scf::YieldOp::create(nb, l, body(nb, l, iv, iters));
             })
      .getResults();
}

/// A kernel's top-level loop over [0, ub): one more (empty) iteration, so
/// that canonicalization never unrolls a single iteration and leaves the
/// scalar loops and ifs of its body at the top level.
ValueRange kernelLoop(OpBuilder &b, Location loc, Value ub, ValueRange inits,
                      LoopBody body);

/// scf.if yielding `types`.
ValueRange
ifThenElse(OpBuilder &b, Location loc, TypeRange types, Value cond,
           function_ref<SmallVector<Value>(OpBuilder &, Location)> thenFn,
           function_ref<SmallVector<Value>(OpBuilder &, Location)> elseFn) {
  (void)types; // Inferred from the yields.
  return scf::IfOp::create(
             b, loc, cond,
             [&](OpBuilder &nb, Location l) {
               scf::YieldOp::create(nb, l, thenFn(nb, l));
             },
             [&](OpBuilder &nb, Location l) {
               scf::YieldOp::create(nb, l, elseFn(nb, l));
             })
      .getResults();
}

ValueRange kernelLoop(OpBuilder &b, Location loc, Value ub, ValueRange inits,
                      LoopBody body) {
  Value n = arith::AddIOp::create(b, loc, ub, idx(b, loc, 1));
  return forLoop(
      b, loc, idx(b, loc, 0), n, inits,
      [&](OpBuilder &lb, Location l, Value iv, ValueRange it) {
        Value live =
            arith::CmpIOp::create(lb, l, arith::CmpIPredicate::slt, iv, ub);
        return SmallVector<Value>(ifThenElse(
            lb, l, it.getTypes(), live,
            [&](OpBuilder &tb, Location l2) { return body(tb, l2, iv, it); },
            [&](OpBuilder &, Location) { return SmallVector<Value>(it); }));
      });
}

Value castTo(OpBuilder &b, Location loc, Value v, Type t) {
  if (v.getType() == t)
    return v;
  return tensor::CastOp::create(b, loc, t, v);
}

/// The 1-D i64 tensor of `n` elements filled with `v`.
Value filledI64(OpBuilder &b, Location loc, Value n, int64_t v) {
  auto t = RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type());
  return filledTensor(b, loc, t, {n}, b.getI64IntegerAttr(v));
}

/// The first element of an optional scalar-like operand (rank 0 or a
/// 1-element tensor), and whether it is there: absent when the operand is
/// none or empty. Built inside a kernel.
std::pair<Value, Value> firstElement(OpBuilder &b, Location loc, Value t,
                                     Value dflt) {
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  if (!t || onnxops::isNoValue(t))
    return {dflt, no};
  auto type = dyn_cast<RankedTensorType>(t.getType());
  if (!type)
    return {dflt, no};
  Value numel = idx(b, loc, 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    numel = arith::MulIOp::create(b, loc, numel, dimValue(b, loc, t, d));
  Value has = cmpI(b, loc, arith::CmpIPredicate::sgt, numel, idx(b, loc, 0));
  Value v = ifThenElse(
      b, loc, TypeRange{dflt.getType()}, has,
      [&](OpBuilder &nb, Location l) -> SmallVector<Value> {
        SmallVector<Value> zeros(type.getRank(), idx(nb, l, 0));
        return {tensor::ExtractOp::create(nb, l, t, zeros)};
      },
      [&](OpBuilder &, Location) -> SmallVector<Value> { return {dflt}; })[0];
  return {v, has};
}

//===----------------------------------------------------------------------===//
// NonMaxSuppression
//===----------------------------------------------------------------------===//

/// ONNX's suppress_by_iou: whether boxes `i` and `j` (rows of batch `bi`)
/// overlap with IoU > `thr`. Each `x <= y: return False` of the reference is
/// an unordered-or-greater test, so NaN behaves as there.
Value suppresses(OpBuilder &b, Location loc, Value boxes, Value bi, Value i,
                 Value j, bool centerPoint, Value thr) {
  auto coord = [&](Value box, int64_t k) -> Value {
    return tensor::ExtractOp::create(b, loc, boxes,
                                     ValueRange{bi, box, idx(b, loc, k)});
  };
  auto ge = [&](Value x, Value y) {
    return cmpF(b, loc, arith::CmpFPredicate::OGE, x, y);
  };
  auto notLe = [&](Value x, Value y) {
    return cmpF(b, loc, arith::CmpFPredicate::UGT, x, y);
  };
  // Python's max(x, y) / min(x, y): x unless y > x / y < x.
  auto pyMax = [&](Value x, Value y) {
    return select(b, loc, cmpF(b, loc, arith::CmpFPredicate::OGT, y, x), y, x);
  };
  auto pyMin = [&](Value x, Value y) {
    return select(b, loc, cmpF(b, loc, arith::CmpFPredicate::OLT, y, x), y, x);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubFOp::create(b, loc, x, y);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, loc, x, y);
  };
  Value x1min, x1max, x2min, x2max, y1min, y1max, y2min, y2max;
  if (!centerPoint) {
    // max_min(l, r): (r, l) when l >= r, else (l, r).
    auto minMax = [&](Value l, Value r, Value &lo, Value &hi) {
      Value c = ge(l, r);
      lo = select(b, loc, c, r, l);
      hi = select(b, loc, c, l, r);
    };
    minMax(coord(i, 1), coord(i, 3), x1min, x1max);
    minMax(coord(j, 1), coord(j, 3), x2min, x2max);
    minMax(coord(i, 0), coord(i, 2), y1min, y1max);
    minMax(coord(j, 0), coord(j, 2), y2min, y2max);
  } else {
    Type f = thr.getType();
    Value two = scalarConstant(b, loc, f, 2.0);
    auto half = [&](Value v) -> Value {
      return arith::DivFOp::create(b, loc, v, two);
    };
    Value w1 = half(coord(i, 2)), h1 = half(coord(i, 3));
    Value w2 = half(coord(j, 2)), h2 = half(coord(j, 3));
    Value cx1 = coord(i, 0), cy1 = coord(i, 1);
    Value cx2 = coord(j, 0), cy2 = coord(j, 1);
    x1min = sub(cx1, w1), x1max = add(cx1, w1);
    x2min = sub(cx2, w2), x2max = add(cx2, w2);
    y1min = sub(cy1, h1), y1max = add(cy1, h1);
    y2min = sub(cy2, h2), y2max = add(cy2, h2);
  }
  Value ixMin = pyMax(x1min, x2min), ixMax = pyMin(x1max, x2max);
  Value iyMin = pyMax(y1min, y2min), iyMax = pyMin(y1max, y2max);
  Value zero = scalarConstant(b, loc, thr.getType(), 0.0);
  Value inter = mul(sub(ixMax, ixMin), sub(iyMax, iyMin));
  Value area1 = mul(sub(x1max, x1min), sub(y1max, y1min));
  Value area2 = mul(sub(x2max, x2min), sub(y2max, y2min));
  Value uni = sub(add(area1, area2), inter);
  Value iou = arith::DivFOp::create(b, loc, inter, uni);
  Value r = andI(b, loc, notLe(ixMax, ixMin), notLe(iyMax, iyMin));
  r = andI(b, loc, r, notLe(inter, zero));
  r = andI(b, loc, r, notLe(area1, zero));
  r = andI(b, loc, r, notLe(area2, zero));
  r = andI(b, loc, r, notLe(uni, zero));
  return andI(b, loc, r, cmpF(b, loc, arith::CmpFPredicate::OGT, iou, thr));
}

LogicalResult lowerNonMaxSuppression(onnxops::NonMaxSuppressionOp op,
                                     OpBuilder &b,
                                     SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tb = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ts = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tb) || failed(ts) || failed(ty))
    return failure();
  Type f = tb->getElementType();
  if (!isa<FloatType>(f) || ts->getElementType() != f)
    return nodeError(op) << "boxes and scores must be float tensors", failure();
  if (tb->getRank() != 3 || ts->getRank() != 3)
    return nodeError(op) << "boxes and scores must be of rank 3", failure();
  int64_t centerPoint = asInt(op.getCenterPointBox());
  if (centerPoint != 0 && centerPoint != 1)
    return nodeError(op) << "center_point_box must be 0 or 1", failure();
  Location loc = op->getLoc();
  auto operand = [&](unsigned i) {
    return i < op->getNumOperands() ? op->getOperand(i) : Value();
  };
  Value boxes = op->getOperand(0), scores = op->getOperand(1);
  Value maxOutT = operand(2), iouT = operand(3), scoreT = operand(4);
  for (Value v : {iouT, scoreT})
    if (v && !onnxops::isNoValue(v) && getElementTypeOrSelf(v.getType()) != f)
      return nodeError(op) << "thresholds must have the type of the boxes",
             failure();
  if (maxOutT && !onnxops::isNoValue(maxOutT) &&
      !getElementTypeOrSelf(maxOutT.getType()).isInteger(64))
    return nodeError(op) << "max_output_boxes_per_class must be int64",
           failure();

  // Sizes: boxes [B, N, 4] and scores [B, C, N] must agree (checked; the
  // smaller ones are used all the same, so nothing reads past either).
  checkAtRunTime(b, op,
                 cmpI(b, loc, arith::CmpIPredicate::eq,
                      dimValue(b, loc, boxes, 0), dimValue(b, loc, scores, 0)),
                 "boxes hold {0} batches, scores {1} (they must agree)",
                 {dimValue(b, loc, boxes, 0), dimValue(b, loc, scores, 0)});
  checkAtRunTime(b, op,
                 cmpI(b, loc, arith::CmpIPredicate::eq,
                      dimValue(b, loc, boxes, 1), dimValue(b, loc, scores, 2)),
                 "boxes hold {0} boxes per batch, scores {1} (they must agree)",
                 {dimValue(b, loc, boxes, 1), dimValue(b, loc, scores, 2)});
  checkAtRunTime(b, op,
                 cmpI(b, loc, arith::CmpIPredicate::eq,
                      dimValue(b, loc, boxes, 2), idx(b, loc, 4)),
                 "boxes have {0} coordinates each; expected 4",
                 {dimValue(b, loc, boxes, 2)});
  Value nB = arith::MinSIOp::create(b, loc, dimValue(b, loc, boxes, 0),
                                    dimValue(b, loc, scores, 0));
  Value nN = arith::MinSIOp::create(b, loc, dimValue(b, loc, boxes, 1),
                                    dimValue(b, loc, scores, 2));
  Value nC = dimValue(b, loc, scores, 1);
  Value hasCoords = cmpI(b, loc, arith::CmpIPredicate::sge,
                         dimValue(b, loc, boxes, 2), idx(b, loc, 4));
  // Without 4 coordinates per box nothing is read: no pairs.
  Value pairs = arith::MulIOp::create(b, loc, nB, nC);
  pairs = select(b, loc, hasCoords, pairs, idx(b, loc, 0));
  Value rows = arith::MulIOp::create(b, loc, pairs, nN);

  auto i64 = b.getI64Type();
  auto scratchT = RankedTensorType::get({ShapedType::kDynamic, 3}, i64);
  Value scratch =
      filledTensor(b, loc, scratchT, {rows}, b.getI64IntegerAttr(0));
  Value count = filledTensor(b, loc, RankedTensorType::get({1}, i64), {},
                             b.getI64IntegerAttr(0));
  Value order = filledI64(b, loc, nN, 0);

  Value c0 = idx(b, loc, 0), c1 = idx(b, loc, 1);
  ValueRange done = kernelLoop(
      b, loc, pairs, {scratch, count, order},
      [&](OpBuilder &lb, Location l, Value p, ValueRange it) {
        Value bi = arith::DivUIOp::create(lb, l, p, nC);
        Value ci = arith::RemUIOp::create(lb, l, p, nC);
        auto score = [&](OpBuilder &sb, Value i) -> Value {
          return tensor::ExtractOp::create(sb, l, scores,
                                           ValueRange{bi, ci, i});
        };
        Value maxOut, hasMax, iouThr, scoreThr, hasScore;
        std::tie(maxOut, hasMax) = firstElement(lb, l, maxOutT, i64c(lb, l, 0));
        maxOut = select(lb, l, hasMax, maxOut, i64c(lb, l, 0));
        iouThr = firstElement(lb, l, iouT, scalarConstant(lb, l, f, 0.0)).first;
        std::tie(scoreThr, hasScore) =
            firstElement(lb, l, scoreT, scalarConstant(lb, l, f, 0.0));
        Value base = toIndex(
            lb, l, tensor::ExtractOp::create(lb, l, it[1], ValueRange{c0}));

        // order[r]: the box of rank r, by score descending, then index.
        Value ord = forLoop(
            lb, l, c0, nN, {it[2]},
            [&](OpBuilder &ob, Location l2, Value i, ValueRange o) {
              Value si = score(ob, i);
              Value rank = forLoop(
                  ob, l2, c0, nN, {c0},
                  [&](OpBuilder &rb, Location l3, Value j, ValueRange r) {
                    Value sj = score(rb, j);
                    Value before = arith::OrIOp::create(
                        rb, l3, cmpF(rb, l3, arith::CmpFPredicate::OGT, sj, si),
                        andI(rb, l3,
                             cmpF(rb, l3, arith::CmpFPredicate::OEQ, sj, si),
                             cmpI(rb, l3, arith::CmpIPredicate::ult, j, i)));
                    Value next = arith::AddIOp::create(rb, l3, r[0], c1);
                    return SmallVector<Value>{
                        select(rb, l3, before, next, r[0])};
                  })[0];
              Value at = clampIndex(ob, l2, rank, nN);
              return SmallVector<Value>{tensor::InsertOp::create(
                  ob, l2, toI64(ob, l2, i), o[0], ValueRange{at})};
            })[0];

        // Greedy selection in that order.
        ValueRange sel = forLoop(
            lb, l, c0, nN, {it[0], c0},
            [&](OpBuilder &gb, Location l2, Value k, ValueRange g) {
              Value out = g[0], nsel = g[1];
              Value i = clampIndex(gb, l2,
                                   toIndex(gb, l2,
                                           tensor::ExtractOp::create(
                                               gb, l2, ord, ValueRange{k})),
                                   nN);
              Value si = score(gb, i);
              Value above = arith::OrIOp::create(
                  gb, l2,
                  arith::XOrIOp::create(
                      gb, l2, hasScore,
                      arith::ConstantIntOp::create(gb, l2, gb.getI1Type(), 1)),
                  cmpF(gb, l2, arith::CmpFPredicate::OGT, si, scoreThr));
              Value room = cmpI(gb, l2, arith::CmpIPredicate::slt,
                                toI64(gb, l2, nsel), maxOut);
              Value cand = andI(gb, l2, above, room);
              return SmallVector<Value>(ifThenElse(
                  gb, l2, TypeRange{out.getType(), nsel.getType()}, cand,
                  [&](OpBuilder &tb2, Location l3) -> SmallVector<Value> {
                    Value no = arith::ConstantIntOp::create(tb2, l3,
                                                            tb2.getI1Type(), 0);
                    Value supp = forLoop(
                        tb2, l3, c0, nsel, {no},
                        [&](OpBuilder &sb, Location l4, Value j, ValueRange s) {
                          Value row = arith::AddIOp::create(sb, l4, base, j);
                          Value jb = clampIndex(
                              sb, l4,
                              toIndex(sb, l4,
                                      tensor::ExtractOp::create(
                                          sb, l4, out,
                                          ValueRange{row, idx(sb, l4, 2)})),
                              nN);
                          Value hit = suppresses(sb, l4, boxes, bi, i, jb,
                                                 centerPoint == 1, iouThr);
                          return SmallVector<Value>{
                              arith::OrIOp::create(sb, l4, s[0], hit)};
                        })[0];
                    return SmallVector<Value>(ifThenElse(
                        tb2, l3, TypeRange{out.getType(), nsel.getType()}, supp,
                        [&](OpBuilder &, Location) -> SmallVector<Value> {
                          return {out, nsel};
                        },
                        [&](OpBuilder &wb, Location l4) -> SmallVector<Value> {
                          Value row = arith::AddIOp::create(wb, l4, base, nsel);
                          Value o = out;
                          Value vals[3] = {toI64(wb, l4, bi), toI64(wb, l4, ci),
                                           toI64(wb, l4, i)};
                          for (int64_t c = 0; c < 3; ++c)
                            o = tensor::InsertOp::create(
                                wb, l4, vals[c], o,
                                ValueRange{row, idx(wb, l4, c)});
                          return {o, arith::AddIOp::create(wb, l4, nsel, c1)};
                        }));
                  },
                  [&](OpBuilder &, Location) -> SmallVector<Value> {
                    return {out, nsel};
                  }));
            });
        Value total = toI64(lb, l, arith::AddIOp::create(lb, l, base, sel[1]));
        Value cnt =
            tensor::InsertOp::create(lb, l, total, it[1], ValueRange{c0});
        return SmallVector<Value>{sel[0], cnt, ord};
      });

  // The host reads the count; the selected rows are the scratch's first.
  Value n = toIndex(b, loc,
                    tensor::ExtractOp::create(b, loc, done[1], ValueRange{c0}));
  n = clampIndex(b, loc, n, arith::AddIOp::create(b, loc, rows, c1));
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{n, b.getIndexAttr(3)};
  SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
  Value sliced = tensor::ExtractSliceOp::create(b, loc, scratchT, done[0],
                                                offsets, sizes, strides);
  // A copy into a fresh tensor, so the output is a kernel's own result.
  Value init = emptyTensor(b, loc, scratchT, {n});
  Value copy = linalg::CopyOp::create(b, loc, sliced, init).getResult(0);
  results.push_back(castTo(b, loc, copy, *ty));
  return success();
}

//===----------------------------------------------------------------------===//
// Unique
//===----------------------------------------------------------------------===//

LogicalResult lowerUnique(onnxops::UniqueOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  Type origElem = tx->getElementType();
  bool isUnsigned = origElem.isUnsignedInteger() || origElem.isInteger(1);
  Type elem = signlessType(origElem);
  if (!isa<FloatType>(elem) && !isa<IntegerType>(elem))
    return nodeError(op) << "element type " << origElem << " is not supported",
           failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Value x = toSignless(b, loc, op->getOperand(0));
  int64_t rank = tx->getRank();
  std::optional<int64_t> axis;
  if (std::optional<int64_t> a = asInt(op.getAxis())) {
    FailureOr<int64_t> n = onnxops::normalizeAxis(*a, rank);
    if (failed(n))
      return nodeError(op) << "axis out of range", failure();
    axis = *n;
  }
  bool sorted = asInt(op.getSorted()) != 0;

  // X as [outer, L, inner]: slice k is X3[:, k, :].
  Value outer = idx(b, loc, 1), len = idx(b, loc, 1), inner = idx(b, loc, 1);
  for (int64_t d = 0; d < rank; ++d) {
    Value n = dimValue(b, loc, x, d);
    Value &acc = !axis ? len : d < *axis ? outer : d == *axis ? len : inner;
    acc = arith::MulIOp::create(b, loc, acc, n);
  }
  auto dynamic = ShapedType::kDynamic;
  auto x3Type = RankedTensorType::get({dynamic, dynamic, dynamic}, elem);
  Value x3 = reshapeTo(b, loc, x, x3Type, {outer, len, inner});
  Value sliceSize = arith::MulIOp::create(b, loc, outer, inner);

  Value c0 = idx(b, loc, 0), c1 = idx(b, loc, 1);
  auto i32 = b.getI32Type();
  // -1, 0 or 1 as slice j is less than, equal to or greater than slice k.
  auto compare = [&](OpBuilder &cb, Location l, Value j, Value k) -> Value {
    Value zero = arith::ConstantIntOp::create(cb, l, i32, 0);
    return forLoop(
        cb, l, c0, sliceSize, {zero},
        [&](OpBuilder &eb, Location l2, Value m, ValueRange st) {
          Value o = arith::DivUIOp::create(eb, l2, m, inner);
          Value n = arith::RemUIOp::create(eb, l2, m, inner);
          Value a = tensor::ExtractOp::create(eb, l2, x3, ValueRange{o, j, n});
          Value c = tensor::ExtractOp::create(eb, l2, x3, ValueRange{o, k, n});
          Value lt, gt;
          if (isa<FloatType>(elem)) {
            lt = cmpF(eb, l2, arith::CmpFPredicate::OLT, a, c);
            gt = cmpF(eb, l2, arith::CmpFPredicate::OGT, a, c);
          } else {
            lt = cmpI(eb, l2,
                      isUnsigned ? arith::CmpIPredicate::ult
                                 : arith::CmpIPredicate::slt,
                      a, c);
            gt = cmpI(eb, l2,
                      isUnsigned ? arith::CmpIPredicate::ugt
                                 : arith::CmpIPredicate::sgt,
                      a, c);
          }
          Value here = select(
              eb, l2, lt, arith::ConstantIntOp::create(eb, l2, i32, -1),
              select(eb, l2, gt, arith::ConstantIntOp::create(eb, l2, i32, 1),
                     arith::ConstantIntOp::create(eb, l2, i32, 0)));
          Value undecided = cmpI(eb, l2, arith::CmpIPredicate::eq, st[0],
                                 arith::ConstantIntOp::create(eb, l2, i32, 0));
          return SmallVector<Value>{select(eb, l2, undecided, here, st[0])};
        })[0];
  };

  // Kernel 1: first[k], the first slice equal to slice k, and ord[k], the
  // rank of its first occurrence among the distinct slices; the count.
  Value count = filledTensor(b, loc, RankedTensorType::get({1}, b.getI64Type()),
                             {}, b.getI64IntegerAttr(0));
  ValueRange k1 = kernelLoop(
      b, loc, len,
      {filledI64(b, loc, len, 0), filledI64(b, loc, len, 0), count},
      [&](OpBuilder &lb, Location l, Value k, ValueRange it) {
        Value first = forLoop(
            lb, l, c0, k, {k},
            [&](OpBuilder &fb, Location l2, Value j, ValueRange fr) {
              Value unset = cmpI(fb, l2, arith::CmpIPredicate::eq, fr[0], k);
              Value same = ifThenElse(
                  fb, l2, TypeRange{fb.getI1Type()}, unset,
                  [&](OpBuilder &sb, Location l3) -> SmallVector<Value> {
                    return {cmpI(sb, l3, arith::CmpIPredicate::eq,
                                 compare(sb, l3, j, k),
                                 arith::ConstantIntOp::create(sb, l3, i32, 0))};
                  },
                  [&](OpBuilder &sb, Location l3) -> SmallVector<Value> {
                    return {arith::ConstantIntOp::create(sb, l3, sb.getI1Type(),
                                                         0)};
                  })[0];
              return SmallVector<Value>{select(fb, l2, same, j, fr[0])};
            })[0];
        Value isFirst = cmpI(lb, l, arith::CmpIPredicate::eq, first, k);
        Value u = tensor::ExtractOp::create(lb, l, it[2], ValueRange{c0});
        Value ordOfFirst = tensor::ExtractOp::create(
            lb, l, it[1], ValueRange{clampIndex(lb, l, first, len)});
        Value ord = select(lb, l, isFirst, u, ordOfFirst);
        Value nextU = select(
            lb, l, isFirst, arith::AddIOp::create(lb, l, u, i64c(lb, l, 1)), u);
        return SmallVector<Value>{
            tensor::InsertOp::create(lb, l, toI64(lb, l, first), it[0],
                                     ValueRange{k}),
            tensor::InsertOp::create(lb, l, ord, it[1], ValueRange{k}),
            tensor::InsertOp::create(lb, l, nextU, it[2], ValueRange{c0})};
      });
  Value firstOf = k1[0], pos = k1[1];
  if (sorted) {
    // Kernel 2: pos[k], the number of distinct slices less than slice k.
    pos = kernelLoop(
        b, loc, len, {filledI64(b, loc, len, 0)},
        [&](OpBuilder &lb, Location l, Value k, ValueRange it) {
          Value f = clampIndex(
              lb, l,
              toIndex(lb, l,
                      tensor::ExtractOp::create(lb, l, firstOf, ValueRange{k})),
              len);
          Value isFirst = cmpI(lb, l, arith::CmpIPredicate::eq, f, k);
          Value p = ifThenElse(
              lb, l, TypeRange{lb.getI64Type()}, isFirst,
              [&](OpBuilder &tb, Location l2) -> SmallVector<Value> {
                Value zero = i64c(tb, l2, 0);
                return {forLoop(
                    tb, l2, c0, len, {zero},
                    [&](OpBuilder &rb, Location l3, Value j, ValueRange r) {
                      Value fj = toIndex(rb, l3,
                                         tensor::ExtractOp::create(
                                             rb, l3, firstOf, ValueRange{j}));
                      Value distinct =
                          cmpI(rb, l3, arith::CmpIPredicate::eq, fj, j);
                      Value less = ifThenElse(
                          rb, l3, TypeRange{rb.getI1Type()}, distinct,
                          [&](OpBuilder &sb,
                              Location l4) -> SmallVector<Value> {
                            return {cmpI(
                                sb, l4, arith::CmpIPredicate::slt,
                                compare(sb, l4, j, k),
                                arith::ConstantIntOp::create(sb, l4, i32, 0))};
                          },
                          [&](OpBuilder &sb,
                              Location l4) -> SmallVector<Value> {
                            return {arith::ConstantIntOp::create(
                                sb, l4, sb.getI1Type(), 0)};
                          })[0];
                      Value next =
                          arith::AddIOp::create(rb, l3, r[0], i64c(rb, l3, 1));
                      return SmallVector<Value>{
                          select(rb, l3, less, next, r[0])};
                    })[0]};
              },
              [&](OpBuilder &eb, Location l2) -> SmallVector<Value> {
                return {
                    tensor::ExtractOp::create(eb, l2, it[0], ValueRange{f})};
              })[0];
          return SmallVector<Value>{
              tensor::InsertOp::create(lb, l, p, it[0], ValueRange{k})};
        })[0];
  }

  // The host reads the number of distinct slices.
  Value u =
      toIndex(b, loc, tensor::ExtractOp::create(b, loc, k1[2], ValueRange{c0}));
  u = clampIndex(b, loc, u, arith::AddIOp::create(b, loc, len, c1));

  // indices[p] = min k with pos[k] == p; counts[p] = #{k: pos[k] == p}.
  auto t1 = RankedTensorType::get({dynamic}, b.getI64Type());
  auto d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
  auto reduceOverK = [&](int64_t initV, bool isMin) {
    Value init = filledTensor(b, loc, t1, {u}, b.getI64IntegerAttr(initV));
    return linalg::GenericOp::create(
               b, loc, TypeRange{t1}, ValueRange{pos}, ValueRange{init},
               {AffineMap::get(2, 0, {d1}, ctx),
                AffineMap::get(2, 0, {d0}, ctx)},
               {IteratorType::parallel, IteratorType::reduction},
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value p = toI64(nb, l, linalg::IndexOp::create(nb, l, 0));
                 Value k = toI64(nb, l, linalg::IndexOp::create(nb, l, 1));
                 Value hit = cmpI(nb, l, arith::CmpIPredicate::eq, a[0], p);
                 Value v =
                     isMin ? arith::MinSIOp::create(nb, l, a[1], k).getResult()
                           : arith::AddIOp::create(nb, l, a[1], i64c(nb, l, 1))
                                 .getResult();
                 linalg::YieldOp::create(nb, l, select(nb, l, hit, v, a[1]));
               })
        .getResult(0);
  };
  Value indices = reduceOverK(std::numeric_limits<int64_t>::max(), true);

  // Y: the input with the axis (or the flattened input) gathered at indices.
  FailureOr<RankedTensorType> tyOut = rankedResult(op, 0);
  if (failed(tyOut))
    return failure();
  Value xs = axis
                 ? x
                 : reshapeTo(b, loc, x3, RankedTensorType::get({dynamic}, elem),
                             {arith::MulIOp::create(b, loc, sliceSize, len)});
  int64_t yAxis = axis ? *axis : 0;
  auto yType = RankedTensorType::get(axis ? SmallVector<int64_t>(tx->getShape())
                                          : SmallVector<int64_t>{dynamic},
                                     elem);
  SmallVector<int64_t> yShape(yType.getShape());
  yShape[yAxis] = dynamic;
  yType = RankedTensorType::get(yShape, elem);
  SmallVector<Value> yDyn;
  for (int64_t d = 0; d < yType.getRank(); ++d)
    if (yType.isDynamicDim(d))
      yDyn.push_back(d == yAxis ? u : dimValue(b, loc, xs, d));
  Value yInit = emptyTensor(b, loc, yType, yDyn);
  Value xAxisLen = dimValue(b, loc, xs, yAxis);
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{yType}, ValueRange{indices}, ValueRange{yInit},
          {AffineMap::get(yType.getRank(), 0, {getAffineDimExpr(yAxis, ctx)},
                          ctx),
           AffineMap::getMultiDimIdentityMap(yType.getRank(), ctx)},
          SmallVector<IteratorType>(yType.getRank(), IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange a) {
            SmallVector<Value> ix;
            for (int64_t d = 0; d < yType.getRank(); ++d)
              ix.push_back(linalg::IndexOp::create(nb, l, d));
            ix[yAxis] = clampIndex(nb, l, toIndex(nb, l, a[0]), xAxisLen);
            linalg::YieldOp::create(
                nb, l, tensor::ExtractOp::create(nb, l, xs, ix).getResult());
          })
          .getResult(0);
  y = fromSignless(b, loc, y,
                   RankedTensorType::get(yType.getShape(), origElem));
  results.push_back(castTo(b, loc, y, *tyOut));

  auto present = [&](unsigned i) {
    return i < op->getNumResults() &&
           !isa<NoneType>(op->getResult(i).getType());
  };
  for (unsigned i = 1; i < op->getNumResults(); ++i) {
    if (!present(i)) {
      results.push_back(Value());
      continue;
    }
    FailureOr<RankedTensorType> t = rankedResult(op, i);
    if (failed(t))
      return failure();
    Value v = i == 1 ? indices : i == 2 ? pos : reduceOverK(0, false);
    results.push_back(castTo(b, loc, v, *t));
  }
  return success();
}

} // namespace

void lowering::populateDetectionLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Detection> t(patterns);
  t.add<onnxops::NonMaxSuppressionOp>(lowerNonMaxSuppression);
  t.add<onnxops::UniqueOp>(lowerUnique);
}
