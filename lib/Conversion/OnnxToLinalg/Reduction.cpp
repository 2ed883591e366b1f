//===- Reduction.cpp - Lowering of reductions and softmax variants --------===//
//
// Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare} with
// constant or run-time axes, ArgMax/ArgMin and CumSum: the Reduction family
// (OnnxFamilies.def). logSoftmax, argReduce and withKept also serve
// the Softmax family (Softmax.cpp).
//
// A reduction over run-time axes reads the axes on the host and computes
// per-dim "reduced" flags f_i. The kernel is one linalg.generic over 2·r
// loops (o, k): the output (keepdims shape, size select(f_i, 1, n_i)) is
// indexed by o, the input by o + k, and a shape-only operand of size
// select(f_i, n_i, 1) gives the bounds of k. Every input element is read
// exactly once.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

enum class RK {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  LogSum,
  LogSumExp,
  SumSquare
};

bool isBool(Type t) { return t.isInteger(1); }

/// The identity of the combining operation of `kind` over `elem`.
TypedAttr reduceInit(Type elem, RK kind) {
  bool isMax = kind == RK::Max, isMin = kind == RK::Min;
  if (auto ft = dyn_cast<FloatType>(elem)) {
    if (isMax || isMin)
      return FloatAttr::get(
          ft, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/isMax));
    return FloatAttr::get(ft, kind == RK::Prod ? 1.0 : 0.0);
  }
  unsigned w = elem.getIntOrFloatBitWidth();
  if (isBool(elem))
    return IntegerAttr::get(elem, APInt(1, isMin ? 1 : 0));
  if (isMax)
    return IntegerAttr::get(elem, APInt::getSignedMinValue(w));
  if (isMin)
    return IntegerAttr::get(elem, APInt::getSignedMaxValue(w));
  return IntegerAttr::get(elem, APInt(w, kind == RK::Prod ? 1 : 0));
}

Value combine(OpBuilder &b, Location l, RK kind, Value acc, Value x) {
  Type t = x.getType();
  bool f = isa<FloatType>(t);
  switch (kind) {
  case RK::Max:
    if (f)
      return arith::MaximumFOp::create(b, l, acc, x);
    if (isBool(t))
      return arith::OrIOp::create(b, l, acc, x);
    return arith::MaxSIOp::create(b, l, acc, x);
  case RK::Min:
    if (f)
      return arith::MinimumFOp::create(b, l, acc, x);
    if (isBool(t))
      return arith::AndIOp::create(b, l, acc, x);
    return arith::MinSIOp::create(b, l, acc, x);
  case RK::Prod:
    return f ? arith::MulFOp::create(b, l, acc, x).getResult()
             : arith::MulIOp::create(b, l, acc, x).getResult();
  default:
    return f ? arith::AddFOp::create(b, l, acc, x).getResult()
             : arith::AddIOp::create(b, l, acc, x).getResult();
  }
}

/// The value accumulated for element `x` (`aux` is the max for LogSumExp).
Value preMap(OpBuilder &b, Location l, RK kind, Value x, Value aux) {
  bool f = isa<FloatType>(x.getType());
  switch (kind) {
  case RK::L1:
    if (f)
      return math::AbsFOp::create(b, l, x);
    return math::AbsIOp::create(b, l, x);
  case RK::L2:
  case RK::SumSquare:
    return f ? arith::MulFOp::create(b, l, x, x).getResult()
             : arith::MulIOp::create(b, l, x, x).getResult();
  case RK::LogSumExp: {
    // exp(x - max); an all -inf slice has max -inf: use 0 there.
    Value inf = arith::ConstantOp::create(
        b, l,
        FloatAttr::get(
            x.getType(),
            APFloat::getInf(cast<FloatType>(x.getType()).getFloatSemantics(),
                            true)));
    Value isInf =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, aux, inf);
    Value m = arith::SelectOp::create(
        b, l, isInf, scalarConstant(b, l, x.getType(), 0.0), aux);
    return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, x, m));
  }
  default:
    return x;
  }
}

/// Which dims of a rank-`rank` input are reduced: static flags, or i1 host
/// values (null Values when static).
struct ReduceDims {
  SmallVector<bool> staticRed;
  SmallVector<Value> runtime; // empty when static
  bool isStatic() const { return runtime.empty(); }
};

