//===- PlanMemory.cpp - Arena offsets for intermediate buffers ------------===//
//
// Plans the per-instance arena of the host program:
//  1. live range of every static `kiln.buffer`: from its first use to its
//     last use (uses through views count), in program order;
//  2. in-place reuse: an elementwise kernel may write its output into the
//     buffer of an input that dies at that launch (same size; the kernel
//     reads and writes each element at the same index in one iteration);
//  3. offsets by greedy best fit: each buffer goes to the lowest aligned
//     offset of the smallest gap where it overlaps no buffer whose live range
//     intersects its own, placing the largest buffers first, or in program
//     order when that gives a smaller arena.
// Model inputs and outputs are not arena buffers: never overwritten.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/MemoryPlan.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

int64_t mlir::kiln::bufferBytes(MemRefType t) {
  if (!t.hasStaticShape())
    return -1;
  int64_t bits = t.getElementTypeBitWidth();
  return t.getNumElements() * ((bits + 7) / 8);
}

BufferOp mlir::kiln::rootBuffer(Value v) {
  while (true) {
    if (auto b = v.getDefiningOp<BufferOp>())
      return b;
    Operation *def = v.getDefiningOp();
    if (!def)
      return {};
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    if (isa<UnrealizedConversionCastOp>(def) && def->getNumOperands() == 1) {
      v = def->getOperand(0);
      continue;
    }
    return {};
  }
}

