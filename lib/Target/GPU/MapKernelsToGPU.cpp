//===- MapKernelsToGPU.cpp - Bufferized kernels onto a GPU ----------------===//
//
// After bufferization, every kernel function holds linalg ops (and the odd
// loop or scalar access) on memrefs. On a device target:
//   - each kernel function takes the runtime context first and becomes a
//     host-side launcher; `kiln.launch` becomes a call of it;
//   - allocations inside kernels become run-scoped `kiln.buffer`s (device
//     scratch from the runtime), their deallocations go away, and each is
//     released (`kiln.release`) where its block ends, so later kernels of
//     the run reuse its memory;
//   - linalg ops become parallel loop nests (reduction dims as sequential
//     loops inside); each top-level nest becomes one `gpu.launch` whose
//     threads each run one iteration of the flattened nest;
//   - other memory accesses in host code run in single-thread launches,
//     consecutive ones grouped into one launch;
//   - host code reads device data only through `kiln.read` and sees
//     constants only through `kiln.weight`.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"
#include "kiln/Target/GPU/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMAPKERNELSTOGPU
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {

/// Ops that may run on the host: no memory access (shape arithmetic, views,
/// constants, dims) and the host program's own ops.
bool isHostOp(Operation *op) {
  if (isa<BufferOp, ReleaseOp, OutputOp, InputOp, WeightOp, ExternalWeightOp,
          ReadOp, CheckOp, CheckRecordOp, func::CallOp, gpu::LaunchOp>(op))
    return true;
  if (op->getNumRegions() != 0)
    return false;
  return isMemoryEffectFree(op);
}

/// A launch of one thread at `b`'s insertion point holding `ops` (moved
/// there, in order); `b` is left before its terminator.
gpu::LaunchOp createSingleThreadLaunch(OpBuilder &b, Location loc,
                                       ArrayRef<Operation *> ops) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(b, loc);
  for (Operation *op : ops)
    op->moveBefore(term);
  b.setInsertionPoint(term);
  return launch;
}

/// The value `v` is a view of (through view-like ops).
Value memoryRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

/// Whether memrefs `a` and `b` may share memory: the same root, or arena
/// buffers whose planned byte ranges overlap, or roots of unknown origin.
/// Inputs, outputs, the check record and arena or run-scoped buffers are
/// otherwise apart.
bool mayAlias(Value a, Value b) {
  a = memoryRoot(a);
  b = memoryRoot(b);
  if (a == b)
    return true;
  auto known = [](Value v) {
    return v.getDefiningOp<BufferOp>() || v.getDefiningOp<InputOp>() ||
           v.getDefiningOp<OutputOp>() || v.getDefiningOp<CheckRecordOp>();
  };
  if (!known(a) || !known(b))
    return true;
  auto ba = a.getDefiningOp<BufferOp>(), bb = b.getDefiningOp<BufferOp>();
  if (!ba || !bb || !ba.getOffset() || !bb.getOffset())
    return false;
  auto bytes = [](BufferOp op) {
    MemRefType t = op.getBuffer().getType();
    return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
  };
  int64_t oa = *ba.getOffset(), ob = *bb.getOffset();
  return oa < ob + bytes(bb) && ob < oa + bytes(ba);
}

/// Whether `op` (host code) may write memory `loaded` reads.
bool mayWrite(Operation *op, Value loaded) {
  if (isMemoryEffectFree(op) || isa<BufferOp, InputOp, OutputOp, CheckRecordOp,
                                    CheckOp, ReadOp, memref::LoadOp>(op))
    return false;
  if (isa<func::CallOp, memref::StoreOp, gpu::LaunchOp>(op)) {
    bool writes = false;
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (isa<MemRefType>(v.getType()) && mayAlias(v, loaded))
          writes = true;
    });
    return writes;
  }
  return true;
}

