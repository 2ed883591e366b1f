//===- AttentionEpilogue.cpp - An elementwise op after an attention -------===//
//
// AttentionEpilogue.h's matchers.
//
//===----------------------------------------------------------------------===//

#include "AttentionEpilogue.h"

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;

std::optional<gpumap::OutputEpilogue> gpumap::outputEpilogue(AttentionOp att) {
  Value out = att.getInit();
  auto outType = cast<MemRefType>(out.getType());
  if (!outType.hasStaticShape() || !outType.getLayout().isIdentity())
    return std::nullopt;
  gpumap::OutputEpilogue e;
  Value v = out;
  while (true) {
    Operation *reader = nullptr;
    for (Operation *u : v.getUsers()) {
      if (u == att.getOperation() || isa<ReleaseOp>(u))
        continue;
      if (reader)
        return std::nullopt;
      reader = u;
    }
    if (!reader)
      return std::nullopt;
    if (isa<memref::ReshapeOp, memref::CollapseShapeOp, memref::ExpandShapeOp,
            memref::ReinterpretCastOp>(reader)) {
      auto t = cast<MemRefType>(reader->getResult(0).getType());
      if (!t.getLayout().isIdentity())
        return std::nullopt;
      e.views.push_back(reader);
      v = reader->getResult(0);
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(reader);
    if (!g || g.getNumLoops() != g.getNumParallelLoops() ||
        g.getNumDpsInits() != 1 || g.getNumResults() != 0)
      return std::nullopt;
    e.op = g;
    break;
  }
  linalg::GenericOp g = e.op;
  for (OpOperand *in : g.getDpsInputOperands()) {
    if (in->get() == v) {
      if (e.input || !g.getMatchingIndexingMap(in).isIdentity())
        return std::nullopt;
      e.input = in;
      continue;
    }
    auto t = dyn_cast<MemRefType>(in->get().getType());
    if (t && t.getRank() != 0)
      return std::nullopt;
  }
  OpOperand *init = g.getDpsInitOperand(0);
  auto resType = dyn_cast<MemRefType>(init->get().getType());
  if (!e.input || !resType || !resType.hasStaticShape() ||
      !resType.getLayout().isIdentity() ||
      resType.getNumElements() != outType.getNumElements() ||
      !g.getMatchingIndexingMap(init).isIdentity() ||
      !g.getBody()->getArgument(init->getOperandNumber()).use_empty() ||
      !resType.getElementType().isIntOrFloat())
    return std::nullopt;
  return e;
}

std::optional<gpumap::EpilogueEntry>
gpumap::epilogueEntry(gpumap::OutputEpilogue &e) {
  Block &body = *e.op.getBody();
  BlockArgument in = body.getArgument(e.input->getOperandNumber());
  gpumap::EpilogueEntry entry;
  if (in.getType().isF32()) {
    entry.widened = in;
  } else {
    if (!in.hasOneUse())
      return std::nullopt;
    auto ext = dyn_cast<arith::ExtFOp>(*in.getUsers().begin());
    if (!ext || !ext.getType().isF32())
      return std::nullopt;
    entry.widened = ext.getResult();
  }
  auto usable = [&](Value d) {
    FloatAttr c;
    if (matchPattern(d, m_Constant(&c)))
      return c.getType().isF32() &&
             std::isnormal(static_cast<float>(1.0 / c.getValueAsDouble()));
    auto arg = dyn_cast<BlockArgument>(d);
    return arg && arg.getOwner() == &body && arg != in &&
           arg.getArgNumber() < e.op.getNumDpsInputs();
  };
  for (Operation *u : entry.widened.getUsers()) {
    if (auto div = dyn_cast<arith::DivFOp>(u)) {
      if (div.getLhs() == entry.widened && usable(div.getRhs())) {
        entry.quotient = div.getResult();
        entry.divisor = div.getRhs();
        break;
      }
    }
    if (!isa<arith::MulFOp>(u))
      continue;
    for (Operation *s : u->getUsers()) {
      if (!isa<arith::SelectOp>(s))
        continue;
      std::optional<std::pair<Value, Value>> xc =
          matchCorrectedF32Division(s->getResult(0));
      if (xc && xc->first == entry.widened) {
        entry.quotient = s->getResult(0);
        entry.divisor = xc->second;
        break;
      }
    }
    if (entry.quotient)
      break;
  }
  return entry;
}

gpumap::EpilogueApplier::EpilogueApplier(
    OpBuilder &b, Location loc, std::optional<OutputEpilogue> &epilogue,
    Type outElem, Value result, ArrayRef<Value> inv)
    : epilogue(epilogue), outElem(outElem), resultElem_(outElem),
      inv(inv.begin(), inv.end()) {
  if (!epilogue)
    return;
  linalg::GenericOp g = epilogue->op;
  Block &gb = *g.getBody();
  for (OpOperand *in : g.getDpsInputOperands()) {
    if (in == epilogue->input)
      continue;
    Value arg = gb.getArgument(in->getOperandNumber());
    if (isa<MemRefType>(in->get().getType()))
      scalars.map(arg, memref::LoadOp::create(b, loc, in->get(), ValueRange{}));
    else
      scalars.map(arg, in->get());
  }
  resultElem_ = cast<MemRefType>(result.getType()).getElementType();
  entry = epilogueEntry(*epilogue);
  if (!entry || !entry->quotient)
    return;
  // Each row's 1 / sum divided by the scale, once: times the reciprocal of
  // a constant (rounded once), else a division.
  FloatAttr c;
  if (matchPattern(entry->divisor, m_Constant(&c)) && c.getType().isF32()) {
    Value r = arith::ConstantOp::create(
        b, loc,
        b.getF32FloatAttr(static_cast<float>(1.0 / c.getValueAsDouble())));
    for (Value v : inv)
      invQuotient.push_back(arith::MulFOp::create(b, loc, v, r));
  } else {
    Value divisor = scalars.lookup(entry->divisor);
    for (Value v : inv)
      invQuotient.push_back(arith::DivFOp::create(b, loc, v, divisor));
  }
}

// The body on one element: `y` the accumulator times its row's 1 / sum
// (f32), its quotient the accumulator times the row's entry of
// invQuotient. The ops whose values the kernel gives (the widening, the
// division) are not cloned; what only they used is left dead.
Value gpumap::EpilogueApplier::apply(OpBuilder &b, Location loc, Value acc,
                                     int64_t ri) const {
  Value y = arith::MulFOp::create(b, loc, acc, inv[ri]);
  if (!epilogue) {
    if (outElem != b.getF32Type())
      y = arith::TruncFOp::create(b, loc, outElem, y);
    return y;
  }
  Block &gb = *epilogue->op.getBody();
  IRMapping map = scalars;
  if (entry) {
    map.map(entry->widened, y);
    if (entry->quotient)
      map.map(entry->quotient,
              arith::MulFOp::create(b, loc, acc, invQuotient[ri]));
  } else {
    if (outElem != b.getF32Type())
      y = arith::TruncFOp::create(b, loc, outElem, y);
    map.map(gb.getArgument(epilogue->input->getOperandNumber()), y);
  }
  for (Operation &o : gb.without_terminator()) {
    if (llvm::all_of(o.getResults(), [&](Value r) { return map.contains(r); }))
      continue;
    b.clone(o, map);
  }
  return map.lookupOrDefault(gb.getTerminator()->getOperand(0));
}
