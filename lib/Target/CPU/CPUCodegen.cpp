//===- CPUCodegen.cpp - Kernels split across threads and vectorized -------===//
//
// kiln-cpu-codegen (Passes.td): per kernel, stencils become loops around
// contractions (Stencils.cpp), ops with enough work are split along one
// parallel dim into tasks whose loop is outlined for kiln.parallel_for, and
// every op is vectorized where it can be (Vectorize.cpp).
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/CPU/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCPUCODEGEN
#include "kiln/Target/CPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

namespace {

/// The loop dim an op is split along, the tile of it one task runs and the
/// number of tasks; `inner` (when `innerTasks` > 1) a second dim split
/// inside each of those, task i running tile i / innerTasks of `dim` and
/// i mod innerTasks of `inner`.
struct ParallelPlan {
  unsigned dim = 0;
  int64_t tile = 1, tasks = 1;
  unsigned inner = 0;
  int64_t innerTile = 1, innerTasks = 1;

  int64_t allTasks() const { return tasks * innerTasks; }
};

/// The smallest tile (a multiple of `granule` dividing `extent`) that makes
/// at most `maxTasks` tasks; 0 when there is none.
int64_t chooseTile(int64_t extent, int64_t granule, int64_t maxTasks) {
  if (extent % granule != 0)
    granule = 1;
  int64_t units = extent / granule;
  // The most tasks q <= maxTasks dividing the units evenly: O(maxTasks)
  // steps whatever the extent (a declared dim of 2^62 included).
  for (int64_t q = std::min(units, maxTasks); q >= 1; --q)
    if (units % q == 0)
      return units / q * granule;
  return 0;
}

std::optional<ParallelPlan> planParallel(linalg::LinalgOp op, int64_t minWork,
                                         int64_t maxTasks, int64_t vectorBits,
                                         int64_t l2Bytes) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  int64_t work = 1;
  for (int64_t r : ranges)
    work = std::min<int64_t>(work * std::max<int64_t>(r, 1), int64_t(1) << 40);
  if (work < minWork)
    return std::nullopt;
  // A task never splits a register tile's rows; along its vectors it may
  // take fewer of them (two or more, whole packed panels) when that shares
  // the tasks more evenly.
  SmallVector<int64_t> granule(ranges.size(), 1), fineGranule(ranges.size(), 1);
  std::optional<ContractionRoles> roles = matchContraction(op);
  if (roles) {
    RegisterTile t = chooseRegisterTile(op, *roles, vectorBits);
    granule[roles->m] = fineGranule[roles->m] = t.rows;
    if (roles->kind == ContractionRoles::Broadcast) {
      granule[roles->n] = t.vectors * t.lanes;
      // At least two vectors: one vector per row starves the FMA units.
      fineGranule[roles->n] =
          std::min(granule[roles->n], std::max(roles->panel, 2 * t.lanes));
    }
  }
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  // Every task reads all of each operand that does not depend on the
  // split dim (a matmul split along its rows reads all of B per task): the
  // split re-reading the fewest bytes wins among those giving enough tasks.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto rereadBytes = [&](unsigned d) {
    int64_t bytes = 0;
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type || !type.hasStaticShape() ||
          maps[operand.getOperandNumber()].isFunctionOfDim(d))
        continue;
      bytes += type.getNumElements() *
               std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
    }
    return bytes;
  };
  int64_t allBytes = 0;
  for (Value v : op->getOperands())
    if (auto type = dyn_cast<MemRefType>(v.getType());
        type && type.hasStaticShape())
      allBytes += type.getNumElements() *
                  std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
  SmallVector<ParallelPlan> plans;
  for (unsigned d = 0; d < ranges.size(); ++d) {
    if (iters[d] != utils::IteratorType::parallel || ranges[d] < 2)
      continue;
    // A packed operand's panels are not split (its map reads `n mod NR`
    // from a tile's own n).
    if (roles && roles->panel && d == roles->n && ranges[d] % roles->panel != 0)
      continue;
    for (int64_t g : {granule[d], fineGranule[d]}) {
      int64_t tile = chooseTile(ranges[d], g, maxTasks);
      if (!tile || ranges[d] / tile < 2 ||
          (g != granule[d] && tile % granule[d] == 0))
        continue;
      plans.push_back(ParallelPlan{d, tile, ranges[d] / tile});
    }
  }
  if (plans.empty())
    return std::nullopt;
  int64_t mostTasks = 0;
  for (const ParallelPlan &p : plans)
    mostTasks = std::max(mostTasks, p.tasks);
  int64_t enough = std::min<int64_t>(mostTasks, std::min<int64_t>(maxTasks, 8));
  // What a split costs: the bytes its tasks re-read (an operand that fits
  // in half of L2 is read once per thread, say two, and then hits; a larger
  // one once per task). An op vectorized along its innermost dim keeps that
  // dim whole when it can (re-reading a bias per task is cheaper than short
  // vectors).
  auto costOf = [&](const ParallelPlan &p) {
    int64_t bytes = rereadBytes(p.dim);
    return bytes * (bytes <= l2Bytes / 2 ? std::min<int64_t>(p.tasks, 2)
                                         : p.tasks) +
           (!roles && p.dim + 1 == ranges.size() ? allBytes + 1 : 0);
  };
  // Tasks the pool's parts share unevenly: 7 tasks on 2 threads run as 4
  // and 3 (the pool's size is known only at run time; 2 and 4 threads are
  // what counts here).
  auto odd = [](const ParallelPlan &p) { return p.tasks % 2; };
  std::optional<int64_t> minCost;
  for (const ParallelPlan &p : plans)
    if (p.tasks >= enough)
      minCost = std::min(minCost.value_or(costOf(p)), costOf(p));
  // Among the plans whose re-reads are near the fewest (twice them, or a
  // sixteenth of the op's own traffic): an even number of tasks, then the
  // outermost dim (consecutive ops split alike, so a task reads what the
  // same thread wrote), then a multiple of 4, then the fewest bytes, then
  // the most tasks.
  std::optional<ParallelPlan> best;
  for (const ParallelPlan &p : plans) {
    if (p.tasks < enough || costOf(p) > 2 * *minCost + allBytes / 16)
      continue;
    auto key = [&](const ParallelPlan &q) {
      return std::make_tuple(odd(q), q.dim, q.tasks % 4 != 0, costOf(q),
                             -q.tasks);
    };
    if (!best || key(p) < key(*best))
      best = p;
  }
  // An odd number of tasks (7 rows: 4 and 3 on two threads, a seventh of
  // the time lost) is split again along a second dim when that is cheap:
  // an even product shares evenly, an odd one of at least 4x the tasks
  // within a few percent. The second split re-reads what does not depend
  // on its dim once per task of it; that stays under a quarter of the op's
  // own traffic.
  if (best && odd(*best)) {
    // What the tasks of one outer tile re-read: the part of each operand
    // not depending on the inner dim that the outer tile reads.
    auto innerReread = [&](const ParallelPlan &q) {
      int64_t bytes = 0;
      for (OpOperand &operand : op->getOpOperands()) {
        auto type = dyn_cast<MemRefType>(operand.get().getType());
        AffineMap map = maps[operand.getOperandNumber()];
        if (!type || !type.hasStaticShape() || map.isFunctionOfDim(q.dim))
          continue;
        int64_t size = type.getNumElements() *
                       std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
        bytes += map.isFunctionOfDim(best->dim) ? size / best->tasks : size;
      }
      return bytes * q.tasks;
    };
    // Inner splits into 2, 4, ... tasks (as few as share evenly).
    SmallVector<ParallelPlan> inner;
    for (const ParallelPlan &p : plans)
      for (int64_t most = 2; most <= maxTasks; most *= 2) {
        int64_t g =
            p.tile % granule[p.dim] == 0 ? granule[p.dim] : fineGranule[p.dim];
        int64_t tile = chooseTile(ranges[p.dim], g, most);
        if (tile && ranges[p.dim] / tile >= 2)
          inner.push_back(ParallelPlan{p.dim, tile, ranges[p.dim] / tile});
      }
    std::optional<ParallelPlan> twice;
    for (const ParallelPlan &q : inner) {
      if (q.dim == best->dim || (!roles && q.dim + 1 == ranges.size()))
        continue;
      int64_t product = best->tasks * q.tasks;
      if (product > 8 * maxTasks || (product % 2 && q.tasks < 4) ||
          innerReread(q) > allBytes / 4)
        continue;
      auto key = [&](const ParallelPlan &r) {
        return std::make_tuple(best->tasks * r.tasks % 2, innerReread(r),
                               r.tasks);
      };
      if (!twice || key(q) < key(*twice))
        twice = q;
    }
    if (twice) {
      best->inner = twice->dim;
      best->innerTile = twice->tile;
      best->innerTasks = twice->tasks;
    }
  }
  return best;
}

