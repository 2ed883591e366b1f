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

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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
    bool usesGroupValue = llvm::any_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && inGroup.contains(def);
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
                             "code in this kernel (") << *user << ")";
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
  for (auto [lb, ub, step] : llvm::zip(par.getLowerBound(),
                                       par.getUpperBound(), par.getStep())) {
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
  auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one,
                                      one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(term);
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x, threads),
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


/// Reductions and contractions (a linalg op with reduction dims whose one
/// output is indexed by all its parallel dims): one thread per tile of
/// output elements, the accumulators in registers across the reduction
/// loops (one load and one store per output element, not per step). Up to
/// two parallel dims are unrolled (U x V outputs per thread) so each loaded
/// input element is reused from registers, as long as enough threads remain
/// to fill the GPU. A `linalg.fill` of the output just before becomes the
/// accumulators' initial value, and an elementwise `linalg.generic` just
/// after that only consumes the result becomes the store's epilogue (the
/// intermediate buffer is never written).
class ReductionLowering {
public:
  ReductionLowering(RewriterBase &rewriter, int64_t minThreads)
      : rewriter(rewriter), minThreads(minThreads) {}

  LogicalResult lower(linalg::LinalgOp op);

private:
  Value index(Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  }
  /// Loads operand `operand` of `op` at `map`(dims).
  Value load(Location loc, Value buffer, AffineMap map, ArrayRef<Value> dims) {
    std::optional<SmallVector<Value, 8>> idx =
        affine::expandAffineMap(rewriter, loc, map, dims);
    return memref::LoadOp::create(rewriter, loc, buffer, *idx);
  }
  void store(Location loc, Value v, Value buffer, AffineMap map,
             ArrayRef<Value> dims) {
    std::optional<SmallVector<Value, 8>> idx =
        affine::expandAffineMap(rewriter, loc, map, dims);
    memref::StoreOp::create(rewriter, loc, v, buffer, *idx);
  }
  /// Clones `body` (a linalg region) with its block arguments bound to
  /// `args` and linalg.index d bound to dims[d]; returns the yielded value.
  Value inlineBody(Block &body, ValueRange args, ArrayRef<Value> dims) {
    IRMapping map;
    map.map(body.getArguments(), args);
    for (Operation &op : body.without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
        map.map(idx.getResult(), dims[idx.getDim()]);
        continue;
      }
      rewriter.clone(op, map);
    }
    return map.lookupOrDefault(body.getTerminator()->getOperand(0));
  }

  RewriterBase &rewriter;
  int64_t minThreads;
};

