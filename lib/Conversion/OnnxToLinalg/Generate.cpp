//===- Generate.cpp - Lowering of generator ops ---------------------------===//
//
// ConstantOfShape, Range, EyeLike, OneHot and Trilu (Expand and Tile are
// lowered with the data-movement ops, DataMovement.cpp). Sizes
// given by tensors are read on the host (tensor.extract); scalars given by
// tensors (Range's start/delta, Trilu's k, OneHot's values) are read inside
// the kernel. Unsigned tensors are handled as signless (see Lowering.h).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// Element `i` of a 0-d or 1-D integer tensor as an index (a constant when
/// the tensor is one), read on the host.
Value readIndex(OpBuilder &b, Location loc, Value t, int64_t i) {
  if (auto c = onnxops::getConstantIntValues(t))
    if (i < static_cast<int64_t>(c->size()))
      return idx(b, loc, (*c)[i]);
  auto rt = cast<RankedTensorType>(t.getType());
  SmallVector<Value> ix;
  if (rt.getRank() == 1)
    ix.push_back(idx(b, loc, i));
  Value e = tensor::ExtractOp::create(b, loc, t, ix);
  if (isa<FloatType>(e.getType()))
    e = arith::FPToSIOp::create(b, loc, b.getI64Type(), e);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
}

/// Clamps a size read from user data to [0, ...).
Value nonNegative(OpBuilder &b, Location loc, Value v) {
  return arith::MaxSIOp::create(b, loc, v, idx(b, loc, 0));
}

/// A linalg.generic over `type` (signless) reading `inputs` through `maps`
/// (the output's identity map is added) with the body `body`.
Value generic(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange dynSizes, ValueRange inputs, ArrayRef<AffineMap> maps,
              function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> all(maps);
  all.push_back(
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext()));
  Value init = emptyTensor(b, loc, type, dynSizes);
  SmallVector<IteratorType> iters(type.getRank(), IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, all, iters,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
             })
      .getResult(0);
}

/// The dynamic entries of `sizes` for `type`.
SmallVector<Value> dynamicOf(RankedTensorType type, ArrayRef<Value> sizes) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(sizes[i]);
  return dyn;
}

LogicalResult lowerConstantOfShape(onnxops::ConstantOfShapeOp op, OpBuilder &b,
                                   SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  Location loc = op->getLoc();
  RankedTensorType st = signlessTensor(*ty);
  Type elem = st.getElementType();
  TypedAttr value = scalarAttr(elem, 0.0);
  if (ElementsAttr v = op.getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(v);
    if (!dense || dense.getNumElements() != 1)
      return nodeError(op) << "value must be a dense one-element tensor",
             failure();
    Attribute e = dense.getValues<Attribute>()[0];
    if (auto i = dyn_cast<IntegerAttr>(e))
      value = IntegerAttr::get(elem, i.getValue());
    else if (auto f = dyn_cast<FloatAttr>(e))
      value = FloatAttr::get(elem, f.getValue());
    else
      return nodeError(op) << "unsupported value " << e, failure();
  }
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < ty->getRank(); ++i) {
    if (!ty->isDynamicDim(i)) {
      sizes.push_back(Value());
      continue;
    }
    Value dim = readIndex(b, loc, op->getOperand(0), i);
    checkAtRunTime(b, op,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, dim,
                                         idx(b, loc, 0)),
                   "shape element {0} is {1}; dims must not be negative",
                   {idx(b, loc, i), dim});
    sizes.push_back(nonNegative(b, loc, dim));
  }
  Value r = filledTensor(b, loc, st, dynamicOf(*ty, sizes), value);
  results.push_back(fromSignless(b, loc, r, *ty));
  return success();
}

