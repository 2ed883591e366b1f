//===- AttentionOperands.cpp - What the fused attention's operands decide --===//
//
// AttentionOperands.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionOperands.h"
#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

FailureOr<AttentionOperands> AttentionOperands::of(AttentionOp op) {
  AttentionOperands r;
  r.elem = Float16Type::get(op.getContext());
  for (unsigned i = 0; i < 3; ++i)
    if (!op.isQuantized(i))
      r.elem = cast<MemRefType>(op->getOperand(i).getType()).getElementType();
  r.qInt = op.isQuantized(0);
  r.kvInt = op.isQuantized(1);
  if (r.kvInt != op.isQuantized(2))
    return op.emitError("fused attention: key and value must both be 8-bit "
                        "or both float");
  return r;
}

TileStaging TileStaging::plan(const AttentionOperands &ops, MemRefType k,
                              MemRefType v, int64_t keys, int64_t threads,
                              bool hasAsyncCopy, int64_t maxSharedBytes) {
  TileStaging t;
  int64_t headQK = k.getDimSize(3), headV = v.getDimSize(3);
  int64_t elemBytes = ops.elem.getIntOrFloatBitWidth() / 8;
  t.srcElem = ops.kvInt ? IntegerType::get(k.getContext(), 8) : ops.elem;
  t.srcBytes = t.srcElem.getIntOrFloatBitWidth() / 8;
  t.chunk = 16 / t.srcBytes;
  if (ops.kvInt && !ShapedType::isDynamic(headQK) &&
      (keys * headQK / t.chunk) % threads != 0)
    t.chunk /= 2;
  t.pad = 16 / elemBytes;
  t.wide = alignedRuns(k, t.chunk) && alignedRuns(v, t.chunk);
  if (ShapedType::isDynamic(headQK) || ShapedType::isDynamic(headV))
    return t; // (the caller rejects these)
  int64_t elemTiles = keys * (headQK + headV + 2 * t.pad) * elemBytes;
  if (ops.kvInt)
    t.widenBytes = elemTiles + 2 * keys * (headQK + headV + 2 * t.chunk);
  t.widenShared = ops.kvInt && t.wide && t.chunk == 16 && hasAsyncCopy &&
                  t.widenBytes <= maxSharedBytes;
  t.async = t.widenShared || (t.wide && !ops.kvInt && hasAsyncCopy &&
                              2 * elemTiles <= maxSharedBytes);
  t.stages = t.async && !ops.kvInt ? 2 : 1;
  return t;
}

Value gpumap::widenQuantized(OpBuilder &b, Location loc, AttentionOp op,
                             unsigned operand, Value ints, Type elem) {
  auto vt = cast<VectorType>(ints.getType());
  auto i16 = VectorType::get(vt.getShape(), b.getI16Type());
  Value w = (*op.getDequantUnsigned())[operand]
                ? arith::ExtUIOp::create(b, loc, i16, ints).getResult()
                : arith::ExtSIOp::create(b, loc, i16, ints).getResult();
  if (int64_t zp = (*op.getDequantZeroPoints())[operand])
    w = arith::SubIOp::create(
        b, loc, w,
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(i16, ArrayRef<Attribute>{b.getIntegerAttr(
                                            b.getI16Type(), zp)})));
  return arith::SIToFPOp::create(b, loc, vt.clone(elem), w);
}

SmallVector<int32_t> gpumap::rowLaneOffsets(const MMALayout &l, int64_t warp) {
  SmallVector<int32_t> offs;
  if (l.groupSize <= 0 || !llvm::isPowerOf2_64(l.groupSize) ||
      !llvm::isPowerOf2_64(warp))
    return offs;
  if (l.cRow.thread == 0) // the row is the group's: combine its threads
    for (int64_t o = 1; o < l.groupSize; o *= 2)
      offs.push_back(o);
  else if (l.cRow.group == 0) // the row is the thread's: combine groups
    for (int64_t o = l.groupSize; o < warp; o *= 2)
      offs.push_back(o);
  return offs;
}

std::optional<SmallVector<std::pair<int64_t, int64_t>>>
gpumap::scoreOperandMap(const MMALayout &l) {
  if (!(l.aRow == l.cRow) || !(l.aK == l.cCol))
    return std::nullopt;
  SmallVector<std::pair<int64_t, int64_t>> map;
  for (const FragmentOffset &r : l.aRegs)
    for (int64_t p = 0; p < l.kPack; ++p) {
      int64_t key = r.inner + p;
      int64_t tile = key / l.n, within = key % l.n;
      auto it = llvm::find_if(l.cElems, [&](const FragmentOffset &c) {
        return c.outer == r.outer && c.inner == within;
      });
      if (it == l.cElems.end())
        return std::nullopt;
      map.push_back({tile, it - l.cElems.begin()});
    }
  return map;
}
bool gpumap::runAligned(LaneCoord c, int64_t inner, int64_t run) {
  return c.group % run == 0 && c.thread % run == 0 && inner % run == 0;
}
