//===- Normalization.cpp - Lowering of normalizations and losses ----------===//
//
// LayerNormalization, RMSNormalization, InstanceNormalization,
// GroupNormalization, MeanVarianceNormalization, LpNormalization, LRN,
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Statistics are
// reductions kept as size-1 dims (reduceKept) combined with the input by
// broadcasting elementwise generics.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

Value fconst(OpBuilder &b, Location l, Type t, double v) {
  return scalarConstant(b, l, t, v);
}

/// Number of elements over the `reduced` dims of `x`, as a float of `elem`.
Value countOf(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
              Type elem) {
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [i, r] : llvm::enumerate(reduced))
    if (r)
      n = arith::MulIOp::create(b, loc, n, dimValue(b, loc, x, i));
  return arith::SIToFPOp::create(
      b, loc, elem, arith::IndexCastOp::create(b, loc, b.getI64Type(), n));
}

/// Elementwise over `ins` with the shape of `ins[0]` (others broadcast).
Value ew(OpBuilder &b, Location loc, ValueRange ins, ScalarFn fn,
         Type elem = Type()) {
  auto t = cast<RankedTensorType>(ins[0].getType());
  if (!elem)
    elem = t.getElementType();
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (t.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, ins[0], i));
  return buildBroadcastGeneric(
      b, loc, RankedTensorType::get(t.getShape(), elem), ins, dyn, {}, fn);
}

/// Mean of `x` over `reduced` (kept dims).
Value meanKept(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced) {
  Type elem = cast<RankedTensorType>(x.getType()).getElementType();
  Value n = countOf(b, loc, x, reduced, elem);
  Value s = reduceKept(b, loc, x, reduced);
  return ew(b, loc, s, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::DivFOp::create(nb, l, a[0], n);
  });
}

/// Views `v` (rank <= rank of the target) as right-aligned to `rank` dims by
/// prepending 1s (numpy broadcasting) — no-op when ranks agree.
Value alignRank(OpBuilder &b, Location loc, Value v, int64_t rank) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() >= rank)
    return v;
  SmallVector<int64_t> shape(rank - t.getRank(), 1);
  SmallVector<Value> sizes(rank - t.getRank(),
                           arith::ConstantIndexOp::create(b, loc, 1));
  for (int64_t i = 0; i < t.getRank(); ++i) {
    shape.push_back(t.getDimSize(i));
    sizes.push_back(dimValue(b, loc, v, i));
  }
  return reshapeTo(b, loc, v, RankedTensorType::get(shape, t.getElementType()),
                   sizes);
}

/// A [C] vector viewed as [C, 1, ..., 1] (rank - 1 dims) to scale dim 1 of
/// a rank-`rank` tensor.
Value channelView(OpBuilder &b, Location loc, Value v, int64_t rank) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = t.getDimSize(0);
  SmallVector<Value> sizes = {dimValue(b, loc, v, 0)};
  for (int64_t j = 1; j < rank - 1; ++j)
    sizes.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  return reshapeTo(b, loc, v, RankedTensorType::get(shape, t.getElementType()),
                   sizes);
}

/// y * scale + bias, with `scale` and `bias` [C] vectors applied along dim 1
/// of the rank-`rank` tensor `y`.
Value scaleShiftChannels(OpBuilder &b, Location loc, Value y, Value scale,
                         Value bias, int64_t rank) {
  Value s = channelView(b, loc, scale, rank);
  Value c = channelView(b, loc, bias, rank);
  return ew(b, loc, {y, s, c},
            [](OpBuilder &nb, Location l, ValueRange a) -> Value {
              return arith::AddFOp::create(
                  nb, l, arith::MulFOp::create(nb, l, a[0], a[1]), a[2]);
            });
}

/// (x - mean) * rsqrt(var + eps) over `reduced`; also returns mean and
/// the inverse standard deviation (kept dims).
Value standardize(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
                  double eps, Value *meanOut = nullptr,
                  Value *invStdOut = nullptr) {
  Type elem = cast<RankedTensorType>(x.getType()).getElementType();
  Value mean = meanKept(b, loc, x, reduced);
  Value d = ew(b, loc, {x, mean},
               [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                 return arith::SubFOp::create(nb, l, a[0], a[1]);
               });
  Value sq =
      ew(b, loc, d, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, l, a[0], a[0]);
      });
  Value var = meanKept(b, loc, sq, reduced);
  Value inv =
      ew(b, loc, var, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = arith::AddFOp::create(nb, l, a[0], fconst(nb, l, elem, eps));
        return arith::DivFOp::create(nb, l, fconst(nb, l, elem, 1.0),
                                     math::SqrtOp::create(nb, l, v));
      });
  if (meanOut)
    *meanOut = mean;
  if (invStdOut)
    *invStdOut = inv;
  return ew(b, loc, {d, inv},
            [](OpBuilder &nb, Location l, ValueRange a) -> Value {
              return arith::MulFOp::create(nb, l, a[0], a[1]);
            });
}