/// Scalar of a 0-d (or one-element 1-D) tensor, read where `b` is.
Value readScalar(OpBuilder &b, Location loc, Value t) {
  auto rt = cast<RankedTensorType>(t.getType());
  SmallVector<Value> ix(rt.getRank(), idx(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, t, ix);
}

LogicalResult lowerRange(onnxops::RangeOp op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  for (Value v : op->getOperands())
    if (!isa<RankedTensorType>(v.getType()))
      return nodeError(op) << "an input has unknown rank", failure();
  Location loc = op->getLoc();
  RankedTensorType st = signlessTensor(*ty);
  Type elem = st.getElementType();
  bool isUnsigned = ty->getElementType().isUnsignedInteger();
  SmallVector<Value> in;
  for (Value v : op->getOperands())
    in.push_back(toSignless(b, loc, v));
  SmallVector<Value> dyn;
  if (ty->isDynamicDim(0)) {
    // n = max(ceil((limit - start) / delta), 0), computed in f64.
    auto toF64 = [&](Value v) -> Value {
      if (isa<FloatType>(elem))
        return elem.isF64() ? v
                            : arith::ExtFOp::create(b, loc, b.getF64Type(), v);
      return isUnsigned ? arith::UIToFPOp::create(b, loc, b.getF64Type(), v)
                              .getResult()
                        : arith::SIToFPOp::create(b, loc, b.getF64Type(), v)
                              .getResult();
    };
    Value s = toF64(readScalar(b, loc, in[0]));
    Value l = toF64(readScalar(b, loc, in[1]));
    Value d = toF64(readScalar(b, loc, in[2]));
    checkAtRunTime(
        b, op,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, d,
                              scalarConstant(b, loc, b.getF64Type(), 0)),
        "delta is 0");
    Value q = math::CeilOp::create(
        b, loc,
        arith::DivFOp::create(b, loc, arith::SubFOp::create(b, loc, l, s), d));
    // NaN (delta 0, infinities) and negative counts give an empty range;
    // absurd counts are capped (the allocation then fails cleanly).
    Value pos =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, q,
                              scalarConstant(b, loc, b.getF64Type(), 0));
    q = arith::SelectOp::create(b, loc, pos, q,
                                scalarConstant(b, loc, b.getF64Type(), 0));
    q = arith::MinimumFOp::create(b, loc, q,
                                  scalarConstant(b, loc, b.getF64Type(), 1e15));
    dyn.push_back(arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        arith::FPToSIOp::create(b, loc, b.getI64Type(), q)));
  }
  Value r = generic(
      b, loc, st, dyn, {}, {},
      [&](OpBuilder &nb, Location nloc, ValueRange) -> Value {
        Value s = readScalar(nb, nloc, in[0]);
        Value d = readScalar(nb, nloc, in[2]);
        Value i = linalg::IndexOp::create(nb, nloc, 0);
        if (isa<FloatType>(elem)) {
          Value fi = arith::UIToFPOp::create(
              nb, nloc, elem,
              arith::IndexCastUIOp::create(nb, nloc, nb.getI64Type(), i));
          return arith::AddFOp::create(nb, nloc, s,
                                       arith::MulFOp::create(nb, nloc, fi, d));
        }
        Value ii = arith::IndexCastUIOp::create(nb, nloc, elem, i);
        return arith::AddIOp::create(nb, nloc, s,
                                     arith::MulIOp::create(nb, nloc, ii, d));
      });
  results.push_back(fromSignless(b, loc, r, *ty));
  return success();
}

/// 1 or 0 of `elem` (signless).
Value oneOrZero(OpBuilder &b, Location loc, Value cond, Type elem) {
  if (elem.isInteger(1))
    return cond;
  return arith::SelectOp::create(b, loc, cond, scalarConstant(b, loc, elem, 1),
                                 scalarConstant(b, loc, elem, 0));
}

LogicalResult lowerEyeLike(onnxops::EyeLikeOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  if (ty->getRank() != 2)
    return nodeError(op) << "input must be 2-D", failure();
  Location loc = op->getLoc();
  RankedTensorType st = signlessTensor(*ty);
  Value x = op->getOperand(0);
  SmallVector<Value> sizes{dimValue(b, loc, x, 0), dimValue(b, loc, x, 1)};
  int64_t k = asInt(op.getK());
  Value r =
      generic(b, loc, st, dynamicOf(*ty, sizes), {}, {},
              [&](OpBuilder &nb, Location nloc, ValueRange) {
                Value i = linalg::IndexOp::create(nb, nloc, 0);
                Value j = linalg::IndexOp::create(nb, nloc, 1);
                Value on = arith::CmpIOp::create(
                    nb, nloc, arith::CmpIPredicate::eq,
                    arith::SubIOp::create(nb, nloc, j, i), idx(nb, nloc, k));
                return oneOrZero(nb, nloc, on, st.getElementType());
              });
  results.push_back(fromSignless(b, loc, r, *ty));
  return success();
}

