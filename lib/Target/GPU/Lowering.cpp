//===- Lowering.cpp - What the GPU strategies share -----------------------===//

#include "Lowering.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

ReductionFusion mlir::kiln::gpumap::detectFusion(linalg::LinalgOp op,
                                                 ArrayRef<unsigned> par) {
  ReductionFusion f;
  Value out = op.getDpsInitOperand(0)->get();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  f.fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (f.fill && f.fill.getOutputs()[0] == out)
    f.fillValue = f.fill.getInputs()[0];
  else
    f.fill = nullptr;
  linalg::GenericOp epi =
      dyn_cast_or_null<linalg::GenericOp>(op->getNextNode());
  bool identityOut = outMap.getNumResults() == par.size();
  for (auto [i, r] : llvm::enumerate(outMap.getResults()))
    identityOut &=
        i < par.size() && r == getAffineDimExpr(par[i], op.getContext());
  if (!epi || !identityOut || !epi.hasPureBufferSemantics() ||
      epi.getNumDpsInits() != 1 || epi.getNumLoops() != par.size() ||
      epi.getNumReductionLoops() != 0 ||
      epi.getBlock()->getTerminator()->getNumOperands() != 1 ||
      epi.getDpsInitOperand(0)->get() == out)
    return f;
  OpOperand *epiIn = nullptr;
  for (OpOperand *in : epi.getDpsInputOperands()) {
    if (in->get() != out)
      continue;
    if (epiIn || !epi.getMatchingIndexingMap(in).isIdentity())
      return f;
    epiIn = in;
  }
  if (!epiIn)
    return f;
  // The buffer must die here: a kernel-local allocation whose only other
  // users are the fill and deallocation.
  auto alloc = out.getDefiningOp<BufferOp>();
  bool dies =
      alloc && llvm::all_of(out.getUsers(), [&](Operation *u) {
        return u == op || u == epi || u == f.fill || isa<memref::DeallocOp>(u);
      });
  if (dies) {
    f.epi = epi;
    f.epiIn = epiIn;
  }
  return f;
}

/// Checks shared by both lowerings: buffer semantics, one output indexed by
/// exactly the parallel dims, one yielded value. Fills `par` and `red`.
bool mlir::kiln::gpumap::isLowerableReduction(linalg::LinalgOp op,
                                              SmallVectorImpl<unsigned> &par,
                                              SmallVectorImpl<unsigned> &red,
                                              bool allowZeroResults) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || op->getNumResults() != 0)
    return false;
  for (auto [i, t] : llvm::enumerate(op.getIteratorTypesArray()))
    (t == utils::IteratorType::parallel ? par : red).push_back(i);
  if (par.empty())
    return false; // a full reduction: one serial loop
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // Kept reduced dims (keepdims: a constant 0 result) only where asked.
  llvm::SmallBitVector seen(op.getNumLoops());
  for (AffineExpr e : outMap.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (seen.test(d.getPosition()))
        return false;
      seen.set(d.getPosition());
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!allowZeroResults || !c || c.getValue() != 0)
      return false;
  }
  if (seen.count() != par.size())
    return false;
  for (unsigned d : red)
    if (outMap.isFunctionOfDim(d))
      return false;
  return op.getBlock()->getTerminator()->getNumOperands() == 1;
}

LoweringBase::PaddedInputs LoweringBase::matchPaddedInputs(linalg::LinalgOp op,
                                                           bool lastDimUnpadded,
                                                           bool anyFill) {
  PaddedInputs padded;
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i) {
    Value in = op.getDpsInputOperand(i)->get();
    std::optional<PaddedCopy> pc = matchPaddedCopy(in, op, anyFill);
    if (!pc)
      continue;
    auto srcType = cast<MemRefType>(pc->src.getType());
    auto inType = cast<MemRefType>(in.getType());
    int64_t last = inType.getRank() - 1;
    if (lastDimUnpadded &&
        (pc->offsets[last] != 0 ||
         srcType.getDimSize(last) != inType.getDimSize(last)))
      continue;
    padded[i] = std::move(*pc);
  }
  return padded;
}

Value LoweringBase::inputIndices(Location loc, linalg::LinalgOp op,
                                 const PaddedInputs &padded, unsigned i,
                                 ArrayRef<Value> pt,
                                 SmallVectorImpl<Value> &idx) {
  OpOperand *in = op.getDpsInputOperand(i);
  idx = apply(loc, op.getMatchingIndexingMap(in), pt);
  auto it = padded.find(i);
  if (it == padded.end())
    return Value();
  Value ok = sourceIndices(rewriter, loc, it->second, in->get(), idx);
  return ok ? ok : arith::ConstantIntOp::create(rewriter, loc, 1, 1);
}

Value LoweringBase::inputMemRef(linalg::LinalgOp op, const PaddedInputs &padded,
                                unsigned i) {
  auto it = padded.find(i);
  return it == padded.end() ? op.getDpsInputOperand(i)->get() : it->second.src;
}

void LoweringBase::erasePaddedCopies(const PaddedInputs &padded) {
  for (const auto &[i, pc] : padded)
    for (Operation *dead : {pc.copy, pc.view, pc.fill})
      rewriter.eraseOp(dead);
}
