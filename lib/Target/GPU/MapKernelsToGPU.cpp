//===- MapKernelsToGPU.cpp - Bufferized kernels onto a GPU ----------------===//
//
// After bufferization, every kernel function holds linalg ops (and the odd
// loop or scalar access) on memrefs. On a device target:
//   - each kernel function takes the runtime context first and becomes a
//     host-side launcher; `kiln.launch` becomes a call of it;
//   - allocations inside kernels become run-scoped `kiln.buffer`s (device
//     scratch from the runtime), their deallocations go away;
//   - linalg ops become parallel loop nests (reduction dims as sequential
//     loops inside); each top-level nest becomes one `gpu.launch` whose
//     threads each run one iteration of the flattened nest;
//   - other memory accesses in host code run in single-thread launches,
//     consecutive ones grouped into one launch;
//   - host code reads device data only through `kiln.read` and sees
//     constants only through `kiln.weight`.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMAPKERNELSTOGPU
#define GEN_PASS_DEF_KILNMERGEGPUMODULES
#define GEN_PASS_DEF_KILNFINALIZEDEVICEMEMREFS
#include "kiln/Target/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Ops that may run on the host: no memory access (shape arithmetic, views,
/// constants, dims) and the host program's own ops.
bool isHostOp(Operation *op) {
  if (isa<BufferOp, OutputOp, InputOp, WeightOp, ExternalWeightOp, ReadOp,
          func::CallOp, gpu::LaunchOp>(op))
    return true;
  if (op->getNumRegions() != 0)
    return false;
  return isMemoryEffectFree(op);
}

/// Whether `op` (a region op) stays on the host as control flow, its body
/// mapped op by op: in host code whose loads are host reads, always; in a
/// kernel, when it holds parallel loop nests (worth launching) and nothing
/// in it reads device memory (its conditions and yields are host values).
bool isHostControlFlow(Operation *op, bool hostLoads) {
  if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ExecuteRegionOp,
           scf::IndexSwitchOp>(op))
    return false;
  if (hostLoads)
    return true;
  bool hasParallel = false, reads = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (isa<scf::ParallelOp>(inner)) {
      hasParallel = true;
      return WalkResult::skip();
    }
    if (inner->getNumResults() != 0 && !isHostOp(inner) &&
        !isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ExecuteRegionOp,
             scf::IndexSwitchOp>(inner))
      reads = true;
    return WalkResult::advance();
  });
  return hasParallel && !reads;
}

class GPUMapper {
public:
  GPUMapper(Value ctx, int64_t blockSize, bool hostLoads)
      : ctx(ctx), blockSize(blockSize), hostLoads(hostLoads) {}

  LogicalResult mapBlock(Block &block);

private:
  LogicalResult flush(SmallVectorImpl<Operation *> &group);
  LogicalResult mapParallel(scf::ParallelOp par);

  Value ctx;
  int64_t blockSize;
  bool hostLoads;
};

LogicalResult GPUMapper::mapBlock(Block &block) {
  SmallVector<Operation *> group;
  llvm::SmallPtrSet<Operation *, 16> inGroup;
  for (Operation &opRef : llvm::make_early_inc_range(block)) {
    Operation *op = &opRef;
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      if (failed(flush(group)))
        return failure();
      inGroup.clear();
      continue;
    }
    // Uses a value the pending group computes on the device (here or in a
    // nested region): joins the group.
    auto fromGroup = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && inGroup.contains(def);
    };
    bool usesGroupValue = llvm::any_of(op->getOperands(), fromGroup);
    if (!usesGroupValue && op->getNumRegions() != 0 && !inGroup.empty())
      op->walk([&](Operation *inner) {
        if (llvm::any_of(inner->getOperands(), fromGroup)) {
          usesGroupValue = true;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
    if (!usesGroupValue) {
      if (hostLoads && isa<memref::LoadOp>(op)) {
        // A host read of device data.
        auto load = cast<memref::LoadOp>(op);
        OpBuilder b(op);
        Value read = ReadOp::create(b, op->getLoc(), load.getType(), ctx,
                                    load.getMemRef(), load.getIndices());
        load.replaceAllUsesWith(read);
        load.erase();
        continue;
      }
      if (isHostOp(op)) {
        // Host ops that touch memory (host reads, launcher calls, launches)
        // must see the device work issued before them.
        if (!isMemoryEffectFree(op) && !isa<BufferOp, OutputOp, InputOp>(op)) {
          if (failed(flush(group)))
            return failure();
          inGroup.clear();
        }
        continue;
      }
      if (auto par = dyn_cast<scf::ParallelOp>(op);
          par && par.getNumResults() == 0) {
        if (failed(flush(group)))
          return failure();
        inGroup.clear();
        if (failed(mapParallel(par)))
          return failure();
        continue;
      }
      if (isHostControlFlow(op, hostLoads)) {
        if (failed(flush(group)))
          return failure();
        inGroup.clear();
        for (Region &region : op->getRegions())
          for (Block &inner : region)
            if (failed(mapBlock(inner)))
              return failure();
        continue;
      }
    }
    // Runs on the device, serially, with its neighbours.
    group.push_back(op);
    inGroup.insert(op);
  }
  return flush(group);
}

/// Moves `group` (in order) into one single-thread launch placed where the
/// last op of the group was.
LogicalResult GPUMapper::flush(SmallVectorImpl<Operation *> &group) {
  if (group.empty())
    return success();
  llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
  for (Operation *op : group)
    for (Operation *user : op->getUsers()) {
      Operation *owner = user;
      while (owner && !members.contains(owner))
        owner = owner->getParentOp();
      if (!owner)
        return op->emitError("value computed on the GPU is needed by host "
                             "code in this kernel (")
               << *user << ")";
    }
  Operation *last = group.back();
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(last);
  Location loc = last->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(b, loc);
  for (Operation *op : group)
    op->moveBefore(term);
  group.clear();
  return success();
}

/// One thread per iteration of the (flattened) nest; blocks of `blockSize`
/// threads. Nested parallel loops stay loops inside the thread.
LogicalResult GPUMapper::mapParallel(scf::ParallelOp par) {
  Location loc = par.getLoc();
  OpBuilder b(par);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> counts;
  Value total = one;
  for (auto [lb, ub, step] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
    // ceil((ub - lb) / step), at least 0.
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    span = arith::MaxSIOp::create(b, loc, span, zero);
    Value n = arith::CeilDivSIOp::create(b, loc, span, step);
    counts.push_back(n);
    total = arith::MulIOp::create(b, loc, total, n);
  }
  Value threads = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value blocks = arith::CeilDivSIOp::create(b, loc, total, threads);
  blocks = arith::MaxSIOp::create(b, loc, blocks, one);
  auto launch =
      gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(term);
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, threads),
      launch.getThreadIds().x);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  IRMapping map;
  Value rest = id;
  for (int64_t i = counts.size() - 1; i >= 0; --i) {
    Value idx = rest;
    if (i > 0) {
      idx = arith::RemUIOp::create(b, loc, rest, counts[i]);
      rest = arith::DivUIOp::create(b, loc, rest, counts[i]);
    }
    Value iv = arith::AddIOp::create(
        b, loc, par.getLowerBound()[i],
        arith::MulIOp::create(b, loc, idx, par.getStep()[i]));
    map.map(par.getInductionVars()[i], iv);
  }
  for (Operation &op : par.getBody()->without_terminator())
    b.clone(op, map);
  par.erase();
  return success();
}

/// What a reduction absorbs around it: a `linalg.fill` of its output just
/// before (the accumulators' initial value) and an elementwise
/// `linalg.generic` just after that only consumes the result (applied before
/// the store; the intermediate buffer is never written).
struct ReductionFusion {
  linalg::FillOp fill;
  Value fillValue;
  linalg::GenericOp epi;
  OpOperand *epiIn = nullptr;
};

