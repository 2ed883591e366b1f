//===- Sort.cpp - TopK ----------------------------------------------------===//
//
// The Sort family (OnnxFamilies.def): TopK, the ONNX op that orders elements
// by value (a Sort or ArgSort would go here).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// Rank of each element along `axis` (how many elements precede it in the
/// sorted order: larger/smaller, or equal with a smaller index), then output
/// k takes the element of rank k. O(n²) along the axis, no sorting network.
LogicalResult lowerTopK(onnxops::TopKOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tv = rankedResult(op, 0);
  if (failed(tx) || failed(tv))
    return failure();
  int64_t r = tx->getRank();
  Type elem = tx->getElementType();
  if (!isa<FloatType, IntegerType>(elem))
    return nodeError(op) << "unsupported element type", failure();
  FailureOr<int64_t> axisOr = onnxops::normalizeAxis(asInt(op.getAxis()), r);
  if (failed(axisOr) || tv->getRank() != r)
    return nodeError(op) << "axis out of range or output rank mismatch",
           failure();
  int64_t axis = *axisOr;
  bool largest = asInt(op.getLargest());
  Value x = op->getOperand(0);
  MLIRContext *ctx = b.getContext();
  // K: static from the output type, else read on the host, clamped to
  // [0, n].
  Value n = dimValue(b, loc, x, axis);
  Value k;
  Value kIn = op->getOperand(1);
  auto kt = dyn_cast<RankedTensorType>(kIn.getType());
  // K has one element: statically, or (a symbolic dim) checked at run time.
  if (!kt || kt.getRank() > 1 ||
      (kt.hasStaticShape() && kt.getNumElements() != 1))
    return nodeError(op) << "K must be a 1-element tensor", failure();
  if (!kt.hasStaticShape())
    checkAtRunTime(b, op,
                   cmpI(b, loc, arith::CmpIPredicate::eq,
                        dimValue(b, loc, kIn, 0), idx(b, loc, 1)),
                   "K has {0} elements; it must have 1",
                   {dimValue(b, loc, kIn, 0)});
  {
    SmallVector<Value> zeros(kt.getRank(),
                             arith::ConstantIndexOp::create(b, loc, 0));
    Value kv = tensor::ExtractOp::create(b, loc, kIn, zeros);
    k = arith::IndexCastOp::create(b, loc, b.getIndexType(), kv);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    checkAtRunTime(
        b, op,
        arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, k, zero),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, k, n)),
        "K is {0}; it must lie in [0, {1}], the size of the axis", {k, n});
    k = arith::MaxSIOp::create(b, loc, k,
                               arith::ConstantIndexOp::create(b, loc, 0));
    k = arith::MinSIOp::create(b, loc, k, n);
  }
  // Ranks: generic over (dims..., j), reduction over j.
  auto rankType = RankedTensorType::get(tx->getShape(), b.getI64Type());
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < r; ++i)
    if (tx->isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  Value rInit = filledTensor(b, loc, rankType, dyn, b.getI64IntegerAttr(0));
  SmallVector<AffineExpr> jE;
  for (int64_t i = 0; i < r; ++i)
    jE.push_back(getAffineDimExpr(i == axis ? r : i, ctx));
  AffineMap idMap =
      AffineMap::getMultiDimIdentityMap(r + 1, ctx).getMajorSubMap(r);
  AffineMap jMap = AffineMap::get(r + 1, 0, jE, ctx);
  SmallVector<IteratorType> iters(r, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  bool f = isa<FloatType>(elem);
  Value ranks =
      linalg::GenericOp::create(
          b, loc, TypeRange{rankType}, ValueRange{x, x}, ValueRange{rInit},
          {idMap, jMap, idMap}, iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value me = a[0], other = a[1];
            Value i = linalg::IndexOp::create(nb, l, axis);
            Value j = linalg::IndexOp::create(nb, l, r);
            Value before, equal;
            if (f) {
              before =
                  arith::CmpFOp::create(nb, l,
                                        largest ? arith::CmpFPredicate::OGT
                                                : arith::CmpFPredicate::OLT,
                                        other, me);
              equal = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                            other, me);
            } else {
              before =
                  arith::CmpIOp::create(nb, l,
                                        largest ? arith::CmpIPredicate::sgt
                                                : arith::CmpIPredicate::slt,
                                        other, me);
              equal = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                            other, me);
            }
            Value jLess =
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j, i);
            Value c = arith::OrIOp::create(
                nb, l, before, arith::AndIOp::create(nb, l, equal, jLess));
            Value inc = arith::ExtUIOp::create(nb, l, nb.getI64Type(), c);
            linalg::YieldOp::create(
                nb, l, arith::AddIOp::create(nb, l, a[2], inc).getResult());
          })
          .getResult(0);
  // Outputs: generic over (out dims..., j) with out dim `axis` of size K.
  SmallVector<int64_t> oshape(tx->getShape());
  oshape[axis] = tv->getDimSize(axis);
  SmallVector<Value> odyn;
  for (int64_t i = 0; i < r; ++i)
    if (ShapedType::isDynamic(oshape[i]))
      odyn.push_back(
          i == axis ? k : tensor::DimOp::create(b, loc, x, i).getResult());
  auto vType = RankedTensorType::get(oshape, elem);
  auto iType = RankedTensorType::get(oshape, b.getI64Type());
  if (!ShapedType::isDynamic(oshape[axis])) {
    // Static K from the declared output: it must match the K input.
    // (Guarded: positions past the real K simply stay at the init values.)
  }
  Value vInit = filledTensor(b, loc, vType, odyn, scalarAttr(elem, 0.0));
  Value iInit = filledTensor(b, loc, iType, odyn, b.getI64IntegerAttr(0));
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{vType, iType}, ValueRange{x, ranks},
      ValueRange{vInit, iInit}, {jMap, jMap, idMap, idMap}, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value kk = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, axis));
        Value j = arith::IndexCastOp::create(nb, l, nb.getI64Type(),
                                             linalg::IndexOp::create(nb, l, r));
        Value hit =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[1], kk);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, hit, a[0], a[2]),
                       arith::SelectOp::create(nb, l, hit, j, a[3])});
      });
  results.push_back(g.getResult(0));
  results.push_back(g.getResult(1));
  return success();
}

} // namespace

void lowering::populateSortLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Sort> t(patterns);
  t.add<onnxops::TopKOp>(lowerTopK);
}
