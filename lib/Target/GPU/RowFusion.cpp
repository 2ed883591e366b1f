//===- RowFusion.cpp - Normalizations and softmax as one launch -----------===//
//
// RowFusion (Lowering.h): a chain of row-local linalg.generic ops of a
// launcher (LayerNormalization's mean, centering, variance and scaling;
// softmax's max, exponentials, sum and division) becomes one launch with a
// block per row instead of a launch per op. All ops of the chain iterate
// the same rows (the same outer dims) and either the row's R elements (the
// innermost dim, reduced by the row reductions) or the row itself (a
// per-row scalar); a buffer the chain writes is accessed by the chain only
// at the row being computed, so the blocks are independent. In the block,
// the threads stride over the row for each op in turn, a row reduction
// combines the threads' partial results with a butterfly of the target's
// shuffles and then the warps' through shared memory, and a barrier
// separates the ops (the rows the block wrote stay in its cache).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {

/// The longest row a block takes (R elements per op, strided by its
/// threads); longer rows keep one launch per op.
constexpr int64_t kMaxRow = 16384;
/// Rows up to this long take a warp each (their elements and row scalars in
/// the lanes' registers, no barriers); longer ones a block each.
constexpr int64_t kWarpRow = 2048;
/// Warp rows of up to this many elements per lane are unrolled: a buffer
/// only the chain reads then stays in the lanes' registers.
constexpr int64_t kRegisterSteps = 32;

/// Whether `map`'s results, constants 0 dropped, are the first `outer` dims
/// in order, optionally followed by dim `outer` (the row's element).
bool rowForm(AffineMap map, unsigned outer) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0)
        return false;
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return false;
    dims.push_back(d.getPosition());
  }
  if (dims.size() != outer && dims.size() != outer + 1)
    return false;
  for (auto [i, d] : llvm::enumerate(dims))
    if (d != i)
      return false;
  return true;
}

/// Whether `map` reads along the row (its last result the row's element,
/// dim `outer`) and otherwise only outer dims or constants 0: a row of
/// weights broadcast over some of the rows (a normalization's scale and
/// bias).
bool broadcastRow(AffineMap map, unsigned outer) {
  if (map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!last || last.getPosition() != outer)
    return false;
  return llvm::all_of(map.getResults().drop_back(), [&](AffineExpr e) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return c.getValue() == 0;
    auto d = dyn_cast<AffineDimExpr>(e);
    return d && d.getPosition() < outer;
  });
}

/// Whether `buffer`, read or written by a member through `map` (rowForm,
/// the row's element its last index), can be accessed `vec` elements at a
/// time along the row with one aligned vector access: contiguous rows whose
/// strides and offset are static multiples of `vec` (the base pointers of
/// the arena, the weights and the staged inputs are aligned to at least 64
/// bytes).
bool vectorRow(Value buffer, AffineMap map, unsigned outer, int64_t vec) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.getElementType().isIntOrFloat() ||
      map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!last || last.getPosition() != outer)
    return false;
  return type.getShape().back() % vec == 0 && alignedRuns(type, vec);
}

} // namespace

using Member = RowFusion::Member;

std::optional<RowFusion::Shape>
RowFusion::rowReduction(linalg::GenericOp op) const {
  SmallVector<unsigned> par, red;
  if (!isLowerableReduction(op, par, red, /*allowZeroResults=*/true) ||
      red.size() != 1 || red.front() != op.getNumLoops() - 1)
    return std::nullopt;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (ShapedType::isDynamicShape(sizes) || sizes.back() < 32 ||
      sizes.back() > kMaxRow)
    return std::nullopt;
  // Every input reads its row contiguously (or not at all along it): not
  // a contraction's operand read across rows.
  unsigned r = red.front();
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap m = op.getMatchingIndexingMap(in);
    if (!m.isFunctionOfDim(r))
      continue;
    if (m.getResults().back() != getAffineDimExpr(r, op.getContext()))
      return std::nullopt;
    for (AffineExpr e : m.getResults().drop_back())
      if (e.isFunctionOfDim(r))
        return std::nullopt;
  }
  Shape s;
  s.outer.assign(sizes.begin(), sizes.end() - 1);
  s.row = sizes.back();
  return s;
}