ReductionFusion detectFusion(linalg::LinalgOp op, ArrayRef<unsigned> par) {
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

/// Shared by the reduction lowerings: loads, stores, inlined bodies.
class LoweringBase {
public:
  explicit LoweringBase(RewriterBase &rewriter) : rewriter(rewriter) {}

protected:
  Value index(Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  }
  SmallVector<Value> apply(Location loc, AffineMap map, ArrayRef<Value> dims) {
    std::optional<SmallVector<Value, 8>> idx =
        affine::expandAffineMap(rewriter, loc, map, dims);
    return SmallVector<Value>(idx->begin(), idx->end());
  }
  Value load(Location loc, Value buffer, AffineMap map, ArrayRef<Value> dims) {
    return memref::LoadOp::create(rewriter, loc, buffer, apply(loc, map, dims));
  }
  void store(Location loc, Value v, Value buffer, AffineMap map,
             ArrayRef<Value> dims) {
    memref::StoreOp::create(rewriter, loc, v, buffer, apply(loc, map, dims));
  }
  /// Clones `body` (a linalg region) with its block arguments bound to
  /// `args` and linalg.index d bound to dims[d]; returns the yielded value.
  /// Floating-point ops may contract (a multiply and the accumulating add
  /// become one fma, rounded once).
  Value inlineBody(Block &body, ValueRange args, ArrayRef<Value> dims) {
    IRMapping map;
    map.map(body.getArguments(), args);
    for (Operation &op : body.without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
        map.map(idx.getResult(), dims[idx.getDim()]);
        continue;
      }
      cloneContracting(op, map);
    }
    return map.lookupOrDefault(body.getTerminator()->getOperand(0));
  }
  /// Clones `op`; a floating-point multiply, add or subtract may contract.
  Operation *cloneContracting(Operation &op, IRMapping &map) {
    Operation *clone = rewriter.clone(op, map);
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(clone))
      if (isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(clone))
        clone->setAttr(
            fm.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(clone->getContext(),
                                          fm.getFastMathFlagsAttr().getValue() |
                                              arith::FastMathFlags::contract));
    return clone;
  }
  /// Stores the reduced value `v` of the output point `pt` (all loop dims,
  /// the parallel ones set): through the epilogue when there is one.
  void storeResult(Location loc, Value v, linalg::LinalgOp op,
                   ArrayRef<unsigned> par, ArrayRef<Value> pt,
                   ReductionFusion f) {
    OpOperand *init = op.getDpsInitOperand(0);
    if (!f.epi) {
      store(loc, v, init->get(), op.getMatchingIndexingMap(init), pt);
      return;
    }
    SmallVector<Value> edims; // the epilogue's dims: the parallel dims
    for (unsigned d : par)
      edims.push_back(pt[d]);
    SmallVector<Value> args;
    for (OpOperand *in : f.epi.getDpsInputOperands()) {
      if (in == f.epiIn)
        args.push_back(v);
      else if (!isa<MemRefType>(in->get().getType()))
        args.push_back(in->get());
      else
        args.push_back(
            load(loc, in->get(), f.epi.getMatchingIndexingMap(in), edims));
    }
    OpOperand *eout = f.epi.getDpsInitOperand(0);
    Block &ebody = *f.epi.getBlock();
    BlockArgument outArg = ebody.getArgument(ebody.getNumArguments() - 1);
    if (!outArg.use_empty())
      args.push_back(
          load(loc, eout->get(), f.epi.getMatchingIndexingMap(eout), edims));
    else
      args.push_back(ub::PoisonOp::create(rewriter, loc, outArg.getType()));
    Value r = inlineBody(ebody, args, edims);
    store(loc, r, eout->get(), f.epi.getMatchingIndexingMap(eout), edims);
  }
  void eraseFused(linalg::LinalgOp op, ReductionFusion f) {
    if (f.epi)
      rewriter.eraseOp(f.epi);
    if (f.fill)
      rewriter.eraseOp(f.fill);
    rewriter.eraseOp(op);
  }

  RewriterBase &rewriter;
};

/// Checks shared by both lowerings: buffer semantics, one output indexed by
/// exactly the parallel dims, one yielded value. Fills `par` and `red`.
bool isLowerableReduction(linalg::LinalgOp op, SmallVectorImpl<unsigned> &par,
                          SmallVectorImpl<unsigned> &red,
                          bool allowZeroResults = false) {
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

/// Unrolling of a reduction's outputs per thread: U along a parallel dim
/// other than the innermost one (the one the most inputs do not depend on),
/// V along the innermost, while at least `minThreads` threads remain.
void chooseUnroll(linalg::LinalgOp op, ArrayRef<unsigned> par,
                  int64_t minThreads, int64_t &uDim, int64_t &U, int64_t &V) {
  SmallVector<int64_t> static_ = op.getStaticLoopRanges();
  uDim = -1, U = 1, V = 1;
  int64_t outputs = 1;
  for (unsigned d : par) {
    if (ShapedType::isDynamic(static_[d]))
      return;
    outputs *= static_[d];
  }
  unsigned last = par.back();
  int bestReuse = -1;
  for (unsigned d : ArrayRef(par).drop_back()) {
    int reuse = 0;
    for (OpOperand *in : op.getDpsInputOperands())
      reuse += !op.getMatchingIndexingMap(in).isFunctionOfDim(d);
    for (int64_t f : {8, 4, 2})
      if (static_[d] % f == 0 && reuse > bestReuse &&
          outputs / f >= minThreads) {
        bestReuse = reuse, uDim = d, U = f;
        break;
      }
  }
  for (int64_t f : {4, 2})
    if (static_[last] % f == 0 && outputs / (U * f) >= minThreads &&
        static_[last] >= 32 * f) {
      V = f;
      break;
    }
}

/// Reductions and contractions (a linalg op with reduction dims whose one
/// output is indexed by all its parallel dims): one thread per tile of
/// output elements, the accumulators in registers across the reduction
/// loops (one load and one store per output element, not per step). Up to
/// two parallel dims are unrolled (U x V outputs per thread) so each loaded
/// input element is reused from registers, as long as enough threads remain
/// to fill the GPU.
class ReductionLowering : public LoweringBase {
public:
  ReductionLowering(RewriterBase &rewriter, int64_t minThreads)
      : LoweringBase(rewriter), minThreads(minThreads) {}
  LogicalResult lower(linalg::LinalgOp op);
  /// One warp per output: the 32 lanes stride over the (one, contiguous)
  /// reduction dim, then combine their partial results with a butterfly of
  /// shuffles. Needs a fill whose value is the identity of the body's
  /// combining op (add, max, min) and a 32-bit accumulator.
  LogicalResult lowerWarp(linalg::LinalgOp op);

private:
  int64_t minThreads;
};

LogicalResult ReductionLowering::lower(linalg::LinalgOp op) {
  SmallVector<unsigned> par, red;
  if (!isLowerableReduction(op, par, red))
    return failure();
  unsigned numLoops = op.getNumLoops();
  Block &body = *op.getBlock();
  Location loc = op.getLoc();
  OpOperand *init = op.getDpsInitOperand(0);
  Value out = init->get();
  AffineMap outMap = op.getMatchingIndexingMap(init);
  SmallVector<int64_t> static_ = op.getStaticLoopRanges();
  ReductionFusion fusion = detectFusion(op, par);

  int64_t uDim = -1, U = 1, V = 1;
  unsigned last = par.back();
  chooseUnroll(op, par, minThreads, uDim, U, V);

  rewriter.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  auto size = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].size);
  };
  SmallVector<Value> lbs, ubs, steps;
  for (unsigned d : par) {
    int64_t f = (int64_t)d == uDim ? U : d == last ? V : 1;
    lbs.push_back(index(loc, 0));
    ubs.push_back(f == 1 ? size(d) : index(loc, static_[d] / f));
    steps.push_back(index(loc, 1));
  }
  SmallVector<Value> redUbs;
  for (unsigned d : red)
    redUbs.push_back(size(d));

  auto par_ = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
  rewriter.setInsertionPointToStart(par_.getBody());
  // The points of this thread's tile, j = u * V + v.
  SmallVector<SmallVector<Value>> points;
  for (int64_t u = 0; u < U; ++u)
    for (int64_t v = 0; v < V; ++v) {
      SmallVector<Value> dims(numLoops);
      for (auto [i, d] : llvm::enumerate(par)) {
        Value iv = par_.getInductionVars()[i];
        int64_t f = (int64_t)d == uDim ? U : d == last ? V : 1;
        int64_t o = (int64_t)d == uDim ? u : d == last ? v : 0;
        if (f != 1)
          iv = arith::AddIOp::create(
              rewriter, loc,
              arith::MulIOp::create(rewriter, loc, iv, index(loc, f)),
              index(loc, o));
        dims[d] = iv;
      }
      points.push_back(dims);
    }
  SmallVector<Value> inits;
  for (auto &pt : points)
    inits.push_back(fusion.fillValue ? fusion.fillValue
                                     : load(loc, out, outMap, pt));
  SmallVector<Value> zeros(red.size(), index(loc, 0)),
      ones(red.size(), index(loc, 1));
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, zeros, redUbs, ones, inits,
      [&](OpBuilder &, Location l, ValueRange ivs,
          ValueRange accs) -> scf::ValueVector {
        scf::ValueVector next;
        for (auto [j, pt] : llvm::enumerate(points)) {
          SmallVector<Value> dims = pt;
          for (auto [k, d] : llvm::enumerate(red))
            dims[d] = ivs[k];
          SmallVector<Value> args;
          for (OpOperand *in : op.getDpsInputOperands()) {
            if (!isa<MemRefType>(in->get().getType()))
              args.push_back(in->get());
            else
              args.push_back(
                  load(l, in->get(), op.getMatchingIndexingMap(in), dims));
          }
          args.push_back(accs[j]);
          next.push_back(inlineBody(body, args, dims));
        }
        return next;
      });
  for (auto [j, pt] : llvm::enumerate(points))
    storeResult(loc, nest.results[j], op, par, pt, fusion);
  eraseFused(op, fusion);
  return success();
}

