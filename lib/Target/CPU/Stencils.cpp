//===- Stencils.cpp - Convolutions and pools as loops over their window ---===//
//
// A stencil generic reads an input at `a * d_p + b * d_r` (d_p a parallel
// dim, d_r a reduction: a convolution's kernel offset, a pool's window).
// For each value of its d_r dims the op is a plain op on views of the
// input shifted by b * d_r with stride a (and of the operands indexed by
// d_r, at that offset): a contraction for a convolution, elementwise for a
// depthwise convolution or a pool. The vectorizer takes those.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "mlir/Interfaces/TilingInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// `coeff * dim` (a bare dim has coeff 1).
std::optional<std::pair<unsigned, int64_t>> matchScaledDim(AffineExpr e) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return std::make_pair(d.getPosition(), int64_t(1));
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin || bin.getKind() != AffineExprKind::Mul)
    return std::nullopt;
  auto d = dyn_cast<AffineDimExpr>(bin.getLHS());
  auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
  if (!d || !c || c.getValue() < 1)
    return std::nullopt;
  return std::make_pair(d.getPosition(), c.getValue());
}

} // namespace

std::optional<cpu::StencilTerm>
mlir::kiln::cpu::matchStencilTerm(AffineExpr e,
                                  ArrayRef<utils::IteratorType> iters) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin || bin.getKind() != AffineExprKind::Add)
    return std::nullopt;
  auto l = matchScaledDim(bin.getLHS()), r = matchScaledDim(bin.getRHS());
  if (!l || !r)
    return std::nullopt;
  if (iters[l->first] == utils::IteratorType::reduction)
    std::swap(l, r);
  if (iters[l->first] != utils::IteratorType::parallel ||
      iters[r->first] != utils::IteratorType::reduction)
    return std::nullopt;
  return StencilTerm{l->first, r->first, l->second, r->second};
}

/// The reduction dims a stencil's window slides over (`d_r` of its
/// inputs' `a * d_p + b * d_r`), or nullopt when `op` is not a stencil
/// decomposeStencil takes (an output or a term it cannot read).
static std::optional<llvm::SetVector<unsigned>>
stencilWindow(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.hasIndexSemantics() ||
      op.getNumDpsInits() != 1 ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  llvm::SetVector<unsigned> window;
  for (OpOperand &operand : op->getOpOperands())
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
      if (isa<AffineDimExpr>(e))
        continue;
      std::optional<cpu::StencilTerm> t = cpu::matchStencilTerm(e, iters);
      if (!t || op.isDpsInit(&operand))
        return std::nullopt;
      window.insert(t->r);
    }
  return window;
}

bool mlir::kiln::cpu::hasStencilWindow(linalg::GenericOp op) {
  std::optional<llvm::SetVector<unsigned>> window = stencilWindow(op);
  if (!window)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return llvm::any_of(*window, [&](unsigned r) { return ranges[r] > 1; });
}

LogicalResult mlir::kiln::cpu::decomposeInPlanes(RewriterBase &rewriter,
                                                 linalg::GenericOp op) {
  if (!hasStencilWindow(op))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  // The dims the window slides along stay whole.
  llvm::SmallDenseSet<unsigned> spatial;
  SmallVector<unsigned> spatialOrder;
  for (OpOperand &operand : op->getOpOperands())
    for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults())
      if (std::optional<cpu::StencilTerm> t = matchStencilTerm(e, iters))
        if (spatial.insert(t->p).second)
          spatialOrder.push_back(t->p);
  llvm::sort(spatialOrder);
  // Channels last (the output's innermost dim a parallel loop dim the
  // window does not slide along: NHWC's C): a plane is one output row,
  // [1, 1, W, C] for 2-D windows, so that the vectors run along C and the
  // window's passes stay in the cache; C is never cut into vectors of one
  // lane.
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> inner;
  if (outMap.getNumResults())
    if (auto d = dyn_cast<AffineDimExpr>(outMap.getResults().back()))
      inner = d.getPosition();
  unsigned last = inner.value_or(0);
  bool channelsLast = inner && iters[last] == utils::IteratorType::parallel &&
                      !spatial.contains(last) && ranges[last] > 1 &&
                      !spatialOrder.empty();
  if (channelsLast)
    for (unsigned d : ArrayRef(spatialOrder).drop_back())
      spatial.erase(d);
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<OpFoldResult> offsets, sizes;
  bool tiled = false;
  for (unsigned d = 0; d < ranges.size(); ++d) {
    if (iters[d] != utils::IteratorType::parallel || spatial.contains(d) ||
        ranges[d] == 1 || (channelsLast && d == last)) {
      offsets.push_back(rewriter.getIndexAttr(0));
      sizes.push_back(rewriter.getIndexAttr(ranges[d]));
      continue;
    }
    auto loop = scf::ForOp::create(
        rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0),
        arith::ConstantIndexOp::create(rewriter, loc, ranges[d]),
        arith::ConstantIndexOp::create(rewriter, loc, 1));
    rewriter.setInsertionPointToStart(loop.getBody());
    offsets.push_back(loop.getInductionVar());
    sizes.push_back(rewriter.getIndexAttr(1));
    tiled = true;
  }
  if (!tiled)
    return decomposeStencil(rewriter, op);
  FailureOr<TilingResult> plane =
      cast<TilingInterface>(op.getOperation())
          .getTiledImplementation(rewriter, offsets, sizes);
  if (failed(plane))
    return failure();
  rewriter.eraseOp(op);
  auto generic = dyn_cast<linalg::GenericOp>(plane->tiledOps.front());
  return generic ? decomposeStencil(rewriter, generic) : success();
}

