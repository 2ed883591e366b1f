//===- LaunchMapping.cpp - Kernel bodies onto launches and host code ------===//
//
// Where each op of a kernel function runs once its linalg ops are loop
// nests (kiln-map-kernels-to-gpu): a top-level parallel nest becomes one
// gpu.launch (one point a thread, or four for large elementwise nests);
// other device memory accesses run in single-thread launches, consecutive
// ones grouped; host control flow stays on the host; host reads of device
// data become kiln.read; checks of device data move into single-thread
// launches that write the instance's check record.
//
//===----------------------------------------------------------------------===//

#include "LaunchMapping.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

} // namespace

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
void gpumap::moveDeviceDataChecks(func::FuncOp host,
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

LogicalResult gpumap::GPUMapper::mapBlock(Block &block) {
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
LogicalResult gpumap::GPUMapper::flush(SmallVectorImpl<Operation *> &group) {
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
LogicalResult gpumap::GPUMapper::mapParallel(scf::ParallelOp par) {
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