/// The op that combines a reduction body's accumulator with the value the
/// body computes from the inputs (acc = combine(acc, x)), when the fill
/// `init` is its identity; null otherwise.
static Operation *warpCombiner(Block &body, Value init) {
  Value acc = body.getArgument(body.getNumArguments() - 1);
  Operation *yielded = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!yielded || yielded->getNumOperands() != 2 ||
      yielded->getBlock() != &body ||
      !llvm::is_contained(yielded->getOperands(), acc))
    return nullptr;
  // acc is used only by the combiner.
  if (!acc.hasOneUse())
    return nullptr;
  Type t = acc.getType();
  if (!t.isF32() && !t.isInteger(32))
    return nullptr;
  auto cst = init.getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return nullptr;
  if (auto f = dyn_cast<FloatAttr>(cst.getValue())) {
    APFloat v = f.getValue();
    if (isa<arith::AddFOp>(yielded))
      return v.isZero() ? yielded : nullptr;
    if (isa<arith::MaximumFOp, arith::MaxNumFOp>(yielded))
      return v.isInfinity() && v.isNegative() ? yielded : nullptr;
    if (isa<arith::MinimumFOp, arith::MinNumFOp>(yielded))
      return v.isInfinity() && !v.isNegative() ? yielded : nullptr;
    return nullptr;
  }
  if (auto i = dyn_cast<IntegerAttr>(cst.getValue())) {
    APInt v = i.getValue();
    if (isa<arith::AddIOp>(yielded))
      return v.isZero() ? yielded : nullptr;
    if (isa<arith::MaxSIOp>(yielded))
      return v.isMinSignedValue() ? yielded : nullptr;
    if (isa<arith::MinSIOp>(yielded))
      return v.isMaxSignedValue() ? yielded : nullptr;
  }
  return nullptr;
}

LogicalResult ReductionLowering::lowerWarp(linalg::LinalgOp op) {
  SmallVector<unsigned> par, red;
  if (!isLowerableReduction(op, par, red, /*allowZeroResults=*/true) ||
      red.size() != 1)
    return failure();
  Block &body = *op.getBlock();
  if (!body.getOps<linalg::IndexOp>().empty())
    return failure();
  ReductionFusion fusion = detectFusion(op, par);
  if (!fusion.fillValue)
    return failure();
  Operation *combiner = warpCombiner(body, fusion.fillValue);
  if (!combiner)
    return failure();
  // The reduction dim is the contiguous one of an input (coalesced lanes),
  // long enough to keep a warp busy.
  unsigned r = red.front();
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(sizes[r]) || sizes[r] < 128)
    return failure();
  // Few outputs (rows of a softmax or normalization): a warp each. Large
  // contractions keep their tiles.
  int64_t outputs = 1;
  for (unsigned d : par) {
    if (ShapedType::isDynamic(sizes[d]))
      return failure();
    outputs *= sizes[d];
  }
  if (outputs > 65536)
    return failure();
  bool contiguous = false;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap m = op.getMatchingIndexingMap(in);
    contiguous |= m.getNumResults() > 0 &&
                  m.getResults().back() == getAffineDimExpr(r, op.getContext());
  }
  if (!contiguous)
    return failure();

  Location loc = op.getLoc();
  unsigned numLoops = op.getNumLoops();
  rewriter.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  auto size = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].size);
  };
  // The parallel dims, then the lane (innermost: a warp is one output).
  SmallVector<Value> lbs, ubs, steps;
  for (unsigned d : par) {
    lbs.push_back(index(loc, 0));
    ubs.push_back(size(d));
    steps.push_back(index(loc, 1));
  }
  lbs.push_back(index(loc, 0));
  ubs.push_back(index(loc, 32));
  steps.push_back(index(loc, 1));
  auto par_ = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
  rewriter.setInsertionPointToStart(par_.getBody());
  Value lane = par_.getInductionVars().back();
  SmallVector<Value> pt(numLoops);
  for (auto [i, d] : llvm::enumerate(par))
    pt[d] = par_.getInductionVars()[i];
  auto loop = scf::ForOp::create(rewriter, loc, lane, size(r), index(loc, 32),
                                 ValueRange{fusion.fillValue});
  rewriter.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> dims = pt;
  dims[r] = loop.getInductionVar();
  SmallVector<Value> args;
  for (OpOperand *in : op.getDpsInputOperands())
    args.push_back(
        isa<MemRefType>(in->get().getType())
            ? load(loc, in->get(), op.getMatchingIndexingMap(in), dims)
            : in->get());
  args.push_back(loop.getRegionIterArgs()[0]);
  scf::YieldOp::create(rewriter, loc, inlineBody(body, args, dims));
  rewriter.setInsertionPointAfter(loop);
  // Butterfly: after log2(32) steps every lane holds the combined value.
  Value acc = loop.getResult(0);
  for (int32_t offset : {16, 8, 4, 2, 1}) {
    Value other = gpu::ShuffleOp::create(rewriter, loc, acc, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    OperationState state(loc, combiner->getName(), ValueRange{acc, other},
                         acc.getType(), combiner->getAttrs());
    acc = rewriter.create(state)->getResult(0);
  }
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      lane, index(loc, 0));
  auto guard = scf::IfOp::create(rewriter, loc, first, /*withElse=*/false);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  storeResult(loc, acc, op, par, pt, fusion);
  eraseFused(op, fusion);
  return success();
}

/// A contraction body `acc + a * b` whose product's operands are computed
/// from disjoint sets of inputs: `a` from X's, `b` from W's, each through a
/// chain of pure scalar ops (the casts mixed precision inserts, a fused
/// producer's bias and ReLU). Zero-padded steps (a = b = 0) then leave the
/// accumulator unchanged, and partial sums over parts of K may be added.
struct MulAccBody {
  Operation *add = nullptr, *mul = nullptr;
  Value acc, a, b;
  SmallVector<unsigned> xInputs, wInputs; // input numbers
};

