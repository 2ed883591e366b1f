//===- Chunk.cpp - Runs of launches split into batch chunks ---------------===//
//
// When recomputation cannot lower the peak enough (the peak is one kernel's
// inputs and outputs, or a short chain's), kiln-remat splits the batch: a
// run of consecutive launches around the peak whose kernels are
// batch-parallel (isBatchParallel, ChunkKernel.cpp) is launched c times,
// chunk k on batch rows [k B/c, (k+1) B/c):
//
//  - an intermediate written and read only inside the run (Local) gets a
//    buffer of B/c rows per chunk, live only inside its chunk;
//  - a tensor from before the run, or one read after it (Full), keeps its
//    whole buffer: the chunk kernels read or write its rows [off, off + B/c),
//    `off` an index argument of the launch;
//  - weights and tensors not indexed by the batch are passed as they are.
//
// The run's launches are replaced by c copies of the run, one chunk after
// the other (the host program stays one block); each copy launches the
// clones of the kernels for B/c (cloneKernelForBatch), with
// `kiln.chunk = array<i64: k, c>`.
//
// One step, at the plan's first peak position p:
//  1. B: dim 0 of the largest activation the launch at p touches (>= 2);
//  2. the run: from the launch at p, extended to the right then to the left
//     over batch-parallel launches with only allocations, views and
//     constants between, while every tensor written in the run is read
//     inside it as a batch operand;
//  3. c: each divisor of B in increasing order is applied, the plan
//     measured (computeMemoryPlan, the arena kiln-plan-memory will place)
//     and undone; the first c whose arena fits the budget, else the c
//     reaching the lowest peak (if lower than the current one);
//  4. trimming: launches are dropped from the run's start, then from its
//     end, while the arena still fits (or the peak stays as low), so only
//     the launches that matter run at the smaller batch;
//  5. the run is split for good.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Chunk.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::chunk;

namespace {
/// A run of launches and how each argument of each is passed.
struct RunRoles {
  SmallVector<SmallVector<ChunkRole>> roles;
  /// Whether any argument of the launch is Full (it then takes `off`).
  SmallVector<bool> takesOffset;
};

/// The measured result of a chunking.
struct Outcome {
  int64_t c = 0, arena = 0, peak = 0;
  bool fits = false;
};
} // namespace

void chunk::HostChange::remove(Operation *op) {
  removed.push_back({op, op->getNextNode()});
  op->remove();
}

void chunk::HostChange::undo() {
  for (auto &[op, next] : llvm::reverse(removed))
    next->getBlock()->getOperations().insert(Block::iterator(next), op);
  for (Operation *op : llvm::reverse(created))
    op->erase();
}

void chunk::HostChange::commit() {
  for (auto &[op, next] : removed) {
    op->dropAllUses();
    op->destroy();
  }
}

int64_t chunk::numOutputs(func::FuncOp fn) {
  auto n =
      fn ? fn->getAttrOfType<IntegerAttr>("kiln.num_outputs") : IntegerAttr();
  return n ? n.getInt() : -1;
}

Value chunk::viewSource(Operation *op) {
  if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(op))
    return view.getViewSource();
  return {};
}

void chunk::collectUsers(Value v, SmallVectorImpl<Operation *> &users,
                         SmallVectorImpl<Operation *> *views) {
  for (Operation *user : v.getUsers()) {
    if (viewSource(user) == v) {
      if (views)
        views->push_back(user);
      for (Value r : user->getResults())
        collectUsers(r, users, views);
      continue;
    }
    users.push_back(user);
  }
}

bool chunk::isInert(Operation *op) {
  return isa<BufferOp, OutputOp>(op) || isMemoryEffectFree(op);
}

