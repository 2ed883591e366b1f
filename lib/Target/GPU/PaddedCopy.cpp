//===- PaddedCopy.cpp - Reads of a zero-padded copy -----------------------===//
//
// See include/kiln/Target/GPU/PaddedCopy.h.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/PaddedCopy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

bool identityStatic(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.hasStaticShape() && t.getLayout().isIdentity();
}

/// A constant 0 (float, either sign, or integer: an 8-bit activation whose
/// zero point is 0, as after a ReLU).
bool isZeroConstant(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  if (!c)
    return false;
  if (auto f = dyn_cast<FloatAttr>(c.getValue()))
    return f.getValue().isZero();
  if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
    return i.getValue().isZero();
  return false;
}

} // namespace

Value mlir::kiln::constantFill(Operation *op, Value buffer) {
  Value v;
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    if (fill.getDpsInitOperand(0)->get() != buffer)
      return Value();
    v = fill.getInputs()[0];
  } else if (auto map = dyn_cast<linalg::MapOp>(op)) {
    if (map.getDpsInitOperand(0)->get() != buffer || map.getNumDpsInputs() != 0)
      return Value();
    v = cast<linalg::YieldOp>(map.getMapper().front().getTerminator())
            .getOperand(0);
  }
  return v && v.getDefiningOp<arith::ConstantOp>() ? v : Value();
}

Value mlir::kiln::sourceIndices(OpBuilder &b, Location loc,
                                const PaddedCopy &pc, Value padded,
                                MutableArrayRef<Value> idx) {
  auto srcType = cast<MemRefType>(pc.src.getType());
  auto paddedType = cast<MemRefType>(padded.getType());
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value inside;
  for (auto [d, v] : llvm::enumerate(idx)) {
    int64_t off = pc.offsets[d];
    if (off == 0 && srcType.getDimSize(d) == paddedType.getDimSize(d))
      continue;
    Value shifted =
        off ? arith::SubIOp::create(b, loc, v, index(off)).getResult() : v;
    // Below the offset wraps to a large unsigned value.
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, shifted,
                                     index(srcType.getDimSize(d)));
    v = arith::SelectOp::create(b, loc, in, shifted, index(0));
    inside =
        inside ? arith::AndIOp::create(b, loc, inside, in).getResult() : in;
  }
  return inside;
}

std::optional<PaddedCopy>
mlir::kiln::matchPaddedCopy(Value padded, Operation *reader, bool anyFill) {
  if (!identityStatic(padded))
    return std::nullopt;
  PaddedCopy pc;
  memref::SubViewOp view;
  for (Operation *u : padded.getUsers()) {
    if (u == reader)
      continue;
    if (Value v = constantFill(u, padded);
        !pc.fill && v && (anyFill || isZeroConstant(v))) {
      pc.fill = u;
      pc.fillValue = v;
      continue;
    }
    auto sv = dyn_cast<memref::SubViewOp>(u);
    if (view || !sv || !sv->hasOneUse())
      return std::nullopt;
    view = sv;
    Operation *c = *sv->user_begin();
    if (auto mc = dyn_cast<memref::CopyOp>(c))
      pc.src = mc.getSource();
    else if (auto lc = dyn_cast<linalg::CopyOp>(c);
             lc && lc.getDpsInitOperand(0)->get() == sv.getResult())
      pc.src = lc.getDpsInputOperand(0)->get();
    else
      return std::nullopt;
    pc.copy = c;
  }
  if (!pc.fill || !pc.copy || !identityStatic(pc.src) ||
      pc.fill->getBlock() != reader->getBlock() ||
      pc.copy->getBlock() != reader->getBlock() ||
      !pc.fill->isBeforeInBlock(pc.copy) || !pc.copy->isBeforeInBlock(reader) ||
      !view.hasUnitStride())
    return std::nullopt;
  ArrayRef<int64_t> offsets = view.getStaticOffsets();
  auto srcType = cast<MemRefType>(pc.src.getType());
  if (ShapedType::isDynamicShape(offsets) ||
      srcType.getShape() != view.getType().getShape() ||
      srcType.getElementType() !=
          cast<MemRefType>(padded.getType()).getElementType())
    return std::nullopt;
  pc.offsets.assign(offsets.begin(), offsets.end());
  pc.view = view;
  return pc;
}