/// Reduces `x` to its keepdims shape. `aux` (optional) has the keepdims
/// shape and is passed to preMap at the output position.
Value reduceKeep(OpBuilder &b, Location loc, Value x, const ReduceDims &rd,
                 RK kind, Value aux) {
  auto tx = cast<RankedTensorType>(x.getType());
  int64_t r = tx.getRank();
  Type elem = tx.getElementType();
  MLIRContext *ctx = b.getContext();
  if (rd.isStatic()) {
    SmallVector<int64_t> shape(tx.getShape());
    SmallVector<Value> dyn;
    SmallVector<AffineExpr> outE;
    SmallVector<IteratorType> iters;
    for (int64_t i = 0; i < r; ++i) {
      bool red = rd.staticRed[i];
      if (red)
        shape[i] = 1;
      else if (tx.isDynamicDim(i))
        dyn.push_back(tensor::DimOp::create(b, loc, x, i));
      outE.push_back(red ? getAffineConstantExpr(0, ctx)
                         : getAffineDimExpr(i, ctx));
      iters.push_back(red ? IteratorType::reduction : IteratorType::parallel);
    }
    // Long f32 sums accumulate in f64 (accumulatesWide).
    bool sumLike = kind != RK::Max && kind != RK::Min && kind != RK::Prod;
    Type acc = sumLike && accumulatesWide(tx, rd.staticRed)
                   ? Type(b.getF64Type())
                   : elem;
    auto keptType = RankedTensorType::get(shape, acc);
    Value init = filledTensor(b, loc, keptType, dyn, reduceInit(acc, kind));
    AffineMap outMap = AffineMap::get(r, 0, outE, ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(r, ctx)};
    SmallVector<Value> ins = {x};
    if (aux) {
      ins.push_back(aux);
      maps.push_back(outMap);
    }
    maps.push_back(outMap);
    Value kept =
        linalg::GenericOp::create(
            b, loc, TypeRange{keptType}, ins, ValueRange{init}, maps, iters,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value v = preMap(nb, l, kind, a[0], aux ? a[1] : Value());
              if (acc != elem)
                v = arith::ExtFOp::create(nb, l, acc, v);
              linalg::YieldOp::create(nb, l, combine(nb, l, kind, a.back(), v));
            })
            .getResult(0);
    return narrowTo(b, loc, kept, elem);
  }
  // Run-time axes: loops (o_0..o_{r-1}, k_0..k_{r-1}).
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> outSizes, redSizes;
  for (int64_t i = 0; i < r; ++i) {
    Value n = dimValue(b, loc, x, i);
    outSizes.push_back(arith::SelectOp::create(b, loc, rd.runtime[i], one, n));
    redSizes.push_back(arith::SelectOp::create(b, loc, rd.runtime[i], n, one));
  }
  auto dynType = RankedTensorType::get(
      SmallVector<int64_t>(r, ShapedType::kDynamic), elem);
  Value init = filledTensor(b, loc, dynType, outSizes, reduceInit(elem, kind));
  auto shapeOnlyType = RankedTensorType::get(
      SmallVector<int64_t>(r, ShapedType::kDynamic), b.getI8Type());
  Value shapeOnly = emptyTensor(b, loc, shapeOnlyType, redSizes);
  SmallVector<AffineExpr> inE, oE, kE;
  for (int64_t i = 0; i < r; ++i) {
    oE.push_back(getAffineDimExpr(i, ctx));
    kE.push_back(getAffineDimExpr(r + i, ctx));
    inE.push_back(getAffineDimExpr(i, ctx) + getAffineDimExpr(r + i, ctx));
  }
  AffineMap outMap = AffineMap::get(2 * r, 0, oE, ctx);
  SmallVector<AffineMap> maps = {AffineMap::get(2 * r, 0, inE, ctx),
                                 AffineMap::get(2 * r, 0, kE, ctx)};
  SmallVector<Value> ins = {x, shapeOnly};
  if (aux) {
    ins.push_back(aux);
    maps.push_back(outMap);
  }
  maps.push_back(outMap);
  SmallVector<IteratorType> iters(r, IteratorType::parallel);
  iters.append(r, IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{dynType}, ins, ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value v = preMap(nb, l, kind, a[0], aux ? a[2] : Value());
               linalg::YieldOp::create(nb, l,
                                       combine(nb, l, kind, a.back(), v));
             })
      .getResult(0);
}