/// Run-time checks of device data (an index range: the min and max a kernel
/// computed; a divisor) would read it on the host every run, a sync that
/// also keeps the run out of a device graph. Such a check moves to the
/// device instead: the ops only it needs (the loads and the arithmetic on
/// them) and the check become a single-thread launch that, when the check
/// fails and nothing failed before it, writes the check's index and values
/// into the instance's check record (kiln.check_record); the runtime reads
/// the record after the run's synchronization and fails the run with the
/// check's message (`messages`, the module's kiln.device_checks). Guarded
/// kernels still run (the kernels clamp what they read). Checks of host
/// values (shapes, sizes) stay host checks. A check whose ops cannot move
/// (in another block, or with device work between them and the check) is
/// dropped with its reads, as before device checks existed.
void moveDeviceDataChecks(func::FuncOp host,
                          SmallVectorImpl<Attribute> &messages) {
  SmallVector<CheckOp> checks;
  host.walk([&](CheckOp op) { checks.push_back(op); });
  Value record;
  for (CheckOp check : checks) {
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.omitBlockArguments = true;
    options.inclusive = true;
    for (Value v : check->getOperands())
      (void)getBackwardSlice(v, &slice, options);
    // What only the check uses (users first): the ops that die with it.
    llvm::SmallPtrSet<Operation *, 16> dead;
    for (Operation *op : llvm::reverse(slice)) {
      if (!isMemoryEffectFree(op) && !isa<memref::LoadOp>(op))
        continue;
      if (llvm::all_of(op->getUsers(), [&](Operation *user) {
            return user == check.getOperation() || dead.contains(user);
          }))
        dead.insert(op);
    }
    // Loads only this check needs are new host reads; a Reshape's shape is
    // read for its sizes anyway (its checks stay, they cost nothing).
    bool newReads = false, sharedReads = false;
    for (Operation *op : slice)
      if (isa<memref::LoadOp>(op))
        (dead.contains(op) ? newReads : sharedReads) = true;
    if (!newReads || sharedReads)
      continue;
    // The dead ops in program order; they move to the check's place, so
    // nothing between a load and the check may write what it reads.
    SmallVector<Operation *> moved;
    SmallVector<Value> loaded;
    Block *block = check->getBlock();
    bool movable = llvm::all_of(
        dead, [&](Operation *op) { return op->getBlock() == block; });
    if (movable) {
      for (Operation &op : *block) {
        if (&op == check.getOperation())
          break;
        // The host program's own ops (its inputs, buffers, weights) stay
        // where they are; the launch captures their results.
        if (dead.contains(&op) && !isa<KilnDialect>(op.getDialect())) {
          moved.push_back(&op);
          if (auto load = dyn_cast<memref::LoadOp>(op))
            loaded.push_back(load.getMemRef());
        } else if (llvm::any_of(loaded,
                                [&](Value v) { return mayWrite(&op, v); })) {
          movable = false;
        }
      }
    }
    if (!movable) {
      check.erase();
      for (Operation *op : llvm::reverse(slice))
        if (dead.contains(op))
          op->erase();
      continue;
    }
    Location loc = check.getLoc();
    OpBuilder b(host.getContext());
    if (!record) {
      b.setInsertionPointToStart(&host.getBody().front());
      record = CheckRecordOp::create(
          b, loc, MemRefType::get({CheckRecordOp::kSize}, b.getI64Type()),
          check.getCtx());
    }
    b.setInsertionPoint(check);
    createSingleThreadLaunch(b, loc, moved);
    auto i64 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v)
          .getResult();
    };
    auto at = [&](int64_t i) {
      return arith::ConstantIndexOp::create(b, loc, i).getResult();
    };
    Value failed = arith::XOrIOp::create(
        b, loc, check.getCondition(),
        arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    auto ifFailed = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
    b.setInsertionPoint(ifFailed.thenBlock()->getTerminator());
    Value previous = memref::LoadOp::create(b, loc, record, at(0));
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        previous, i64(0));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
    // The values first, the index last: a record with an index is whole.
    memref::StoreOp::create(b, loc, i64(check.getValues().size()), record,
                            at(1));
    for (unsigned i = 0; i < check.getValues().size(); ++i)
      memref::StoreOp::create(b, loc, check.getValueAsI64(b, i), record,
                              at(2 + i));
    memref::StoreOp::create(b, loc, i64(messages.size() + 1), record, at(0));
    messages.push_back(check.getMessageAttr());
    check.erase();
  }
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
        // A host read of device data. It must see what the pending group
        // stores there (a scalar the host program moves through a buffer,
        // as a Loop's next condition): the group launches first, or the
        // read copies the value of the previous iteration.
        auto load = cast<memref::LoadOp>(op);
        if (llvm::any_of(group, [&](Operation *pending) {
              return mayWrite(pending, load.getMemRef());
            })) {
          if (failed(flush(group)))
            return failure();
          inGroup.clear();
        }
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
        if (!isMemoryEffectFree(op) &&
            !isa<BufferOp, OutputOp, InputOp, CheckRecordOp>(op)) {
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
      // Control flow whose regions size buffers at run time cannot run
      // on the device as a whole (device code does not allocate): it stays
      // on the host, its loads becoming host reads.
      bool allocates = false;
      if (!hostLoads && isa<scf::ForOp, scf::IfOp, scf::WhileOp,
                            scf::ExecuteRegionOp, scf::IndexSwitchOp>(op))
        op->walk([&](BufferOp buffer) {
          if (!buffer.getDynamicSizes().empty())
            allocates = true;
        });
      if (allocates || isHostControlFlow(op, hostLoads)) {
        if (failed(flush(group)))
          return failure();
        inGroup.clear();
        GPUMapper inner(ctx, blockSize, hostLoads || allocates);
        for (Region &region : op->getRegions())
          for (Block &block : region)
            if (failed(inner.mapBlock(block)))
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
  createSingleThreadLaunch(b, last->getLoc(), group);
  group.clear();
  return success();
}

/// Iterations per thread of a large nest whose body is straight-line loads,
/// stores and pure ops (an elementwise kernel): with one element per thread
/// a thread has one load of 1 to 4 bytes in flight, and the bytes in flight
/// over the whole GPU bound the bandwidth (BERT-base int8's quantization of
/// its attention output, 9.4 MB, took 11.9 us on an H200, 0.8 TB/s). With
/// four, each thread issues its four iterations' loads before their stores.
constexpr int64_t kCoarsening = 4;
/// Nests of fewer iterations keep one per thread (more blocks to spread).
constexpr int64_t kCoarsenMinIterations = int64_t(1) << 19;

/// Whether `par`'s body can run several iterations interleaved op by op:
/// no regions, and every op pure, a load or a store. (Iterations of a
/// parallel loop do not read what another writes, so iteration j + 1's
/// loads may go before iteration j's stores.)
static bool isInterleavable(scf::ParallelOp par) {
  for (Operation &op : par.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (!isa<memref::LoadOp, memref::StoreOp>(op) && !isPure(&op))
      return false;
  }
  return true;
}

/// One thread per iteration of the (flattened) nest, or kCoarsening
/// interleaved iterations per thread for large elementwise nests; blocks of
/// `blockSize` threads. Nested parallel loops stay loops inside the thread.
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
  // The iteration count when every bound is a constant.
  std::optional<int64_t> staticTotal = 1;
  for (auto [lb, ub, step] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           st = getConstantIntValue(step);
    if (!l || !u || !st || *st <= 0) {
      staticTotal = std::nullopt;
      break;
    }
    *staticTotal *= std::max<int64_t>(0, (*u - *l + *st - 1) / *st);
  }
  const int64_t perThread = staticTotal &&
                                    *staticTotal >= kCoarsenMinIterations &&
                                    isInterleavable(par)
                                ? kCoarsening
                                : 1;
  Value threads = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value perBlock =
      arith::ConstantIndexOp::create(b, loc, blockSize * perThread);
  Value blocks = arith::CeilDivSIOp::create(b, loc, total, perBlock);
  blocks = arith::MaxSIOp::create(b, loc, blocks, one);
  auto launch =
      gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(term);
  Value id = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, perBlock),
      launch.getThreadIds().x);
  // The nest's induction variables at flat iteration `flat`.
  auto delinearize = [&](Value flat, IRMapping &map) {
    Value rest = flat;
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
  };
  if (perThread == 1) {
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, total);
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    IRMapping map;
    delinearize(id, map);
    for (Operation &op : par.getBody()->without_terminator())
      b.clone(op, map);
    par.erase();
    return success();
  }
  // Iterations id + j * blockSize (a block's threads on adjacent
  // iterations for each j), the body cloned op by op for all of them: the
  // loads of every iteration come before the first store. An iteration
  // past the end computes as the last one (its loads stay in bounds) and
  // does not store.
  SmallVector<IRMapping> maps(perThread);
  SmallVector<Value> inRange;
  Value last = arith::SubIOp::create(b, loc, total, one);
  for (int64_t j = 0; j < perThread; ++j) {
    Value flat = arith::AddIOp::create(
        b, loc, id, arith::ConstantIndexOp::create(b, loc, j * blockSize));
    inRange.push_back(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, flat, total));
    delinearize(arith::MinUIOp::create(b, loc, flat, last), maps[j]);
  }
  for (Operation &op : par.getBody()->without_terminator()) {
    for (int64_t j = 0; j < perThread; ++j) {
      if (!isa<memref::StoreOp>(op)) {
        b.clone(op, maps[j]);
        continue;
      }
      auto guard =
          scf::IfOp::create(b, loc, inRange[j], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      b.clone(op, maps[j]);
    }
  }
  par.erase();
  return success();
}