void chunk::eraseUnused(SymbolTable &symbols, ArrayRef<func::FuncOp> clones) {
  Operation *module = symbols.getOp();
  // A clone the other chunker already erased (the batch chunker's finish
  // runs first and erases the originals of its clones: a row chunker's
  // clone may be one) is no longer in the module.
  llvm::SmallPtrSet<Operation *, 32> live;
  for (Region &r : module->getRegions())
    for (Operation &op : r.getOps())
      live.insert(&op);
  // The originals by name: one may be a clone of this list (a batch clone
  // of a row clone), erased by the first loop.
  SmallVector<StringAttr> originals;
  SmallVector<func::FuncOp> kept;
  for (func::FuncOp fn : clones) {
    if (!fn || !live.contains(fn.getOperation()))
      continue;
    if (auto of = fn->getAttrOfType<StringAttr>(kChunkOfAttr))
      if (!llvm::is_contained(originals, of))
        originals.push_back(of);
    if (SymbolTable::symbolKnownUseEmpty(fn, module)) {
      live.erase(fn.getOperation());
      symbols.erase(fn);
    } else {
      kept.push_back(fn);
    }
  }
  // Looked up in the module, not in `symbols`: the batch and row chunkers
  // each keep a SymbolTable, and one's cache still names what the other's
  // finish erased.
  for (StringAttr name : originals)
    if (auto fn = dyn_cast_or_null<func::FuncOp>(
            SymbolTable::lookupSymbolIn(module, name));
        fn && SymbolTable::symbolKnownUseEmpty(fn, module)) {
      llvm::erase(kept, fn);
      symbols.erase(fn);
    }
  // A kept clone takes its plain name where a dropped trial had it.
  for (func::FuncOp fn : kept) {
    auto plain = fn->getAttrOfType<StringAttr>(kChunkNameAttr);
    fn->removeAttr(kChunkNameAttr);
    if (plain && plain != fn.getSymNameAttr() &&
        !SymbolTable::lookupSymbolIn(module, plain))
      (void)symbols.rename(fn, plain);
  }
}

/// The op that owns the memory `v` views when it is an activation (an
/// intermediate buffer of the arena, a model input or output) and every
/// value on the way is a row-major memref with `batch` rows (so each batch
/// element's elements are the same in all of them); else null.
static Operation *activationRoot(Value v, int64_t batch) {
  while (true) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getRank() == 0 ||
        t.getDimSize(0) != batch || !t.getLayout().isIdentity())
      return nullptr;
    Operation *def = v.getDefiningOp();
    if (auto b = dyn_cast_or_null<BufferOp>(def))
      return b->hasAttr("kiln.persistent") ? nullptr : def;
    if (isa_and_nonnull<InputOp, OutputOp>(def))
      return def;
    if (auto rc = dyn_cast_or_null<memref::ReinterpretCastOp>(def))
      if (rc.getStaticOffsets().size() != 1 || rc.getStaticOffsets()[0] != 0)
        return nullptr;
    v = viewSource(def);
    if (!v)
      return nullptr;
  }
}

static Type withDim0(Type t, int64_t n) {
  auto m = cast<MemRefType>(t);
  SmallVector<int64_t> shape(m.getShape());
  shape[0] = n;
  return MemRefType::get(shape, m.getElementType(), m.getLayout(),
                         m.getMemorySpace());
}

struct BatchChunker::Impl {
  Impl(func::FuncOp host, bool inPlace, int64_t alignment, int64_t persistent)
      : host(host), inPlace(inPlace), alignment(alignment),
        persistent(persistent), symbols(host->getParentOfType<ModuleOp>()) {}

  func::FuncOp kernelOf(LaunchOp l) {
    return symbols.lookup<func::FuncOp>(l.getKernel());
  }
  SmallVector<bool> batchArgs(LaunchOp l, int64_t batch);
  bool chunkable(LaunchOp l, int64_t batch);
  LogicalResult rolesOf(ArrayRef<LaunchOp> run, int64_t batch, RunRoles &out);
  FailureOr<func::FuncOp> chunkKernel(LaunchOp l, int64_t batch, int64_t n,
                                      ArrayRef<ChunkRole> roles);
  FailureOr<HostChange> apply(ArrayRef<LaunchOp> run, int64_t batch, int64_t c);
  std::optional<Outcome> measure(ArrayRef<LaunchOp> run, int64_t batch,
                                 int64_t c, int64_t budget);
  bool step(const MemoryPlan &plan, int64_t budget, int64_t &chunked);

  func::FuncOp host;
  bool inPlace;
  int64_t alignment, persistent;
  SymbolTable symbols;
  llvm::StringMap<bool> parallel;
  llvm::StringMap<func::FuncOp> clones;
};

