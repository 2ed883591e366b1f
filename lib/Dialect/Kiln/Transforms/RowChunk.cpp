//===- RowChunk.cpp - Runs of launches split into bands of rows -----------===//
//
// Where the batch cannot be split (batch 1, as a U-Net at high resolution),
// kiln-remat splits rows: a run of consecutive launches around the peak is
// launched once per band of the rows of the tensors it leaves, each kernel
// cloned for the rows its band needs (tileKernelRows, RowChunkKernel.cpp):
//
//  - a tensor written and read only inside the run (Local) gets, per band,
//    a buffer of the rows the band's consumers read: their union, which
//    includes each kernel's halo (a 3x3 convolution reads one row more on
//    each side, a stride-2 pool twice the rows);
//  - a tensor the run leaves for later, or a model output, keeps its whole
//    buffer: band k writes rows [k H/c, (k+1) H/c) of it (H: its longest
//    dim after the batch; a model output in NCHW: its height), plus the
//    halo rows a later kernel of the same band reads;
//  - tensors from before the run and weights are read in place, each band
//    the rows it needs.
//
// Bands are planned from the run's last launch back to its first: a
// kernel's band is what its consumers in the run read (and its share of a
// whole output), what it reads of its inputs comes from its tiled clone. A
// run may not read a tensor it writes whole (that would be a whole
// computation per band) or through a view. The extra work is the halos:
// rows computed by two bands; the FLOPs they add are counted.
//
// The step is the batch chunker's (Chunk.cpp): at the plan's first peak,
// the run is extended from the launch there over row-chunkable launches
// (one output, tileKernelRows succeeds for a middle band) while it plans,
// the fewest bands (2 to kMaxBands) whose arena fits the budget are taken,
// else those lowering the peak most, and the run is trimmed from both ends
// while it does as well.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Chunk.h"
#include "kiln/Dialect/Kiln/Transforms/KernelCost.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::chunk;

/// Bands of a run, at most.
static constexpr int64_t kMaxBands = 16;
/// Bands a run is measured with while it grows.
static constexpr int64_t kProbe = 4;

namespace {
/// One band of a run: the output rows of each launch (nullopt: the launch
/// has nothing to do in this band) and the rows of each local tensor.
struct Band {
  SmallVector<std::optional<RowRange>> out;
  DenseMap<Operation *, RowRange> local;
};

/// The measured result of a chunking: the program's arena and peak, the
/// positions at the peak, and the most live at the run's launches.
struct Outcome {
  int64_t c = 0, arena = 0, peak = 0, atPeak = 0, runPeak = 0;
  bool fits = false;
};
} // namespace

/// The arena buffer, model input or output `v` is (not a view), or null.
static Operation *directRoot(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto b = dyn_cast_or_null<BufferOp>(def))
    return b->hasAttr("kiln.persistent") ? nullptr : def;
  return isa_and_nonnull<InputOp, OutputOp>(def) ? def : nullptr;
}

/// The buffer `v` views, through views (any root op), or null.
static Operation *anyRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<BufferOp, InputOp, OutputOp>(def))
      return def;
    v = viewSource(def);
    if (!v)
      return nullptr;
  }
  return nullptr;
}

/// Rows [k H/c, (k+1) H/c) of dim `dim` (of H rows) of a tensor of type
/// `t`: the share of band k of c.
static std::optional<RowRange> shareOf(Type t, int64_t dim, int64_t k,
                                       int64_t c) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m || !m.hasStaticShape() || dim < 1 || dim >= m.getRank())
    return std::nullopt;
  int64_t rows = m.getDimSize(dim);
  if (rows < 2 * c)
    return std::nullopt;
  return RowRange{dim, rows * k / c, rows * (k + 1) / c};
}

/// The hull of two ranges along one dim; nullopt when the dims differ.
static std::optional<RowRange> hull(std::optional<RowRange> a, RowRange b) {
  if (!a)
    return b;
  if (a->dim != b.dim)
    return std::nullopt;
  return RowRange{b.dim, std::min(a->lo, b.lo), std::max(a->hi, b.hi)};
}

struct RowChunker::Impl {
  Impl(func::FuncOp host, bool inPlace, int64_t alignment, int64_t persistent)
      : host(host), inPlace(inPlace), alignment(alignment),
        persistent(persistent), symbols(host->getParentOfType<ModuleOp>()),
        patterns(rowTilingPatterns(host.getContext())) {}
  ~Impl() {
    for (auto &entry : tilings)
      if (entry.second)
        entry.second->clone->erase();
  }