/// Outlines `forOp` (a loop over tasks from 0) into `name`(lo, hi,
/// captured...) and replaces it with a kiln.parallel_for of `tasks`.
void outlineTaskLoop(RewriterBase &rewriter, scf::ForOp forOp,
                     func::FuncOp kernel, StringRef name, int64_t tasks) {
  Location loc = forOp.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(forOp.getRegion(), captured);
  SmallVector<Value> args;
  SmallVector<Operation *> constants;
  for (Value v : captured) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(def);
    else
      args.push_back(v);
  }
  SmallVector<Type> types = {rewriter.getIndexType(), rewriter.getIndexType()};
  for (Value v : args)
    types.push_back(v.getType());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(kernel);
  auto fn = func::FuncOp::create(rewriter, loc, name,
                                 FunctionType::get(ctx, types, {}));
  fn.setPrivate();
  fn->setAttr("kiln.parallel_body", UnitAttr::get(ctx));
  fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  Block *entry = fn.addEntryBlock();
  IRMapping map;
  for (auto [i, v] : llvm::enumerate(args))
    map.map(v, entry->getArgument(i + 2));
  rewriter.setInsertionPointToStart(entry);
  for (Operation *c : constants)
    map.map(c->getResult(0), rewriter.clone(*c)->getResult(0));
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto loop = scf::ForOp::create(rewriter, loc, entry->getArgument(0),
                                 entry->getArgument(1), one);
  map.map(forOp.getInductionVar(), loop.getInductionVar());
  rewriter.setInsertionPointToStart(loop.getBody());
  for (Operation &o : forOp.getBody()->without_terminator())
    rewriter.clone(o, map);
  rewriter.setInsertionPointToEnd(entry);
  func::ReturnOp::create(rewriter, loc);
  rewriter.setInsertionPoint(forOp);
  ParallelForOp::create(rewriter, loc, FlatSymbolRefAttr::get(fn),
                        rewriter.getI64IntegerAttr(tasks), args);
  rewriter.eraseOp(forOp);
}

