//===- Remat.cpp - Recompute instead of keep, under a memory budget -------===//
//
// Lowers the host program's peak of live intermediate buffers until the
// arena kiln-plan-memory plans fits a budget (kilnc --max-memory).
//
// Kernels are destination-passing functions of their inputs, so recomputing
// a tensor is another `kiln.launch` of its producer kernel into a new
// `kiln.buffer`, inserted right before the tensor's first use after the
// peak; that use and the later ones read the new buffer, and the original
// lives only until its last use before the peak. The producer's inputs must
// be valid at the recomputation: model inputs, weights and persistent
// buffers always are; an intermediate input either lives longer (its live
// range extends to the recomputation) or is recomputed too, just before
// (a chain).
//
// The algorithm, one greedy step at a time:
//  1. the live-bytes timeline of the host program: at each op position, the
//     bytes of the arena slots live there, with the live ranges and in-place
//     reuse of kiln-plan-memory (computeLiveRanges, MemoryPlan.h); the peak
//     step p is the first position of the maximum;
//  2. candidates: buffers live across p but not used at p (produced before,
//     next used after), written by one launch of a kernel whose outputs are
//     arena buffers, read only by launches. Each gives two plans: recompute
//     it alone (its inputs live longer), or recompute it with the inputs
//     that would otherwise become live at p (dead there now), recursively
//     (at most kMaxChain kernels);
//  3. each plan is applied to the IR, the timeline recomputed and the change
//     undone: the plan counts only when it lowers the program's peak (or
//     keeps it and removes one of its positions: a plateau goes one step at
//     a time); its benefit is the bytes it saves at p, its cost the FLOPs
//     it adds (at least the elements it writes, so copies are not free);
//  4. the plan with the most bytes saved per FLOP is applied for good
//     (cheap producers first: elementwise, normalization and pooling kernels
//     are cheap by FLOPs anyway; a tensor first used after the peak is moved
//     there at no cost when its original launch becomes dead);
//  5. repeat until the planned arena (offsets by kiln-plan-memory's best fit,
//     plus the persistent buffers of kiln_model_init) fits the budget, or no
//     plan lowers the peak: then an error names the smallest peak reached and
//     the largest tensors live there.
//
// When recomputation alone cannot reach the budget, the pass starts again
// from the original program with chunking (Chunk.h): at each step batch
// chunking first (a run of batch-parallel launches launched on slices of
// the batch; no FLOPs added), then recomputation, and, once neither lowers
// the peak, bands of rows too (a run launched once per band of rows, each
// kernel on the rows its band needs; the halos add FLOPs).
//
// Greedy rather than a knapsack (PyTorch's activation-checkpointing
// partitioner solves one for training): here the peak is one step of a
// straight-line program whose timeline changes with every choice (a
// recomputation extends its inputs' ranges, may create a new peak elsewhere,
// and changes in-place reuse), so the value of a set of choices is not the
// sum of their values; re-measuring the real timeline after each choice is
// exact where a knapsack over a fixed timeline would be an estimate, and
// the number of steps is small (each removes a tensor from the peak).
//
// With `weights` (kilnc --max-memory-weights) the budget covers the weights
// too: the arena's budget is the budget less the bytes of the weights the
// run keeps in memory (collectWeights), and a budget they alone reach is an
// error naming the largest.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Chunk.h"
#include "kiln/Dialect/Kiln/Transforms/KernelCost.h"
#include "kiln/Dialect/Kiln/Transforms/MemoryPlan.h"
#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <map>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNREMAT
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

/// Kernels recomputed together for one tensor, at most.
static constexpr unsigned kMaxChain = 4;
/// Greedy steps, at most (each lowers the peak or one of its positions).
static constexpr unsigned kMaxSteps = 4096;

/// "N bytes (X.YZ MiB)" with the unit that fits.
static std::string formatBytes(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << bytes << " bytes";
  if (bytes >= 1024) {
    const char *units[] = {"KiB", "MiB", "GiB"};
    double v = bytes / 1024.0;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < std::size(units)) {
      v /= 1024;
      ++u;
    }
    os << " (" << llvm::format("%.2f", v) << " " << units[u] << ")";
  }
  return s;
}

/// a / b with two decimals.
static std::string ratio(int64_t a, int64_t b) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format("%.2f", static_cast<double>(a) / std::max<int64_t>(b, 1));
  return s;
}