LogicalResult mlir::kiln::cpu::decomposeStencil(RewriterBase &rewriter,
                                                linalg::GenericOp op,
                                                bool onlyUnitWindows) {
  std::optional<llvm::SetVector<unsigned>> found = stencilWindow(op);
  if (!found)
    return failure();
  llvm::SetVector<unsigned> &window = *found;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  if (window.empty() ||
      (onlyUnitWindows &&
       llvm::any_of(window, [&](unsigned r) { return ranges[r] != 1; })))
    return failure();

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // One loop per window dim of two or more (a dim of one is at 0).
  SmallVector<Value> ivs(ranges.size());
  for (unsigned r : window) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    if (ranges[r] == 1) {
      ivs[r] = zero;
      continue;
    }
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, ranges[r]);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(rewriter, loc, zero, ub, one);
    rewriter.setInsertionPointToStart(loop.getBody());
    ivs[r] = loop.getInductionVar();
  }
  SmallVector<int64_t> newIndex(ranges.size(), -1);
  SmallVector<utils::IteratorType> newIters;
  for (unsigned d = 0; d < ranges.size(); ++d) {
    if (window.contains(d))
      continue;
    newIndex[d] = newIters.size();
    newIters.push_back(iters[d]);
  }
  MLIRContext *ctx = rewriter.getContext();
  auto newDim = [&](unsigned d) { return getAffineDimExpr(newIndex[d], ctx); };
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (OpOperand &operand : op->getOpOperands()) {
    Value value = operand.get();
    auto type = cast<MemRefType>(value.getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<AffineExpr> results;
    SmallVector<int64_t> keptShape;
    bool view = false;
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        unsigned pos = d.getPosition();
        if (window.contains(pos)) {
          offsets.push_back(ivs[pos]);
          sizes.push_back(rewriter.getIndexAttr(1));
          strides.push_back(rewriter.getIndexAttr(1));
          view = true;
          continue;
        }
        offsets.push_back(rewriter.getIndexAttr(0));
        sizes.push_back(rewriter.getIndexAttr(type.getDimSize(j)));
        strides.push_back(rewriter.getIndexAttr(1));
        keptShape.push_back(type.getDimSize(j));
        results.push_back(newDim(pos));
        continue;
      }
      cpu::StencilTerm t = *matchStencilTerm(e, iters);
      Value offset = ivs[t.r];
      if (t.b != 1)
        offset = arith::MulIOp::create(
            rewriter, loc, offset,
            arith::ConstantIndexOp::create(rewriter, loc, t.b));
      offsets.push_back(offset);
      sizes.push_back(rewriter.getIndexAttr(ranges[t.p]));
      strides.push_back(rewriter.getIndexAttr(t.a));
      keptShape.push_back(ranges[t.p]);
      results.push_back(newDim(t.p));
      view = true;
    }
    if (view) {
      auto viewType = memref::SubViewOp::inferRankReducedResultType(
          keptShape, type, offsets, sizes, strides);
      value =
          memref::SubViewOp::create(rewriter, loc, cast<MemRefType>(viewType),
                                    value, offsets, sizes, strides);
    }
    operands.push_back(value);
    maps.push_back(AffineMap::get(newIters.size(), 0, results, ctx));
  }
  int64_t numInputs = op.getNumDpsInputs();
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{}, ArrayRef(operands).take_front(numInputs),
      ArrayRef(operands).drop_front(numInputs), maps, newIters);
  rewriter.cloneRegionBefore(op.getRegion(), generic.getRegion(),
                             generic.getRegion().end());
  rewriter.eraseOp(op);
  return success();
}