/// The body ops `root` is computed from (in body order) and the inputs it
/// reads; false when it reads the accumulator or an op with effects.
static bool sliceOf(Block &body, unsigned numInputs, Value root,
                    SmallVectorImpl<Operation *> &ops,
                    SmallVectorImpl<unsigned> &inputs) {
  llvm::SmallPtrSet<Operation *, 8> set;
  llvm::SmallBitVector args(numInputs);
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        continue;
      if (arg.getArgNumber() >= numInputs)
        return false;
      args.set(arg.getArgNumber());
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue; // defined above the op
    if (def->getNumRegions() || !isMemoryEffectFree(def) ||
        isa<linalg::IndexOp>(def))
      return false;
    if (set.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  for (Operation &o : body.without_terminator())
    if (set.contains(&o))
      ops.push_back(&o);
  for (unsigned i : args.set_bits())
    inputs.push_back(i);
  return true;
}

static std::optional<MulAccBody> analyzeMulAcc(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  unsigned numIn = op.getNumDpsInputs();
  if (body.getNumArguments() != numIn + 1)
    return std::nullopt;
  Value acc = body.getArgument(numIn);
  Operation *add = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!add || add->getBlock() != &body ||
      !isa<arith::AddFOp, arith::AddIOp>(add) || !acc.hasOneUse() ||
      !llvm::is_contained(add->getOperands(), acc))
    return std::nullopt;
  Value prod =
      add->getOperand(0) == acc ? add->getOperand(1) : add->getOperand(0);
  Operation *mul = prod.getDefiningOp();
  if (!mul || mul->getBlock() != &body ||
      !isa<arith::MulFOp, arith::MulIOp>(mul) || !prod.hasOneUse())
    return std::nullopt;
  MulAccBody r;
  r.add = add;
  r.mul = mul;
  r.acc = acc;
  r.a = mul->getOperand(0);
  r.b = mul->getOperand(1);
  SmallVector<Operation *> ops;
  if (!sliceOf(body, numIn, r.a, ops, r.xInputs) ||
      !sliceOf(body, numIn, r.b, ops, r.wInputs) || r.xInputs.empty() ||
      r.wInputs.empty())
    return std::nullopt;
  for (unsigned i : r.xInputs)
    if (llvm::is_contained(r.wInputs, i))
      return std::nullopt;
  return r;
}

/// Contractions (matmul, batched matmul, convolution: the output indexed by
/// every parallel dim, the body acc + a * b with a computed from one set of
/// inputs, X's, and b from another, W's; see MulAccBody) as a tiled matrix
/// product through shared memory: the parallel dims only X's inputs read
/// form the GEMM's M, those only W's read its N, those both read a batch
/// (grid z), the reduction dims its K. What is staged is a and b themselves,
/// computed from the loaded inputs (casts, a fused producer's bias and ReLU
/// run once per staged element, not once per product).
///
/// A block of 16x16 threads computes a T x T tile of outputs (T = 128, each
/// thread 8x8 in registers, when that still fills the GPU; else T = 64 and
/// 4x4), a thread's outputs in runs of 4 that are 64 apart, so its operands
/// come from shared memory as 4-wide vector loads without bank conflicts.
/// K advances BK (1024 / T) at a time through two shared buffers: the
/// threads load the next slab of X and W into registers (through their
/// indexing maps, so a convolution's windows are gathered as an implicit
/// im2col; consecutive threads along whichever of the slab's dims is
/// contiguous in memory; the column coordinates computed once, outside the
/// K loop) while they multiply the current one, one barrier per step. Rows
/// of the shared buffers are padded by 4 so column- and K-major stores are
/// both conflict-free. The thread layout follows the output's innermost dim
/// so stores coalesce.
///
/// Half operands extended to an f32 accumulator go to tensor cores instead:
/// the half values are staged in K-contiguous slabs (BK = 32, rows padded by
/// 8 halves), 8 warps as 2 x 4 each own T/2 x T/4 outputs as 16x8 tiles of
/// mma.sync m16n8k16 (row x col), their fragments read as K pairs.
///
/// When the tiles alone leave the GPU short of blocks (batch 1, few large
/// outputs), K is split S ways: each block sums one part into a scratch
/// buffer, and a second launch adds the parts, the fill value and the
/// epilogue. Zero padding (K beyond the slab or the part, M and N beyond
/// the tile) stages a = b = 0, which leaves acc + a * b exact.
///
/// Static shapes, a fill before (the initial value), M, N >= 16 and at
/// least `minBlocks` blocks; anything else goes to ReductionLowering.
class TiledContraction : public LoweringBase {
public:
  TiledContraction(RewriterBase &rewriter, Value ctx, int64_t minBlocks,
                   int64_t fillBlocks, bool tensorCores)
      : LoweringBase(rewriter), ctx(ctx), minBlocks(minBlocks),
        fillBlocks(fillBlocks), tensorCores(tensorCores) {}
  LogicalResult lower(linalg::LinalgOp op);

private:
  Value ctx;
  int64_t minBlocks, fillBlocks;
  bool tensorCores;
  static constexpr int64_t kThreads = 256, kSide = 16, kRun = 4, kChunk = 64;
  /// `linear` delinearized over `dims` (outermost first) into `pt`.
  void delinearize(Location loc, Value linear, ArrayRef<unsigned> dims,
                   ArrayRef<int64_t> sizes, SmallVectorImpl<Value> &pt) {
    for (int64_t i = dims.size() - 1; i >= 0; --i) {
      Value sz = index(loc, sizes[dims[i]]);
      pt[dims[i]] =
          i == 0
              ? linear
              : arith::RemUIOp::create(rewriter, loc, linear, sz).getResult();
      if (i > 0)
        linear = arith::DivUIOp::create(rewriter, loc, linear, sz);
    }
  }
  Value add(Location loc, Value a, Value b) {
    return arith::AddIOp::create(rewriter, loc, a, b);
  }
  Value mul(Location loc, Value a, int64_t b) {
    return arith::MulIOp::create(rewriter, loc, a, index(loc, b));
  }
  Value ult(Location loc, Value a, Value b) {
    return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, a,
                                 b);
  }
  /// acc + a * b with the body's own ops, free to contract into an fma.
  Value mulAdd(const MulAccBody &ma, Value a, Value b, Value acc) {
    IRMapping map;
    map.map(ma.a, a);
    map.map(ma.b, b);
    map.map(ma.acc, acc);
    cloneContracting(*ma.mul, map);
    return cloneContracting(*ma.add, map)->getResult(0);
  }
};