/// Undoes the %XX escapes of the signature's names.
static std::string unescape(StringRef s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned v;
    if (s[i] == '%' && i + 2 < s.size() &&
        !s.substr(i + 1, 2).getAsInteger(16, v)) {
      out += static_cast<char>(v);
      i += 2;
      continue;
    }
    out += s[i];
  }
  return out;
}

/// The ONNX nodes a launch computes (its kiln.launch_nodes), readable.
static std::string launchNodes(LaunchOp launch) {
  auto attr = launch->getAttrOfType<StringAttr>(kLaunchNodesAttr);
  if (!attr || attr.getValue().empty())
    return launch.getKernel().str();
  SmallVector<StringRef> parts;
  attr.getValue().split(parts, ',');
  std::string out;
  for (StringRef p : parts)
    out += (out.empty() ? "" : ",") + unescape(p);
  return out;
}

/// The kernel's number of outputs (its trailing arguments), or -1.
static int64_t numOutputs(func::FuncOp fn) {
  auto n =
      fn ? fn->getAttrOfType<IntegerAttr>("kiln.num_outputs") : IntegerAttr();
  return n ? n.getInt() : -1;
}

/// Whether `v` is used by an op not in `dead` (through views).
static bool hasLiveUse(Value v, const llvm::DenseSet<Operation *> &dead) {
  for (Operation *user : v.getUsers()) {
    if (dead.contains(user))
      continue;
    if (isa<ViewLikeOpInterface, UnrealizedConversionCastOp>(user)) {
      if (llvm::any_of(user->getResults(),
                       [&](Value r) { return hasLiveUse(r, dead); }))
        return true;
      continue;
    }
    return true;
  }
  return false;
}

namespace {
/// Recompute `chain` (buffer indices of the plan, in the program order of
/// their producers) right before `at`.
struct Candidate {
  SmallVector<unsigned> chain;
  Operation *at = nullptr;
};

/// What applying a candidate changed, so it can be undone.
struct Change {
  SmallVector<Operation *> created;
  SmallVector<std::pair<OpOperand *, Value>> replaced;
  /// Original launches (and their buffers) that became dead, unlinked, with
  /// the op that followed each.
  SmallVector<std::pair<Operation *, Operation *>> removed;
  /// FLOPs added (recomputations less the launches removed), and the cost
  /// the greedy choice weighs (at least the elements written).
  int64_t flops = 0, cost = 0;

  void undo() {
    for (auto &[operand, old] : llvm::reverse(replaced))
      operand->set(old);
    for (auto &[op, next] : llvm::reverse(removed))
      next->getBlock()->getOperations().insert(Block::iterator(next), op);
    for (Operation *op : llvm::reverse(created))
      op->erase();
  }
  void commit() {
    for (auto &[op, next] : removed) {
      op->dropAllUses();
      op->destroy();
    }
  }
};

class Rematerializer {
public:
  Rematerializer(func::FuncOp host, bool inPlace)
      : host(host), inPlace(inPlace),
        symbols(host->getParentOfType<ModuleOp>()) {}

  /// One greedy step on `plan` (the current program's): applies the best
  /// candidate; false when none lowers the peak.
  bool step(const MemoryPlan &plan);

  /// The recomputed launches so far and the FLOPs they add.
  int64_t recomputed = 0, extraFlops = 0;

private:
  /// The launch that writes buffer `i` when it can be recomputed: one
  /// launch of a kernel with `kiln.num_outputs` writes it (as an arena
  /// buffer of its own, as all its outputs), every other user is a launch
  /// reading it, no run-time check reads it.
  LaunchOp producerOf(const MemoryPlan &plan, unsigned i);
  /// The cost of recomputing what `launch` writes: its FLOPs, at least the
  /// elements it writes.
  int64_t costOf(LaunchOp launch, int64_t &flops);
  Change apply(const MemoryPlan &plan, const Candidate &c);
  /// `v` (a buffer or a view of one) with its root replaced as `roots` says,
  /// views cloned before `at`.
  Value rebase(Value v, IRMapping &roots, OpBuilder &b, Change &change);

  func::FuncOp host;
  bool inPlace;
  SymbolTable symbols;
  DenseMap<Operation *, int64_t> flopsCache;
};
} // namespace