LogicalResult checkFloat(Operation *op, RankedTensorType t) {
  if (!isa<FloatType>(t.getElementType()))
    return nodeError(op) << "float types only", failure();
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization, RMSNormalization
//===----------------------------------------------------------------------===//

template <typename OpTy>
LogicalResult lowerLayerNorm(OpTy op, OpBuilder &b,
                             SmallVectorImpl<Value> &results, bool rms) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), r);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Type elem = tx->getElementType();
  double eps = asDouble(op.getEpsilon());
  // Statistics in float32 (stash_type 1) when the input is narrower.
  Value x = op->getOperand(0);
  Type stash = elem;
  if (asInt(op.getStashType()) == 1 && elem.getIntOrFloatBitWidth() < 32)
    stash = b.getF32Type();
  if (stash != elem)
    x = ew(
        b, loc, x,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::ExtFOp::create(nb, l, stash, a[0]);
        },
        stash);
  SmallVector<bool> red(r, false);
  for (int64_t i = *axis; i < r; ++i)
    red[i] = true;
  Value norm, mean, inv;
  if (rms) {
    Value sq =
        ew(b, loc, x, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::MulFOp::create(nb, l, a[0], a[0]);
        });
    Value ms = meanKept(b, loc, sq, red);
    inv = ew(b, loc, ms, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      Value v = arith::AddFOp::create(nb, l, a[0], fconst(nb, l, stash, eps));
      return arith::DivFOp::create(nb, l, fconst(nb, l, stash, 1.0),
                                   math::SqrtOp::create(nb, l, v));
    });
    norm = ew(b, loc, {x, inv},
              [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                return arith::MulFOp::create(nb, l, a[0], a[1]);
              });
  } else {
    norm = standardize(b, loc, x, red, eps, &mean, &inv);
  }
  if (stash != elem)
    norm = ew(
        b, loc, norm,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, l, elem, a[0]);
        },
        elem);
  SmallVector<Value> ins = {norm, alignRank(b, loc, op->getOperand(1), r)};
  if (!rms && !onnxops::isNoValue(op->getOperand(2)))
    ins.push_back(alignRank(b, loc, op->getOperand(2), r));
  results.push_back(
      ew(b, loc, ins, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value y = arith::MulFOp::create(nb, l, a[0], a[1]);
        return a.size() > 2 ? arith::AddFOp::create(nb, l, y, a[2]).getResult()
                            : y;
      }));
  // Optional outputs: null when absent (NoneType) or unused.
  for (unsigned i = 1; !rms && i < op->getNumResults(); ++i)
    results.push_back(isa<NoneType>(op->getResult(i).getType()) ? Value()
                      : i == 1                                  ? mean
                                                                : inv);
  return success();
}

//===----------------------------------------------------------------------===//
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization
//===----------------------------------------------------------------------===//

LogicalResult lowerInstanceNorm(onnxops::InstanceNormalizationOp op,
                                OpBuilder &b, SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  if (r < 3)
    return nodeError(op) << "input must have rank >= 3", failure();
  SmallVector<bool> red(r, true);
  red[0] = red[1] = false;
  Value y =
      standardize(b, loc, op->getOperand(0), red, asDouble(op.getEpsilon()));
  results.push_back(
      scaleShiftChannels(b, loc, y, op->getOperand(1), op->getOperand(2), r));
  return success();
}

