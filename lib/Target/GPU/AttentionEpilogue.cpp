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