LaunchOp Rematerializer::producerOf(const MemoryPlan &plan, unsigned i) {
  const BufferPlan &bp = plan.buffers[i];
  if (bp.users.empty())
    return {};
  auto launch = dyn_cast<LaunchOp>(bp.users.front());
  if (!launch || plan.positions.lookup(launch) != bp.start ||
      plan.positions.lookup(bp.users.back()) != bp.end)
    return {};
  auto isOutputOf = [&](LaunchOp l, bool &reads, bool &writes) {
    auto fn = symbols.lookup<func::FuncOp>(l.getKernel());
    int64_t n = numOutputs(fn);
    ValueRange args = l.getArgs();
    if (n < 0 || n > static_cast<int64_t>(args.size()))
      return false;
    reads = writes = false;
    for (auto [k, a] : llvm::enumerate(args)) {
      if (rootBuffer(a) != bp.op)
        continue;
      (static_cast<int64_t>(k) >= static_cast<int64_t>(args.size()) - n
           ? writes
           : reads) = true;
    }
    return true;
  };
  bool reads, writes;
  if (!isOutputOf(launch, reads, writes) || reads || !writes)
    return {};
  // Every output of the producer: an arena buffer itself (recomputing gives
  // it a new one), every input static.
  auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
  ValueRange args = launch.getArgs();
  int64_t n = numOutputs(fn);
  for (auto [k, a] : llvm::enumerate(args)) {
    if (auto t = dyn_cast<MemRefType>(a.getType()); t && !t.hasStaticShape())
      return {};
    if (static_cast<int64_t>(k) < static_cast<int64_t>(args.size()) - n)
      continue;
    BufferOp root = a.getDefiningOp<BufferOp>();
    if (!root || !root.getBuffer().getType().hasStaticShape() ||
        root->hasAttr("kiln.persistent"))
      return {};
  }
  for (Operation *user : ArrayRef(bp.users).drop_front()) {
    auto l = dyn_cast<LaunchOp>(user);
    if (!l || !isOutputOf(l, reads, writes) || writes)
      return {};
  }
  return launch;
}

int64_t Rematerializer::costOf(LaunchOp launch, int64_t &flops) {
  auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
  auto it = flopsCache.find(fn);
  if (it == flopsCache.end())
    it = flopsCache.try_emplace(fn, fn ? estimateFlops(fn) : -1).first;
  flops = std::max<int64_t>(it->second, 0);
  int64_t elements = 0;
  ValueRange args = launch.getArgs();
  int64_t n = numOutputs(fn);
  for (Value a : args.drop_front(args.size() - std::max<int64_t>(n, 0)))
    if (auto t = dyn_cast<MemRefType>(a.getType()))
      elements += t.getNumElements();
  return std::max(flops, elements);
}

Value Rematerializer::rebase(Value v, IRMapping &roots, OpBuilder &b,
                             Change &change) {
  if (Value mapped = roots.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || isa<BufferOp>(def))
    return v;
  Value source;
  if (auto view = dyn_cast<ViewLikeOpInterface>(def))
    source = view.getViewSource();
  else if (isa<UnrealizedConversionCastOp>(def) && def->getNumOperands() == 1)
    source = def->getOperand(0);
  else
    return v;
  Value rebased = rebase(source, roots, b, change);
  if (rebased == source)
    return v;
  IRMapping map;
  map.map(source, rebased);
  Operation *clone = b.clone(*def, map);
  change.created.push_back(clone);
  Value result = clone->getResult(cast<OpResult>(v).getResultNumber());
  roots.map(v, result);
  return result;
}