int64_t RowFusion::run(Block &block) {
  int64_t fused = 0;
  SmallVector<linalg::GenericOp> candidates;
  for (Operation &op : block)
    if (auto g = dyn_cast<linalg::GenericOp>(op))
      if (rowReduction(g))
        candidates.push_back(g);
  SmallPtrSet<Operation *, 16> taken;
  for (linalg::GenericOp seed : candidates) {
    if (taken.contains(seed))
      continue;
    if (succeeded(fuseAround(seed, taken)))
      ++fused;
  }
  return fused;
}

LogicalResult RowFusion::fuseAround(linalg::GenericOp seed,
                                    SmallPtrSetImpl<Operation *> &taken) {
  Shape shape = *rowReduction(seed);
  unsigned outer = shape.outer.size();
  // Classifies `op` as a member of a chain of `shape`.
  auto classify = [&](Operation *o) -> std::optional<Member> {
    auto g = dyn_cast<linalg::GenericOp>(o);
    if (!g || taken.contains(o) || !g.hasPureBufferSemantics() ||
        g.getNumDpsInits() != 1 ||
        g.getBlock()->getTerminator()->getNumOperands() != 1)
      return std::nullopt;
    SmallVector<int64_t> sizes = g.getStaticLoopRanges();
    if (ShapedType::isDynamicShape(sizes))
      return std::nullopt;
    Member m{g, Member::Row, {}, nullptr};
    if (std::optional<Shape> s = rowReduction(g)) {
      if (s->outer != shape.outer || s->row != shape.row)
        return std::nullopt;
      auto fill = dyn_cast_or_null<linalg::FillOp>(g->getPrevNode());
      if (!fill || fill.getOutputs()[0] != g.getDpsInitOperand(0)->get())
        return std::nullopt;
      m.kind = Member::Reduction;
      m.fill = fill;
      m.combiner = warpCombiner(*g.getBlock(), fill.getInputs()[0]);
      return m.combiner ? std::optional(m) : std::nullopt;
    }
    if (g.getNumReductionLoops() != 0)
      return std::nullopt;
    ArrayRef<int64_t> s(sizes);
    if (s == ArrayRef(shape.outer) ||
        (s.size() == outer + 1 &&
         s.take_front(outer) == ArrayRef(shape.outer) && s.back() == 1))
      m.kind = Member::Scalar;
    else if (!(s.size() == outer + 1 &&
               s.take_front(outer) == ArrayRef(shape.outer) &&
               s.back() == shape.row))
      return std::nullopt;
    return m;
  };
  // Ops that may sit between members: moved before the launch.
  auto movable = [](Operation *o) {
    if (auto b = dyn_cast<BufferOp>(o))
      return b.getDynamicSizes().empty();
    return isa<arith::ConstantOp>(o);
  };
  // The chain: the seed's neighbours in its block while they classify.
  SmallVector<Member> chain;
  std::optional<Member> m0 = classify(seed);
  if (!m0)
    return failure();
  chain.push_back(*m0);
  Operation *first = m0->fill ? m0->fill.getOperation() : seed.getOperation();
  for (Operation *o = first->getPrevNode(); o; o = o->getPrevNode()) {
    if (movable(o))
      continue;
    std::optional<Member> m = classify(o);
    if (!m)
      break;
    chain.insert(chain.begin(), *m);
    o = m->fill ? m->fill.getOperation() : o;
  }
  for (Operation *o = seed->getNextNode(); o; o = o->getNextNode()) {
    if (movable(o))
      continue;
    // A fill starts the next reduction (its initial value).
    Operation *op = isa<linalg::FillOp>(o) ? o->getNextNode() : o;
    std::optional<Member> m = op ? classify(op) : std::nullopt;
    if (!m || (m->kind == Member::Reduction) != (op != o))
      break;
    chain.push_back(*m);
    o = op;
  }
  int64_t rows = 1;
  for (int64_t size : shape.outer)
    rows *= size;
  // One reduction and per-row scalars after it are one launch already
  // (ReductionLowering::lowerWarp's epilogue).
  int64_t reductions = 0, rowOps = 0;
  for (Member &m : chain) {
    reductions += m.kind == Member::Reduction;
    rowOps += m.kind == Member::Row;
  }
  if ((reductions < 2 && rowOps == 0) ||
      rows > std::numeric_limits<int32_t>::max())
    return failure();
  // Row-locality: every access to a buffer the chain writes is to the row
  // being computed.
  DenseSet<Value> written;
  for (Member &m : chain)
    written.insert(m.op.getDpsInitOperand(0)->get());
  // Lane-locality (for a warp per row): a buffer written over the row's
  // elements is accessed only at the element being computed, so each lane
  // reads back what it wrote.
  DenseSet<Value> rowWritten;
  for (Member &m : chain)
    if (m.kind == Member::Row)
      rowWritten.insert(m.op.getDpsInitOperand(0)->get());
  bool laneLocal = true;
  for (Member &m : chain)
    for (OpOperand &o : m.op->getOpOperands()) {
      AffineMap map = m.op.getMatchingIndexingMap(&o);
      if (written.contains(o.get()) && !rowForm(map, outer))
        return failure();
      if (rowWritten.contains(o.get()) &&
          (m.kind == Member::Scalar || map.getNumResults() == 0 ||
           map.getResults().back() !=
               getAffineDimExpr(outer, m.op.getContext())))
        laneLocal = false;
    }
  emit(chain, shape, laneLocal);
  for (Member &m : chain)
    taken.insert(m.op);
  return success();
}

