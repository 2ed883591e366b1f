//===- AttentionOp.cpp - kiln.attention -----------------------------------===//
//
// The fused attention op: its verifier, its result sizes (those of its
// init), its memory effects on buffers and its bufferization (destination
// style: the init's buffer is written, never read).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

int64_t AttentionOp::canonicalDim(unsigned operand, int64_t d) {
  // [B, S, H, D] holds H at 2 and S at 1.
  if (!getSeqMajor()[operand] || d == 0 || d == 3)
    return d;
  return d == 1 ? 2 : 1;
}

bool AttentionOp::isQuantized(unsigned operand) {
  Value v = operand == 0 ? getQuery() : operand == 1 ? getKey() : getValue();
  return isa<IntegerType>(cast<ShapedType>(v.getType()).getElementType());
}

LogicalResult AttentionOp::verify() {
  Value operands[] = {getQuery(), getKey(), getValue(), getInit()};
  const char *names[] = {"query", "key", "value", "init"};
  if (getSeqMajor().size() != 4)
    return emitOpError("seq_major needs 4 entries (query, key, value, init)");
  bool tensors = isa<RankedTensorType>(getInit().getType());
  SmallVector<SmallVector<int64_t>> dims;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || !t.hasRank() || t.getRank() != 4)
      return emitOpError(names[i]) << " must be a 4-D tensor or memref";
    if (isa<RankedTensorType>(t) != tensors)
      return emitOpError(names[i])
             << " must be a tensor exactly when init is one";
    SmallVector<int64_t> c;
    for (int64_t d = 0; d < 4; ++d)
      c.push_back(t.getDimSize(canonicalDim(i, d)));
    dims.push_back(c);
  }
  auto same = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  auto elem = [](Value v) { return cast<ShapedType>(v.getType()); };
  // Float operands share one type; 8-bit integer ones come with their
  // dequantization parameters.
  Type e;
  bool anyInt = false;
  for (unsigned i = 0; i < 3; ++i) {
    Type t = elem(operands[i]).getElementType();
    if (auto it = dyn_cast<IntegerType>(t)) {
      if (it.getWidth() != 8 || !it.isSignless())
        return emitOpError(names[i])
               << " must be of a float type or signless i8, not " << t;
      anyInt = true;
      continue;
    }
    if (!isa<FloatType>(t) || (e && t != e))
      return emitOpError("query, key and value must have one float type "
                         "(or be 8-bit integers)");
    e = t;
  }
  auto scales = getDequantScales();
  auto zeroPoints = getDequantZeroPoints();
  auto uns = getDequantUnsigned();
  if (anyInt != scales.has_value() || anyInt != zeroPoints.has_value() ||
      anyInt != uns.has_value())
    return emitOpError("dequant scales, zero points and unsigned flags are "
                       "given exactly when an operand is an integer");
  if (anyInt) {
    if (scales->size() != 3 || zeroPoints->size() != 3 || uns->size() != 3)
      return emitOpError("dequant arrays need 3 entries (query, key, value)");
    for (unsigned i = 0; i < 3; ++i) {
      double s = (*scales)[i];
      int64_t z = (*zeroPoints)[i];
      bool u = (*uns)[i];
      if (!isQuantized(i)) {
        if (s != 1.0 || z != 0 || u)
          return emitOpError("the float ")
                 << names[i] << " has dequant entries other than 1, 0, false";
        continue;
      }
      if (!(s > 0) || !std::isfinite(s))
        return emitOpError(names[i]) << " has a dequant scale of " << s;
      if (u ? (z < 0 || z > 255) : (z < -128 || z > 127))
        return emitOpError(names[i])
               << "'s zero point " << z << " is out of its type's range";
    }
  }
  if (!isa<FloatType>(elem(getInit()).getElementType()))
    return emitOpError("init must be of a float type");
  // Batch; Q and output heads, rows; K and V heads, rows; head sizes.
  const auto &q = dims[0], &k = dims[1], &v = dims[2], &o = dims[3];
  if (!same(q[0], k[0]) || !same(q[0], v[0]) || !same(q[0], o[0]) ||
      !same(q[1], o[1]) || !same(q[2], o[2]) || !same(k[1], v[1]) ||
      !same(k[2], v[2]) || !same(q[3], k[3]) || !same(v[3], o[3]))
    return emitOpError("operand shapes disagree (query [B, Hq, S, D], key "
                       "[B, Hkv, L, D], value [B, Hkv, L, Dv], init [B, Hq, "
                       "S, Dv] in [B, H, S, D] order)");
  if (!ShapedType::isDynamic(q[1]) && !ShapedType::isDynamic(k[1]) &&
      (k[1] <= 0 || q[1] % k[1] != 0))
    return emitOpError("the query heads (")
           << q[1] << ") must be a multiple of the key/value heads (" << k[1]
           << ")";
  if (Value mask = getMask()) {
    auto mt = dyn_cast<ShapedType>(mask.getType());
    if (!mt || !mt.hasRank() || mt.getRank() != 4 ||
        !isa<FloatType>(mt.getElementType()))
      return emitOpError("mask must be a 4-D float tensor or memref");
    int64_t full[] = {q[0], q[1], q[2]};
    for (int64_t d = 0; d < 3; ++d)
      if (mt.getDimSize(d) != 1 && !same(mt.getDimSize(d), full[d]))
        return emitOpError("mask dim ") << d << " must be 1 or " << full[d]
                                        << ", not " << mt.getDimSize(d);
  }
  unsigned results = getNumResults();
  if (tensors ? results != 1 || getResult()[0].getType() != getInit().getType()
              : results != 0)
    return emitOpError("has one result of the init's type on tensors, none "
                       "on memrefs");
  return success();
}

LogicalResult AttentionOp::reifyResultShapes(
    OpBuilder &b, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  auto t = cast<RankedTensorType>(getInit().getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < t.getRank(); ++d)
    sizes.push_back(
        t.isDynamicDim(d)
            ? OpFoldResult(
                  tensor::DimOp::create(b, getLoc(), getInit(), d).getResult())
            : OpFoldResult(b.getIndexAttr(t.getDimSize(d))));
  reifiedReturnShapes.push_back(sizes);
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    if (&operand == &getInitMutable())
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

bool AttentionOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &state) {
  // The init is overwritten whole, never read.
  return &operand != &getInitMutable();
}

bool AttentionOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &state) {
  return &operand == &getInitMutable();
}

bufferization::AliasingValueList
AttentionOp::getAliasingValues(OpOperand &operand,
                               const bufferization::AnalysisState &state) {
  if (&operand != &getInitMutable() || getNumResults() == 0)
    return {};
  return {{getResult()[0], bufferization::BufferRelation::Equivalent}};
}

LogicalResult
AttentionOp::bufferize(RewriterBase &rewriter,
                       const bufferization::BufferizationOptions &options,
                       bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : getOperation()->getOperands()) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  Value mask = getMask() ? buffers[3] : Value();
  Value init = buffers.back();
  AttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers[0], buffers[1],
                      buffers[2], mask, init, getScaleAttr(), getCausalAttr(),
                      getSeqMajorAttr(), getDequantScalesAttr(),
                      getDequantZeroPointsAttr(), getDequantUnsignedAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, getOperation(), init);
  return success();
}
