//===- Softmax.cpp - Softmax, LogSoftmax, Hardmax -------------------------===//
//
// The Softmax family (OnnxFamilies.def): normalizations along one axis
// (opset 13 semantics; older opsets are normalized by the importer). Softmax
// is max, exp(x - max), sum, divide; LogSoftmax and Hardmax reuse the
// reductions of Reduction.cpp (logSoftmax, argReduce).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

/// Softmax over one axis (opset 13 semantics; older opsets are normalized by
/// the importer): max, exp(x - max), sum, divide.
LogicalResult lowerSoftmax(onnxops::SoftmaxOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  if (!isa<FloatType>(tx->getElementType()))
    return nodeError(op) << "float types only", failure();
  FailureOr<int64_t> axis =
      onnxops::normalizeAxis(asInt(op.getAxis()), tx->getRank());
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0);
  Value mx = reduceKeepDims(b, loc, x, {*axis}, ReduceKind::Max);
  Value e =
      buildElementwise(b, loc, *tx, {x, mx},
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value s = arith::SubFOp::create(nb, l, a[0], a[1]);
                         return math::ExpOp::create(nb, l, s);
                       });
  Value sum = reduceKeepDims(b, loc, e, {*axis}, ReduceKind::Sum);
  results.push_back(
      buildElementwise(b, loc, *tx, {e, sum},
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::DivFOp::create(nb, l, a[0], a[1]);
                       }));
  return success();
}

LogicalResult lowerLogSoftmax(onnxops::LogSoftmaxOp op, OpBuilder &b,
                              SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  Type elem = tx->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "float types only", failure();
  FailureOr<int64_t> axis =
      onnxops::normalizeAxis(asInt(op.getAxis()), tx->getRank());
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  results.push_back(logSoftmax(b, loc, op->getOperand(0), *axis));
  return success();
}

LogicalResult lowerHardmax(onnxops::HardmaxOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  Type elem = tx->getElementType();
  FailureOr<int64_t> axis =
      onnxops::normalizeAxis(asInt(op.getAxis()), tx->getRank());
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0);
  Value idx = argReduce(b, loc, x, *axis, /*isMax=*/true, /*last=*/false);
  int64_t ax = *axis;
  results.push_back(withKept(
      b, loc, x, {idx}, elem,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value i = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, ax));
        Value eq =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, i, a[1]);
        return arith::SelectOp::create(nb, l, eq,
                                       scalarConstant(nb, l, elem, 1.0),
                                       scalarConstant(nb, l, elem, 0.0));
      }));
  return success();
}

} // namespace

void lowering::populateSoftmaxLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Softmax> t(patterns);
  t.add<onnxops::SoftmaxOp>(lowerSoftmax);
  t.add<onnxops::LogSoftmaxOp>(lowerLogSoftmax);
  t.add<onnxops::HardmaxOp>(lowerHardmax);
}