/// An elementwise generic over same-shaped tensors (identity maps).
Value mapSame(OpBuilder &b, Location loc, ValueRange ins, Type resultElem,
              function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  auto t = cast<RankedTensorType>(ins[0].getType());
  int64_t r = t.getRank();
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < r; ++i)
    if (t.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, ins[0], i));
  auto rt = RankedTensorType::get(t.getShape(), resultElem);
  Value init = emptyTensor(b, loc, rt, dyn);
  SmallVector<AffineMap> maps(
      ins.size() + 1, AffineMap::getMultiDimIdentityMap(r, b.getContext()));
  return linalg::GenericOp::create(
             b, loc, TypeRange{rt}, ins, ValueRange{init}, maps,
             SmallVector<IteratorType>(r, IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, fn(nb, l, a.drop_back()));
             })
      .getResult(0);
}

Value indexToFloat(OpBuilder &b, Location l, Value idx, Type elem) {
  return arith::SIToFPOp::create(
      b, l, elem, arith::IndexCastOp::create(b, l, b.getI64Type(), idx));
}

/// Drops the reduced dims of keepdims result `kept` to give `resultType`.
Value dropReduced(OpBuilder &b, Location loc, Value x, Value kept,
                  const ReduceDims &rd, RankedTensorType resultType) {
  int64_t r = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<Value> sizes;
  if (rd.isStatic()) {
    for (int64_t i = 0; i < r; ++i)
      if (!rd.staticRed[i])
        sizes.push_back(dimValue(b, loc, x, i));
  } else {
    // Output dim j is the j-th dim that is not reduced.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> count; // kept dims before i
    Value c = zero;
    for (int64_t i = 0; i < r; ++i) {
      count.push_back(c);
      c = arith::AddIOp::create(
          b, loc, c, arith::SelectOp::create(b, loc, rd.runtime[i], zero, one));
    }
    checkAtRunTime(b, loweringNode(),
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, c,
                                         arith::ConstantIndexOp::create(
                                             b, loc, resultType.getRank())),
                   "the axes keep {0} dims; the result has rank " +
                       Twine(resultType.getRank()),
                   {c});
    for (int64_t j = 0; j < resultType.getRank(); ++j) {
      Value s = zero;
      Value jv = arith::ConstantIndexOp::create(b, loc, j);
      for (int64_t i = 0; i < r; ++i) {
        Value isJ = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          count[i], jv);
        Value kept = arith::AndIOp::create(
            b, loc, isJ,
            arith::XOrIOp::create(b, loc, rd.runtime[i],
                                  arith::ConstantIntOp::create(b, loc, 1, 1)));
        s = arith::SelectOp::create(b, loc, kept, dimValue(b, loc, x, i), s);
      }
      sizes.push_back(s);
    }
  }
  auto target = RankedTensorType::get(
      SmallVector<int64_t>(sizes.size(), ShapedType::kDynamic),
      resultType.getElementType());
  if (auto kt = cast<RankedTensorType>(kept.getType());
      kt.hasStaticShape() && resultType.hasStaticShape())
    target = resultType;
  return reshapeTo(b, loc, kept, target, sizes);
}