/// Splits `op` into `plan.tasks` tiles run by a kiln.parallel_for, with
/// the ends its register tiles take (tiled alike: their loop dims are its
/// output's).
LogicalResult parallelize(RewriterBase &rewriter, linalg::LinalgOp op,
                          const ParallelPlan &plan, const FusedEnds &ends,
                          func::FuncOp kernel, StringRef name) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value count = arith::ConstantIndexOp::create(rewriter, loc, plan.allTasks());
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto forOp = scf::ForOp::create(rewriter, loc, zero, count, one);
  rewriter.setInsertionPointToStart(forOp.getBody());
  // Each split dim's tile: (dim, offset, size).
  SmallVector<std::tuple<unsigned, Value, int64_t>, 2> splits;
  Value task = forOp.getInductionVar();
  if (plan.innerTasks > 1) {
    Value inner =
        arith::ConstantIndexOp::create(rewriter, loc, plan.innerTasks);
    Value innerTile =
        arith::ConstantIndexOp::create(rewriter, loc, plan.innerTile);
    splits.emplace_back(plan.inner,
                        arith::MulIOp::create(
                            rewriter, loc,
                            arith::RemUIOp::create(rewriter, loc, task, inner),
                            innerTile),
                        plan.innerTile);
    task = arith::DivUIOp::create(rewriter, loc, task, inner);
  }
  splits.insert(splits.begin(),
                {plan.dim,
                 arith::MulIOp::create(
                     rewriter, loc, task,
                     arith::ConstantIndexOp::create(rewriter, loc, plan.tile))
                     .getResult(),
                 plan.tile});
  // `tiled`'s tile along the split dims (at `dims`, its loop dims for
  // them), the rest whole.
  auto tileAlong = [&](Operation *tiled,
                       ArrayRef<unsigned> dims) -> FailureOr<TilingResult> {
    auto loopOp = cast<linalg::LinalgOp>(tiled);
    SmallVector<OpFoldResult> offsets(loopOp.getNumLoops(),
                                      rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes;
    for (int64_t r : loopOp.getStaticLoopRanges())
      sizes.push_back(rewriter.getIndexAttr(r));
    for (auto [dim, split] : llvm::zip_equal(dims, splits)) {
      offsets[dim] = std::get<1>(split);
      sizes[dim] = rewriter.getIndexAttr(std::get<2>(split));
    }
    return cast<TilingInterface>(tiled).getTiledImplementation(rewriter,
                                                               offsets, sizes);
  };
  // An end's loop dims are the output's: the split dims' positions there.
  SmallVector<unsigned, 2> opDims, endDims;
  bool endsTile = true;
  for (auto &split : splits) {
    unsigned dim = std::get<0>(split);
    opDims.push_back(dim);
    std::optional<unsigned> pos =
        op.getIndexingMapsArray().back().getResultPosition(
            getAffineDimExpr(dim, rewriter.getContext()));
    endsTile &= pos.has_value();
    endDims.push_back(pos.value_or(0));
  }
  auto tileEnd = [&](Operation *end) -> LogicalResult {
    if (!end)
      return success();
    return endsTile ? LogicalResult(tileAlong(end, endDims)) : failure();
  };
  FailureOr<TilingResult> tiled = failure();
  if (failed(tileEnd(ends.fill)) || failed(tiled = tileAlong(op, opDims)) ||
      failed(tileEnd(ends.epilogue))) {
    rewriter.eraseOp(forOp);
    return failure();
  }
  // A packed operand (`n floordiv NR, ..., n mod NR`): linalg's slice of
  // it is wrong (mod is not monotone); the tile's panels are.
  std::optional<ContractionRoles> roles = matchContraction(op);
  if (roles && roles->panel) {
    auto tiledOp = cast<linalg::LinalgOp>(tiled->tiledOps.front());
    Value packed = op.getDpsInputs()[roles->vectorOperand];
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(tiledOp);
    for (auto [dim, offset, size] : splits) {
      if (dim != roles->n)
        continue;
      auto type = cast<MemRefType>(packed.getType());
      SmallVector<OpFoldResult> pOffsets(type.getRank(),
                                         rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> pSizes,
          pStrides(type.getRank(), rewriter.getIndexAttr(1));
      for (int64_t d : type.getShape())
        pSizes.push_back(rewriter.getIndexAttr(d));
      pOffsets[0] = arith::DivUIOp::create(rewriter, loc, offset,
                                           arith::ConstantIndexOp::create(
                                               rewriter, loc, roles->panel))
                        .getResult();
      pSizes[0] = rewriter.getIndexAttr(size / roles->panel);
      packed = memref::SubViewOp::create(rewriter, loc, packed, pOffsets,
                                         pSizes, pStrides);
    }
    tiledOp->setOperand(roles->vectorOperand, packed);
  }
  if (ends.fill)
    rewriter.eraseOp(ends.fill);
  rewriter.eraseOp(op);
  if (ends.epilogue)
    rewriter.eraseOp(ends.epilogue);
  outlineTaskLoop(rewriter, forOp, kernel, name, plan.allTasks());
  return success();
}

/// A fill of a buffer followed by a copy into a static part of it (a
/// padded input: zeros, then the interior) becomes fills of the parts the
/// copy leaves: the border, one slab per side of each dim.
LogicalResult fillOnlyBorder(RewriterBase &rewriter, linalg::FillOp fill) {
  if (!fill.hasPureBufferSemantics())
    return failure();
  Value buffer = fill.getOutputs()[0];
  auto type = dyn_cast<MemRefType>(buffer.getType());
  Operation *next = fill->getNextNode();
  while (next && next->getNumRegions() == 0 && isMemoryEffectFree(next))
    next = next->getNextNode();
  auto copy = dyn_cast_or_null<linalg::CopyOp>(next);
  if (!type || !type.hasStaticShape() || !copy ||
      !copy.hasPureBufferSemantics())
    return failure();
  auto view = copy.getOutputs()[0].getDefiningOp<memref::SubViewOp>();
  if (!view || view.getSource() != buffer ||
      view.getSourceType().getRank() != view.getType().getRank() ||
      !view.hasUnitStride() ||
      ShapedType::isDynamicShape(view.getStaticOffsets()) ||
      ShapedType::isDynamicShape(view.getStaticSizes()))
    return failure();
  ArrayRef<int64_t> offsets = view.getStaticOffsets();
  ArrayRef<int64_t> sizes = view.getStaticSizes();
  ArrayRef<int64_t> full = type.getShape();
  Location loc = fill.getLoc();
  rewriter.setInsertionPoint(fill);
  int64_t rank = type.getRank();
  auto fillPart = [&](ArrayRef<int64_t> lo, ArrayRef<int64_t> len) {
    if (llvm::any_of(len, [](int64_t l) { return l == 0; }))
      return;
    SmallVector<int64_t> strides(rank, 1);
    Value part =
        memref::SubViewOp::create(rewriter, loc, buffer, lo, len, strides);
    linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], part);
  };
  // Dims before d: the interior; dim d: before and after it; after d: all.
  for (int64_t d = 0; d < rank; ++d) {
    SmallVector<int64_t> lo(rank, 0), len(full.begin(), full.end());
    for (int64_t e = 0; e < d; ++e) {
      lo[e] = offsets[e];
      len[e] = sizes[e];
    }
    len[d] = offsets[d];
    fillPart(lo, len);
    lo[d] = offsets[d] + sizes[d];
    len[d] = full[d] - lo[d];
    fillPart(lo, len);
  }
  rewriter.eraseOp(fill);
  return success();
}