  func::FuncOp kernelOf(LaunchOp l) {
    return symbols.lookup<func::FuncOp>(l.getKernel());
  }
  int64_t flopsOf(func::FuncOp fn) {
    auto [it, inserted] = flops.try_emplace(fn, 0);
    if (inserted)
      it->second = std::max<int64_t>(estimateFlops(fn), 0);
    return it->second;
  }
  const RowTiling *tiling(LaunchOp l, RowRange out);
  /// The dim of the output a launch's bands split (its rows), -1 when it
  /// cannot be split.
  int64_t rowDim(LaunchOp l);
  bool chunkable(LaunchOp l) { return rowDim(l) >= 0; }
  FailureOr<SmallVector<Band>> planBands(ArrayRef<LaunchOp> run, int64_t c,
                                         DenseSet<Operation *> &local);
  FailureOr<func::FuncOp> bandKernel(LaunchOp l, const Band &band, RowRange out,
                                     const DenseSet<Operation *> &local);
  FailureOr<HostChange> apply(ArrayRef<LaunchOp> run, int64_t c,
                              int64_t *extra = nullptr);
  std::optional<Outcome> measure(ArrayRef<LaunchOp> run, int64_t c,
                                 int64_t budget);
  bool step(const MemoryPlan &plan, int64_t budget, RowChunker &out);

  func::FuncOp host;
  bool inPlace;
  int64_t alignment, persistent;
  SymbolTable symbols;
  FrozenRewritePatternSet patterns;
  llvm::StringMap<std::optional<RowTiling>> tilings;
  llvm::StringMap<func::FuncOp> clones;
  llvm::StringMap<int64_t> rowDims;
  DenseMap<Operation *, int64_t> flops;
};

const RowTiling *RowChunker::Impl::tiling(LaunchOp l, RowRange out) {
  std::string key = (l.getKernel() + "/" + Twine(out.dim) + "/" +
                     Twine(out.lo) + "/" + Twine(out.hi))
                        .str();
  auto [it, inserted] = tilings.try_emplace(key, std::nullopt);
  if (inserted) {
    FailureOr<RowTiling> t = tileKernelRows(kernelOf(l), out, patterns);
    if (succeeded(t))
      it->second = std::move(*t);
  }
  return it->second ? &*it->second : nullptr;
}

int64_t RowChunker::Impl::rowDim(LaunchOp l) {
  if (l->hasAttr(kChunkAttr))
    return -1;
  func::FuncOp fn = kernelOf(l);
  ValueRange args = l.getArgs();
  if (numOutputs(fn) != 1 || args.empty() || !directRoot(args.back()))
    return -1;
  for (Value a : args)
    if (auto t = dyn_cast<MemRefType>(a.getType()); t && !t.hasStaticShape())
      return -1;
  auto [it, inserted] = rowDims.try_emplace(l.getKernel(), -1);
  if (!inserted)
    return it->second;
  // The output's dims after the first, longest first: the first along which
  // a middle band (the second of four) reads a band of the largest
  // activation input too (the rows: not the channels, which a convolution
  // reads whole).
  auto type = cast<MemRefType>(args.back().getType());
  SmallVector<int64_t> dims;
  for (int64_t d = 1; d < type.getRank(); ++d)
    dims.push_back(d);
  llvm::stable_sort(dims, [&](int64_t a, int64_t b) {
    return type.getDimSize(a) > type.getDimSize(b);
  });
  int64_t input = -1, largest = -1;
  for (auto [j, a] : llvm::enumerate(args.drop_back()))
    if (auto t = dyn_cast<MemRefType>(a.getType());
        t && anyRoot(a) && bufferBytes(t) > largest) {
      largest = bufferBytes(t);
      input = j;
    }
  for (int64_t d : dims) {
    std::optional<RowRange> mid = shareOf(type, d, 1, 4);
    const RowTiling *t = mid ? tiling(l, *mid) : nullptr;
    if (t && (input < 0 || (t->reads[input] && !t->reads[input]->whole()))) {
      it->second = d;
      break;
    }
  }
  return it->second;
}