Change Rematerializer::apply(const MemoryPlan &plan, const Candidate &c) {
  Change change;
  OpBuilder b(c.at);
  IRMapping roots;
  DenseMap<unsigned, LaunchOp> producers, clones;
  // The recomputations, inputs first.
  for (unsigned i : c.chain) {
    LaunchOp producer = producers[i] = producerOf(plan, i);
    ValueRange args = producer.getArgs();
    int64_t n = numOutputs(symbols.lookup<func::FuncOp>(producer.getKernel()));
    IRMapping map;
    for (auto [k, a] : llvm::enumerate(args)) {
      if (static_cast<int64_t>(k) >= static_cast<int64_t>(args.size()) - n) {
        // Every output gets a new buffer (the others are scratch).
        if (!roots.contains(a)) {
          Operation *buf = b.clone(*a.getDefiningOp());
          buf->removeAttr("offset");
          change.created.push_back(buf);
          roots.map(a, buf->getResult(0));
        }
        map.map(a, roots.lookup(a));
        continue;
      }
      map.map(a, rebase(a, roots, b, change));
    }
    auto clone = cast<LaunchOp>(b.clone(*producer, map));
    change.created.push_back(clone);
    clones[i] = clone;
    int64_t flops;
    change.cost += costOf(producer, flops);
    change.flops += flops;
  }
  // The uses from `at` on read the recomputed buffers.
  int64_t from = plan.positions.lookup(c.at);
  for (unsigned i : c.chain) {
    const BufferPlan &bp = plan.buffers[i];
    for (Operation *user : bp.users) {
      if (plan.positions.lookup(user) < from)
        continue;
      OpBuilder ub(user);
      IRMapping local = roots;
      for (OpOperand &operand : user->getOpOperands()) {
        if (rootBuffer(operand.get()) != bp.op)
          continue;
        Value rebased = rebase(operand.get(), local, ub, change);
        change.replaced.push_back({&operand, operand.get()});
        operand.set(rebased);
      }
    }
  }
  // Originals left without readers are moved, not recomputed: drop them
  // (consumers before producers, so a chain goes as a whole).
  llvm::DenseSet<Operation *> dead;
  for (unsigned i : llvm::reverse(c.chain)) {
    LaunchOp producer = producers[i], clone = clones[i];
    ValueRange args = producer.getArgs();
    int64_t n = numOutputs(symbols.lookup<func::FuncOp>(producer.getKernel()));
    SmallVector<Value> outs(args.take_back(n));
    llvm::DenseSet<Operation *> withProducer = dead;
    withProducer.insert(producer);
    if (llvm::any_of(outs,
                     [&](Value o) { return hasLiveUse(o, withProducer); })) {
      clone->setAttr("kiln.remat", b.getStringAttr("recompute"));
      continue;
    }
    dead.insert(producer);
    change.removed.push_back({producer, producer->getNextNode()});
    producer->remove();
    for (Value o : outs) {
      Operation *buf = o.getDefiningOp();
      if (dead.insert(buf).second) {
        change.removed.push_back({buf, buf->getNextNode()});
        buf->remove();
      }
    }
    int64_t flops;
    change.cost -= costOf(producer, flops);
    change.flops -= flops;
    // The clone takes the original's place: a move, unless the original was
    // a recomputation itself (the clone copied its attribute).
    if (!clone->hasAttr("kiln.remat"))
      clone->setAttr("kiln.remat", b.getStringAttr("move"));
  }
  return change;
}