SmallVector<bool> BatchChunker::Impl::batchArgs(LaunchOp l, int64_t batch) {
  SmallVector<bool> flags;
  for (Value a : l.getArgs())
    flags.push_back(activationRoot(a, batch) != nullptr);
  return flags;
}

bool BatchChunker::Impl::chunkable(LaunchOp l, int64_t batch) {
  if (l->hasAttr(kChunkAttr))
    return false;
  func::FuncOp fn = kernelOf(l);
  int64_t n = numOutputs(fn);
  ValueRange args = l.getArgs();
  if (n < 1 || n > static_cast<int64_t>(args.size()))
    return false;
  for (Value a : args)
    if (auto t = dyn_cast<MemRefType>(a.getType()); t && !t.hasStaticShape())
      return false;
  SmallVector<bool> flags = batchArgs(l, batch);
  // Every output an activation with the batch in dim 0.
  if (!llvm::all_of(ArrayRef(flags).take_back(n), [](bool f) { return f; }))
    return false;
  std::string key = (l.getKernel() + "/" + Twine(batch) + "/").str();
  for (bool f : flags)
    key += f ? 'b' : '-';
  auto [it, inserted] = parallel.try_emplace(key, false);
  if (inserted)
    it->second = isBatchParallel(fn, batch, flags);
  return it->second;
}

LogicalResult BatchChunker::Impl::rolesOf(ArrayRef<LaunchOp> run, int64_t batch,
                                          RunRoles &out) {
  llvm::DenseSet<Operation *> inRun;
  for (LaunchOp l : run)
    inRun.insert(l);
  // What the run writes, and its roots.
  llvm::DenseSet<Operation *> written;
  for (LaunchOp l : run) {
    ValueRange args = l.getArgs();
    int64_t n = numOutputs(kernelOf(l));
    for (Value a : args.take_back(n))
      if (BufferOp root = rootBuffer(a))
        written.insert(root);
      else if (Operation *r = activationRoot(a, batch))
        written.insert(r);
  }
  // A tensor the run writes is read in it only as a batch operand.
  for (LaunchOp l : run)
    for (Value a : l.getArgs())
      if (BufferOp root = rootBuffer(a);
          root && written.contains(root) && !activationRoot(a, batch))
        return failure();
  DenseMap<Operation *, bool> local;
  auto isLocal = [&](Operation *root) {
    auto [it, inserted] = local.try_emplace(root, false);
    if (!inserted)
      return it->second;
    if (!isa<BufferOp>(root) || !written.contains(root))
      return false;
    SmallVector<Operation *> users;
    collectUsers(root->getResult(0), users);
    it->second =
        llvm::all_of(users, [&](Operation *u) { return inRun.contains(u); });
    return it->second;
  };
  out.roles.clear();
  out.takesOffset.clear();
  for (LaunchOp l : run) {
    SmallVector<ChunkRole> roles;
    bool full = false;
    for (Value a : l.getArgs()) {
      Operation *root = activationRoot(a, batch);
      ChunkRole r = !root           ? ChunkRole::Other
                    : isLocal(root) ? ChunkRole::Local
                                    : ChunkRole::Full;
      full |= r == ChunkRole::Full;
      roles.push_back(r);
    }
    out.roles.push_back(std::move(roles));
    out.takesOffset.push_back(full);
  }
  return success();
}

FailureOr<func::FuncOp>
BatchChunker::Impl::chunkKernel(LaunchOp l, int64_t batch, int64_t n,
                                ArrayRef<ChunkRole> roles) {
  std::string key =
      (l.getKernel() + "/" + Twine(batch) + "/" + Twine(n) + "/").str();
  for (ChunkRole r : roles)
    key += r == ChunkRole::Other ? '-' : r == ChunkRole::Local ? 'l' : 'f';
  auto [it, inserted] = clones.try_emplace(key, func::FuncOp());
  if (inserted) {
    FailureOr<func::FuncOp> fn =
        cloneKernelForBatch(kernelOf(l), batch, n, roles, symbols);
    if (succeeded(fn))
      it->second = *fn;
  }
  if (!it->second)
    return failure();
  return it->second;
}