LogicalResult TiledContraction::lower(linalg::LinalgOp op) {
  SmallVector<unsigned> par, red;
  if (!isLowerableReduction(op, par, red))
    return failure();
  Block &body = *op.getBlock();
  if (!body.getOps<linalg::IndexOp>().empty())
    return failure();
  std::optional<MulAccBody> ma = analyzeMulAcc(op);
  if (!ma)
    return failure();
  Type accType = body.getArgument(op.getNumDpsInputs()).getType();
  // Half operands accumulated in f32: tensor cores (mma.sync m16n8k16),
  // staging the half values before their extension.
  auto halfSource = [&](Value v) -> Value {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    if (!ext || ext->getBlock() != &body)
      return {};
    Type t = ext.getIn().getType();
    return t.isF16() || t.isBF16() ? ext.getIn() : Value();
  };
  Value aHalf = halfSource(ma->a), bHalf = halfSource(ma->b);
  bool mma = tensorCores && isa<arith::MulFOp>(ma->mul) && aHalf && bHalf &&
             aHalf.getType() == bHalf.getType() && accType.isF32();
  Value xRoot = mma ? aHalf : ma->a, wRoot = mma ? bHalf : ma->b;
  Type xElem = xRoot.getType(), wElem = wRoot.getType();
  for (Type t : {xElem, wElem})
    if (!t.isIntOrFloat() || t.getIntOrFloatBitWidth() < 8)
      return failure();
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (llvm::any_of(sizes, ShapedType::isDynamic))
    return failure();
  ReductionFusion fusion = detectFusion(op, par);
  if (!fusion.fillValue)
    return failure();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto reads = [&](ArrayRef<unsigned> inputs, unsigned d) {
    return llvm::any_of(inputs, [&](unsigned i) {
      return op.getMatchingIndexingMap(op.getDpsInputOperand(i))
          .isFunctionOfDim(d);
    });
  };
  SmallVector<unsigned> mDims, nDims, bDims;
  for (unsigned d : par) {
    bool x = reads(ma->xInputs, d), w = reads(ma->wInputs, d);
    (x && !w ? mDims : !x && w ? nDims : bDims).push_back(d);
  }
  auto prod = [&](ArrayRef<unsigned> dims) {
    int64_t p = 1;
    for (unsigned d : dims)
      p *= sizes[d];
    return p;
  };
  int64_t M = prod(mDims), N = prod(nDims), B = prod(bDims), K = prod(red);
  if (mDims.empty() || nDims.empty() || M < 16 || N < 16 || K < 1)
    return failure();
  // The thread x direction follows the output's innermost dim.
  unsigned innermost =
      cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  bool xIsM = llvm::is_contained(mDims, innermost);
  if (!xIsM && !llvm::is_contained(nDims, innermost))
    return failure();

  // The tile: 128 when its blocks still fill the GPU once, else 64.
  auto ceil = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  auto blocksFor = [&](int64_t t) { return ceil(M, t) * ceil(N, t) * B; };
  int64_t tile = blocksFor(128) * 2 >= fillBlocks ? 128 : 64;
  int64_t bk = 1024 / tile, runs = tile / kChunk, perThread = runs * kRun;
  int64_t blocks = blocksFor(tile);
  // Tensor cores: K advances 32 at a time; 8 warps as 2 x 4, each
  // T/2 x T/4 outputs in tiles of 16 x 8.
  int64_t mTiles = tile / 32, nTiles = tile / 32;
  if (mma)
    bk = 32;
  // Split K while the blocks do not fill the GPU and each part keeps at
  // least 128 steps.
  int64_t splits = 1, kPart = K;
  if (blocks < fillBlocks) {
    splits = std::max<int64_t>(1, std::min(ceil(fillBlocks, blocks), K / 128));
    kPart = ceil(ceil(K, splits), bk) * bk;
    splits = ceil(K, kPart);
  }
  if (blocks * splits < minBlocks || B * splits > 65535)
    return failure();
  int64_t slabs = ceil(kPart, bk);

  Location loc = op.getLoc();
  MLIRContext *ctxt = op.getContext();
  rewriter.setInsertionPoint(op);
  // Split K: the parts go through a scratch buffer [B * S][Y][X].
  int64_t X = xIsM ? M : N, Y = xIsM ? N : M;
  Value parts;
  if (splits > 1) {
    auto partsType = MemRefType::get({B * splits, Y, X}, accType);
    Block *entry = &op->getParentOfType<func::FuncOp>().getBody().front();
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(entry);
    parts = BufferOp::create(rewriter, loc, partsType, ctx, ValueRange{},
                             IntegerAttr())
                .getBuffer();
  }
  Value one = index(loc, 1);
  auto wg = gpu::AddressSpaceAttr::get(ctxt, gpu::AddressSpace::Workgroup);
  // Shared slabs [2][BK][T + 4] (a thread's columns read 4 at a time), or
  // for tensor cores [2][T][BK + 8] (fragments read as K pairs); the
  // padding keeps both the stores and the reads free of bank conflicts.
  SmallVector<int64_t> slabShape = {2, bk, tile + 4};
  if (mma)
    slabShape = {2, tile, bk + 8};
  auto xsType =
      MemRefType::get(slabShape, xElem, MemRefLayoutAttrInterface(), wg);
  auto wsType =
      MemRefType::get(slabShape, wElem, MemRefLayoutAttrInterface(), wg);
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, index(loc, ceil(X, tile)), index(loc, ceil(Y, tile)),
      index(loc, B * splits), index(loc, kThreads), one, one);
  Value xs = launch.addWorkgroupAttribution(xsType, loc);
  Value ws = launch.addWorkgroupAttribution(wsType, loc);
  Block &lb = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&lb);
  auto term = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(term);

  Value tid = launch.getThreadIds().x;
  Value lx = arith::RemUIOp::create(rewriter, loc, tid, index(loc, kSide));
  Value ly = arith::DivUIOp::create(rewriter, loc, tid, index(loc, kSide));
  Value tileX = mul(loc, launch.getBlockIds().x, tile);
  Value tileY = mul(loc, launch.getBlockIds().y, tile);
  Value mBase = xIsM ? tileX : tileY, nBase = xIsM ? tileY : tileX;
  Value mThr = xIsM ? lx : ly, nThr = xIsM ? ly : lx;
  // The batch point and the K part of this block.
  Value bz = launch.getBlockIds().z, batch = bz, kBegin = index(loc, 0);
  Value kEnd = index(loc, K);
  if (splits > 1) {
    batch = arith::DivUIOp::create(rewriter, loc, bz, index(loc, splits));
    kBegin =
        mul(loc, arith::RemUIOp::create(rewriter, loc, bz, index(loc, splits)),
            kPart);
    kEnd = arith::MinUIOp::create(rewriter, loc,
                                  add(loc, kBegin, index(loc, kPart)), kEnd);
  }
  SmallVector<Value> base(op.getNumLoops(), index(loc, 0));
  if (!bDims.empty())
    delinearize(loc, batch, bDims, sizes, base);

  // Staging one operand: the slot r of a thread holds element
  // e = tid + 256 r of the BK x T slab, (k, col) = (e / T, e % T) when the
  // operand's innermost memory dim follows a column dim, else
  // (e % BK, e / BK). The column part of each slot's point is fixed.
  // A staged value is the product operand computed from its side's inputs
  // (loaded through their indexing maps) by the body's ops.
  struct Stage {
    Value root, dst, zero;
    SmallVector<unsigned> inputs;
    SmallVector<Operation *> ops;
    SmallVector<Value> kr, col, colOk;
    SmallVector<SmallVector<Value>> pt;
  };
  auto makeStage = [&](Value root, ArrayRef<unsigned> inputs, Value dst,
                       ArrayRef<unsigned> cols, Value colBase,
                       int64_t colSize) {
    Stage s;
    s.root = root;
    s.dst = dst;
    SmallVector<unsigned> unused;
    (void)sliceOf(body, op.getNumDpsInputs(), root, s.ops, unused);
    s.inputs.assign(inputs.begin(), inputs.end());
    s.zero = arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getZeroAttr(root.getType()));
    // Consecutive threads follow the side's largest input in memory.
    AffineMap map;
    int64_t rank = -1;
    for (unsigned i : inputs) {
      OpOperand *in = op.getDpsInputOperand(i);
      auto t = dyn_cast<MemRefType>(in->get().getType());
      if (t && t.getRank() > rank)
        rank = t.getRank(), map = op.getMatchingIndexingMap(in);
    }
    AffineExpr last = map && map.getNumResults()
                          ? map.getResults().back()
                          : getAffineConstantExpr(0, op.getContext());
    bool colFast =
        llvm::any_of(cols, [&](unsigned d) { return last.isFunctionOfDim(d); });
    bool kFast = !colFast && llvm::any_of(red, [&](unsigned d) {
      return last.isFunctionOfDim(d);
    });
    for (int64_t r = 0; r < bk * tile / kThreads; ++r) {
      Value e = add(loc, tid, index(loc, r * kThreads));
      Value kr, cc;
      if (kFast) {
        kr = arith::RemUIOp::create(rewriter, loc, e, index(loc, bk));
        cc = arith::DivUIOp::create(rewriter, loc, e, index(loc, bk));
      } else {
        kr = arith::DivUIOp::create(rewriter, loc, e, index(loc, tile));
        cc = arith::RemUIOp::create(rewriter, loc, e, index(loc, tile));
      }
      Value c = add(loc, colBase, cc);
      Value ok = ult(loc, c, index(loc, colSize));
      Value clamped =
          arith::SelectOp::create(rewriter, loc, ok, c, index(loc, 0));
      SmallVector<Value> pt = base;
      delinearize(loc, clamped, cols, sizes, pt);
      s.kr.push_back(kr);
      s.col.push_back(cc);
      s.colOk.push_back(ok);
      s.pt.push_back(pt);
    }
    return s;
  };
  Stage sx = makeStage(xRoot, ma->xInputs, xs, mDims, mBase, M);
  Stage sw = makeStage(wRoot, ma->wInputs, ws, nDims, nBase, N);
  // The slab at k0 into registers: zero outside [kBegin, kEnd) and outside
  // the problem (the point clamped to one inside it).
  auto loadSlab = [&](Value k0, SmallVectorImpl<Value> &vals) {
    for (Stage *s : {&sx, &sw})
      for (auto [r, kr] : llvm::enumerate(s->kr)) {
        Value k = add(loc, k0, kr);
        Value ok = ult(loc, k, kEnd);
        Value kc = arith::SelectOp::create(rewriter, loc, ok, k, kBegin);
        SmallVector<Value> pt = s->pt[r];
        delinearize(loc, kc, red, sizes, pt);
        IRMapping values;
        for (unsigned i : s->inputs) {
          OpOperand *in = op.getDpsInputOperand(i);
          values.map(
              body.getArgument(i),
              isa<MemRefType>(in->get().getType())
                  ? load(loc, in->get(), op.getMatchingIndexingMap(in), pt)
                  : in->get());
        }
        for (Operation *o : s->ops)
          rewriter.clone(*o, values);
        Value v = values.lookupOrDefault(s->root);
        ok = arith::AndIOp::create(rewriter, loc, ok, s->colOk[r]);
        vals.push_back(arith::SelectOp::create(rewriter, loc, ok, v, s->zero));
      }
  };

  // Tensor cores: lane = (g, t) = (lane / 4, lane % 4); warp w covers
  // rows warpM + [0, T/2) and columns warpN + [0, T/4) of the tile.
  Value g, t4, warpM, warpN;
  if (mma) {
    Value lane = arith::RemUIOp::create(rewriter, loc, tid, index(loc, 32));
    Value warp = arith::DivUIOp::create(rewriter, loc, tid, index(loc, 32));
    g = arith::DivUIOp::create(rewriter, loc, lane, index(loc, 4));
    t4 = arith::RemUIOp::create(rewriter, loc, lane, index(loc, 4));
    warpM = mul(loc, arith::RemUIOp::create(rewriter, loc, warp, index(loc, 2)),
                tile / 2);
    warpN = mul(loc, arith::DivUIOp::create(rewriter, loc, warp, index(loc, 2)),
                tile / 4);
  }
  Value accInit = fusion.fillValue;
  if (splits > 1)
    accInit =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(accType));
  int64_t nAcc = mma ? mTiles * nTiles * 4 : perThread * perThread;
  SmallVector<Value> inits(nAcc, accInit);
  SmallVector<Value> first;
  loadSlab(kBegin, first);
  inits.append(first);
  auto kLoop = scf::ForOp::create(rewriter, loc, index(loc, 0),
                                  index(loc, slabs), one, inits);
  rewriter.setInsertionPointToStart(kLoop.getBody());
  Value t = kLoop.getInductionVar();
  Value buf = arith::AndIOp::create(rewriter, loc, t, one);
  ValueRange iter = kLoop.getRegionIterArgs();
  ValueRange accs = iter.take_front(nAcc);
  ValueRange staged = iter.drop_front(nAcc);
  {
    int64_t i = 0;
    for (Stage *s : {&sx, &sw})
      for (auto [kr, col] : llvm::zip(s->kr, s->col))
        memref::StoreOp::create(rewriter, loc, staged[i++], s->dst,
                                mma ? ValueRange{buf, col, kr}
                                    : ValueRange{buf, kr, col});
  }
  gpu::BarrierOp::create(rewriter, loc);
  // The next slab's loads are issued before this one's products.
  Value tNext = add(loc, t, one);
  auto more = scf::IfOp::create(rewriter, loc, ValueRange(staged).getTypes(),
                                ult(loc, tNext, index(loc, slabs)),
                                /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(more.thenBlock());
  SmallVector<Value> next;
  loadSlab(add(loc, kBegin, mul(loc, tNext, bk)), next);
  scf::YieldOp::create(rewriter, loc, next);
  rewriter.setInsertionPointToStart(more.elseBlock());
  scf::YieldOp::create(rewriter, loc, staged);
  rewriter.setInsertionPointAfter(more);

  SmallVector<Value> acc(accs.begin(), accs.end());
  if (mma) {
    auto pairType = VectorType::get({2}, xElem);
    auto i32 = rewriter.getI32Type();
    bool bf16 = xElem.isBF16();
    // A K pair of one row of a shared slab, as an mma operand register
    // (f16 pairs as they are, bf16 ones as i32).
    auto pair = [&](Value smem, Value r, Value k) -> Value {
      auto ld = vector::LoadOp::create(rewriter, loc, pairType, smem,
                                       ValueRange{buf, r, k});
      ld.setAlignment(2 * xElem.getIntOrFloatBitWidth() / 8);
      if (!bf16)
        return ld;
      return LLVM::BitcastOp::create(rewriter, loc, i32, ld);
    };
    auto f32 = rewriter.getF32Type();
    auto resType = LLVM::LLVMStructType::getLiteral(ctxt, {f32, f32, f32, f32});
    NVVM::MMATypes ptx = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Value t2 = mul(loc, t4, 2);
    for (int64_t ks = 0; ks < bk; ks += 16) {
      Value k0 = add(loc, t2, index(loc, ks)), k1 = add(loc, k0, index(loc, 8));
      SmallVector<SmallVector<Value>> aFrag, bFrag;
      for (int64_t i = 0; i < mTiles; ++i) {
        Value r0 = add(loc, add(loc, warpM, g), index(loc, i * 16));
        Value r1 = add(loc, r0, index(loc, 8));
        aFrag.push_back({pair(xs, r0, k0), pair(xs, r1, k0), pair(xs, r0, k1),
                         pair(xs, r1, k1)});
      }
      for (int64_t j = 0; j < nTiles; ++j) {
        Value n = add(loc, add(loc, warpN, g), index(loc, j * 8));
        bFrag.push_back({pair(ws, n, k0), pair(ws, n, k1)});
      }
      for (int64_t i = 0; i < mTiles; ++i)
        for (int64_t j = 0; j < nTiles; ++j) {
          int64_t c = (i * nTiles + j) * 4;
          auto op_ = NVVM::MmaOp::create(
              rewriter, loc, resType, aFrag[i], bFrag[j],
              ArrayRef<Value>(acc).slice(c, 4), {16, 8, 16}, std::nullopt,
              std::nullopt, std::array<NVVM::MMATypes, 2>{ptx, ptx},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t e = 0; e < 4; ++e)
            acc[c + e] = LLVM::ExtractValueOp::create(rewriter, loc, op_,
                                                      ArrayRef<int64_t>{e});
        }
    }
  } else {
    // A thread's columns in the shared slab: runs of 4, 64 apart.
    auto threadCols = [&](Value thr) {
      SmallVector<Value> v;
      for (int64_t c = 0; c < runs; ++c)
        v.push_back(add(loc, mul(loc, thr, kRun), index(loc, c * kChunk)));
      return v;
    };
    auto vecOf = [&](Type et) { return VectorType::get({kRun}, et); };
    SmallVector<Value> xCols = threadCols(mThr), wCols = threadCols(nThr);
    VectorType xvt = vecOf(xElem), wvt = vecOf(wElem);
    int64_t xAlign = kRun * xElem.getIntOrFloatBitWidth() / 8;
    int64_t wAlign = kRun * wElem.getIntOrFloatBitWidth() / 8;
    for (int64_t kk = 0; kk < bk; ++kk) {
      Value kkv = index(loc, kk);
      auto fetch = [&](Value smem, ArrayRef<Value> cols, VectorType vt,
                       int64_t align) {
        SmallVector<Value> v;
        for (Value col : cols) {
          auto ld = vector::LoadOp::create(rewriter, loc, vt, smem,
                                           ValueRange{buf, kkv, col});
          ld.setAlignment(align);
          for (int64_t e = 0; e < kRun; ++e)
            v.push_back(vector::ExtractOp::create(rewriter, loc, ld, e));
        }
        return v;
      };
      SmallVector<Value> a = fetch(xs, xCols, xvt, xAlign);
      SmallVector<Value> w = fetch(ws, wCols, wvt, wAlign);
      for (int64_t i = 0; i < perThread; ++i)
        for (int64_t j = 0; j < perThread; ++j)
          acc[i * perThread + j] =
              mulAdd(*ma, a[i], w[j], acc[i * perThread + j]);
    }
  }
  SmallVector<Value> yields = acc;
  llvm::append_range(yields, more.getResults());
  scf::YieldOp::create(rewriter, loc, yields);
  rewriter.setInsertionPointAfter(kLoop);

  // Results: (m, n, accumulator) of this thread. SIMT: point i along a
  // tile dim is base + (i / 4) * 64 + thread * 4 + i % 4. Tensor cores:
  // accumulator e of tile (i, j) is row g + 8 (e / 2), column 2t + e % 2.
  struct Out {
    Value m, n;
    int64_t acc;
  };
  SmallVector<Out> outs;
  if (mma) {
    Value t2 = mul(loc, t4, 2);
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t e = 0; e < 4; ++e) {
          Value m = add(loc, add(loc, mBase, add(loc, warpM, g)),
                        index(loc, i * 16 + (e / 2) * 8));
          Value n = add(loc, add(loc, nBase, add(loc, warpN, t2)),
                        index(loc, j * 8 + e % 2));
          outs.push_back({m, n, (i * nTiles + j) * 4 + e});
        }
  } else {
    auto coord = [&](Value tileBase, Value thread, int64_t i) -> Value {
      return add(loc, add(loc, tileBase, mul(loc, thread, kRun)),
                 index(loc, (i / kRun) * kChunk + i % kRun));
    };
    for (int64_t i = 0; i < perThread; ++i)
      for (int64_t j = 0; j < perThread; ++j)
        outs.push_back(
            {coord(mBase, mThr, i), coord(nBase, nThr, j), i * perThread + j});
  }
  for (Out &o : outs) {
    Value m = o.m, n = o.n;
    Value ok = arith::AndIOp::create(rewriter, loc, ult(loc, m, index(loc, M)),
                                     ult(loc, n, index(loc, N)));
    auto guard = scf::IfOp::create(rewriter, loc, ok, /*withElse=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value v = kLoop.getResult(o.acc);
    if (splits > 1) {
      memref::StoreOp::create(rewriter, loc, v, parts,
                              ValueRange{bz, xIsM ? n : m, xIsM ? m : n});
    } else {
      SmallVector<Value> pt = base;
      delinearize(loc, m, mDims, sizes, pt);
      delinearize(loc, n, nDims, sizes, pt);
      storeResult(loc, v, op, par, pt, fusion);
    }
    rewriter.setInsertionPointAfter(guard);
  }

  if (splits > 1) {
    // The parts added, one thread per output along X.
    rewriter.setInsertionPoint(op);
    int64_t total = B * Y * X;
    auto sum =
        gpu::LaunchOp::create(rewriter, loc, index(loc, ceil(total, kThreads)),
                              one, one, index(loc, kThreads), one, one);
    Block &sb = sum.getBody().front();
    rewriter.setInsertionPointToEnd(&sb);
    auto sterm = gpu::TerminatorOp::create(rewriter, loc);
    rewriter.setInsertionPoint(sterm);
    Value g =
        add(loc, mul(loc, sum.getBlockIds().x, kThreads), sum.getThreadIds().x);
    auto guard =
        scf::IfOp::create(rewriter, loc, ult(loc, g, index(loc, total)),
                          /*withElse=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value x = arith::RemUIOp::create(rewriter, loc, g, index(loc, X));
    Value rest = arith::DivUIOp::create(rewriter, loc, g, index(loc, X));
    Value y = arith::RemUIOp::create(rewriter, loc, rest, index(loc, Y));
    Value b = arith::DivUIOp::create(rewriter, loc, rest, index(loc, Y));
    Value total_ = fusion.fillValue;
    bool isFloat = isa<FloatType>(accType);
    for (int64_t s = 0; s < splits; ++s) {
      Value part = memref::LoadOp::create(
          rewriter, loc, parts,
          ValueRange{add(loc, mul(loc, b, splits), index(loc, s)), y, x});
      total_ =
          isFloat
              ? arith::AddFOp::create(rewriter, loc, total_, part).getResult()
              : arith::AddIOp::create(rewriter, loc, total_, part).getResult();
    }
    SmallVector<Value> pt(op.getNumLoops(), index(loc, 0));
    if (!bDims.empty())
      delinearize(loc, b, bDims, sizes, pt);
    delinearize(loc, xIsM ? x : y, mDims, sizes, pt);
    delinearize(loc, xIsM ? y : x, nDims, sizes, pt);
    storeResult(loc, total_, op, par, pt, fusion);
  }
  eraseFused(op, fusion);
  return success();
}

struct MapKernelsToGPUPass
    : public kiln::impl::KilnMapKernelsToGPUBase<MapKernelsToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      module.emitError("block-size must be a multiple of 32 in [32, 1024]");
      return signalPassFailure();
    }

    // Launchers take the runtime context first.
    SmallVector<func::FuncOp> kernels, hosts;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (fn->hasAttr("kiln.kernel")) {
        if (failed(fn.insertArgument(0, ptrType, {}, fn.getLoc())))
          return signalPassFailure();
        kernels.push_back(fn);
      } else {
        hosts.push_back(fn);
      }
    }
    SmallVector<LaunchOp> launches;
    module.walk([&](LaunchOp op) { launches.push_back(op); });
    for (LaunchOp op : launches) {
      OpBuilder b(op);
      SmallVector<Value> args = {op.getCtx()};
      llvm::append_range(args, op.getArgs());
      func::CallOp::create(b, op.getLoc(), op.getKernelAttr(), TypeRange{},
                           args);
      op.erase();
    }

    // Constants: one weight index per global, in module order.
    llvm::DenseMap<StringAttr, int64_t> weightIndex;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (global.getConstant() && global.getInitialValue())
        weightIndex.try_emplace(global.getSymNameAttr(), weightIndex.size());

    IRRewriter rewriter(context);
    auto prepare = [&](func::FuncOp fn, Value ctx) -> LogicalResult {
      // Allocations → run-scoped device buffers; memref.copy → linalg.copy.
      SmallVector<Operation *> ops;
      fn.walk([&](Operation *op) { ops.push_back(op); });
      for (Operation *op : ops) {
        rewriter.setInsertionPoint(op);
        if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
          auto type = cast<MemRefType>(op->getResult(0).getType());
          if (!type.getLayout().isIdentity() || type.getMemorySpace())
            return op->emitError("unsupported allocation on the GPU: ") << type;
          auto buffer = BufferOp::create(rewriter, op->getLoc(), type, ctx,
                                         op->getOperands(), IntegerAttr());
          rewriter.replaceOp(op, buffer.getBuffer());
        } else if (isa<memref::DeallocOp>(op)) {
          rewriter.eraseOp(op);
        } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
          linalg::CopyOp::create(rewriter, op->getLoc(), copy.getSource(),
                                 copy.getTarget());
          rewriter.eraseOp(op);
        } else if (auto reshape = dyn_cast<memref::ReshapeOp>(op)) {
          // A reshape reads its shape operand: static result dims need no
          // read; dynamic ones are host reads. The result is a row-major
          // view of the (contiguous) source.
          MemRefType type = reshape.getType();
          Location loc = op->getLoc();
          SmallVector<OpFoldResult> sizes, strides(type.getRank());
          for (int64_t i = 0; i < type.getRank(); ++i) {
            if (!type.isDynamicDim(i)) {
              sizes.push_back(rewriter.getIndexAttr(type.getDimSize(i)));
              continue;
            }
            Value idx = arith::ConstantIndexOp::create(rewriter, loc, i);
            Value v = ReadOp::create(
                rewriter, loc, reshape.getShape().getType().getElementType(),
                ctx, reshape.getShape(), ValueRange{idx});
            if (!v.getType().isIndex())
              v = arith::IndexCastOp::create(rewriter, loc,
                                             rewriter.getIndexType(), v);
            sizes.push_back(v);
          }
          OpFoldResult stride = rewriter.getIndexAttr(1);
          for (int64_t i = type.getRank() - 1; i >= 0; --i) {
            strides[i] = stride;
            std::optional<int64_t> a = getConstantIntValue(stride);
            std::optional<int64_t> b = getConstantIntValue(sizes[i]);
            if (a && b)
              stride = rewriter.getIndexAttr(*a * *b);
            else
              stride =
                  arith::MulIOp::create(
                      rewriter, loc,
                      getValueOrCreateConstantIndexOp(rewriter, loc, stride),
                      getValueOrCreateConstantIndexOp(rewriter, loc, sizes[i]))
                      .getResult();
          }
          auto cast = memref::ReinterpretCastOp::create(
              rewriter, loc, type, reshape.getSource(),
              rewriter.getIndexAttr(0), sizes, strides);
          rewriter.replaceOp(op, cast.getResult());
        } else if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
          auto it = weightIndex.find(get.getNameAttr().getAttr());
          if (it == weightIndex.end())
            return op->emitError("global '")
                   << get.getName() << "' is not a constant";
          rewriter.replaceOpWithNewOp<WeightOp>(
              op, get.getType(), ctx, get.getNameAttr(),
              rewriter.getI64IntegerAttr(it->second));
        }
      }
      // Buffers of static shape and weights move to the entry block, so a
      // loop that runs on the device as a whole does not allocate inside
      // device code (sharing one buffer across iterations is what the CPU
      // path's per-iteration alloc/dealloc amounts to).
      Block &entry = fn.getBody().front();
      SmallVector<Operation *> hoist;
      fn.walk([&](Operation *op) {
        if (op->getBlock() == &entry)
          return;
        if (isa<WeightOp>(op) ||
            (isa<BufferOp>(op) && cast<BufferOp>(op).getDynamicSizes().empty()))
          hoist.push_back(op);
      });
      for (Operation *op : hoist)
        op->moveBefore(&entry, entry.begin());
      // Reductions and contractions first (they absorb the fill before and
      // the elementwise op after them), then every other linalg op →
      // parallel loops.
      SmallVector<linalg::LinalgOp> reductions;
      fn.walk([&](linalg::LinalgOp op) {
        if (op.getNumReductionLoops() > 0)
          reductions.push_back(op);
      });
      ReductionLowering lowering(rewriter, minThreads);
      TiledContraction tiled(rewriter, ctx, /*minBlocks=*/24, fillBlocks,
                             tensorCores);
      // Shared-memory tiles for the contractions they fill the GPU with
      // (a warp per output would read one operand with a stride), then a
      // warp per output for the other reductions along a contiguous dim,
      // else a thread per output tile.
      for (linalg::LinalgOp op : reductions) {
        if (tiledContractions && succeeded(tiled.lower(op)))
          continue;
        if (warpReductions && succeeded(lowering.lowerWarp(op)))
          continue;
        (void)lowering.lower(op);
      }
      // Buffers the fusion left unused (an epilogue's intermediate).
      SmallVector<BufferOp> buffers;
      fn.walk([&](BufferOp op) { buffers.push_back(op); });
      for (BufferOp buffer : buffers) {
        if (!llvm::all_of(buffer->getUsers(), [](Operation *u) {
              return isa<memref::DimOp>(u) && u->use_empty();
            }))
          continue;
        for (Operation *u : llvm::make_early_inc_range(buffer->getUsers()))
          rewriter.eraseOp(u);
        rewriter.eraseOp(buffer);
      }
      SmallVector<linalg::LinalgOp> linalgOps;
      fn.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
      for (linalg::LinalgOp op : linalgOps) {
        rewriter.setInsertionPoint(op);
        if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
          return op->emitError("cannot lower to loops for the GPU");
        rewriter.eraseOp(op);
      }
      return success();
    };

    for (func::FuncOp fn : kernels) {
      Value ctx = fn.getArgument(0);
      if (failed(prepare(fn, ctx)))
        return signalPassFailure();
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/false);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }
    for (func::FuncOp fn : hosts) {
      if (fn.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(fn.getArgumentTypes()[0]))
        continue;
      Value ctx = fn.getArgument(0);
      if (failed(prepare(fn, ctx)))
        return signalPassFailure();
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/true);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }

    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    module->setAttr("kiln.device", StringAttr::get(context, device));
    module->setAttr(
        "kiln.num_weights",
        IntegerAttr::get(IntegerType::get(context, 64), weightIndex.size()));
  }
};