/// Reads the reduced dims of `op` (axes as operand 1 or attribute `axes`).
/// Returns failure after an error; `noop` is set when the op is the
/// identity (empty axes with noop_with_empty_axes).
template <typename OpTy>
FailureOr<ReduceDims> reducedDims(OpTy op, OpBuilder &b, int64_t r,
                                  bool &noop) {
  Location loc = op->getLoc();
  noop = false;
  ReduceDims rd;
  rd.staticRed.assign(r, false);
  std::optional<SmallVector<int64_t>> axes;
  Value axesIn = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
  bool noopEmpty = asInt(op.getNoopWithEmptyAxes());
  if (axesIn && !onnxops::isNoValue(axesIn)) {
    axes = onnxops::getConstantIntValues(axesIn);
    if (!axes) {
      auto at = dyn_cast<RankedTensorType>(axesIn.getType());
      if (!at || at.getRank() != 1)
        return nodeError(op) << "run-time axes must be 1-D", failure();
      if (at.isDynamicDim(0)) {
        // Without keepdims the result's rank (declared or inferred) tells
        // how many dims go; dropReduced checks it at run time.
        if (!asInt(op.getKeepdims()) &&
            !isa<RankedTensorType>(op->getResult(0).getType()))
          return nodeError(op) << "run-time axes of unknown length need "
                                  "keepdims=1 or a result of known rank",
                 failure();
        // flags[i] = any_k(normalize(axes[k]) == i), computed by a kernel
        // and read on the host; no axes at all reduce everything (or
        // nothing with noop_with_empty_axes).
        MLIRContext *ctx = b.getContext();
        auto fType = RankedTensorType::get({r}, b.getI1Type());
        Value fInit = filledTensor(b, loc, fType, {}, b.getBoolAttr(false));
        Type at0 = at.getElementType();
        Value flags =
            linalg::GenericOp::create(
                b, loc, TypeRange{fType}, ValueRange{axesIn}, ValueRange{fInit},
                {AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx),
                 AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx)},
                {IteratorType::parallel, IteratorType::reduction},
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value rv = arith::ConstantIntOp::create(nb, l, at0, r);
                  Value z = arith::ConstantIntOp::create(nb, l, at0, 0);
                  Value neg = arith::CmpIOp::create(
                      nb, l, arith::CmpIPredicate::slt, a[0], z);
                  Value ax = arith::SelectOp::create(
                      nb, l, neg, arith::AddIOp::create(nb, l, a[0], rv), a[0]);
                  Value i = arith::IndexCastOp::create(
                      nb, l, at0, linalg::IndexOp::create(nb, l, 0));
                  Value eq = arith::CmpIOp::create(
                      nb, l, arith::CmpIPredicate::eq, ax, i);
                  linalg::YieldOp::create(
                      nb, l, arith::OrIOp::create(nb, l, a[1], eq).getResult());
                })
                .getResult(0);
        Value empty =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                  tensor::DimOp::create(b, loc, axesIn, 0),
                                  arith::ConstantIndexOp::create(b, loc, 0));
        Value emptyFlag =
            arith::ConstantIntOp::create(b, loc, noopEmpty ? 0 : 1, 1);
        for (int64_t i = 0; i < r; ++i) {
          Value f = tensor::ExtractOp::create(
              b, loc, flags,
              ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
          rd.runtime.push_back(
              arith::SelectOp::create(b, loc, empty, emptyFlag, f));
        }
        return rd;
      }
      int64_t n = at.getDimSize(0);
      if (n == 0) {
        axes = SmallVector<int64_t>();
      } else {
        Value rv = arith::ConstantIntOp::create(b, loc, at.getElementType(), r);
        Value zeroA =
            arith::ConstantIntOp::create(b, loc, at.getElementType(), 0);
        SmallVector<Value> norm;
        for (int64_t k = 0; k < n; ++k) {
          Value a = tensor::ExtractOp::create(
              b, loc, axesIn,
              ValueRange{arith::ConstantIndexOp::create(b, loc, k)});
          Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                            a, zeroA);
          Value minusR =
              arith::ConstantIntOp::create(b, loc, at.getElementType(), -r);
          checkAtRunTime(b, op,
                         arith::AndIOp::create(
                             b, loc,
                             arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::sge, a, minusR),
                             arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::slt, a, rv)),
                         "axes[{0}] is {1}, out of range for rank {2}",
                         {arith::ConstantIndexOp::create(b, loc, k), a,
                          arith::ConstantIndexOp::create(b, loc, r)});
          norm.push_back(arith::SelectOp::create(
              b, loc, neg, arith::AddIOp::create(b, loc, a, rv), a));
        }
        for (int64_t i = 0; i < r; ++i) {
          Value iv =
              arith::ConstantIntOp::create(b, loc, at.getElementType(), i);
          Value f = arith::ConstantIntOp::create(b, loc, 0, 1);
          for (Value a : norm)
            f = arith::OrIOp::create(
                b, loc, f,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, iv));
          rd.runtime.push_back(f);
        }
        return rd;
      }
    }
  } else {
    axes = SmallVector<int64_t>();
  }
  if (axes->empty()) {
    if (noopEmpty) {
      noop = true;
      return rd;
    }
    rd.staticRed.assign(r, true);
    return rd;
  }
  for (int64_t a : *axes) {
    FailureOr<int64_t> n = onnxops::normalizeAxis(a, r);
    if (failed(n))
      return nodeError(op) << "axis " << a << " is out of range for rank " << r,
             failure();
    rd.staticRed[*n] = true;
  }
  return rd;
}