/// Whether kernel `fn` may write output argument `outIdx` over input
/// argument `inIdx`: its body is one all-parallel linalg.generic that reads
/// that input and writes that output with the same (identity) indexing, and
/// reads no other view of it.
static bool isInPlaceSafe(func::FuncOp fn, unsigned inIdx, unsigned outIdx) {
  if (!fn || fn.isExternal())
    return false;
  Block &body = fn.getBody().front();
  BlockArgument in = body.getArgument(inIdx), out = body.getArgument(outIdx);
  // The tensor each memref argument is read as.
  Value inTensor, result;
  linalg::GenericOp generic;
  for (Operation &op : body) {
    if (auto t = dyn_cast<bufferization::ToTensorOp>(op)) {
      if (t.getBuffer() == in)
        inTensor = t.getResult();
    } else if (auto g = dyn_cast<linalg::GenericOp>(op)) {
      if (generic)
        return false; // more than one computation
      generic = g;
    } else if (auto m =
                   dyn_cast<bufferization::MaterializeInDestinationOp>(op)) {
      if (m.getDest() == out)
        result = m.getSource();
    } else if (!isa<tensor::EmptyOp, arith::ConstantOp, func::ReturnOp,
                    linalg::FillOp>(op) &&
               !(op.getNumRegions() == 0 &&
                 llvm::none_of(op.getResultTypes(),
                               [](Type t) { return isa<ShapedType>(t); }))) {
      return false;
    }
  }
  if (!generic || !inTensor || !result || generic->getNumResults() != 1 ||
      generic->getResult(0) != result)
    return false;
  if (generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  AffineMap outMap = generic.getIndexingMapsArray().back();
  if (!outMap.isIdentity())
    return false;
  bool found = false;
  for (OpOperand *operand : generic.getDpsInputOperands()) {
    if (operand->get() != inTensor)
      continue;
    if (!generic.getMatchingIndexingMap(operand).isIdentity())
      return false;
    found = true;
  }
  // The input must not be read other than through the generic's operands
  // (e.g. with tensor.extract at other indices).
  for (OpOperand &use : inTensor.getUses())
    if (use.getOwner() != generic.getOperation())
      return false;
  return found;
}

MemoryPlan mlir::kiln::computeLiveRanges(func::FuncOp host, bool inPlace) {
  MemoryPlan plan;
  Block &block = host.getBody().front();
  DenseMap<Operation *, int64_t> &position = plan.positions;
  int64_t pos = 0;
  for (Operation &op : block) {
    position[&op] = pos++;
    plan.ops.push_back(&op);
  }

  // Static buffers and their live ranges.
  SmallVector<BufferOp> buffers;
  DenseMap<Operation *, unsigned> index;
  for (Operation &op : block)
    if (auto b = dyn_cast<BufferOp>(op))
      if (b.getBuffer().getType().hasStaticShape() &&
          !b->hasAttr("kiln.persistent")) {
        index[b] = buffers.size();
        buffers.push_back(b);
      }
  unsigned n = buffers.size();
  plan.buffers.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    plan.buffers[i].op = buffers[i];
    plan.buffers[i].bytes = bufferBytes(buffers[i].getBuffer().getType());
    plan.buffers[i].start = INT64_MAX;
    plan.buffers[i].end = -1;
  }
  // Uses, following views.
  for (Operation &op : block) {
    // The view ops themselves don't touch memory.
    if (isa<ViewLikeOpInterface>(op) || isa<UnrealizedConversionCastOp>(op))
      continue;
    for (Value operand : op.getOperands()) {
      BufferOp root = rootBuffer(operand);
      if (!root || !index.count(root))
        continue;
      BufferPlan &bp = plan.buffers[index[root]];
      bp.start = std::min(bp.start, position[&op]);
      bp.end = std::max(bp.end, position[&op]);
      if (bp.users.empty() || bp.users.back() != &op)
        bp.users.push_back(&op);
    }
  }
  // A buffer a run-time check reads (an index range's min and max) lives
  // until the check: on a device target the check and its reads move to
  // the check's place (kiln-map-kernels-to-gpu), after the launches between.
  for (Operation &op : block) {
    auto check = dyn_cast<CheckOp>(op);
    if (!check)
      continue;
    SmallVector<Value> worklist(check->getOperands());
    llvm::SmallPtrSet<Operation *, 16> seen;
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != &block || !seen.insert(def).second)
        continue;
      if (auto load = dyn_cast<memref::LoadOp>(def)) {
        BufferOp root = rootBuffer(load.getMemRef());
        if (root && index.count(root)) {
          BufferPlan &bp = plan.buffers[index[root]];
          bp.end = std::max(bp.end, position[check]);
        }
        continue;
      }
      if (isMemoryEffectFree(def))
        llvm::append_range(worklist, def->getOperands());
    }
  }
  for (BufferPlan &bp : plan.buffers)
    if (bp.end < 0) // never used
      bp.start = bp.end = position[bp.op];

  // In-place: union an output with an input that dies at the launch.
  llvm::EquivalenceClasses<unsigned> slots;
  for (unsigned i = 0; i < n; ++i)
    slots.insert(i);
  SymbolTable symbols(host->getParentOfType<ModuleOp>());
  if (inPlace) {
    for (Operation &op : block) {
      auto launch = dyn_cast<LaunchOp>(op);
      if (!launch)
        continue;
      auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
      if (!fn)
        continue;
      int64_t t = position[launch];
      ValueRange args = launch.getArgs();
      // Outputs are the trailing arguments the kernel writes; in-place only
      // for single-output kernels (their last argument).
      unsigned outIdx = args.size() - 1;
      BufferOp outBuf = rootBuffer(args[outIdx]);
      if (!outBuf || !index.count(outBuf) || args[outIdx] != outBuf.getBuffer())
        continue;
      BufferPlan &out = plan.buffers[index[outBuf]];
      if (out.start != t)
        continue;
      for (unsigned a = 0; a < outIdx; ++a) {
        BufferOp inBuf = rootBuffer(args[a]);
        if (!inBuf || !index.count(inBuf) || inBuf == outBuf)
          continue;
        // The input's whole slot group must end here.
        int64_t groupEnd = -1, groupBytes = -1;
        for (auto it = slots.findLeader(index[inBuf]); it != slots.member_end();
             ++it) {
          groupEnd = std::max(groupEnd, plan.buffers[*it].end);
          groupBytes = std::max(groupBytes, plan.buffers[*it].bytes);
        }
        if (groupEnd != t || groupBytes != out.bytes)
          continue;
        // Every use of the input at this launch is this one argument.
        if (llvm::count_if(
                args, [&](Value v) { return rootBuffer(v) == inBuf; }) != 1)
          continue;
        if (!isInPlaceSafe(fn, a, outIdx))
          continue;
        slots.unionSets(index[inBuf], index[outBuf]);
        out.inPlaceOf = index[inBuf];
        break;
      }
    }
  }

  // Slot groups: union of live ranges, max size.
  DenseMap<unsigned, unsigned> groupOf;
  for (unsigned i = 0; i < n; ++i) {
    unsigned leader = slots.getLeaderValue(i);
    auto [it, inserted] = groupOf.try_emplace(leader, plan.slots.size());
    if (inserted)
      plan.slots.emplace_back();
    SlotPlan &s = plan.slots[it->second];
    s.members.push_back(i);
    s.start = std::min(s.start, plan.buffers[i].start);
    s.end = std::max(s.end, plan.buffers[i].end);
    s.bytes = std::max(s.bytes, plan.buffers[i].bytes);
  }

  // Totals: all intermediates, and the largest set live at once.
  for (const BufferPlan &bp : plan.buffers)
    plan.totalBytes += bp.bytes;
  for (int64_t live : liveBytesTimeline(plan))
    plan.peakLiveBytes = std::max(plan.peakLiveBytes, live);
  return plan;
}

SmallVector<int64_t> mlir::kiln::liveBytesTimeline(const MemoryPlan &plan) {
  // A sweep: +bytes where a slot starts, -bytes after it ends.
  SmallVector<int64_t> delta(plan.ops.size() + 1, 0);
  for (const SlotPlan &s : plan.slots) {
    delta[s.start] += s.bytes;
    delta[s.end + 1] -= s.bytes;
  }
  SmallVector<int64_t> live(plan.ops.size(), 0);
  int64_t running = 0;
  for (size_t t = 0; t < live.size(); ++t)
    live[t] = running += delta[t];
  return live;
}