bool Rematerializer::step(const MemoryPlan &plan) {
  SmallVector<int64_t> timeline = liveBytesTimeline(plan);
  if (timeline.empty())
    return false;
  int64_t peak = *llvm::max_element(timeline);
  int64_t p = llvm::find(timeline, peak) - timeline.begin();
  int64_t atPeak = llvm::count(timeline, peak);
  Operation *peakOp = plan.ops[p];

  // Candidates: live across p, not used there.
  SmallVector<Candidate> candidates;
  DenseMap<Operation *, unsigned> indexOf;
  for (auto [i, bp] : llvm::enumerate(plan.buffers))
    indexOf[bp.op] = i;
  for (auto [i, bp] : llvm::enumerate(plan.buffers)) {
    if (bp.start >= p || bp.end <= p || !producerOf(plan, i))
      continue;
    Operation *at = nullptr;
    bool usedAtPeak = false;
    for (Operation *user : bp.users) {
      int64_t pos = plan.positions.lookup(user);
      usedAtPeak |= pos == p;
      if (pos > p && !at)
        at = user;
    }
    if (usedAtPeak || !at)
      continue;
    Candidate alone{{static_cast<unsigned>(i)}, at};
    candidates.push_back(alone);
    // With the inputs that are dead at p now (they would be live there),
    // recursively.
    SmallVector<unsigned> chain{static_cast<unsigned>(i)};
    for (size_t k = 0; k < chain.size() && chain.size() < kMaxChain; ++k) {
      LaunchOp producer = producerOf(plan, chain[k]);
      for (Value a : producer.getArgs()) {
        BufferOp root = rootBuffer(a);
        auto it = root ? indexOf.find(root) : indexOf.end();
        if (it == indexOf.end() || llvm::is_contained(chain, it->second))
          continue;
        const BufferPlan &in = plan.buffers[it->second];
        if (in.end < p && producerOf(plan, it->second) &&
            chain.size() < kMaxChain)
          chain.push_back(it->second);
      }
    }
    if (chain.size() > 1) {
      llvm::sort(chain, [&](unsigned a, unsigned b) {
        return plan.buffers[a].start < plan.buffers[b].start;
      });
      candidates.push_back({chain, at});
    }
  }

  // Try each: keep the one saving the most bytes at p per FLOP among those
  // that lower the peak.
  const Candidate *best = nullptr;
  int64_t bestSaved = 0, bestCost = 1;
  for (const Candidate &c : candidates) {
    Change change = apply(plan, c);
    MemoryPlan after = computeLiveRanges(host, inPlace);
    SmallVector<int64_t> t = liveBytesTimeline(after);
    change.undo();
    int64_t newPeak = *llvm::max_element(t);
    int64_t newAtPeak = llvm::count(t, newPeak);
    if (newPeak > peak || (newPeak == peak && newAtPeak >= atPeak))
      continue;
    int64_t saved = timeline[p] - t[after.positions.lookup(peakOp)];
    if (saved <= 0)
      continue;
    int64_t cost = std::max<int64_t>(change.cost, 1);
    if (!best || static_cast<double>(saved) * bestCost >
                     static_cast<double>(bestSaved) * cost) {
      best = &c;
      bestSaved = saved;
      bestCost = cost;
    }
  }
  if (!best)
    return false;
  Change change = apply(plan, *best);
  change.commit();
  extraFlops += change.flops;
  recomputed += best->chain.size();
  return true;
}