/// x [N, C, ...] viewed as [N, G, C/G * rest], normalized over the last
/// dim, viewed back, then scaled per channel (opset 21: scale/bias [C]).
LogicalResult lowerGroupNorm(onnxops::GroupNormalizationOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  int64_t g = asInt(op.getNumGroups());
  if (r < 2 || g <= 0)
    return nodeError(op) << "needs rank >= 2 and num_groups > 0", failure();
  int64_t c = tx->getDimSize(1);
  if (ShapedType::isDynamic(c) || c % g != 0)
    return nodeError(op) << "the channel count must be static and divisible "
                            "by num_groups",
           failure();
  Value x = op->getOperand(0);
  Type elem = tx->getElementType();
  int64_t rest = c / g;
  Value restV = arith::ConstantIndexOp::create(b, loc, rest);
  bool dyn = false;
  for (int64_t i = 2; i < r; ++i) {
    if (tx->isDynamicDim(i))
      dyn = true;
    else
      rest *= tx->getDimSize(i);
    restV = arith::MulIOp::create(b, loc, restV, dimValue(b, loc, x, i));
  }
  auto gType = RankedTensorType::get(
      {tx->getDimSize(0), g, dyn ? ShapedType::kDynamic : rest}, elem);
  Value xg = reshapeTo(b, loc, x, gType,
                       {dimValue(b, loc, x, 0),
                        arith::ConstantIndexOp::create(b, loc, g), restV});
  Value yg =
      standardize(b, loc, xg, {false, false, true}, asDouble(op.getEpsilon()));
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < r; ++i)
    sizes.push_back(dimValue(b, loc, x, i));
  Value y = reshapeTo(b, loc, yg, *tx, sizes);
  Value s = op->getOperand(1), bias = op->getOperand(2);
  auto st = dyn_cast<RankedTensorType>(s.getType());
  if (!st || st.getRank() != 1 ||
      (!st.isDynamicDim(0) && st.getDimSize(0) != c))
    return nodeError(op) << "scale must be [C] (opset 21)", failure();
  results.push_back(scaleShiftChannels(b, loc, y, s, bias, r));
  return success();
}

LogicalResult lowerMVN(onnxops::MeanVarianceNormalizationOp op, OpBuilder &b,
                       SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  SmallVector<int64_t> axes =
      intsOf(op.getAxes()).value_or(SmallVector<int64_t>{0, 2, 3});
  SmallVector<bool> red(r, false);
  for (int64_t a : axes) {
    FailureOr<int64_t> n = onnxops::normalizeAxis(a, r);
    if (failed(n))
      return nodeError(op) << "axis " << a << " out of range", failure();
    red[*n] = true;
  }
  Type elem = tx->getElementType();
  Value x = op->getOperand(0);
  Value mean = meanKept(b, loc, x, red);
  Value sq =
      ew(b, loc, x, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, l, a[0], a[0]);
      });
  Value meanSq = meanKept(b, loc, sq, red);
  results.push_back(
      ew(b, loc, {x, mean, meanSq},
         [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
           Value var = arith::SubFOp::create(
               nb, l, a[2], arith::MulFOp::create(nb, l, a[1], a[1]));
           Value sd =
               arith::AddFOp::create(nb, l, math::SqrtOp::create(nb, l, var),
                                     fconst(nb, l, elem, 1e-9));
           return arith::DivFOp::create(
               nb, l, arith::SubFOp::create(nb, l, a[0], a[1]), sd);
         }));
  return success();
}

//===----------------------------------------------------------------------===//
// LpNormalization, LRN
//===----------------------------------------------------------------------===//

LogicalResult lowerLpNorm(onnxops::LpNormalizationOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), r);
  int64_t p = asInt(op.getP());
  if (failed(axis) || (p != 1 && p != 2))
    return nodeError(op) << "needs a valid axis and p = 1 or 2", failure();
  Value x = op->getOperand(0);
  Type elem = tx->getElementType();
  SmallVector<bool> red(r, false);
  red[*axis] = true;
  Value m =
      ew(b, loc, x, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        if (p == 1)
          return math::AbsFOp::create(nb, l, a[0]);
        return arith::MulFOp::create(nb, l, a[0], a[0]);
      });
  Value n = reduceKept(b, loc, m, red);
  results.push_back(
      ew(b, loc, {x, n}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value d = p == 2 ? math::SqrtOp::create(nb, l, a[1]).getResult() : a[1];
        // A zero norm gives 0 (not NaN).
        Value zero = fconst(nb, l, elem, 0.0);
        Value isZero =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, d, zero);
        Value q = arith::DivFOp::create(nb, l, a[0], d);
        return arith::SelectOp::create(nb, l, isZero, zero, q);
      }));
  return success();
}