template <typename OpTy>
LogicalResult lowerReduceOp(OpTy op, OpBuilder &b,
                            SmallVectorImpl<Value> &results, RK kind) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Value x = op->getOperand(0);
  int64_t r = tx->getRank();
  Type elem = tx->getElementType();
  bool f = isa<FloatType>(elem);
  if (!f && (kind == RK::Mean || kind == RK::L2 || kind == RK::LogSum ||
             kind == RK::LogSumExp))
    return nodeError(op) << "float types only", failure();
  if (!f && !isa<IntegerType>(elem))
    return nodeError(op) << "unsupported element type " << elem, failure();
  bool noop = false;
  FailureOr<ReduceDims> rd = reducedDims(op, b, r, noop);
  if (failed(rd))
    return failure();
  if (noop) {
    results.push_back(x);
    return success();
  }
  bool keep = asInt(op.getKeepdims());
  int64_t numRed = llvm::count(rd->staticRed, true);
  int64_t expectRank = !keep ? (rd->isStatic() ? r - numRed : -1) : r;
  if (!keep && !rd->isStatic()) {
    // Run-time axes of static length k drop k dims; of unknown length, the
    // result's rank says how many (dropReduced checks it at run time).
    auto at = cast<RankedTensorType>(op->getOperand(1).getType());
    expectRank = at.isDynamicDim(0) ? ty->getRank() : r - at.getDimSize(0);
  }
  if (ty->getRank() != expectRank)
    return nodeError(op) << "the output type " << *ty
                         << " does not match the reduction of rank " << r
                         << " (expected rank " << expectRank
                         << "; run-time axes must be distinct)",
           failure();
  Value aux;
  if (kind == RK::LogSumExp)
    aux = reduceKeep(b, loc, x, *rd, RK::Max, Value());
  Value kept = reduceKeep(b, loc, x, *rd, kind, aux);
  if (kind == RK::Mean) {
    Value count = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t i = 0; i < r; ++i) {
      if (rd->isStatic() && !rd->staticRed[i])
        continue;
      Value n = dimValue(b, loc, x, i);
      if (!rd->isStatic())
        n = arith::SelectOp::create(b, loc, rd->runtime[i], n,
                                    arith::ConstantIndexOp::create(b, loc, 1));
      count = arith::MulIOp::create(b, loc, count, n);
    }
    kept = mapSame(b, loc, kept, elem,
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     return arith::DivFOp::create(
                         nb, l, a[0], indexToFloat(nb, l, count, elem));
                   });
  } else if (kind == RK::L2) {
    kept = mapSame(b, loc, kept, elem,
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     return math::SqrtOp::create(nb, l, a[0]);
                   });
  } else if (kind == RK::LogSum) {
    kept = mapSame(b, loc, kept, elem,
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     return math::LogOp::create(nb, l, a[0]);
                   });
  } else if (kind == RK::LogSumExp) {
    kept = mapSame(b, loc, {kept, aux}, elem,
                   [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                     Value inf = arith::ConstantOp::create(
                         nb, l, reduceInit(elem, RK::Max));
                     Value isInf = arith::CmpFOp::create(
                         nb, l, arith::CmpFPredicate::OEQ, a[1], inf);
                     Value m = arith::SelectOp::create(
                         nb, l, isInf, scalarConstant(nb, l, elem, 0.0), a[1]);
                     return arith::AddFOp::create(
                         nb, l, math::LogOp::create(nb, l, a[0]), m);
                   });
  }
  if (!keep)
    kept = dropReduced(b, loc, x, kept, *rd, *ty);
  results.push_back(kept);
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

} // namespace

Value lowering::argReduce(OpBuilder &b, Location loc, Value x, int64_t axis,
                          bool isMax, bool last) {
  auto tx = cast<RankedTensorType>(x.getType());
  int64_t r = tx.getRank();
  Type elem = tx.getElementType();
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> shape(tx.getShape());
  shape[axis] = 1;
  SmallVector<Value> dyn;
  SmallVector<AffineExpr> outE;
  SmallVector<IteratorType> iters;
  for (int64_t i = 0; i < r; ++i) {
    if (i != axis && tx.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
    outE.push_back(i == axis ? getAffineConstantExpr(0, ctx)
                             : getAffineDimExpr(i, ctx));
    iters.push_back(i == axis ? IteratorType::reduction
                              : IteratorType::parallel);
  }
  auto valType = RankedTensorType::get(shape, elem);
  auto idxType = RankedTensorType::get(shape, b.getI64Type());
  Value vInit = filledTensor(b, loc, valType, dyn,
                             reduceInit(elem, isMax ? RK::Max : RK::Min));
  Value iInit = filledTensor(
      b, loc, idxType, dyn,
      b.getI64IntegerAttr(last ? -1 : std::numeric_limits<int64_t>::max()));
  AffineMap outMap = AffineMap::get(r, 0, outE, ctx);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(r, ctx),
                                 outMap, outMap};
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{valType, idxType}, ValueRange{x},
      ValueRange{vInit, iInit}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = a[0], best = a[1], bestIdx = a[2];
        Value idx = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, axis));
        Value better, equal;
        if (isa<FloatType>(elem)) {
          better = arith::CmpFOp::create(nb, l,
                                         isMax ? arith::CmpFPredicate::OGT
                                               : arith::CmpFPredicate::OLT,
                                         v, best);
          equal =
              arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, v, best);
        } else {
          auto gt = isBool(elem) ? arith::CmpIPredicate::ugt
                                 : arith::CmpIPredicate::sgt;
          auto lt = isBool(elem) ? arith::CmpIPredicate::ult
                                 : arith::CmpIPredicate::slt;
          better = arith::CmpIOp::create(nb, l, isMax ? gt : lt, v, best);
          equal =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, v, best);
        }
        Value tie = arith::CmpIOp::create(
            nb, l, last ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt,
            idx, bestIdx);
        Value take = arith::OrIOp::create(
            nb, l, better, arith::AndIOp::create(nb, l, equal, tie));
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, take, v, best),
                       arith::SelectOp::create(nb, l, take, idx, bestIdx)});
      });
  return g.getResult(1);
}