struct MergeGPUModulesPass
    : public kiln::impl::KilnMergeGPUModulesBase<MergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto merged = gpu::GPUModuleOp::create(b, module.getLoc(), "kiln_kernels");
    Block &dest = merged.getBodyRegion().front();
    // Outlining names each module uniquely but its kernel after the parent
    // function: the merged kernel takes the module's name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp m : modules) {
      SmallVector<Operation *> ops;
      for (Operation &op : m.getBodyRegion().front())
        if (!op.hasTrait<OpTrait::IsTerminator>())
          ops.push_back(&op);
      for (Operation *op : ops) {
        auto sym = dyn_cast<SymbolOpInterface>(op);
        if (!sym) {
          op->moveBefore(&dest, dest.end());
          continue;
        }
        std::string name = ops.size() == 1
                               ? m.getName().str()
                               : (m.getName() + "_" + sym.getName()).str();
        if (SymbolTable::lookupSymbolIn(merged, name)) {
          m.emitError("two outlined kernels named '") << name << "'";
          return signalPassFailure();
        }
        auto newName = StringAttr::get(&getContext(), name);
        renamed[{m.getNameAttr(), sym.getNameAttr()}] = newName;
        sym.setName(newName);
        op->moveBefore(&dest, dest.end());
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it =
          renamed.find({launch.getKernelModuleName(), launch.getKernelName()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
    for (gpu::GPUModuleOp m : modules)
      m.erase();
  }
};

struct FinalizeDeviceMemRefsPass
    : public kiln::impl::KilnFinalizeDeviceMemRefsBase<
          FinalizeDeviceMemRefsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LowerToLLVMOptions options(context);
    LLVMTypeConverter converter(context, options);
    // Shared memory (workgroup attributions) is NVVM's address space 3.
    populateGpuMemorySpaceAttributeConversions(
        converter, [](gpu::AddressSpace space) -> unsigned {
          switch (space) {
          case gpu::AddressSpace::Global:
            return 1;
          case gpu::AddressSpace::Workgroup:
            return 3;
          case gpu::AddressSpace::Private:
            return 0;
          }
          return 0;
        });
    RewritePatternSet patterns(context);
    if (stage == "before-nvvm") {
      // Branches carry index values: converted with the arithmetic before
      // convert-gpu-to-nvvm rewrites the kernels' block signatures (it has
      // no cf or arith patterns).
      cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
      arith::populateArithToLLVMConversionPatterns(converter, patterns);
      index::populateIndexToLLVMConversionPatterns(converter, patterns);
    } else {
      populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
      populateVectorToLLVMConversionPatterns(converter, patterns);
    }
    LLVMConversionTarget target(*context);
    if (stage == "before-nvvm") {
      target.addIllegalDialect<cf::ControlFlowDialect, arith::ArithDialect,
                               index::IndexDialect>();
      // convert-gpu-to-nvvm lowers remf to libdevice's fmod (NVPTX has no
      // frem).
      target.addLegalOp<arith::RemFOp>();
    } else {
      target.addIllegalDialect<memref::MemRefDialect, vector::VectorDialect>();
    }
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // Shared buffers are read 16 bytes at a time (tiled contractions).
    if (stage != "before-nvvm")
      getOperation().walk([](LLVM::GlobalOp global) {
        if (global.getAddrSpace() == 3 &&
            global.getAlignment().value_or(0) < 16)
          global.setAlignment(16);
      });
  }
};

} // namespace