/// y = x / (bias + alpha / size * Σ x²[c - (size-1)/2 .. c + ceil((size-1)/2)])^beta
LogicalResult lowerLRN(onnxops::LRNOp op, OpBuilder &b,
                       SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  int64_t r = tx->getRank();
  int64_t size = asInt(op.getSize());
  if (r < 2 || size <= 0)
    return nodeError(op) << "needs rank >= 2 and size > 0", failure();
  double alpha = asDouble(op.getAlpha()), beta = asDouble(op.getBeta()),
         bias = asDouble(op.getBias());
  int64_t lo = (size - 1) / 2;
  Value x = op->getOperand(0);
  Type elem = tx->getElementType();
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < r; ++i)
    if (tx->isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  Value init = filledTensor(b, loc, *tx, dyn, scalarAttr(elem, 0.0));
  // Loops (dims..., j): j only through a shape-only [size] operand.
  Value window =
      emptyTensor(b, loc, RankedTensorType::get({size}, b.getI8Type()), {});
  Value cDim = dimValue(b, loc, x, 1);
  SmallVector<AffineMap> maps = {
      AffineMap::get(r + 1, 0, {getAffineDimExpr(r, ctx)}, ctx),
      AffineMap::getMultiDimIdentityMap(r + 1, ctx).getMajorSubMap(r)};
  SmallVector<IteratorType> iters(r, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  Value sq =
      linalg::GenericOp::create(
          b, loc, TypeRange{*tx}, ValueRange{window}, ValueRange{init}, maps,
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            SmallVector<Value> ix;
            for (int64_t i = 0; i < r; ++i)
              ix.push_back(linalg::IndexOp::create(nb, l, i));
            Value j = linalg::IndexOp::create(nb, l, r);
            Value c = arith::SubIOp::create(
                nb, l, arith::AddIOp::create(nb, l, ix[1], j),
                arith::ConstantIndexOp::create(nb, l, lo));
            Value zero = arith::ConstantIndexOp::create(nb, l, 0);
            Value inRange = arith::AndIOp::create(
                nb, l,
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, c,
                                      zero),
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, c,
                                      cDim));
            ix[1] = arith::SelectOp::create(nb, l, inRange, c, zero);
            Value v = tensor::ExtractOp::create(nb, l, x, ix);
            v = arith::MulFOp::create(nb, l, v, v);
            v = arith::SelectOp::create(nb, l, inRange, v,
                                        fconst(nb, l, elem, 0.0));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[1], v).getResult());
          })
          .getResult(0);
  results.push_back(ew(
      b, loc, {x, sq}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value d = arith::AddFOp::create(
            nb, l, fconst(nb, l, elem, bias),
            arith::MulFOp::create(nb, l, fconst(nb, l, elem, alpha / size),
                                  a[1]));
        d = math::PowFOp::create(nb, l, d, fconst(nb, l, elem, beta));
        return arith::DivFOp::create(nb, l, a[0], d);
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
//===----------------------------------------------------------------------===//

/// loss over log-probabilities `x` [N, C, d...] and targets [N, d...].
template <typename OpTy>
LogicalResult nllLoss(OpTy op, OpBuilder &b, Value x, Value target,
                      Value weight, SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  auto tx = cast<RankedTensorType>(x.getType());
  auto tt = dyn_cast<RankedTensorType>(target.getType());
  FailureOr<RankedTensorType> ty = rankedResult(op, 0);
  if (failed(ty))
    return failure();
  int64_t r = tx.getRank();
  if (r < 2 || !tt || tt.getRank() != r - 1)
    return nodeError(op) << "input must be [N, C, d...] and target [N, d...]",
           failure();
  Type elem = tx.getElementType();
  std::string reduction = op.getReduction().str();
  std::optional<int64_t> ignoreIndex = asInt(op.getIgnoreIndex());
  bool hasWeight = weight && !onnxops::isNoValue(weight);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < tt.getRank(); ++i)
    if (tt.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, target, i));
  auto lt = RankedTensorType::get(tt.getShape(), elem);
  Value lossInit = emptyTensor(b, loc, lt, dyn);
  Value wInit = emptyTensor(b, loc, lt, dyn);
  Value cDim = dimValue(b, loc, x, 1);
  int64_t tr = tt.getRank();
  SmallVector<AffineMap> maps(
      3, AffineMap::getMultiDimIdentityMap(tr, b.getContext()));
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{lt, lt}, ValueRange{target},
      ValueRange{lossInit, wInit}, maps,
      SmallVector<IteratorType>(tr, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value t = a[0];
        Value valid = arith::ConstantIntOp::create(nb, l, 1, 1);
        if (ignoreIndex)
          valid = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, t,
              arith::ConstantIntOp::create(nb, l, t.getType(), *ignoreIndex));
        Value ti = arith::IndexCastOp::create(nb, l, nb.getIndexType(), t);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value inRange = arith::AndIOp::create(
            nb, l,
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, ti, zero),
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, ti, cDim));
        ti = arith::SelectOp::create(nb, l, inRange, ti, zero);
        valid = arith::AndIOp::create(nb, l, valid, inRange);
        SmallVector<Value> ix = {linalg::IndexOp::create(nb, l, 0), ti};
        for (int64_t i = 1; i < tr; ++i)
          ix.push_back(linalg::IndexOp::create(nb, l, i));
        Value v = tensor::ExtractOp::create(nb, l, x, ix);
        Value w = hasWeight
                      ? tensor::ExtractOp::create(nb, l, weight, ValueRange{ti})
                            .getResult()
                      : fconst(nb, l, elem, 1.0);
        w = arith::SelectOp::create(nb, l, valid, w, fconst(nb, l, elem, 0.0));
        Value loss =
            arith::NegFOp::create(nb, l, arith::MulFOp::create(nb, l, v, w));
        linalg::YieldOp::create(nb, l, ValueRange{loss, w});
      });
  Value loss = g.getResult(0), w = g.getResult(1);
  if (reduction == "none") {
    results.push_back(loss);
    return success();
  }
  if (reduction != "sum" && reduction != "mean")
    return nodeError(op) << "unknown reduction '" << reduction << "'",
           failure();
  auto scalarT = RankedTensorType::get({}, elem);
  SmallVector<bool> all(tr, true);
  auto toScalar = [&](Value v) {
    Value k = reduceKept(b, loc, v, all);
    return reshapeTo(b, loc, k, scalarT, {});
  };
  Value sum = toScalar(loss);
  if (reduction == "mean") {
    Value ws = toScalar(w);
    sum = ew(b, loc, {sum, ws},
             [](OpBuilder &nb, Location l, ValueRange a) -> Value {
               return arith::DivFOp::create(nb, l, a[0], a[1]);
             });
  }
  results.push_back(sum);
  return success();
}