LogicalResult ReductionLowering::lower(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || op->getNumResults() != 0)
    return failure();
  unsigned numLoops = op.getNumLoops();
  SmallVector<unsigned> par, red;
  for (auto [i, t] : llvm::enumerate(op.getIteratorTypesArray()))
    (t == utils::IteratorType::parallel ? par : red).push_back(i);
  if (par.empty())
    return failure(); // a full reduction: one serial loop
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() != par.size())
    return failure();
  for (unsigned d : red)
    if (outMap.isFunctionOfDim(d))
      return failure();
  // The body yields one value computed from the accumulator.
  Block &body = *op.getBlock();
  if (body.getTerminator()->getNumOperands() != 1)
    return failure();

  Location loc = op.getLoc();
  Value out = init->get();
  SmallVector<int64_t> static_ = op.getStaticLoopRanges();

  // A fill of the output right before: the initial value.
  Value fillValue;
  linalg::FillOp fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (fill && fill.getOutputs()[0] == out)
    fillValue = fill.getInputs()[0];
  else
    fill = nullptr;

  // An elementwise consumer right after, reading only this result at the
  // same points: fused into the store when nothing else uses the buffer.
  linalg::GenericOp epi =
      dyn_cast_or_null<linalg::GenericOp>(op->getNextNode());
  bool identityOut = true;
  for (auto [i, r] : llvm::enumerate(outMap.getResults()))
    identityOut &= r == getAffineDimExpr(par[i], op.getContext());
  OpOperand *epiIn = nullptr;
  if (epi && identityOut && epi.hasPureBufferSemantics() &&
      epi.getNumDpsInits() == 1 &&
      epi.getNumLoops() == par.size() &&
      epi.getNumReductionLoops() == 0 &&
      epi.getBlock()->getTerminator()->getNumOperands() == 1) {
    for (OpOperand *in : epi.getDpsInputOperands())
      if (in->get() == out) {
        if (epiIn || !epi.getMatchingIndexingMap(in).isIdentity())
          epiIn = nullptr, epi = nullptr;
        else
          epiIn = in;
        if (!epi)
          break;
      }
    if (epi && epiIn && epi.getDpsInitOperand(0)->get() == out)
      epiIn = nullptr;
    // The buffer must die here: a kernel-local allocation whose only other
    // users are the fill and deallocation.
    if (epi && epiIn) {
      auto alloc = out.getDefiningOp<BufferOp>();
      bool dies = alloc && llvm::all_of(out.getUsers(), [&](Operation *u) {
                    return u == op || u == epi || u == fill ||
                           isa<memref::DeallocOp>(u);
                  });
      if (!dies)
        epiIn = nullptr;
    }
  }
  if (!epiIn)
    epi = nullptr;

  // Unrolling: U along a parallel dim other than the innermost one (the one
  // the most inputs do not depend on), V along the innermost.
  int64_t outputs = 1;
  bool allStatic = true;
  for (unsigned d : par) {
    if (ShapedType::isDynamic(static_[d]))
      allStatic = false;
    else
      outputs *= static_[d];
  }
  int64_t uDim = -1, U = 1, V = 1;
  unsigned last = par.back();
  if (allStatic) {
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

  rewriter.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  auto size = [&](unsigned d) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].size);
  };
  SmallVector<Value> lbs, ubs, steps;
  for (unsigned d : par) {
    int64_t f = (int64_t)d == uDim ? U : d == last ? V : 1;
    lbs.push_back(index(loc, 0));
    ubs.push_back(f == 1 ? size(d)
                         : index(loc, static_[d] / f));
    steps.push_back(index(loc, 1));
  }
  SmallVector<Value> redUbs;
  for (unsigned d : red)
    redUbs.push_back(size(d));
  Type accType = body.getArgument(body.getNumArguments() - 1).getType();

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
              rewriter, loc, arith::MulIOp::create(rewriter, loc, iv, index(loc, f)),
              index(loc, o));
        dims[d] = iv;
      }
      points.push_back(dims);
    }
  SmallVector<Value> inits;
  for (auto &pt : points)
    inits.push_back(fillValue ? fillValue : load(loc, out, outMap, pt));
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
  ValueRange results = nest.results;
  if (nest.loops.empty())
    results = inits;
  for (auto [j, pt] : llvm::enumerate(points)) {
    Value v = results[j];
    if (!epi) {
      store(loc, v, out, outMap, pt);
      continue;
    }
    // The epilogue's dims are the parallel dims in order.
    SmallVector<Value> edims;
    for (unsigned d : par)
      edims.push_back(pt[d]);
    SmallVector<Value> args;
    for (OpOperand *in : epi.getDpsInputOperands()) {
      if (in == epiIn)
        args.push_back(v);
      else if (!isa<MemRefType>(in->get().getType()))
        args.push_back(in->get());
      else
        args.push_back(load(loc, in->get(), epi.getMatchingIndexingMap(in), edims));
    }
    OpOperand *eout = epi.getDpsInitOperand(0);
    Block &ebody = *epi.getBlock();
    if (!ebody.getArgument(ebody.getNumArguments() - 1).use_empty())
      args.push_back(load(loc, eout->get(), epi.getMatchingIndexingMap(eout), edims));
    else
      args.push_back(ub::PoisonOp::create(
          rewriter, loc, ebody.getArgument(ebody.getNumArguments() - 1).getType()));
    Value r = inlineBody(ebody, args, edims);
    store(loc, r, eout->get(), epi.getMatchingIndexingMap(eout), edims);
  }
  (void)accType;
  if (epi)
    rewriter.eraseOp(epi);
  if (fill)
    rewriter.eraseOp(fill);
  rewriter.eraseOp(op);
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
            return op->emitError("unsupported allocation on the GPU: ")
                   << type;
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
                rewriter, loc,
                reshape.getShape().getType().getElementType(), ctx,
                reshape.getShape(), ValueRange{idx});
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
              stride = arith::MulIOp::create(
                           rewriter, loc,
                           getValueOrCreateConstantIndexOp(rewriter, loc, stride),
                           getValueOrCreateConstantIndexOp(rewriter, loc,
                                                           sizes[i]))
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
      for (linalg::LinalgOp op : reductions)
        (void)lowering.lower(op);
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
    module->setAttr("kiln.num_weights",
                    IntegerAttr::get(IntegerType::get(context, 64),
                                     weightIndex.size()));
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
      auto it = renamed.find(
          {launch.getKernelModuleName(), launch.getKernelName()});
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
    }
    LLVMConversionTarget target(*context);
    if (stage == "before-nvvm") {
      target.addIllegalDialect<cf::ControlFlowDialect, arith::ArithDialect,
                               index::IndexDialect>();
      // convert-gpu-to-nvvm lowers remf to libdevice's fmod (NVPTX has no
      // frem).
      target.addLegalOp<arith::RemFOp>();
    } else {
      target.addIllegalDialect<memref::MemRefDialect>();
    }
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
