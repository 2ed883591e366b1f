//===- Reductions.cpp - A thread per output tile, a warp per row ---------===//
//
// ReductionLowering (Lowering.h): linalg ops with reduction dims that the
// tiled contractions leave, as one thread per tile of outputs with the
// accumulators in registers, or, along one contiguous dim, one warp (wave)
// per output combined by a butterfly of the target's xor shuffles, or, for
// a reduction to one value, one block combining its warps' butterflies.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

/// Unrolling of a reduction's outputs per thread: U along a parallel dim
/// other than the innermost one (the one the most inputs do not depend on),
/// V along the innermost, while at least `minThreads` threads remain and
/// the innermost dim keeps a warp of `warpSize` lanes busy per V outputs.
static void chooseUnroll(linalg::LinalgOp op, ArrayRef<unsigned> par,
                         int64_t minThreads, int64_t warpSize, int64_t &uDim,
                         int64_t &U, int64_t &V) {
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
        static_[last] >= warpSize * f) {
      V = f;
      break;
    }
}

LogicalResult ReductionLowering::lower(linalg::LinalgOp op) {
  SmallVector<unsigned> par, red;
  // Kept reduced dims (a channels-last global pool's [N, 1, 1, C]) are the
  // constant 0 of the output's map, at every point.
  if (!isLowerableReduction(op, par, red, /*allowZeroResults=*/true))
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
  chooseUnroll(op, par, minThreads, info.getWarpSize(), uDim, U, V);

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

  // An input read through a padded copy (a max pool's -inf padding) is
  // read from the copy's source, the fill where the padding was.
  PaddedInputs padded = matchPaddedInputs(op, /*lastDimUnpadded=*/false,
                                          /*anyFill=*/true);
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
            unsigned i = in->getOperandNumber();
            if (!isa<MemRefType>(in->get().getType())) {
              args.push_back(in->get());
            } else if (auto it = padded.find(i); it != padded.end()) {
              SmallVector<Value> idx;
              Value inside = inputIndices(l, op, padded, i, dims, idx);
              Value v =
                  memref::LoadOp::create(rewriter, l, it->second.src, idx);
              args.push_back(arith::SelectOp::create(rewriter, l, inside, v,
                                                     it->second.fillValue));
            } else {
              args.push_back(
                  load(l, in->get(), op.getMatchingIndexingMap(in), dims));
            }
          }
          args.push_back(accs[j]);
          next.push_back(inlineBody(body, args, dims));
        }
        return next;
      });
  for (auto [j, pt] : llvm::enumerate(points))
    storeResult(loc, nest.results[j], op, par, pt, fusion);
  eraseFused(op, fusion);
  erasePaddedCopies(padded);
  return success();
}