LogicalResult lowerNLL(onnxops::NegativeLogLikelihoodLossOp op, OpBuilder &b,
                       SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  return nllLoss(op, b, op->getOperand(0), op->getOperand(1), op->getOperand(2),
                 results);
}

LogicalResult lowerSCE(onnxops::SoftmaxCrossEntropyLossOp op, OpBuilder &b,
                       SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(checkFloat(op, *tx)))
    return failure();
  if (tx->getRank() < 2)
    return nodeError(op) << "scores must be [N, C, d...]", failure();
  Value lp = logSoftmax(b, op->getLoc(), op->getOperand(0), 1);
  if (failed(nllLoss(op, b, lp, op->getOperand(1), op->getOperand(2), results)))
    return failure();
  if (op->getNumResults() > 1 && !isa<NoneType>(op->getResult(1).getType()))
    results.push_back(lp);
  return success();
}

} // namespace

void lowering::populateNormalizationLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Normalization> t(patterns);
  t.add<onnxops::LayerNormalizationOp>([](onnxops::LayerNormalizationOp op,
                                          OpBuilder &b,
                                          SmallVectorImpl<Value> &r) {
    return lowerLayerNorm(op, b, r, /*rms=*/false);
  });
  t.add<onnxops::RMSNormalizationOp>([](onnxops::RMSNormalizationOp op,
                                        OpBuilder &b,
                                        SmallVectorImpl<Value> &r) {
    return lowerLayerNorm(op, b, r, /*rms=*/true);
  });
  t.add<onnxops::InstanceNormalizationOp>(lowerInstanceNorm);
  t.add<onnxops::GroupNormalizationOp>(lowerGroupNorm);
  t.add<onnxops::MeanVarianceNormalizationOp>(lowerMVN);
  t.add<onnxops::LpNormalizationOp>(lowerLpNorm);
  t.add<onnxops::LRNOp>(lowerLRN);
  t.add<onnxops::NegativeLogLikelihoodLossOp>(lowerNLL);
  t.add<onnxops::SoftmaxCrossEntropyLossOp>(lowerSCE);
}