/// Places `groups` in `order` (each at the lowest aligned offset of the
/// smallest gap that holds it among the live-overlapping slots placed
/// before); returns the arena size and sets each slot's offset.
static int64_t placeSlots(SmallVector<SlotPlan> &groups,
                          ArrayRef<unsigned> order, int64_t alignment) {
  auto alignUp = [&](int64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
  int64_t arena = 0;
  SmallVector<unsigned> placed;
  for (unsigned g : order) {
    SlotPlan &s = groups[g];
    // Intervals [offset, offset + bytes) of live-overlapping placed slots.
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (unsigned p : placed) {
      const SlotPlan &o = groups[p];
      if (o.start <= s.end && s.start <= o.end)
        busy.push_back({o.offset, o.offset + o.bytes});
    }
    llvm::sort(busy);
    // Best fit: the smallest gap that holds the slot; else past the end.
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : busy) {
      int64_t start = alignUp(cursor);
      if (lo - start >= s.bytes && lo - start < bestGap) {
        best = start;
        bestGap = lo - start;
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0)
      best = alignUp(cursor);
    s.offset = best;
    placed.push_back(g);
    arena = std::max(arena, alignUp(best + s.bytes));
  }
  return arena;
}

void mlir::kiln::assignArenaOffsets(MemoryPlan &plan, int64_t alignment) {
  SmallVector<SlotPlan> &groups = plan.slots;
  // Two orders, the smaller arena wins (the first on a tie): largest slots
  // first (ties by start), and program order (ties by size), which packs
  // better where slots of one size follow each other (a recomputed tensor
  // next to the ones it replaced).
  SmallVector<unsigned> bySize(groups.size());
  for (unsigned i = 0; i < groups.size(); ++i)
    bySize[i] = i;
  SmallVector<unsigned> byStart = bySize;
  llvm::stable_sort(bySize, [&](unsigned a, unsigned b) {
    if (groups[a].bytes != groups[b].bytes)
      return groups[a].bytes > groups[b].bytes;
    return groups[a].start < groups[b].start;
  });
  llvm::stable_sort(byStart, [&](unsigned a, unsigned b) {
    if (groups[a].start != groups[b].start)
      return groups[a].start < groups[b].start;
    return groups[a].bytes > groups[b].bytes;
  });
  plan.arenaBytes = placeSlots(groups, byStart, alignment);
  SmallVector<int64_t> offsets;
  for (const SlotPlan &s : groups)
    offsets.push_back(s.offset);
  int64_t arena = placeSlots(groups, bySize, alignment);
  if (arena <= plan.arenaBytes) {
    plan.arenaBytes = arena;
  } else {
    for (auto [s, o] : llvm::zip(groups, offsets))
      s.offset = o;
  }
  for (const SlotPlan &s : groups)
    for (unsigned m : s.members)
      plan.buffers[m].offset = s.offset;
}

MemoryPlan mlir::kiln::computeMemoryPlan(func::FuncOp host, int64_t alignment,
                                         bool inPlace) {
  MemoryPlan plan = computeLiveRanges(host, inPlace);
  assignArenaOffsets(plan, alignment);
  return plan;
}

namespace {
struct PlanMemoryPass : public kiln::impl::KilnPlanMemoryBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1))) {
      module.emitError("kiln-plan-memory: alignment must be a power of two");
      return signalPassFailure();
    }
    int64_t arena = 0, total = 0, peak = 0;
    for (auto host : module.getOps<func::FuncOp>()) {
      if (!host->hasAttr("kiln.signature_io"))
        continue;
      if (!host.getBody().hasOneBlock()) {
        host.emitError("kiln-plan-memory: the host program must be one block");
        return signalPassFailure();
      }
      MemoryPlan plan = computeMemoryPlan(host, alignment, inPlace);
      for (BufferPlan &bp : plan.buffers) {
        if (bp.bytes > (int64_t(1) << 48)) {
          bp.op.emitError("buffer of ")
              << bp.op.getBuffer().getType() << " is too large for the arena";
          return signalPassFailure();
        }
        bp.op.setOffsetAttr(
            IntegerAttr::get(IntegerType::get(&getContext(), 64), bp.offset));
      }
      arena = std::max(arena, plan.arenaBytes);
      total += plan.totalBytes;
      peak = std::max(peak, plan.peakLiveBytes);
    }
    auto i64 = IntegerType::get(&getContext(), 64);
    // Buffers kiln-hoist-weight-kernels made persistent: after the planned
    // part of the arena, which runs never write.
    if (auto persistent =
            module->getAttrOfType<IntegerAttr>("kiln.persistent_size")) {
      int64_t base = (arena + alignment - 1) / alignment * alignment;
      module.walk([&](BufferOp op) {
        if (auto p = op->getAttrOfType<IntegerAttr>("kiln.persistent"))
          op.setOffsetAttr(IntegerAttr::get(i64, base + p.getInt()));
      });
      arena = base + persistent.getInt();
    }
    module->setAttr("kiln.arena_size", IntegerAttr::get(i64, arena));
    module->setAttr("kiln.intermediate_bytes", IntegerAttr::get(i64, total));
    module->setAttr("kiln.peak_live_bytes", IntegerAttr::get(i64, peak));
  }
};
} // namespace