void RowFusion::emit(MutableArrayRef<Member> chain, const Shape &shape,
                     bool laneLocal) {
  linalg::GenericOp head = chain.front().op;
  Operation *start =
      chain.front().fill ? chain.front().fill.getOperation() : head;
  Location loc = head.getLoc();
  // Constants and buffers between the members go before the launch.
  for (Operation *o = start->getNextNode(), *next; o != chain.back().op;
       o = next) {
    next = o->getNextNode();
    if (!isa<linalg::LinalgOp>(o))
      o->moveBefore(start);
  }
  rewriter.setInsertionPoint(start);
  int64_t warp = info.getWarpSize();
  int64_t rows = 1;
  for (int64_t s : shape.outer)
    rows *= s;
  // Rows up to kWarpRow elements: a warp each (8 per block), no barriers;
  // longer ones: a block each.
  bool warpRows = laneLocal && shape.row <= kWarpRow;
  int64_t threads = warpRows ? 8 * warp : shape.row >= 4096 ? 512 : 256;
  int64_t rowsPerBlock = warpRows ? threads / warp : 1;
  int64_t stride = warpRows ? warp : threads;
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, index(loc, (rows + rowsPerBlock - 1) / rowsPerBlock),
      index(loc, 1), index(loc, 1), index(loc, threads), index(loc, 1),
      index(loc, 1));
  // Block rows: one shared slot per warp for each reduction's partials.
  SmallVector<Value> partials;
  for (Member &m : chain)
    if (m.kind == Member::Reduction && !warpRows) {
      Type t = m.fill.getInputs()[0].getType();
      partials.push_back(addSharedSlots(launch, threads / warp, t));
    }
  enterLaunch(launch);
  Value zero = index(loc, 0);
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(rewriter, loc, tid, index(loc, warp));
  Value warpId = arith::DivUIOp::create(rewriter, loc, tid, index(loc, warp));
  // The thread's first element of the row and its row.
  Value first = warpRows ? lane : tid;
  Value row = launch.getBlockIds().x;
  // Warp rows whose count the blocks do not divide: the guard that skips
  // the last block's rows past the end.
  Operation *rowGuard = nullptr;
  if (warpRows) {
    row = arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, row, index(loc, rowsPerBlock)),
        warpId);
    if (rows % rowsPerBlock) {
      Value inRange = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, row, index(loc, rows));
      auto guard = scf::IfOp::create(rewriter, loc, inRange, false);
      rowGuard = guard;
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
  }
  // The row's outer indices (the last fastest).
  unsigned outer = shape.outer.size();
  SmallVector<Value> outerIdx(outer);
  {
    Value rest = row;
    for (int64_t d = outer - 1; d >= 0; --d) {
      Value size = index(loc, shape.outer[d]);
      outerIdx[d] =
          d ? arith::RemUIOp::create(rewriter, loc, rest, size).getResult()
            : rest;
      if (d)
        rest = arith::DivUIOp::create(rewriter, loc, rest, size);
    }
  }
  // The thread that stores a row's scalars: the first of the row's.
  Value isFirst = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        first, zero);
  // Warp rows: the row scalars the chain computed, in every lane's
  // registers (read instead of their buffers).
  DenseMap<Value, Value> scalars;
  // Unrolled warp rows: the row buffers only the chain reads, their
  // elements in the lanes' registers (element lane + warp * step), and the
  // step being built.
  int64_t steps = shape.row / warp;
  bool unroll = warpRows && shape.row % warp == 0 && steps <= kRegisterSteps;
  // Unrolled warp rows read and write `vec` adjacent elements of a lane at
  // once (16 bytes of the narrowest row buffer): step s is element
  // (lane + (s / vec) * warp) * vec + s % vec. vec 1: lane + s * warp.
  int64_t vec = 1;
  if (unroll) {
    int64_t narrowest = 8;
    for (Member &m : chain)
      for (OpOperand &o : m.op->getOpOperands())
        if (auto t = dyn_cast<MemRefType>(o.get().getType());
            t && t.getElementType().isIntOrFloat())
          narrowest = std::min<int64_t>(
              narrowest,
              std::max<int64_t>(t.getElementType().getIntOrFloatBitWidth() / 8,
                                1));
    // The widest run (at most 16 bytes) that divides a lane's share.
    vec = std::min<int64_t>(16 / narrowest, 8);
    while (vec > 1 && shape.row % (warp * vec) != 0)
      vec /= 2;
  }
  auto elementAt = [&](int64_t s) -> Value {
    if (vec == 1)
      return arith::AddIOp::create(rewriter, loc, first, index(loc, s * warp));
    Value chunk = arith::AddIOp::create(rewriter, loc, first,
                                        index(loc, (s / vec) * warp));
    return arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, chunk, index(loc, vec)),
        index(loc, s % vec));
  };
  // Values of the steps of the current vector not yet stored, per buffer.
  DenseMap<Value, SmallVector<Value>> pendingStores;
  DenseMap<Value, SmallVector<Value>> registers;
  int64_t step = 0;
  llvm::SmallPtrSet<Operation *, 8> members;
  DenseSet<Value> writes;
  llvm::SmallPtrSet<Operation *, 8> fills;
  for (Member &m : chain) {
    members.insert(m.op);
    if (m.fill)
      fills.insert(m.fill);
    writes.insert(m.op.getDpsInitOperand(0)->get());
  }
  DenseMap<std::pair<Value, int64_t>, Value> loaded;
  auto chainLocal = [&](Value buffer) {
    return unroll && buffer.getDefiningOp<BufferOp>() &&
           llvm::all_of(buffer.getUsers(), [&](Operation *u) {
             return members.contains(u) || fills.contains(u);
           });
  };
  // An input row that the chain does not write (the row itself, a
  // LayerNorm's scale and bias): read from registers, each element loaded
  // once (unrolled warp rows).
  auto registerRow = [&](Value v, AffineMap map) {
    return unroll && isa<MemRefType>(v.getType()) && !writes.contains(v) &&
           (rowForm(map, outer) || broadcastRow(map, outer)) &&
           map.isFunctionOfDim(outer);
  };
  // Rows of weights that every row of the block reads (a LayerNorm's
  // scale and bias: their map reads the row's element alone), copied to
  // shared memory once a block: their shared copy.
  DenseMap<Value, Value> stagedRows;
  // Such a row's element at step `s`, `vec` elements at a time where the
  // buffer allows.
  auto rowElement = [&](Value v, AffineMap map, int64_t s) {
    auto dimsAt = [&](int64_t step) {
      SmallVector<Value> dims = outerIdx;
      dims.push_back(elementAt(step));
      return dims;
    };
    Value &cached = loaded[{v, s}];
    if (!cached && vec > 1 && vectorRow(v, map, outer, vec)) {
      int64_t base = s - s % vec;
      Type elem = cast<MemRefType>(v.getType()).getElementType();
      Value staged = stagedRows.lookup(v);
      auto ld = staged ? vector::LoadOp::create(
                             rewriter, loc, VectorType::get({vec}, elem),
                             staged, ValueRange{elementAt(base)})
                       : vector::LoadOp::create(rewriter, loc,
                                                VectorType::get({vec}, elem), v,
                                                apply(loc, map, dimsAt(base)));
      // (A shared copy is aligned to 16 bytes.)
      int64_t bytes =
          vec * std::max<int64_t>(elem.getIntOrFloatBitWidth() / 8, 1);
      ld.setAlignment(staged ? std::min<int64_t>(bytes, 16) : bytes);
      for (int64_t j = 0; j < vec; ++j)
        loaded[{v, base + j}] = vector::ExtractOp::create(rewriter, loc, ld, j);
    }
    Value &c = loaded[{v, s}];
    if (!c)
      c = load(loc, v, map, dimsAt(s));
    return c;
  };
  // All of them before the chain's first op: the stores between the ops
  // (which may alias them, as far as LLVM knows) otherwise keep the later
  // ops' loads after them, one memory latency each (BERT-base's LayerNorm
  // waited for its scale and bias in three such rounds, one per 16-byte
  // vector of its output). (No prefetch of the rows of weights before
  // them: prefetch.L1 made BERT-base's LayerNorms 3.4x slower on an H100,
  // 2026-12-07.)
  //
  // The rows of weights that all of a block's rows read go through shared
  // memory instead: the block's threads copy them once, 16 bytes each,
  // after the rows' own loads, and a barrier orders the copy before the
  // reads. The device assembler otherwise issues their loads after the
  // row's reductions (to spare the registers that hold them), each an L2
  // latency after the reductions, in rounds: BERT-base's int8 LayerNorm
  // (f32 scale and bias, 24 of each a lane) waited for them in four.
  auto widthOf = [](Value v) {
    Type elem = cast<MemRefType>(v.getType()).getElementType();
    return std::max<int64_t>(elem.getIntOrFloatBitWidth() / 8, 1);
  };
  // Whether a row that registerRow accepts goes through shared memory.
  auto sharedRow = [&](Value v, AffineMap map) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || rowsPerBlock < 2 || vec < 2 || !type.hasStaticShape())
      return false;
    int64_t run = 16 / widthOf(v);
    return 16 % widthOf(v) == 0 && shape.row % run == 0 && vec % run == 0 &&
           vectorRow(v, map, outer, run) &&
           llvm::all_of(map.getResults().drop_back(), [](AffineExpr e) {
             return isa<AffineConstantExpr>(e);
           });
  };
  // (Of one element width, the first such row's: the same runs a row.)
  SmallVector<std::pair<Value, AffineMap>> toStage;
  int64_t stagedBytes = 0;
  if (unroll)
    for (Member &m : chain)
      for (OpOperand *in : m.op.getDpsInputOperands()) {
        AffineMap map = m.op.getMatchingIndexingMap(in);
        if (!registerRow(in->get(), map))
          continue;
        if (sharedRow(in->get(), map) &&
            (!stagedBytes || widthOf(in->get()) == stagedBytes)) {
          stagedBytes = widthOf(in->get());
          if (!llvm::is_contained(llvm::make_first_range(toStage), in->get()))
            toStage.push_back({in->get(), map});
          continue;
        }
        for (int64_t s = 0; s < steps; ++s)
          rowElement(in->get(), map, s);
      }
  if (!toStage.empty()) {
    // Outside the last block's guard, whose warps all reach the barrier.
    OpBuilder::InsertionGuard ig(rewriter);
    if (rowGuard)
      rewriter.setInsertionPoint(rowGuard);
    // Each row's runs of 16 bytes; a thread takes run tid + k * threads of
    // every row, all its loads before its stores (under one guard where
    // the threads outnumber the runs left).
    const int64_t runs = shape.row * stagedBytes / 16;
    SmallVector<Value> copies;
    for (auto [v, map] : toStage) {
      Type elem = cast<MemRefType>(v.getType()).getElementType();
      copies.push_back(addSharedSlots(launch, shape.row, elem));
      stagedRows[v] = copies.back();
    }
    for (int64_t r = 0; r < runs; r += threads) {
      OpBuilder::InsertionGuard inner(rewriter);
      Value at = arith::AddIOp::create(rewriter, loc, tid, index(loc, r));
      if (r + threads > runs) {
        Value inside = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::ult, at, index(loc, runs));
        auto guard = scf::IfOp::create(rewriter, loc, inside, false);
        rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
      }
      const int64_t run = 16 / stagedBytes;
      Value element = arith::MulIOp::create(rewriter, loc, at, index(loc, run));
      SmallVector<Value> dims(outer, zero);
      dims.push_back(element);
      SmallVector<Value> values;
      for (auto [v, map] : toStage) {
        Type elem = cast<MemRefType>(v.getType()).getElementType();
        auto ld =
            vector::LoadOp::create(rewriter, loc, VectorType::get({run}, elem),
                                   v, apply(loc, map, dims));
        ld.setAlignment(16);
        values.push_back(ld);
      }
      for (auto [value, copy] : llvm::zip(values, copies)) {
        auto st = vector::StoreOp::create(rewriter, loc, value, copy,
                                          ValueRange{element});
        st.setAlignment(16);
      }
    }
    info.buildBarrier(rewriter, loc);
  }
  // (A member over the row reads a row scalar's buffer at its one element
  // when its map leaves out the row's dim; a per-row member always does.)
  auto argsAt = [&](linalg::GenericOp g, ArrayRef<Value> dims, Value acc) {
    bool perRow =
        g.getNumLoops() == outer || g.getStaticLoopRanges().back() != shape.row;
    SmallVector<Value> args;
    for (OpOperand *in : g.getDpsInputOperands()) {
      Value v = in->get();
      AffineMap map = g.getMatchingIndexingMap(in);
      if (auto it = scalars.find(v);
          it != scalars.end() && (perRow || !map.isFunctionOfDim(outer)))
        args.push_back(it->second);
      else if (auto r = registers.find(v); r != registers.end())
        args.push_back(r->second[step]);
      else if (registerRow(v, map))
        args.push_back(rowElement(v, map, step));
      else if (isa<MemRefType>(v.getType()))
        args.push_back(load(loc, v, map, dims));
      else
        args.push_back(v);
    }
    OpOperand *out = g.getDpsInitOperand(0);
    BlockArgument outArg = g.getBlock()->getArguments().back();
    if (acc)
      args.push_back(acc);
    else if (!outArg.use_empty())
      args.push_back(
          load(loc, out->get(), g.getMatchingIndexingMap(out), dims));
    else
      args.push_back(ub::PoisonOp::create(rewriter, loc, outArg.getType()));
    return args;
  };
  // Stores row scalar `v` of member `g` at `dims` from the row's first
  // thread.
  auto storeScalar = [&](linalg::GenericOp g, Value v, ArrayRef<Value> dims) {
    auto guard = scf::IfOp::create(rewriter, loc, isFirst, false);
    OpBuilder::InsertionGuard ig(rewriter);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    OpOperand *out = g.getDpsInitOperand(0);
    store(loc, v, out->get(), g.getMatchingIndexingMap(out), dims);
  };
  unsigned partial = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    Member &m = chain[i];
    linalg::GenericOp g = m.op;
    OpOperand *out = g.getDpsInitOperand(0);
    if (i && !warpRows)
      info.buildBarrier(rewriter, loc);
    if (m.kind == Member::Scalar) {
      SmallVector<Value> dims = outerIdx;
      if (g.getNumLoops() == outer + 1)
        dims.push_back(zero);
      if (warpRows) {
        // Every lane computes it; the first stores it, unless only the
        // chain reads it (from registers).
        Value v = inlineBody(*g.getBlock(), argsAt(g, dims, {}), dims);
        scalars[out->get()] = v;
        if (!chainLocal(out->get()))
          storeScalar(g, v, dims);
        continue;
      }
      auto guard = scf::IfOp::create(rewriter, loc, isFirst, false);
      OpBuilder::InsertionGuard ig(rewriter);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
      Value v = inlineBody(*g.getBlock(), argsAt(g, dims, {}), dims);
      store(loc, v, out->get(), g.getMatchingIndexingMap(out), dims);
      continue;
    }
    Value init = m.kind == Member::Reduction ? m.fill.getInputs()[0] : Value();
    Value result; // a reduction's lane value
    if (unroll) {
      // Every step of the lane's row, in registers where the chain keeps
      // the buffer.
      bool keep = !init && chainLocal(out->get());
      SmallVector<Value> kept;
      Value acc = init;
      AffineMap outMap = g.getMatchingIndexingMap(out);
      bool vectorOut = !init && !keep && vec > 1 &&
                       vectorRow(out->get(), outMap, outer, vec);
      for (step = 0; step < steps; ++step) {
        SmallVector<Value> dims = outerIdx;
        dims.push_back(elementAt(step));
        Value v = inlineBody(*g.getBlock(), argsAt(g, dims, acc), dims);
        if (init) {
          acc = v;
        } else if (keep) {
          kept.push_back(v);
        } else if (vectorOut) {
          // The vector's last step stores all of it.
          SmallVector<Value> &pending = pendingStores[out->get()];
          pending.push_back(v);
          if (static_cast<int64_t>(pending.size()) < vec)
            continue;
          dims.back() = elementAt(step - vec + 1);
          Value all = vector::FromElementsOp::create(
              rewriter, loc, VectorType::get({vec}, v.getType()), pending);
          auto st = vector::StoreOp::create(rewriter, loc, all, out->get(),
                                            apply(loc, outMap, dims));
          st.setAlignment(
              vec *
              std::max<int64_t>(v.getType().getIntOrFloatBitWidth() / 8, 1));
          pending.clear();
        } else {
          store(loc, v, out->get(), outMap, dims);
        }
      }
      if (keep)
        registers[out->get()] = std::move(kept);
      result = acc;
    } else {
      auto loop = scf::ForOp::create(rewriter, loc, first,
                                     index(loc, shape.row), index(loc, stride),
                                     init ? ValueRange{init} : ValueRange{});
      OpBuilder::InsertionGuard ig(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> dims = outerIdx;
      dims.push_back(loop.getInductionVar());
      Value acc = init ? loop.getRegionIterArgs()[0] : Value();
      Value v = inlineBody(*g.getBlock(), argsAt(g, dims, acc), dims);
      if (init)
        scf::YieldOp::create(rewriter, loc, v);
      else
        store(loc, v, out->get(), g.getMatchingIndexingMap(out), dims);
      if (init)
        result = loop.getResult(0);
    }
    if (!init)
      continue;
    // A butterfly in each warp (every lane then holds its warp's value).
    auto combine = [&](Value a, Value b) {
      OperationState state(loc, m.combiner->getName(), ValueRange{a, b},
                           a.getType(), m.combiner->getAttrs());
      return rewriter.create(state)->getResult(0);
    };
    Value acc = result;
    for (int32_t offset = warp / 2; offset >= 1; offset /= 2)
      acc =
          combine(acc, info.buildShuffleXor(rewriter, loc, acc, offset, warp));
    SmallVector<Value> pt = outerIdx;
    pt.push_back(zero);
    if (warpRows) {
      scalars[out->get()] = acc;
      if (!chainLocal(out->get()))
        storeScalar(g, acc, pt);
      continue;
    }
    // Block rows: the warps' values through shared memory, combined and
    // stored by the first thread.
    Value slots = partials[partial++];
    storeWarpSlots(loc, info, acc, slots, lane, warpId);
    auto guard = scf::IfOp::create(rewriter, loc, isFirst, false);
    OpBuilder::InsertionGuard ig(rewriter);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value total = combineSlots(loc, slots, threads / warp, combine);
    store(loc, total, out->get(), g.getMatchingIndexingMap(out), pt);
  }
  for (Member &m : llvm::reverse(chain)) {
    rewriter.eraseOp(m.op);
    if (m.fill)
      rewriter.eraseOp(m.fill);
  }
}