namespace {

template <typename OpTy>
LogicalResult lowerArg(OpTy op, OpBuilder &b, SmallVectorImpl<Value> &results,
                       bool isMax) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  if (!isa<FloatType, IntegerType>(tx->getElementType()))
    return nodeError(op) << "unsupported element type", failure();
  int64_t r = tx->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), r);
  if (failed(axis) || r == 0)
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0);
  Value idx =
      argReduce(b, loc, x, *axis, isMax, asInt(op.getSelectLastIndex()));
  if (!asInt(op.getKeepdims())) {
    ReduceDims rd;
    rd.staticRed.assign(r, false);
    rd.staticRed[*axis] = true;
    if (ty->getRank() != r - 1)
      return nodeError(op) << "output rank mismatch", failure();
    idx = dropReduced(b, loc, x, idx, rd, *ty);
  }
  results.push_back(idx);
  return success();
}

//===----------------------------------------------------------------------===//
// Shared with the Softmax family
//===----------------------------------------------------------------------===//

} // namespace

Value lowering::withKept(OpBuilder &b, Location loc, Value x, ValueRange kept,
                         Type elem, ScalarFn fn) {
  auto tx = cast<RankedTensorType>(x.getType());
  SmallVector<Value> ins = {x};
  ins.append(kept.begin(), kept.end());
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < tx.getRank(); ++i)
    if (tx.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  return buildBroadcastGeneric(
      b, loc, RankedTensorType::get(tx.getShape(), elem), ins, dyn, {}, fn);
}

Value lowering::reduceKept(OpBuilder &b, Location loc, Value x,
                           ArrayRef<bool> reduced, bool isMax) {
  ReduceDims rd;
  rd.staticRed.assign(reduced.begin(), reduced.end());
  return reduceKeep(b, loc, x, rd, isMax ? RK::Max : RK::Sum, Value());
}

Value lowering::logSoftmax(OpBuilder &b, Location loc, Value x, int64_t axis) {
  auto tx = cast<RankedTensorType>(x.getType());
  ReduceDims rd;
  rd.staticRed.assign(tx.getRank(), false);
  rd.staticRed[axis] = true;
  Value mx = reduceKeep(b, loc, x, rd, RK::Max, Value());
  Value s = reduceKeep(b, loc, x, rd, RK::LogSumExp, mx);
  Type elem = tx.getElementType();
  return withKept(
      b, loc, x, {mx, s}, elem,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value inf = arith::ConstantOp::create(nb, l, reduceInit(elem, RK::Max));
        Value isInf =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], inf);
        Value m = arith::SelectOp::create(
            nb, l, isInf, scalarConstant(nb, l, elem, 0.0), a[1]);
        Value d = arith::SubFOp::create(nb, l, a[0], m);
        return arith::SubFOp::create(nb, l, d,
                                     math::LogOp::create(nb, l, a[2]));
      });
}