FailureOr<HostChange> BatchChunker::Impl::apply(ArrayRef<LaunchOp> run,
                                                int64_t batch, int64_t c) {
  RunRoles rr;
  if (run.empty() || batch % c || failed(rolesOf(run, batch, rr)))
    return failure();
  int64_t n = batch / c;
  SmallVector<func::FuncOp> kernels;
  for (auto [l, roles] : llvm::zip(run, rr.roles)) {
    FailureOr<func::FuncOp> fn = chunkKernel(l, batch, n, roles);
    if (failed(fn))
      return failure();
    kernels.push_back(*fn);
  }
  HostChange change;
  OpBuilder b(host.getContext());
  b.setInsertionPointAfter(run.back());
  auto i64s = [&](ArrayRef<int64_t> v) { return b.getDenseI64ArrayAttr(v); };
  llvm::SetVector<Operation *> localRoots;
  for (int64_t k = 0; k < c; ++k) {
    Value off;
    if (llvm::is_contained(rr.takesOffset, true)) {
      off = arith::ConstantIndexOp::create(b, host.getLoc(), k * n);
      change.created.push_back(off.getDefiningOp());
    }
    // This chunk's buffers and views of the run's local tensors.
    IRMapping map;
    std::function<Value(Value)> localOf = [&](Value v) -> Value {
      if (Value m = map.lookupOrNull(v))
        return m;
      Operation *def = v.getDefiningOp();
      Operation *copy;
      if (isa<BufferOp>(def)) {
        localRoots.insert(def);
        copy = b.clone(*def);
        copy->removeAttr("offset");
      } else {
        IRMapping source;
        source.map(viewSource(def), localOf(viewSource(def)));
        copy = b.clone(*def, source);
        if (auto rc = dyn_cast<memref::ReinterpretCastOp>(copy)) {
          SmallVector<int64_t> sizes(rc.getStaticSizes());
          sizes[0] = n;
          rc.setStaticSizes(sizes);
        }
      }
      copy->getResult(0).setType(withDim0(v.getType(), n));
      change.created.push_back(copy);
      map.map(v, copy->getResult(0));
      return copy->getResult(0);
    };
    for (auto [i, fn] : llvm::enumerate(kernels)) {
      LaunchOp l = run[i];
      ArrayRef<ChunkRole> roles = rr.roles[i];
      bool offset = rr.takesOffset[i];
      SmallVector<Value> args;
      ValueRange orig = l.getArgs();
      int64_t outs = numOutputs(kernelOf(l));
      for (auto [j, a] : llvm::enumerate(orig)) {
        if (offset &&
            static_cast<int64_t>(j) == static_cast<int64_t>(orig.size()) - outs)
          args.push_back(off);
        args.push_back(roles[j] == ChunkRole::Local ? localOf(a) : a);
      }
      auto launch = cast<LaunchOp>(b.clone(*l.getOperation()));
      launch.getArgsMutable().assign(args);
      launch.setKernelAttr(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
      launch->setAttr(kChunkAttr, i64s({k, c}));
      change.created.push_back(launch);
    }
  }
  // The originals: the launches, then the local tensors' views and buffers.
  for (LaunchOp l : run)
    change.remove(l);
  for (Operation *root : localRoots) {
    SmallVector<Operation *> users, views;
    collectUsers(root->getResult(0), users, &views);
    for (Operation *v : llvm::reverse(views))
      change.remove(v);
    change.remove(root);
  }
  return change;
}

std::optional<Outcome> BatchChunker::Impl::measure(ArrayRef<LaunchOp> run,
                                                   int64_t batch, int64_t c,
                                                   int64_t budget) {
  FailureOr<HostChange> change = apply(run, batch, c);
  if (failed(change))
    return std::nullopt;
  MemoryPlan after = computeMemoryPlan(host, alignment, inPlace);
  change->undo();
  Outcome o;
  o.c = c;
  o.arena = after.arenaBytes + persistent;
  o.peak = after.peakLiveBytes;
  o.fits = o.arena <= budget;
  return o;
}

bool BatchChunker::Impl::step(const MemoryPlan &plan, int64_t budget,
                              int64_t &chunked) {
  SmallVector<int64_t> timeline = liveBytesTimeline(plan);
  if (timeline.empty())
    return false;
  int64_t peak = *llvm::max_element(timeline);
  int64_t p = llvm::find(timeline, peak) - timeline.begin();
  LaunchOp atPeak;
  for (size_t t = p; t < plan.ops.size() && !atPeak; ++t)
    atPeak = dyn_cast<LaunchOp>(plan.ops[t]);
  if (!atPeak)
    return false;
  // The batch: dim 0 of the largest activation at the peak launch.
  int64_t batch = 0, largest = -1;
  for (Value a : atPeak.getArgs()) {
    auto t = dyn_cast<MemRefType>(a.getType());
    if (!t || !t.hasStaticShape() || t.getRank() == 0 ||
        !activationRoot(a, t.getDimSize(0)) || bufferBytes(t) <= largest)
      continue;
    largest = bufferBytes(t);
    batch = t.getDimSize(0);
  }
  if (batch < 2 || !chunkable(atPeak, batch))
    return false;

  // The run around the peak launch.
  SmallVector<LaunchOp> launches;
  for (Operation &op : host.getBody().front())
    if (auto l = dyn_cast<LaunchOp>(op))
      launches.push_back(l);
  int64_t at = llvm::find(launches, atPeak) - launches.begin();
  auto joinable = [&](LaunchOp a, LaunchOp b) {
    for (Operation *op = a->getNextNode(); op != b.getOperation();
         op = op->getNextNode())
      if (!isInert(op))
        return false;
    return true;
  };
  RunRoles rr;
  int64_t lo = at, hi = at;
  auto valid = [&](int64_t from, int64_t to) {
    return succeeded(
        rolesOf(ArrayRef(launches).slice(from, to - from + 1), batch, rr));
  };
  while (hi + 1 < static_cast<int64_t>(launches.size()) &&
         joinable(launches[hi], launches[hi + 1]) &&
         chunkable(launches[hi + 1], batch) && valid(lo, hi + 1))
    ++hi;
  while (lo > 0 && joinable(launches[lo - 1], launches[lo]) &&
         chunkable(launches[lo - 1], batch) && valid(lo - 1, hi))
    --lo;
  auto runOf = [&](int64_t from, int64_t to) {
    return ArrayRef(launches).slice(from, to - from + 1);
  };

  // The fewest chunks that fit, else the lowest peak.
  std::optional<Outcome> best;
  for (int64_t c = 2; c <= batch; ++c) {
    if (batch % c)
      continue;
    std::optional<Outcome> o = measure(runOf(lo, hi), batch, c, budget);
    if (!o)
      continue;
    if (o->fits) {
      best = o;
      break;
    }
    if (o->peak < peak && (!best || o->peak < best->peak))
      best = o;
  }
  if (!best)
    return false;
  // Trim: the fewest launches at the smaller batch that do as well.
  auto asGood = [&](int64_t from, int64_t to) {
    std::optional<Outcome> o = measure(runOf(from, to), batch, best->c, budget);
    return o && (best->fits ? o->fits : o->peak <= best->peak);
  };
  while (lo < at && asGood(lo + 1, hi))
    ++lo;
  while (hi > at && asGood(lo, hi - 1))
    --hi;
  FailureOr<HostChange> change = apply(runOf(lo, hi), batch, best->c);
  if (failed(change))
    return false;
  change->commit();
  chunked += hi - lo + 1;
  return true;
}

BatchChunker::BatchChunker(func::FuncOp host, bool inPlace, int64_t alignment,
                           int64_t persistent)
    : impl(std::make_unique<Impl>(host, inPlace, alignment, persistent)) {}

BatchChunker::~BatchChunker() = default;

bool BatchChunker::step(const MemoryPlan &plan, int64_t budget) {
  return impl->step(plan, budget, chunkedLaunches);
}

void BatchChunker::finish() {
  SmallVector<func::FuncOp> clones;
  for (auto &entry : impl->clones)
    clones.push_back(entry.second);
  impl->clones.clear();
  eraseUnused(impl->symbols, clones);
}