LogicalResult lowerTrilu(onnxops::TriluOp op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  int64_t rank = ty->getRank();
  if (rank < 2)
    return nodeError(op) << "input must have rank 2 or more", failure();
  Location loc = op->getLoc();
  RankedTensorType st = signlessTensor(*ty);
  Value x = toSignless(b, loc, op->getOperand(0));
  Value kIn = op->getOperand(1);
  bool upper = asInt(op.getUpper());
  Value r = buildElementwise(
      b, loc, st, x, [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
        Value k = onnxops::isNoValue(kIn)
                      ? idx(nb, nloc, 0)
                      : arith::IndexCastOp::create(nb, nloc, nb.getIndexType(),
                                                   readScalar(nb, nloc, kIn))
                            .getResult();
        Value i = linalg::IndexOp::create(nb, nloc, rank - 2);
        Value j = linalg::IndexOp::create(nb, nloc, rank - 1);
        Value diff = arith::SubIOp::create(nb, nloc, j, i);
        Value keep = arith::CmpIOp::create(nb, nloc,
                                           upper ? arith::CmpIPredicate::sge
                                                 : arith::CmpIPredicate::sle,
                                           diff, k);
        return arith::SelectOp::create(
            nb, nloc, keep, a[0], scalarConstant(nb, nloc, a[0].getType(), 0));
      });
  results.push_back(fromSignless(b, loc, r, *ty));
  return success();
}

LogicalResult lowerOneHot(onnxops::OneHotOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> ty = rankedResult(op);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tv = rankedOperand(op, 2);
  if (failed(ty) || failed(ti) || failed(tv))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = ty->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), rank);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value valuesIn = op->getOperand(2);
  if (tv->getRank() == 1 && tv->isDynamicDim(0))
    valuesIn = withStaticLength(b, op, valuesIn, 2, "values");
  auto tvs = cast<RankedTensorType>(valuesIn.getType());
  if (!tvs.hasStaticShape() || tvs.getNumElements() != 2)
    return nodeError(op) << "values must have two elements", failure();
  if (!isa<RankedTensorType>(op->getOperand(1).getType()))
    return nodeError(op) << "depth has unknown rank", failure();
  Value indices = toSignless(b, loc, op->getOperand(0));
  Value values = toSignless(b, loc, valuesIn);
  bool idxUnsigned = ti->getElementType().isUnsignedInteger();
  // depth on the host (it sizes the result) as i64.
  Value depth = readIndex(b, loc, op->getOperand(1), 0);
  checkAtRunTime(b, op,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, depth,
                                       idx(b, loc, 0)),
                 "depth is {0}; it must be positive", {depth});
  depth = nonNegative(b, loc, depth);
  SmallVector<Value> sizes;
  for (int64_t i = 0, j = 0; i < rank; ++i) {
    if (i == *axis) {
      sizes.push_back(depth);
      continue;
    }
    sizes.push_back(dimValue(b, loc, indices, j++));
  }
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (i != *axis)
      exprs.push_back(b.getAffineDimExpr(i));
  AffineMap map = AffineMap::get(rank, 0, exprs, b.getContext());
  RankedTensorType st = signlessTensor(*ty);
  Value depthI64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), depth);
  Value r = generic(
      b, loc, st, dynamicOf(*ty, sizes), indices, map,
      [&](OpBuilder &nb, Location nloc, ValueRange a) -> Value {
        Value v = a[0];
        Type t = v.getType();
        if (isa<FloatType>(t))
          v = arith::FPToSIOp::create(nb, nloc, nb.getI64Type(), v);
        else if (t.getIntOrFloatBitWidth() < 64)
          v = idxUnsigned ? arith::ExtUIOp::create(nb, nloc, nb.getI64Type(), v)
                                .getResult()
                          : arith::ExtSIOp::create(nb, nloc, nb.getI64Type(), v)
                                .getResult();
        // Negative indices count from the end.
        Value neg =
            arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::slt, v,
                                  scalarConstant(nb, nloc, v.getType(), 0));
        if (!idxUnsigned)
          v = arith::SelectOp::create(
              nb, nloc, neg, arith::AddIOp::create(nb, nloc, v, depthI64), v);
        Value pos = arith::IndexCastOp::create(
            nb, nloc, nb.getI64Type(),
            linalg::IndexOp::create(nb, nloc, *axis));
        Value hot =
            arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq, v, pos);
        auto vt = cast<RankedTensorType>(values.getType());
        auto at = [&](int64_t k) -> Value {
          SmallVector<Value> ix;
          if (vt.getRank() == 1)
            ix.push_back(idx(nb, nloc, k));
          return tensor::ExtractOp::create(nb, nloc, values, ix);
        };
        return arith::SelectOp::create(nb, nloc, hot, at(1), at(0));
      });
  results.push_back(fromSignless(b, loc, r, *ty));
  return success();
}

} // namespace

void lowering::populateGenerateLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Generate> t(patterns);
  t.add<onnxops::ConstantOfShapeOp>(lowerConstantOfShape);
  t.add<onnxops::RangeOp>(lowerRange);
  t.add<onnxops::EyeLikeOp>(lowerEyeLike);
  t.add<onnxops::TriluOp>(lowerTrilu);
  t.add<onnxops::OneHotOp>(lowerOneHot);
}