Operation *mlir::kiln::gpumap::warpCombiner(Block &body, Value init,
                                            bool anyWidth) {
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
  bool scalar = t.isIntOrFloat() && t.getIntOrFloatBitWidth() <= 64;
  if (anyWidth ? !scalar : !t.isF32() && !t.isInteger(32))
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
  int64_t warpSize = info.getWarpSize();
  lbs.push_back(index(loc, 0));
  ubs.push_back(index(loc, warpSize));
  steps.push_back(index(loc, 1));
  // An input read through a padded copy (a max pool's -inf padding) is
  // read from the copy's source, the fill where the padding was.
  PaddedInputs padded = matchPaddedInputs(op, /*lastDimUnpadded=*/false,
                                          /*anyFill=*/true);
  auto par_ = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
  rewriter.setInsertionPointToStart(par_.getBody());
  Value lane = par_.getInductionVars().back();
  SmallVector<Value> pt(numLoops);
  for (auto [i, d] : llvm::enumerate(par))
    pt[d] = par_.getInductionVars()[i];
  auto loop =
      scf::ForOp::create(rewriter, loc, lane, size(r), index(loc, warpSize),
                         ValueRange{fusion.fillValue});
  rewriter.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> dims = pt;
  dims[r] = loop.getInductionVar();
  scf::YieldOp::create(rewriter, loc,
                       bodyAt(loc, op, dims, loop.getRegionIterArgs()[0]));
  rewriter.setInsertionPointAfter(loop);
  // Butterfly: after log2(warp size) steps every lane holds the combined
  // value.
  Value acc = loop.getResult(0);
  for (int32_t offset = warpSize / 2; offset >= 1; offset /= 2) {
    Value other = info.buildShuffleXor(rewriter, loc, acc, offset, warpSize);
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

/// `v` of lane `lane ^ offset`: 32-bit values directly, narrower ones
/// widened to 32 bits, 64-bit ones as their two halves.
static Value shuffleXorAnyWidth(OpBuilder &b, Location loc,
                                const GPUTargetInfo &info, Value v,
                                int32_t offset, int32_t width) {
  Type t = v.getType();
  unsigned bits = t.getIntOrFloatBitWidth();
  if (bits == 32)
    return info.buildShuffleXor(b, loc, v, offset, width);
  Type i32 = b.getI32Type();
  Type it = b.getIntegerType(bits);
  Value x = isa<FloatType>(t) ? arith::BitcastOp::create(b, loc, it, v) : v;
  Value r;
  if (bits < 32) {
    Value w = arith::ExtUIOp::create(b, loc, i32, x);
    r = arith::TruncIOp::create(b, loc, it,
                                info.buildShuffleXor(b, loc, w, offset, width));
  } else {
    Value c32 = arith::ConstantIntOp::create(b, loc, it, 32);
    Value lo = arith::TruncIOp::create(b, loc, i32, x);
    Value hi = arith::TruncIOp::create(b, loc, i32,
                                       arith::ShRUIOp::create(b, loc, x, c32));
    lo = arith::ExtUIOp::create(
        b, loc, it, info.buildShuffleXor(b, loc, lo, offset, width));
    hi = arith::ExtUIOp::create(
        b, loc, it, info.buildShuffleXor(b, loc, hi, offset, width));
    r = arith::OrIOp::create(b, loc, arith::ShLIOp::create(b, loc, hi, c32),
                             lo);
  }
  return isa<FloatType>(t) ? arith::BitcastOp::create(b, loc, t, r) : r;
}

LogicalResult ReductionLowering::lowerFull(linalg::LinalgOp op) {
  // Only at the top of a kernel function: inside a loop or branch the op
  // may end up in a device launch of its own (a loop that runs on the
  // device as a whole), where a launch cannot nest.
  if (!isa_and_nonnull<FunctionOpInterface>(op->getParentOp()))
    return failure();
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 0 || op.getNumParallelLoops() != 0 ||
      op.getNumLoops() == 0 ||
      op.getBlock()->getTerminator()->getNumOperands() != 1)
    return failure();
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  for (AffineExpr e : outMap.getResults()) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return failure();
  }
  Block &body = *op.getBlock();
  ReductionFusion fusion = detectFusion(op, {});
  if (!fusion.fillValue)
    return failure();
  Operation *combiner = warpCombiner(body, fusion.fillValue, /*anyWidth=*/true);
  if (!combiner)
    return failure();

  Location loc = op.getLoc();
  unsigned numLoops = op.getNumLoops();
  int64_t warp = info.getWarpSize();
  int64_t threads = 16 * warp;
  rewriter.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  SmallVector<Value> sizes;
  Value total = index(loc, 1);
  for (Range &r : ranges) {
    sizes.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, r.size));
    total = arith::MulIOp::create(rewriter, loc, total, sizes.back());
  }
  Type accType = fusion.fillValue.getType();
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, index(loc, 1), index(loc, 1), index(loc, 1),
      index(loc, threads), index(loc, 1), index(loc, 1));
  Value slots = addSharedSlots(launch, threads / warp, accType);
  enterLaunch(launch);
  Value zero = index(loc, 0);
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(rewriter, loc, tid, index(loc, warp));
  Value warpId = arith::DivUIOp::create(rewriter, loc, tid, index(loc, warp));
  // Each thread strides over the flattened iteration space (neighbouring
  // threads read neighbouring elements of the innermost dim).
  auto loop = scf::ForOp::create(rewriter, loc, tid, total, index(loc, threads),
                                 ValueRange{fusion.fillValue});
  {
    OpBuilder::InsertionGuard ig(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> dims(numLoops);
    Value rest = loop.getInductionVar();
    for (int64_t d = numLoops - 1; d >= 0; --d) {
      if (d == 0) {
        dims[d] = rest;
        break;
      }
      dims[d] = arith::RemUIOp::create(rewriter, loc, rest, sizes[d]);
      rest = arith::DivUIOp::create(rewriter, loc, rest, sizes[d]);
    }
    scf::YieldOp::create(rewriter, loc,
                         bodyAt(loc, op, dims, loop.getRegionIterArgs()[0]));
  }
  auto combine = [&](Value a, Value b) {
    OperationState state(loc, combiner->getName(), ValueRange{a, b},
                         a.getType(), combiner->getAttrs());
    return rewriter.create(state)->getResult(0);
  };
  Value acc = loop.getResult(0);
  for (int32_t offset = warp / 2; offset >= 1; offset /= 2)
    acc = combine(acc,
                  shuffleXorAnyWidth(rewriter, loc, info, acc, offset, warp));
  storeWarpSlots(loc, info, acc, slots, lane, warpId);
  // The first thread combines the warps' values in order (the same order
  // every run: the result does not depend on timing).
  Value isFirst =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, tid, zero);
  auto guard = scf::IfOp::create(rewriter, loc, isFirst, false);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  Value result = combineSlots(loc, slots, threads / warp, combine);
  SmallVector<Value> pt(numLoops, zero);
  storeResult(loc, result, op, {}, pt, fusion);
  rewriter.setInsertionPointAfter(launch);
  eraseFused(op, fusion);
  return success();
}