/// Fails with the message the brief asks for when an input or an
/// intermediate has a dynamic size: the budget needs every size.
static LogicalResult checkStaticShapes(func::FuncOp host) {
  auto io = host->getAttrOfType<StringAttr>("kiln.signature_io");
  SmallVector<StringRef> lines;
  if (io)
    io.getValue().split(lines, '\n', -1, false);
  for (StringRef line : lines) {
    SmallVector<StringRef> f;
    line.split(f, ' ', -1, false);
    if (f.size() < 4 || f[0] != "input")
      continue;
    std::string name = unescape(f[1]);
    SmallVector<std::string> dims;
    for (StringRef d : ArrayRef(f).drop_front(4))
      dims.push_back(d.starts_with("?") ? "N" : d.str());
    for (auto [axis, d] : llvm::enumerate(ArrayRef(f).drop_front(4))) {
      if (!d.starts_with("?"))
        continue;
      std::string sym = unescape(d.drop_front());
      std::string shapes = "--shapes " + name + ":" + llvm::join(dims, "x");
      if (sym.empty())
        return host.emitError("--max-memory needs static shapes: input '")
               << name << "' dim " << axis << " is symbolic; fix it with --dim "
               << name << ":" << axis << "=N or " << shapes;
      return host.emitError("--max-memory needs static shapes: input '")
             << name << "' dim " << axis << " ('" << sym
             << "') is symbolic; fix it with --dim " << sym << "=N or "
             << shapes;
    }
  }
  WalkResult r = host.walk([](BufferOp b) {
    if (b.getBuffer().getType().hasStaticShape())
      return WalkResult::advance();
    b.emitError("--max-memory needs static shapes: this tensor's size ")
        << b.getBuffer().getType() << " is only known when the model runs";
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

namespace {
/// A weight a run keeps in memory, with its bytes as laid out (rounded up to
/// the weight alignment: 64 in the .so and the weights file, 256 for a
/// device's allocations).
struct Weight {
  std::string name;
  int64_t bytes = 0;
};

/// The weights of a run (--max-memory-weights), largest first, and their
/// total.
struct Weights {
  SmallVector<Weight> list;
  int64_t bytes = 0;
};
} // namespace

/// The weights the model keeps in memory for its runs (in device memory on a
/// device target, uploaded once per instance; in host memory on the CPU):
/// every constant `memref.global` the module reads, named by its resource
/// (the ONNX initializer, or the constant folded from it) or else by its
/// symbol, except index arrays (the shapes of host reshapes), and every
/// external weight (`kiln.external_weight`), named by its signature record.
/// Weights only `kiln_model_init` reads count too: they stay uploaded (its
/// persistent outputs are in the arena).
static Weights collectWeights(ModuleOp module, func::FuncOp host,
                              int64_t alignment) {
  auto aligned = [&](int64_t b) {
    return (b + alignment - 1) / alignment * alignment;
  };
  Weights w;
  for (auto global : module.getOps<memref::GlobalOp>()) {
    MemRefType type = global.getType();
    std::optional<Attribute> init = global.getInitialValue();
    if (!global.getConstant() || !init || isa<UnitAttr>(*init) ||
        !type.hasStaticShape() || type.getElementType().isIndex() ||
        SymbolTable::symbolKnownUseEmpty(global, module))
      continue;
    std::string name = global.getSymName().str();
    if (auto r = dyn_cast<DenseResourceElementsAttr>(*init))
      name = r.getRawHandle().getKey().str();
    w.list.push_back({name, aligned(bufferBytes(type))});
  }
  // External weights: the signature's `weight` records, in index order.
  SmallVector<std::string> names;
  if (auto io = host->getAttrOfType<StringAttr>("kiln.signature_io")) {
    SmallVector<StringRef> lines;
    io.getValue().split(lines, '\n', -1, false);
    for (StringRef line : lines)
      if (line.starts_with("weight "))
        names.push_back(unescape(line.drop_front(7).split(' ').first));
  }
  std::map<int64_t, int64_t> external;
  module.walk([&](ExternalWeightOp op) {
    external[op.getIndex()] = bufferBytes(op.getBuffer().getType());
  });
  for (auto [index, bytes] : external)
    w.list.push_back({index < static_cast<int64_t>(names.size())
                          ? names[index]
                          : "external weight " + std::to_string(index),
                      aligned(bytes)});
  llvm::stable_sort(w.list, [](const Weight &a, const Weight &b) {
    return a.bytes > b.bytes;
  });
  for (const Weight &x : w.list)
    w.bytes += x.bytes;
  return w;
}

/// The error when the weights alone reach the budget: their total and the
/// largest.
static void reportWeightsExceed(func::FuncOp host, int64_t budget,
                                const Weights &weights, int64_t arena) {
  InFlightDiagnostic d =
      host.emitError("memory budget of ")
      << formatBytes(budget) << " leaves nothing for the arena: the "
      << weights.list.size() << " weights alone take "
      << formatBytes(weights.bytes)
      << " (--max-memory-weights counts them; the unconstrained arena is "
      << formatBytes(arena) << "); the largest weights:";
  for (auto [k, x] : llvm::enumerate(ArrayRef(weights.list).take_front(3)))
    d << (k ? "," : "") << " '" << x.name << "' " << formatBytes(x.bytes);
}

/// The error when no plan fits: the smallest peak reached and the largest
/// tensors live there. `budget` is the arena's; with the weights in the
/// budget (`weightBytes` > 0) the message names the whole budget and the
/// sizes that fit count the weights.
static void reportUnreachable(func::FuncOp host, const MemoryPlan &plan,
                              int64_t budget, int64_t weightBytes,
                              int64_t arena, int64_t persistent,
                              int64_t natural, const Rematerializer &remat,
                              int64_t chunked, int64_t banded,
                              int64_t haloFlops) {
  SmallVector<int64_t> timeline = liveBytesTimeline(plan);
  int64_t p =
      timeline.empty() ? 0 : llvm::max_element(timeline) - timeline.begin();
  SmallVector<const BufferPlan *> live;
  for (const BufferPlan &bp : plan.buffers)
    if (bp.start <= p && p <= bp.end)
      live.push_back(&bp);
  llvm::stable_sort(live, [](const BufferPlan *a, const BufferPlan *b) {
    return a->bytes > b->bytes;
  });
  // The greedy path does not depend on the budget (only where it stops), so
  // this arena is a budget that fits.
  std::string fits = std::to_string(arena + weightBytes), fraction;
  llvm::raw_string_ostream(fraction) << llvm::format(
      "%.2f",
      std::ceil(100.0 * (arena + weightBytes) /
                std::max<int64_t>(natural + persistent + weightBytes, 1)) /
          100);
  InFlightDiagnostic d = host.emitError("memory budget of ")
                         << formatBytes(budget + weightBytes);
  if (weightBytes > 0)
    d << ", of which the weights take " << formatBytes(weightBytes)
      << " and leave " << formatBytes(budget) << " for the arena,";
  d << " cannot be met: the smallest peak reached is "
    << formatBytes(plan.peakLiveBytes) << " ("
    << ratio(plan.peakLiveBytes, natural)
    << "x the unconstrained peak) after recomputing " << remat.recomputed
    << " tensors";
  if (chunked > 0)
    d << (banded > 0 ? ", " : " and ") << "splitting " << chunked
      << " launches into batch chunks";
  if (banded > 0)
    d << " and splitting " << banded << " launches into bands of rows";
  d << " (+" << remat.extraFlops + haloFlops << " FLOPs)";
  d << ", an arena of " << formatBytes(arena);
  if (persistent > 0)
    d << " with " << formatBytes(persistent)
      << " of persistent buffers (kiln_model_init)";
  d << " (--max-memory=" << fits << " or " << fraction << "x fits";
  if (weightBytes > 0)
    d << ", weights included";
  d << ")";
  d << "; the largest tensors live at the peak:";
  for (auto [k, bp] : llvm::enumerate(ArrayRef(live).take_front(5))) {
    auto producer =
        bp->users.empty() ? LaunchOp() : dyn_cast<LaunchOp>(bp->users.front());
    d << (k ? "," : "") << " '"
      << (producer ? launchNodes(producer) : std::string("host buffer")) << "' "
      << formatBytes(bp->bytes);
  }
}

namespace {
struct RematPass : public kiln::impl::KilnRematBase<RematPass> {
  using Base::Base;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    // Row chunking slices kernels through their TilingInterface.
    registry.insert<affine::AffineDialect, scf::SCFDialect>();
    linalg::registerTilingInterfaceExternalModels(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (budgetBytes < 0 || budgetFraction < 0 ||
        (budgetBytes > 0 && budgetFraction > 0)) {
      module.emitError("kiln-remat: give one of budget-bytes and "
                       "budget-fraction, positive");
      return signalPassFailure();
    }
    if (budgetBytes == 0 && budgetFraction == 0)
      return;
    if (alignment <= 0 || (alignment & (alignment - 1)) ||
        weightAlignment <= 0 || (weightAlignment & (weightAlignment - 1))) {
      module.emitError("kiln-remat: alignment and weight-alignment must be "
                       "powers of two");
      return signalPassFailure();
    }
    int64_t persistent = 0;
    if (auto p = module->getAttrOfType<IntegerAttr>("kiln.persistent_size"))
      persistent = p.getInt();
    for (auto host : module.getOps<func::FuncOp>()) {
      if (!host->hasAttr("kiln.signature_io"))
        continue;
      if (!host.getBody().hasOneBlock()) {
        host.emitError("kiln-remat: the host program must be one block");
        return signalPassFailure();
      }
      if (failed(checkStaticShapes(host)) ||
          failed(runOnHost(module, host, persistent)))
        return signalPassFailure();
    }
  }

  LogicalResult runOnHost(ModuleOp module, func::FuncOp host,
                          int64_t persistent) {
    MemoryPlan plan = computeMemoryPlan(host, alignment, inPlace);
    auto arenaOf = [&](const MemoryPlan &p) {
      return p.arenaBytes + persistent;
    };
    int64_t peakBefore = plan.peakLiveBytes, arenaBefore = arenaOf(plan);
    // With the weights in the budget, the arena gets what they leave (a
    // fraction is of the unconstrained peak plus the weights).
    Weights w;
    if (weights)
      w = collectWeights(module, host, weightAlignment);
    int64_t total =
        budgetBytes > 0
            ? static_cast<int64_t>(budgetBytes)
            : static_cast<int64_t>(budgetFraction *
                                   (peakBefore + persistent + w.bytes));
    if (weights && w.bytes >= total) {
      reportWeightsExceed(host, total, w, arenaBefore);
      return failure();
    }
    int64_t budget = total - w.bytes;
    // The timeline before, per launch, for the report.
    Builder b(module.getContext());
    SmallVector<Attribute> before;
    SmallVector<int64_t> timeline = liveBytesTimeline(plan);
    for (auto [t, op] : llvm::enumerate(plan.ops))
      if (auto launch = dyn_cast<LaunchOp>(op))
        before.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("kernel", launch.getKernelAttr().getAttr()),
             b.getNamedAttr("live_bytes", b.getI64IntegerAttr(timeline[t]))}));
    // The program's FLOPs before, as the report counts them (each launch's
    // kernel): the report's extra FLOPs are the difference.
    SymbolTable symbols(module);
    int64_t flopsBefore = 0;
    host.walk([&](LaunchOp launch) {
      if (auto fn = symbols.lookup<func::FuncOp>(launch.getKernel()))
        flopsBefore += std::max<int64_t>(estimateFlops(fn), 0);
    });
    SmallVector<NamedAttribute> record = {
        b.getNamedAttr("budget_bytes", b.getI64IntegerAttr(total)),
        b.getNamedAttr("program_flops_before",
                       b.getI64IntegerAttr(flopsBefore)),
        b.getNamedAttr("peak_before", b.getI64IntegerAttr(peakBefore)),
        b.getNamedAttr("arena_before", b.getI64IntegerAttr(arenaBefore)),
        b.getNamedAttr("timeline_before", b.getArrayAttr(before))};
    if (weights) {
      record.push_back(
          b.getNamedAttr("weights_bytes", b.getI64IntegerAttr(w.bytes)));
      record.push_back(
          b.getNamedAttr("num_weights", b.getI64IntegerAttr(w.list.size())));
      record.push_back(
          b.getNamedAttr("arena_budget_bytes", b.getI64IntegerAttr(budget)));
    }
    module->setAttr("kiln.remat", b.getDictionaryAttr(record));

    // 1. Recomputation alone. 2. When it cannot reach the budget, again
    // from the original program, batch chunking first wherever it lowers
    // the peak (it adds no FLOPs), recomputation elsewhere. 3. From there,
    // bands of rows too (their halos add FLOPs) where neither lowers the
    // peak.
    auto original = cast<func::FuncOp>(host->clone());
    Rematerializer remat(host, inPlace);
    auto greedy = [&](Rematerializer &r, BatchChunker *chunker,
                      RowChunker *rows) {
      for (unsigned steps = 0; arenaOf(plan) > budget; ++steps) {
        if (steps == kMaxSteps ||
            !((chunker && chunker->step(plan, budget)) || r.step(plan) ||
              (rows && rows->step(plan, budget))))
          return false;
        plan = computeMemoryPlan(host, alignment, inPlace);
      }
      return true;
    };
    if (greedy(remat, nullptr, nullptr) || !chunk) {
      original->erase();
      if (arenaOf(plan) <= budget)
        return success();
      reportUnreachable(host, plan, budget, w.bytes, arenaOf(plan), persistent,
                        peakBefore, remat, 0, 0, 0);
      return failure();
    }
    auto rematOnly = cast<func::FuncOp>(host->clone());
    int64_t rematOnlyArena = arenaOf(plan);
    host.getBody().takeBody(original.getBody());
    original->erase();
    plan = computeMemoryPlan(host, alignment, inPlace);
    Rematerializer mixed(host, inPlace);
    BatchChunker chunker(host, inPlace, alignment, persistent);
    RowChunker rows(host, inPlace, alignment, persistent);
    bool fits =
        greedy(mixed, &chunker, nullptr) || greedy(mixed, &chunker, &rows);
    if (!fits && rematOnlyArena <= arenaOf(plan)) {
      // Recomputation alone went lower: that is the smallest peak reached.
      host.getBody().takeBody(rematOnly.getBody());
      plan = computeMemoryPlan(host, alignment, inPlace);
      chunker.finish();
      rows.finish();
      rematOnly->erase();
      reportUnreachable(host, plan, budget, w.bytes, arenaOf(plan), persistent,
                        peakBefore, remat, 0, 0, 0);
      return failure();
    }
    rematOnly->erase();
    chunker.finish();
    rows.finish();
    if (!fits) {
      reportUnreachable(host, plan, budget, w.bytes, arenaOf(plan), persistent,
                        peakBefore, mixed, chunker.chunkedLaunches,
                        rows.chunkedLaunches, rows.extraFlops);
      return failure();
    }
    return success();
  }
};
} // namespace