namespace {

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// Which source positions j a CumSum output i sums: j <= i (j < i when
/// exclusive; j >= i / j > i when reverse).
arith::CmpIPredicate cumSumPredicate(bool reverse, bool exclusive) {
  if (reverse)
    return exclusive ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::uge;
  return exclusive ? arith::CmpIPredicate::ult : arith::CmpIPredicate::ule;
}

/// CumSum whose axis is only known at run time: the axis is read on the
/// host (negative counts from the end, clamped into range) and the generic
/// runs over (dims..., j) with j up to the largest dim; x is read at the
/// output index with the axis coordinate replaced by j (clamped in bounds,
/// masked when out of the summed range).
LogicalResult lowerCumSumRuntimeAxis(onnxops::CumSumOp op, OpBuilder &b,
                                     SmallVectorImpl<Value> &results,
                                     RankedTensorType tx) {
  Location loc = op->getLoc();
  int64_t r = tx.getRank();
  Type elem = tx.getElementType();
  auto ta = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  if (!ta || ta.getRank() > 1 || (ta.getRank() == 1 && ta.getDimSize(0) != 1))
    return nodeError(op) << "axis must be a scalar", failure();
  if (r == 0)
    return nodeError(op) << "the input must have rank >= 1", failure();
  Value x = op->getOperand(0);
  SmallVector<Value> zeros(ta.getRank(),
                           arith::ConstantIndexOp::create(b, loc, 0));
  Value a = tensor::ExtractOp::create(b, loc, op->getOperand(1), zeros);
  a = arith::IndexCastOp::create(b, loc, b.getIndexType(), a);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value rank = arith::ConstantIndexOp::create(b, loc, r);
  checkAtRunTime(
      b, op,
      arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, a,
                                arith::ConstantIndexOp::create(b, loc, -r)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, rank)),
      "axis is {0}, out of range for rank {1}", {a, rank});
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, zero);
  a = arith::SelectOp::create(b, loc, neg,
                              arith::AddIOp::create(b, loc, a, rank), a);
  a = arith::MaxSIOp::create(b, loc, a, zero);
  a = arith::MinSIOp::create(b, loc, a,
                             arith::ConstantIndexOp::create(b, loc, r - 1));
  SmallVector<Value> dyn, sizes;
  Value maxLen = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < r; ++i) {
    Value d = dimValue(b, loc, x, i);
    sizes.push_back(d);
    if (tx.isDynamicDim(i))
      dyn.push_back(d);
    maxLen = arith::MaxSIOp::create(b, loc, maxLen, d);
  }
  Value init = filledTensor(b, loc, tx, dyn, reduceInit(elem, RK::Sum));
  auto jType = RankedTensorType::get({ShapedType::kDynamic}, elem);
  Value jRange = tensor::EmptyOp::create(b, loc, jType.getShape(), elem,
                                         ValueRange{maxLen});
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {
      AffineMap::get(r + 1, 0, {getAffineDimExpr(r, ctx)}, ctx),
      AffineMap::getMultiDimIdentityMap(r + 1, ctx).getMajorSubMap(r)};
  SmallVector<IteratorType> iters(r, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  bool exclusive = asInt(op.getExclusive()), reverse = asInt(op.getReverse());
  results.push_back(
      linalg::GenericOp::create(
          b, loc, TypeRange{tx}, ValueRange{jRange}, ValueRange{init}, maps,
          iters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value j = linalg::IndexOp::create(nb, l, r);
            Value one = arith::ConstantIndexOp::create(nb, l, 1);
            // The output's coordinate and size along the axis.
            Value i = linalg::IndexOp::create(nb, l, 0);
            Value len = sizes[0];
            SmallVector<Value> isAxis;
            for (int64_t d = 0; d < r; ++d) {
              Value dv = arith::ConstantIndexOp::create(nb, l, d);
              isAxis.push_back(arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::eq, a, dv));
              if (d == 0)
                continue;
              i = arith::SelectOp::create(nb, l, isAxis[d],
                                          linalg::IndexOp::create(nb, l, d), i);
              len = arith::SelectOp::create(nb, l, isAxis[d], sizes[d], len);
            }
            Value jc = arith::MinSIOp::create(
                nb, l, j, arith::SubIOp::create(nb, l, len, one));
            SmallVector<Value> ix;
            for (int64_t d = 0; d < r; ++d)
              ix.push_back(arith::SelectOp::create(
                  nb, l, isAxis[d], jc, linalg::IndexOp::create(nb, l, d)));
            arith::CmpIPredicate p = cumSumPredicate(reverse, exclusive);
            Value in = arith::AndIOp::create(
                nb, l, arith::CmpIOp::create(nb, l, p, j, i),
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j,
                                      len));
            Value v = tensor::ExtractOp::create(nb, l, x, ix);
            v = arith::SelectOp::create(nb, l, in, v,
                                        scalarConstant(nb, l, elem, 0.0));
            linalg::YieldOp::create(nb, l, combine(nb, l, RK::Sum, args[1], v));
          })
          .getResult(0));
  return success();
}