/// The stencils in `fn` that are not contractions (pools).
SmallVector<linalg::GenericOp> collectStencils(func::FuncOp fn) {
  SmallVector<linalg::GenericOp> stencils;
  fn.walk([&](linalg::GenericOp op) {
    if (hasStencilWindow(op) && !matchContraction(op))
      stencils.push_back(op);
  });
  return stencils;
}

/// Linalg ops on memrefs directly in `fn` (not nested in another).
SmallVector<linalg::LinalgOp> collectLinalgOps(func::FuncOp fn) {
  SmallVector<linalg::LinalgOp> ops;
  fn.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && !op->getParentOfType<linalg::LinalgOp>())
      ops.push_back(op);
  });
  return ops;
}

struct CPUCodegenPass : public kiln::impl::KilnCPUCodegenBase<CPUCodegenPass> {
  using KilnCPUCodegenBase::KilnCPUCodegenBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    module->setAttr("kiln.cpu", StringAttr::get(ctx, cpu));
    module->setAttr("kiln.cpu_features", StringAttr::get(ctx, features));
    module->setAttr("kiln.cpu_requires", StringAttr::get(ctx, requires));
    module->setAttr("kiln.cpu_vector_bits",
                    IntegerAttr::get(IntegerType::get(ctx, 64), vectorBits));
    IRRewriter rewriter(ctx);
    // Constant weights read as a contraction's vectors, packed once.
    if (vectorize && pack)
      packWeights(module, vectorBits, bf16Dot, int8Dot);
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("kiln.kernel") && !fn.isExternal())
        kernels.push_back(fn);
    for (func::FuncOp kernel : kernels) {
      // Copies (a padded input's interior) as linalg copies: split across
      // tasks and vectorized like the rest, not the runtime's element-wise
      // memrefCopy.
      SmallVector<memref::CopyOp> copies;
      kernel.walk([&](memref::CopyOp op) { copies.push_back(op); });
      for (memref::CopyOp copy : copies) {
        auto src = cast<MemRefType>(copy.getSource().getType());
        if (!src.hasStaticShape() || src.getRank() == 0)
          continue;
        rewriter.setInsertionPoint(copy);
        rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                    copy.getTarget());
      }
      // A map of no inputs yielding a value from outside (how a padded
      // tensor's constant bufferizes) is a fill.
      SmallVector<linalg::MapOp> maps;
      kernel.walk([&](linalg::MapOp op) { maps.push_back(op); });
      for (linalg::MapOp map : maps) {
        auto yield =
            cast<linalg::YieldOp>(map.getMapper().front().getTerminator());
        if (!map.hasPureBufferSemantics() || !map.getInputs().empty() ||
            yield.getNumOperands() != 1 ||
            map.getMapper().isAncestor(yield.getOperand(0).getParentRegion()))
          continue;
        rewriter.setInsertionPoint(map);
        rewriter.replaceOpWithNewOp<linalg::FillOp>(
            map, ValueRange{yield.getOperand(0)}, ValueRange{map.getInit()});
      }
      // A padded copy's fill only where the copy does not write.
      SmallVector<linalg::FillOp> fills;
      kernel.walk([&](linalg::FillOp op) { fills.push_back(op); });
      for (linalg::FillOp fill : fills)
        (void)fillOnlyBorder(rewriter, fill);
      // Stencils first: their loops over the window come out of the op.
      SmallVector<linalg::GenericOp> generics;
      kernel.walk([&](linalg::GenericOp op) { generics.push_back(op); });
      // A stencil that is split into tasks (a depthwise convolution, a
      // pool) is taken apart inside each task instead, plane by plane.
      for (linalg::GenericOp op : generics) {
        if (!op.hasPureBufferSemantics())
          continue;
        bool contraction = matchContraction(op).has_value();
        if (!contraction && parallel && hasStencilWindow(op) &&
            planParallel(op, minParallelWork, tasks, vectorBits, l2Bytes))
          continue;
        (void)decomposeStencil(rewriter, op, /*onlyUnitWindows=*/contraction);
      }

      // The fills and epilogues contractions' tiles take in.
      llvm::DenseMap<Operation *, FusedEnds> fused;
      if (vectorize)
        for (linalg::LinalgOp op : collectLinalgOps(kernel)) {
          FusedEnds ends = markFusedEnds(op);
          if (ends.fill || ends.epilogue)
            fused[op] = ends;
        }

      // Tasks. Each split op's tile lands in its own outlined body (with
      // its fused ends).
      SmallVector<func::FuncOp> bodies;
      int64_t numParallel = 0;
      if (parallel) {
        // Fused ends go with their contraction (and are erased with it).
        SmallVector<linalg::LinalgOp> ops;
        for (linalg::LinalgOp op : collectLinalgOps(kernel))
          if (!isFusedEnd(op))
            ops.push_back(op);
        for (linalg::LinalgOp op : ops) {
          std::optional<ParallelPlan> plan =
              planParallel(op, minParallelWork, tasks, vectorBits, l2Bytes);
          if (!plan)
            continue;
          std::string name =
              (kernel.getName() + "_p" + std::to_string(numParallel)).str();
          if (succeeded(parallelize(rewriter, op, *plan, fused.lookup(op),
                                    kernel, name)))
            ++numParallel;
        }
        for (auto fn : module.getOps<func::FuncOp>())
          if (fn->hasAttr("kiln.parallel_body") &&
              fn.getName().starts_with((kernel.getName() + "_p").str()))
            bodies.push_back(fn);
      }

      // The stencils left whole for their tasks, plane by plane (and
      // any whose split failed, as they are).
      for (linalg::GenericOp op : collectStencils(kernel))
        (void)decomposeStencil(rewriter, op);
      for (func::FuncOp fn : bodies)
        for (linalg::GenericOp op : collectStencils(fn))
          (void)decomposeInPlanes(rewriter, op);

      // Vectors.
      int64_t bits = 0;
      if (vectorize) {
        SmallVector<func::FuncOp> fns = {kernel};
        fns.append(bodies.begin(), bodies.end());
        for (func::FuncOp fn : fns) {
          // One view per tile of the output, so that the fused ends are
          // found on the same value as the contraction's.
          DominanceInfo dom(fn);
          eliminateCommonSubExpressions(rewriter, dom, fn);
          // Contractions first: they take their ends in.
          SmallVector<linalg::LinalgOp> first;
          for (linalg::LinalgOp op : collectLinalgOps(fn))
            if (!isFusedEnd(op))
              first.push_back(op);
          for (linalg::LinalgOp op : first)
            bits = std::max(bits, vectorizeOp(rewriter, op, vectorBits, l1Bytes,
                                              int8Tiles));
          for (linalg::LinalgOp op : collectLinalgOps(fn))
            bits = std::max(bits, vectorizeOp(rewriter, op, vectorBits, l1Bytes,
                                              int8Tiles));
        }
      }
      kernel->setAttr("kiln.cpu_vector_bits",
                      IntegerAttr::get(IntegerType::get(ctx, 64), bits));
      kernel->setAttr("kiln.cpu_parallel",
                      IntegerAttr::get(IntegerType::get(ctx, 64), numParallel));
    }
    if (vectorize && failed(lowerVectorOps(module)))
      return signalPassFailure();
  }
};

} // namespace