FailureOr<SmallVector<Band>>
RowChunker::Impl::planBands(ArrayRef<LaunchOp> run, int64_t c,
                            DenseSet<Operation *> &local) {
  DenseSet<Operation *> inRun, written;
  for (LaunchOp l : run) {
    inRun.insert(l);
    if (Operation *root = directRoot(l.getArgs().back()))
      written.insert(root);
    else
      return failure();
  }
  // Tensors the run writes are read in it directly, not through views.
  for (LaunchOp l : run)
    for (Value a : l.getArgs().drop_back())
      if (Operation *root = anyRoot(a);
          root && written.contains(root) && directRoot(a) != root)
        return failure();
  local.clear();
  for (Operation *root : written) {
    if (!isa<BufferOp>(root))
      continue;
    SmallVector<Operation *> users;
    collectUsers(root->getResult(0), users);
    if (llvm::all_of(users, [&](Operation *u) { return inRun.contains(u); }))
      local.insert(root);
  }
  SmallVector<Band> bands(c);
  for (int64_t k = 0; k < c; ++k) {
    Band &band = bands[k];
    band.out.assign(run.size(), std::nullopt);
    DenseMap<Operation *, RowRange> need;
    for (int64_t i = static_cast<int64_t>(run.size()) - 1; i >= 0; --i) {
      LaunchOp l = run[i];
      Value outArg = l.getArgs().back();
      Operation *o = directRoot(outArg);
      std::optional<RowRange> rows;
      if (!local.contains(o)) {
        rows = shareOf(outArg.getType(), rowDim(l), k, c);
        if (!rows)
          return failure();
      }
      if (auto it = need.find(o); it != need.end()) {
        rows = hull(rows, it->second);
        if (!rows)
          return failure();
      }
      if (!rows)
        continue; // nothing of it is read in this band
      const RowTiling *t = tiling(l, *rows);
      if (!t)
        return failure();
      band.out[i] = rows;
      for (auto [j, a] : llvm::enumerate(l.getArgs().drop_back())) {
        Operation *in = directRoot(a);
        const std::optional<RowRange> &r = t->reads[j];
        if (!in || !written.contains(in) || !r)
          continue;
        // A tensor of the run read whole would be computed whole per band.
        if (r->whole())
          return failure();
        std::optional<RowRange> h =
            hull(need.count(in) ? std::optional(need[in]) : std::nullopt, *r);
        if (!h)
          return failure();
        need[in] = *h;
      }
    }
    for (auto &[root, rows] : need)
      if (local.contains(root))
        band.local[root] = rows;
  }
  return bands;
}

FailureOr<func::FuncOp>
RowChunker::Impl::bandKernel(LaunchOp l, const Band &band, RowRange out,
                             const DenseSet<Operation *> &local) {
  const RowTiling *t = tiling(l, out);
  if (!t)
    return failure();
  // Which arguments become band buffers, and their rows.
  SmallVector<std::pair<unsigned, RowRange>> bands;
  std::string key = (l.getKernel() + "/" + Twine(out.dim) + "/" +
                     Twine(out.lo) + "/" + Twine(out.hi))
                        .str();
  for (auto [j, a] : llvm::enumerate(l.getArgs())) {
    Operation *root = directRoot(a);
    if (!root || !local.contains(root))
      continue;
    RowRange r = band.local.lookup(root);
    bands.push_back({static_cast<unsigned>(j), r});
    key += ("/" + Twine(j) + ":" + Twine(r.dim) + "," + Twine(r.lo) + "," +
            Twine(r.hi))
               .str();
  }
  auto [it, inserted] = clones.try_emplace(key, func::FuncOp());
  if (!inserted) {
    if (!it->second)
      return failure();
    return it->second;
  }
  auto fn = cast<func::FuncOp>(t->clone->clone());
  for (auto [j, r] : bands)
    if (failed(localizeKernelRows(fn, j, r, patterns))) {
      fn->erase();
      return failure();
    }
  if (failed(verifySilently(fn))) {
    fn->erase();
    return failure();
  }
  func::FuncOp orig = kernelOf(l);
  std::string name =
      (orig.getSymName() + "_rows" + Twine(out.lo) + "_" + Twine(out.hi)).str();
  fn.setSymName(name);
  fn->setAttr(kChunkOfAttr, orig.getSymNameAttr());
  fn->setAttr(kChunkNameAttr, StringAttr::get(fn.getContext(), name));
  symbols.insert(fn, std::next(Block::iterator(orig)));
  it->second = fn;
  return fn;
}