/// y[.., i, ..] = sum of x[.., j, ..] over j <= i (j < i when exclusive;
/// j >= i / j > i when reverse): a generic over (dims..., j).
LogicalResult lowerCumSum(onnxops::CumSumOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  int64_t r = tx->getRank();
  Type elem = tx->getElementType();
  if (!isa<FloatType, IntegerType>(elem))
    return nodeError(op) << "unsupported element type", failure();
  std::optional<SmallVector<int64_t>> av =
      onnxops::getConstantIntValues(op->getOperand(1));
  if (!av)
    return lowerCumSumRuntimeAxis(op, b, results, *tx);
  if (av->size() != 1)
    return nodeError(op) << "axis must be a scalar", failure();
  FailureOr<int64_t> axis = onnxops::normalizeAxis((*av)[0], r);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  bool exclusive = asInt(op.getExclusive()), reverse = asInt(op.getReverse());
  Value x = op->getOperand(0);
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dyn;
  SmallVector<AffineExpr> inE;
  for (int64_t i = 0; i < r; ++i) {
    if (tx->isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
    inE.push_back(getAffineDimExpr(i == *axis ? r : i, ctx));
  }
  Value init = filledTensor(b, loc, *tx, dyn, reduceInit(elem, RK::Sum));
  SmallVector<AffineMap> maps = {
      AffineMap::get(r + 1, 0, inE, ctx),
      AffineMap::getMultiDimIdentityMap(r + 1, ctx).getMajorSubMap(r)};
  SmallVector<IteratorType> iters(r, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  int64_t ax = *axis;
  results.push_back(
      linalg::GenericOp::create(
          b, loc, TypeRange{*tx}, ValueRange{x}, ValueRange{init}, maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value i = linalg::IndexOp::create(nb, l, ax);
            Value j = linalg::IndexOp::create(nb, l, r);
            arith::CmpIPredicate p = cumSumPredicate(reverse, exclusive);
            Value in = arith::CmpIOp::create(nb, l, p, j, i);
            Value v = arith::SelectOp::create(nb, l, in, a[0],
                                              scalarConstant(nb, l, elem, 0.0));
            linalg::YieldOp::create(nb, l, combine(nb, l, RK::Sum, a[1], v));
          })
          .getResult(0));
  return success();
}

/// The lowering of Reduce op `OpTy` combining with `kind`.
template <typename OpTy> LowerOpFn<OpTy> reduce(RK kind) {
  return [kind](OpTy op, OpBuilder &b, SmallVectorImpl<Value> &r) {
    return lowerReduceOp(op, b, r, kind);
  };
}

} // namespace

void lowering::populateReductionLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Reduction> t(patterns);
  t.add<onnxops::ReduceSumOp>(reduce<onnxops::ReduceSumOp>(RK::Sum));
  t.add<onnxops::ReduceMeanOp>(reduce<onnxops::ReduceMeanOp>(RK::Mean));
  t.add<onnxops::ReduceMaxOp>(reduce<onnxops::ReduceMaxOp>(RK::Max));
  t.add<onnxops::ReduceMinOp>(reduce<onnxops::ReduceMinOp>(RK::Min));
  t.add<onnxops::ReduceProdOp>(reduce<onnxops::ReduceProdOp>(RK::Prod));
  t.add<onnxops::ReduceL1Op>(reduce<onnxops::ReduceL1Op>(RK::L1));
  t.add<onnxops::ReduceL2Op>(reduce<onnxops::ReduceL2Op>(RK::L2));
  t.add<onnxops::ReduceLogSumOp>(reduce<onnxops::ReduceLogSumOp>(RK::LogSum));
  t.add<onnxops::ReduceLogSumExpOp>(
      reduce<onnxops::ReduceLogSumExpOp>(RK::LogSumExp));
  t.add<onnxops::ReduceSumSquareOp>(
      reduce<onnxops::ReduceSumSquareOp>(RK::SumSquare));
  t.add<onnxops::ArgMaxOp>(
      [](onnxops::ArgMaxOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerArg(op, b, r, /*isMax=*/true);
      });
  t.add<onnxops::ArgMinOp>(
      [](onnxops::ArgMinOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerArg(op, b, r, /*isMax=*/false);
      });
  t.add<onnxops::CumSumOp>(lowerCumSum);
}