struct MapKernelsToGPUPass
    : public kiln::impl::KilnMapKernelsToGPUBase<MapKernelsToGPUPass> {
  using Base::Base;
  MapKernelsToGPUPass(const KilnMapKernelsToGPUOptions &options,
                      std::shared_ptr<const GPUTargetInfo> info)
      : Base(options), info(std::move(info)) {}

  /// The target-info: the one the pipeline passed in, else the one
  /// registered for `device`; `resolved` is the device spelled out.
  std::shared_ptr<const GPUTargetInfo> getInfo(std::string &resolved,
                                               std::string &error) const {
    if (info) {
      resolved = device;
      return info;
    }
    return lookupGPUTargetInfo(device, resolved, error);
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    std::string resolved, error;
    if (std::shared_ptr<const GPUTargetInfo> i = getInfo(resolved, error))
      i->getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    std::string resolved, error;
    std::shared_ptr<const GPUTargetInfo> target = getInfo(resolved, error);
    if (!target) {
      module.emitError(error);
      return signalPassFailure();
    }
    int64_t warp = target->getWarpSize(), maxBlock = target->getMaxBlockSize();
    if (blockSize < warp || blockSize > maxBlock || blockSize % warp != 0) {
      module.emitError("block-size must be a multiple of ")
          << warp << " in [" << warp << ", " << maxBlock << "]";
      return signalPassFailure();
    }
    std::optional<PersistentKernels> persistentKernels =
        parsePersistentKernels(persistent);
    if (!persistentKernels) {
      module.emitError("persistent must be off, on or auto, not '")
          << persistent << "'";
      return signalPassFailure();
    }
    ContractionChoices choices;
    choices.persistent = *persistentKernels;
    choices.splitK = splitK;
    if (!parseContractionTiles(tiles, choices.tiles, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    // A tile the target's kernels cannot take; a target without kernels of
    // its own (or an image without them) has nothing to choose.
    ContractionTiles own = target->getContractionTiles();
    for (const ContractionTile &tile : choices.tiles)
      if (!own.empty() && !llvm::is_contained(own, tile)) {
        module.emitError("gpu-tiles: ")
            << stringifyContractionTile(tile)
            << " is not a tile of this target's contraction kernels ("
            << stringifyContractionTiles(own) << ")";
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
      auto call = func::CallOp::create(b, op.getLoc(), op.getKernelAttr(),
                                       TypeRange{}, args);
      // The launch's ONNX nodes (the signature's launch records).
      if (Attribute nodes = op->getAttr(kLaunchNodesAttr))
        call->setAttr(kLaunchNodesAttr, nodes);
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
      // Fused attention: one launch each (the target claimed the op when
      // the attention lowering asked, Target::hasFusedAttention).
      SmallVector<AttentionOp> attentions;
      fn.walk([&](AttentionOp op) { attentions.push_back(op); });
      for (AttentionOp op : attentions)
        if (failed(FlashAttention(rewriter, *target).lower(op)))
          return failure();
      // A stem's few-channel convolutions become im2col GEMMs first.
      if (tensorCores)
        (void)SmallChannelConv(rewriter, *target)
            .run(fn.getBody().front(), ctx);
      // Reductions and contractions first (they absorb the fill before and
      // the elementwise op after them), then every other linalg op →
      // parallel loops.
      SmallVector<linalg::LinalgOp> reductions;
      fn.walk([&](linalg::LinalgOp op) {
        if (op.getNumReductionLoops() > 0)
          reductions.push_back(op);
      });
      ReductionLowering lowering(rewriter, *target, minThreads);
      TiledContraction tiled(rewriter, *target, ctx, /*minBlocks=*/24,
                             fillBlocks > 0 ? fillBlocks
                                            : target->getFillBlocks(),
                             tensorCores, asyncCopy);
      // Shared-memory tiles for the contractions they fill the GPU with
      // (a warp per output would read one operand with a stride), then a
      // warp per output for the other reductions along a contiguous dim,
      // else a thread per output tile.
      SmallVector<linalg::LinalgOp> rest;
      for (linalg::LinalgOp op : reductions) {
        if (tensorCores &&
            succeeded(target->lowerContraction(rewriter, op, ctx, choices)))
          continue;
        if (tiledContractions && succeeded(tiled.lower(op)))
          continue;
        rest.push_back(op);
      }
      // Normalizations and softmax: a launch per chain of row-local ops.
      if (warpReductions && rowFusion && !rest.empty()) {
        RowFusion rows(rewriter, *target);
        if (rows.run(fn.getBody().front()) > 0) {
          rest.clear();
          fn.walk([&](linalg::LinalgOp op) {
            if (op.getNumReductionLoops() > 0)
              rest.push_back(op);
          });
        }
      }
      for (linalg::LinalgOp op : rest) {
        if (warpReductions && succeeded(lowering.lowerWarp(op)))
          continue;
        if (warpReductions && succeeded(lowering.lowerFull(op)))
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
      releaseKernelBuffers(fn, ctx);
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/false);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }
    SmallVector<Attribute> deviceChecks;
    for (func::FuncOp fn : hosts) {
      if (fn.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(fn.getArgumentTypes()[0]))
        continue;
      moveDeviceDataChecks(fn, deviceChecks);
      Value ctx = fn.getArgument(0);
      if (failed(prepare(fn, ctx)))
        return signalPassFailure();
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/true);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }

    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    module->setAttr("kiln.device", StringAttr::get(context, resolved));
    if (!deviceChecks.empty())
      module->setAttr("kiln.device_checks",
                      ArrayAttr::get(context, deviceChecks));
    module->setAttr(
        "kiln.num_weights",
        IntegerAttr::get(IntegerType::get(context, 64), weightIndex.size()));
  }

private:
  std::shared_ptr<const GPUTargetInfo> info;
};

} // namespace

std::unique_ptr<Pass> mlir::kiln::createKilnMapKernelsToGPU(
    const GPUCodegenOptions &gpu, StringRef device,
    std::shared_ptr<const GPUTargetInfo> info) {
  KilnMapKernelsToGPUOptions options;
  options.device = device.str();
  options.blockSize = gpu.blockSize;
  options.tiledContractions = gpu.tiledContractions;
  options.warpReductions = gpu.warpReductions;
  options.tensorCores = gpu.tensorCores;
  options.asyncCopy = gpu.asyncCopy;
  options.rowFusion = gpu.rowFusion;
  options.fillBlocks = gpu.fillBlocks;
  options.minThreads = gpu.minThreads;
  options.persistent = stringifyPersistentKernels(gpu.persistent).str();
  options.tiles = stringifyContractionTiles(gpu.tiles);
  options.splitK = gpu.splitK;
  return std::make_unique<MapKernelsToGPUPass>(options, std::move(info));
}