FailureOr<HostChange> RowChunker::Impl::apply(ArrayRef<LaunchOp> run, int64_t c,
                                              int64_t *extra) {
  DenseSet<Operation *> local;
  FailureOr<SmallVector<Band>> bands = planBands(run, c, local);
  if (failed(bands))
    return failure();
  // The kernels first: nothing on the host changes if one fails.
  SmallVector<SmallVector<func::FuncOp>> kernels(c);
  for (int64_t k = 0; k < c; ++k)
    for (auto [i, l] : llvm::enumerate(run)) {
      func::FuncOp fn;
      if (const std::optional<RowRange> &out = (*bands)[k].out[i]) {
        FailureOr<func::FuncOp> f = bandKernel(l, (*bands)[k], *out, local);
        if (failed(f))
          return failure();
        fn = *f;
      }
      kernels[k].push_back(fn);
    }
  HostChange change;
  OpBuilder b(host.getContext());
  b.setInsertionPointAfter(run.back());
  int64_t added = 0;
  for (int64_t k = 0; k < c; ++k) {
    DenseMap<Operation *, Value> buffers;
    for (auto [i, fn] : llvm::enumerate(kernels[k])) {
      LaunchOp l = run[i];
      if (!fn)
        continue;
      SmallVector<Value> args;
      for (Value a : l.getArgs()) {
        Operation *root = directRoot(a);
        if (!root || !local.contains(root)) {
          args.push_back(a);
          continue;
        }
        Value &buf = buffers[root];
        if (!buf) {
          RowRange r = (*bands)[k].local.lookup(root);
          auto type = cast<MemRefType>(a.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[r.dim] = r.hi - r.lo;
          Operation *copy = b.clone(*root);
          copy->removeAttr("offset");
          copy->getResult(0).setType(
              MemRefType::get(shape, type.getElementType()));
          change.created.push_back(copy);
          buf = copy->getResult(0);
        }
        args.push_back(buf);
      }
      auto launch = cast<LaunchOp>(b.clone(*l.getOperation()));
      launch.getArgsMutable().assign(args);
      launch.setKernelAttr(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
      launch->setAttr(kChunkAttr, b.getDenseI64ArrayAttr({k, c}));
      const RowRange &rows = *(*bands)[k].out[i];
      launch->setAttr(kChunkRowsAttr,
                      b.getDenseI64ArrayAttr({rows.dim, rows.lo, rows.hi}));
      change.created.push_back(launch);
      added += flopsOf(fn);
    }
  }
  for (LaunchOp l : run) {
    added -= flopsOf(kernelOf(l));
    change.remove(l);
  }
  for (Operation *root : local) {
    SmallVector<Operation *> users, views;
    collectUsers(root->getResult(0), users, &views);
    for (Operation *v : llvm::reverse(views))
      change.remove(v);
    change.remove(root);
  }
  if (extra)
    *extra = added;
  return change;
}

std::optional<Outcome> RowChunker::Impl::measure(ArrayRef<LaunchOp> run,
                                                 int64_t c, int64_t budget) {
  FailureOr<HostChange> change = apply(run, c);
  if (failed(change))
    return std::nullopt;
  MemoryPlan after = computeMemoryPlan(host, alignment, inPlace);
  SmallVector<int64_t> timeline = liveBytesTimeline(after);
  Outcome o;
  o.c = c;
  o.arena = after.arenaBytes + persistent;
  o.peak = after.peakLiveBytes;
  o.atPeak = llvm::count(timeline, o.peak);
  o.fits = o.arena <= budget;
  for (Operation *op : change->created)
    if (isa<LaunchOp>(op))
      o.runPeak = std::max(o.runPeak, timeline[after.positions.lookup(op)]);
  change->undo();
  return o;
}

bool RowChunker::Impl::step(const MemoryPlan &plan, int64_t budget,
                            RowChunker &out) {
  SmallVector<int64_t> timeline = liveBytesTimeline(plan);
  if (timeline.empty())
    return false;
  int64_t peak = *llvm::max_element(timeline);
  int64_t atPeakCount = llvm::count(timeline, peak);
  int64_t p = llvm::find(timeline, peak) - timeline.begin();
  LaunchOp atPeak;
  for (size_t t = p; t < plan.ops.size() && !atPeak; ++t)
    atPeak = dyn_cast<LaunchOp>(plan.ops[t]);
  if (!atPeak || !chunkable(atPeak))
    return false;
  SmallVector<LaunchOp> launches;
  for (Operation &op : host.getBody().front())
    if (auto l = dyn_cast<LaunchOp>(op))
      launches.push_back(l);
  int64_t at = llvm::find(launches, atPeak) - launches.begin();
  auto runOf = [&](int64_t from, int64_t to) {
    return ArrayRef(launches).slice(from, to - from + 1);
  };
  auto joinable = [&](int64_t a, int64_t b) {
    for (Operation *op = launches[a]->getNextNode();
         op != launches[b].getOperation(); op = op->getNextNode())
      if (!isInert(op))
        return false;
    return chunkable(launches[a]) && chunkable(launches[b]);
  };

  // Lower program peak, then fewer positions at it, then a lower peak
  // at the run's launches.
  auto better = [](const Outcome &a, const Outcome &b) {
    return std::make_tuple(a.peak, a.atPeak, a.runPeak) <
           std::make_tuple(b.peak, b.atPeak, b.runPeak);
  };
  // The run: grown from the peak's launch, one launch at a time, to either
  // side while that does as well (split in kProbe bands): as low a program
  // peak, as few positions at it, as low a peak at the run's launches (a
  // launch whose output would stay whole for later shows there).
  std::optional<Outcome> cur = measure(runOf(at, at), kProbe, budget);
  if (!cur)
    return false;
  int64_t lo = at, hi = at;
  for (bool grown = true; grown;) {
    grown = false;
    if (hi + 1 < static_cast<int64_t>(launches.size()) && joinable(hi, hi + 1))
      if (std::optional<Outcome> o = measure(runOf(lo, hi + 1), kProbe, budget);
          o && !better(*cur, *o)) {
        cur = o;
        ++hi;
        grown = true;
      }
    if (lo > 0 && joinable(lo - 1, lo))
      if (std::optional<Outcome> o = measure(runOf(lo - 1, hi), kProbe, budget);
          o && !better(*cur, *o)) {
        cur = o;
        --lo;
        grown = true;
      }
  }

  // The fewest bands that fit, else those lowering the program's peak (or
  // the number of its positions at the peak) most.
  // (Among those lowering it as much, the fewest whose run fits the
  // budget: more bands would only add launches, halos and kernels.)
  std::optional<Outcome> best;
  for (int64_t c = 2; c <= kMaxBands; ++c) {
    std::optional<Outcome> o = measure(runOf(lo, hi), c, budget);
    if (!o)
      continue;
    if (o->fits) {
      best = o;
      break;
    }
    if (!(o->peak < peak || (o->peak == peak && o->atPeak < atPeakCount)))
      continue;
    if (!best ||
        std::make_pair(o->peak, o->atPeak) <
            std::make_pair(best->peak, best->atPeak) ||
        (std::make_pair(o->peak, o->atPeak) ==
             std::make_pair(best->peak, best->atPeak) &&
         best->runPeak > budget && o->runPeak < best->runPeak))
      best = o;
  }
  if (!best)
    return false;
  auto asGood = [&](int64_t from, int64_t to) {
    std::optional<Outcome> o = measure(runOf(from, to), best->c, budget);
    return o && (best->fits ? o->fits : !better(*best, *o));
  };
  while (lo < at && asGood(lo + 1, hi))
    ++lo;
  while (hi > at && asGood(lo, hi - 1))
    --hi;
  int64_t extra = 0;
  FailureOr<HostChange> change = apply(runOf(lo, hi), best->c, &extra);
  if (failed(change))
    return false;
  change->commit();
  out.chunkedLaunches += hi - lo + 1;
  out.extraFlops += extra;
  return true;
}

RowChunker::RowChunker(func::FuncOp host, bool inPlace, int64_t alignment,
                       int64_t persistent)
    : impl(std::make_unique<Impl>(host, inPlace, alignment, persistent)) {}

RowChunker::~RowChunker() = default;

bool RowChunker::step(const MemoryPlan &plan, int64_t budget) {
  return impl->step(plan, budget, *this);
}

void RowChunker::finish() {
  SmallVector<func::FuncOp> clones;
  for (auto &entry : impl->clones)
    clones.push_back(entry.second);
  impl->clones.clear();
  eraseUnused(impl->symbols, clones);
}
