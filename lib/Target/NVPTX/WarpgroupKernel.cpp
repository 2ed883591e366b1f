//===- WarpgroupKernel.cpp - The sm_90a contraction kernel's body ---------===//
//
// The warpgroup-MMA kernel inside the gpu.launch that
// lowerWarpgroupContraction creates (WarpgroupContraction.cpp says what it
// computes and how): the producer's first thread issues the bulk tensor copies
// of each K step into a ring of shared-memory stages, the consumer
// warpgroups multiply them with wgmma and store their accumulators through
// the fused epilogue. A block computes one tile, or, persistent, loops over
// tiles (WarpgroupPersistent.cpp): the ring and its mbarrier phases go on
// from tile to tile, so the producer fills the next tile's stages while the
// consumers store the last one's.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {

// Named barriers (0 is the block's): the consumers' staging area (a
// ping-pong consumer's own: kStagingBarrier + its index), and the turns of
// ping-pong main loops (kTurnBarrier: consumer 0's is done, + 1: 1's).
constexpr int64_t kStagingBarrier = 1;
constexpr int64_t kTurnBarrier = 3;
/// A ping-pong block's registers a thread (setmaxnreg): 128 x 40 + 256 x
/// 232 of the multiprocessor's 64 K.
constexpr int64_t kProducerRegisters = 40, kConsumerRegisters = 232;

/// A bulk tensor copy into shared memory at `dst` completing on `bar`:
/// coordinates innermost first; im2col offsets (16-bit) for im2col maps.
void bulkCopy(Emitter &e, Value dst, Value desc, ArrayRef<Value> coords,
              Value bar, ArrayRef<Value> offsets = {}) {
  OpBuilder &b = e.b;
  auto ptr7 = LLVM::LLVMPointerType::get(b.getContext(), 7);
  Value dst7 = LLVM::AddrSpaceCastOp::create(b, e.loc, ptr7, e.shared(dst));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, e.loc, dst7, desc, coords, bar, offsets, Value(), Value(),
      offsets.empty() ? NVVM::TMALoadMode::TILE : NVVM::TMALoadMode::IM2COL,
      false, NVVM::CTAGroupKindAttr(), Value());
}

/// The im2col coordinates (W, H, batch: innermost first after the
/// channels) of output row `m0`'s window corner: (ow * sw, oh * sh, n).
SmallVector<Value> firstPixel(Emitter &e, const Convolution &cv, Value m0) {
  int64_t plane = cv.out[0] * cv.out[1];
  Value n = e.divu(m0, plane), rest = e.remu(m0, plane);
  Value oh = e.divu(rest, cv.out[1]), ow = e.remu(rest, cv.out[1]);
  return {e.add(e.mul(ow, cv.strides[1]), -cv.pad[1]),
          e.add(e.mul(oh, cv.strides[0]), -cv.pad[0]), n};
}

/// K step `kt` of a convolution: filter tap kt / CB (row-major over
/// KH x KW), channels BK (kt % CB) .. + BK - 1 where CB = ceil(C / BK) and BK
/// the channels of a 128-byte row (64 f16, 32 tf32, 128 8-bit). A: the im2col copy of
/// the tile's pixels at the tap's offsets (kw * dw, kh * dh); B: the tap's
/// channels x filters from HWCF weights (BN / 64 boxes of 64 x 64, f16 only)
/// or FHWC ones (one BN x BK box).
void copyConvolutionStep(Emitter &e, const Convolution &cv, bool bKMajor,
                         int64_t bk, ArrayRef<Value> pixel, Value stage,
                         int64_t aBytes, int64_t bn, Value descA, Value descB,
                         Value full, Value kt, Value n0) {
  OpBuilder &b = e.b;
  int64_t chunks = (cv.channels + bk - 1) / bk;
  Value tap = e.divu(kt, chunks);
  Value c0 = e.mul(e.remu(kt, chunks), bk);
  Value kh = e.divu(tap, cv.filter[1]), kw = e.remu(tap, cv.filter[1]);
  auto i16 = [&](Value v, int64_t scale) {
    return arith::TruncIOp::create(b, e.loc, b.getI16Type(), e.mul(v, scale))
        .getResult();
  };
  bulkCopy(e, stage, descA, {c0, pixel[0], pixel[1], pixel[2]}, full,
           {i16(kw, cv.dilations[1]), i16(kh, cv.dilations[0])});
  Value bStage = e.add(stage, aBytes);
  if (bKMajor) {
    bulkCopy(e, bStage, descB, {c0, kw, kh, n0}, full);
    return;
  }
  for (int64_t j = 0; j < bn / 64; ++j)
    bulkCopy(e, e.add(bStage, j * 64 * kStepBytes), descB,
             {e.add(n0, 64 * j), c0, kw, kh}, full);
}

/// The indices of `map` (a projected permutation of C's dims) at `dims`.
/// The results may also be 0 (a per-channel operand kept as [1, 1, 1, C]).
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ArrayRef<Value> dims) {
  SmallVector<Value> idx;
  for (AffineExpr r : map.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(r))
      idx.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
    else
      idx.push_back(dims[cast<AffineDimExpr>(r).getPosition()]);
  }
  return idx;
}

} // namespace

/// C's dims (index-typed) at batch indices `batchIdx`, row `row` of its
/// M x N view and column `col` (i32 or index): the row is (r / (m1 m2 ..), ..,
/// r % m_last) over C's m dims.
SmallVector<Value> warpgroup::cPoint(OpBuilder &b, Location loc,
                                     const Problem &p, ArrayRef<Value> batchIdx,
                                     Value row, Value col) {
  auto toIndex = [&](Value v) {
    return v.getType().isIndex()
               ? v
               : arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v)
                     .getResult();
  };
  SmallVector<Value> dims;
  for (Value i : batchIdx)
    dims.push_back(toIndex(i));
  Value rowIndex = toIndex(row);
  SmallVector<Value> mIndices(p.mSizes.size());
  for (int64_t d = p.mSizes.size() - 1; d >= 0; --d) {
    if (d == 0) {
      mIndices[d] = rowIndex;
      break;
    }
    Value size = arith::ConstantIndexOp::create(b, loc, p.mSizes[d]);
    mIndices[d] = arith::RemUIOp::create(b, loc, rowIndex, size);
    rowIndex = arith::DivUIOp::create(b, loc, rowIndex, size);
  }
  llvm::append_range(dims, mIndices);
  dims.push_back(toIndex(col));
  return dims;
}

/// C's value `v` at `dims` through the epilogue's body (its other inputs
/// loaded at the point); `v` itself without an epilogue.
Value warpgroup::throughEpilogue(
    OpBuilder &b, Location loc, const Problem &p, Value v, ArrayRef<Value> dims,
    const llvm::DenseMap<OpOperand *, Value> *loaded) {
  linalg::GenericOp g = p.epilogue;
  if (!g)
    return v;
  Block &gb = *g.getBody();
  IRMapping map;
  for (OpOperand *in : g.getDpsInputOperands()) {
    Value arg = gb.getArgument(in->getOperandNumber());
    if (in == p.epilogueIn)
      map.map(arg, v);
    else if (!isa<MemRefType>(in->get().getType()))
      map.map(arg, in->get());
    else if (Value l = loaded ? loaded->lookup(in) : Value())
      map.map(arg, l);
    else
      map.map(arg, loadEpilogueOperand(b, loc, p, in, dims));
  }
  OpOperand *out = g.getDpsInitOperand(0);
  BlockArgument outArg = gb.getArgument(gb.getNumArguments() - 1);
  if (!outArg.use_empty())
    map.map(outArg,
            memref::LoadOp::create(
                b, loc, out->get(),
                indicesAt(b, loc, g.getMatchingIndexingMap(out), dims)));
  for (Operation &o : gb.without_terminator())
    b.clone(o, map);
  return map.lookupOrDefault(gb.getTerminator()->getOperand(0));
}

SmallVector<OpOperand *> warpgroup::columnOperands(const Problem &p) {
  SmallVector<OpOperand *> operands;
  linalg::GenericOp g = p.epilogue;
  if (!g)
    return operands;
  // C's dims: the batch dims, the M dims, N (cPoint).
  const unsigned m0 = p.batchSizes.size(), m1 = m0 + p.mSizes.size();
  for (OpOperand *in : g.getDpsInputOperands()) {
    if (in == p.epilogueIn || !isa<MemRefType>(in->get().getType()))
      continue;
    AffineMap map = g.getMatchingIndexingMap(in);
    bool perColumn = true;
    for (unsigned d = m0; d < m1; ++d)
      perColumn &= !map.isFunctionOfDim(d);
    if (perColumn)
      operands.push_back(in);
  }
  return operands;
}

Value warpgroup::loadEpilogueOperand(OpBuilder &b, Location loc,
                                     const Problem &p, OpOperand *in,
                                     ArrayRef<Value> dims) {
  linalg::GenericOp g = p.epilogue;
  return memref::LoadOp::create(
      b, loc, in->get(), indicesAt(b, loc, g.getMatchingIndexingMap(in), dims));
}

/// Stores the final value `r` at `dims`: into the epilogue's output, or C.
void warpgroup::storeFinal(OpBuilder &b, Location loc, const Problem &p,
                           Value r, ArrayRef<Value> dims) {
  if (!p.epilogue) {
    memref::StoreOp::create(b, loc, r, p.c, dims);
    return;
  }
  linalg::GenericOp g = p.epilogue;
  OpOperand *out = g.getDpsInitOperand(0);
  memref::StoreOp::create(
      b, loc, r, out->get(),
      indicesAt(b, loc, g.getMatchingIndexingMap(out), dims));
}

SmallVector<Value> warpgroup::batchIndices(Emitter &e, const Problem &p,
                                           Value bz) {
  SmallVector<Value> bIdx(p.batchSizes.size());
  Value rest = bz;
  for (int64_t d = p.batchSizes.size() - 1; d >= 0; --d) {
    bIdx[d] = d ? e.remu(rest, p.batchSizes[d]) : rest;
    if (d)
      rest = e.divu(rest, p.batchSizes[d]);
  }
  return bIdx;
}

void warpgroup::buildKernel(RewriterBase &rewriter, const Problem &p,
                            gpu::LaunchOp launch, const KernelConfig &cfg) {
  MLIRContext *context = rewriter.getContext();
  Location loc = p.op->getLoc();
  const int64_t bm = cfg.tile.bm, bn = cfg.tile.bn, stages = cfg.tile.stages;
  const int64_t consumers = cfg.tile.consumers(), bk = p.bk();
  const int64_t rowBlocks = cfg.tile.rowBlocks();
  const bool pingPong = cfg.tile.pingPong;
  const int64_t step = p.stepBytes;
  const int64_t aBytes = bm * step, bBytes = bn * step;
  const int64_t stageBytes = aBytes + bBytes, barOff = stages * stageBytes;
  const int64_t nAcc = bn / 2, splits = cfg.splits, kPer = cfg.kPer;
  Value mapA = cfg.mapA, mapB = cfg.mapB, parts = cfg.parts;
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(term);
  Emitter e(rewriter, loc);
  OpBuilder &b = rewriter;
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto ptr7 = LLVM::LLVMPointerType::get(context, 7);
  // The accumulators' type: f32, or i32 (s32) for 8-bit operands.
  Type accElem = p.acc;

  Value tid = e.toI32(launch.getThreadIds().x);
  // One tile per block: grid x along N, y along M, z the batch (the last
  // batch dim fastest), then the K part.
  TileCoords one;
  if (!cfg.persistent) {
    one.n0 = e.mul(e.toI32(launch.getBlockIds().x), bn);
    one.m0 = e.mul(e.toI32(launch.getBlockIds().y), bm);
    one.bz = e.toI32(launch.getBlockIds().z);
    Value bz = splits > 1 ? e.divu(one.bz, splits) : one.bz;
    one.kBegin = splits > 1 ? e.mul(e.remu(one.bz, splits), kPer) : e.i32(0);
    one.kEnd = arith::MinUIOp::create(b, loc, e.add(one.kBegin, kPer),
                                      e.i32(p.kSteps()));
    one.bIdx = batchIndices(e, p, bz);
  }
  // `body` at each of this block's tiles (the persistent loop's body); a
  // ping-pong consumer `first` takes every second one from its first.
  auto forEachTile = [&](function_ref<void(const TileCoords &)> body,
                         Value first = nullptr) {
    if (cfg.persistent)
      forEachPersistentTile(e, p, cfg, e.toI32(launch.getBlockIds().x), body,
                            first, first ? consumers : 1);
    else
      body(one);
  };
  Value wg = e.divu(tid, 128);
  // The tile maps' addresses (grid-constant parameters).
  Value descA =
      UnrealizedConversionCastOp::create(b, loc, ptrType, mapA).getResult(0);
  Value descB =
      UnrealizedConversionCastOp::create(b, loc, ptrType, mapB).getResult(0);
  // The dynamic shared memory, aligned up to 1024 bytes (128-byte swizzle
  // atoms of 8 rows).
  auto dynType = MemRefType::get(
      {ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
  Value dyn = gpu::DynamicSharedMemoryOp::create(b, loc, dynType);
  Value dynAddr = e.toI32(
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, dyn).getResult());
  Value base = arith::AndIOp::create(b, loc, e.add(dynAddr, 1023),
                                     e.i32(~int64_t(1023)));
  auto barrier = [&](Value stage, bool empty) {
    return e.shared(
        e.add(e.add(base, e.mul(stage, 8)), barOff + (empty ? 8 * stages : 0)));
  };

  // A multicast tile: this block's rank in its cluster of two (which half
  // of the shared operand it copies, into both blocks).
  const bool multicast = cfg.tile.multicast;
  const bool halfA = multicast && cfg.tile.sharesA();
  const bool halfB = multicast && !halfA;
  Value rank =
      multicast ? NVVM::ClusterId::create(b, loc, b.getI32Type()) : Value();
  // Both blocks' cluster barrier after the mbarriers' initialization (every
  // thread of each arrives and waits), so that no copy or arrival of the
  // peer reaches them before. Relaxed: the initialization's fence
  // (fence.mbarrier_init, release at cluster scope) orders what it must; a
  // releasing arrive is a GPU-scope memory barrier. The end needs no
  // cluster barrier: each block's producer waits, before it exits, for the
  // releases of its last stages, which both blocks' consumers send after
  // their last reads, so that no block exits while the other may still
  // arrive on its barriers or copy into its stages (CUTLASS's producer
  // tail). A cluster barrier there cost a GPU-scope memory barrier after
  // the epilogue's stores and the wait for the slower block: BERT-base
  // b32's int8 QKV product took 27.7 us against 23.4 without the cluster
  // (Nsight Compute on an H100, 2026-12-07: membar and barrier stalls 4.7
  // and 5.5 cycles an instruction, against 0 and 1.7).

  // Thread 0 initializes the barriers: `full` expects the producer's one
  // arrival (and the copies' bytes, the peer's half of a multicast operand
  // included), `empty` every consumer thread's (a ping-pong tile's: its one
  // consumer's; a multicast tile's: the first lane of each consumer warp of
  // both blocks, since the peer's producer writes this block's stage too).
  Value isT0 = e.cmp(arith::CmpIPredicate::eq, tid, e.i32(0));
  const int64_t releases =
      multicast ? 2 * 4 * consumers : 128 * (pingPong ? 1 : consumers);
  e.ifThen(isT0, [&] {
    for (int64_t s = 0; s < stages; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(e.i32(s), false), e.i32(1),
                                   Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(e.i32(s), true),
                                   e.i32(releases), Value());
    }
    NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  if (multicast) {
    NVVM::ClusterArriveRelaxedOp::create(b, loc, UnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
  } else {
    NVVM::Barrier0Op::create(b, loc);
  }

  Value ticks = e.i32(10000000);
  // Warpgroup 0 produces (its first thread issues the copies) and
  // warpgroups 1 .. consumers multiply; with two blocks to a multiprocessor
  // (whose registers must fit twice) warpgroups 0 .. consumers - 1 multiply
  // and one warp after them produces. (A producer warp after the consumers
  // measured 3-7% slower on the large one-block GEMMs, bench/hopper on an
  // H100 on 2026-12-06, so one-block tiles keep the warpgroup.)
  const bool producerWarp = cfg.tile.producerWarp();
  const int64_t producerTid = producerWarp ? 128 * consumers : 0;
  Value isProducer =
      producerWarp ? e.cmp(arith::CmpIPredicate::uge, tid, e.i32(producerTid))
                   : e.cmp(arith::CmpIPredicate::ult, tid, e.i32(128));
  Value isIssuer = e.cmp(arith::CmpIPredicate::eq, tid, e.i32(producerTid));
  auto branch = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                  /*withElseRegion=*/true);

  // A ping-pong block's 384 threads start with 168 registers each (the
  // block's cap): its producer warpgroup gives up all but 40 and its two
  // consumers take 232, for their two row blocks' accumulators (128
  // registers) beside the epilogue's values (at 168 ptxas spilled 92-384
  // bytes a thread).
  auto setRegisters = [&](int64_t count, bool increase) {
    if (pingPong)
      NVVM::SetMaxRegisterOp::create(
          b, loc, count,
          increase ? NVVM::SetMaxRegisterAction::increase
                   : NVVM::SetMaxRegisterAction::decrease);
  };

  // Producer.
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    setRegisters(kProducerRegisters, /*increase=*/false);
    auto issuer = scf::IfOp::create(b, loc, TypeRange{}, isIssuer,
                                    /*withElseRegion=*/false);
    b.setInsertionPoint(issuer.thenBlock()->getTerminator());
    forEachTile([&](const TileCoords &t) {
      Value m0 = t.m0, n0 = t.n0, kBegin = t.kBegin;
      ArrayRef<Value> bIdx = t.bIdx;
      SmallVector<Value> pixel;
      if (p.conv)
        pixel = firstPixel(e, *p.conv, m0);
      auto loop = scf::ForOp::create(b, loc, kBegin, t.kEnd, e.i32(1));
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      // kt: the K step; kl: this block's count of steps (the ring's), the
      // tiles' before this one's included.
      Value kt = loop.getInductionVar();
      Value kl = arith::SubIOp::create(b, loc, kt, kBegin);
      if (t.ring)
        kl = e.add(kl, t.ring);
      Value s = e.remu(kl, stages), round = e.divu(kl, stages);
      Value reuse = e.cmp(arith::CmpIPredicate::uge, kl, e.i32(stages));
      e.ifThen(reuse, [&] {
        Value parity = arith::AndIOp::create(b, loc, e.add(round, 1), e.i32(1));
        NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(s, true), parity,
                                              ticks);
      });
      Value full = barrier(s, false);
      NVVM::MBarrierArriveExpectTxOp::create(
          b, loc, Type(), full, e.i32(stageBytes), NVVM::MemScopeKind::CTA,
          false, Value());
      Value stageAddr = e.add(base, e.mul(s, stageBytes));
      Value kc = e.mul(kt, bk);
      // Coordinates innermost first, as the tile map's dims. A copy of half
      // a multicast operand lands at the same offset in both blocks of the
      // cluster and completes on the same stage's `full` in each.
      auto copy = [&](Value dst, Value desc, ArrayRef<DimRole> dims, Value mn,
                      bool both = false) {
        SmallVector<Value> coords;
        for (DimRole d : llvm::reverse(dims))
          coords.push_back(d.role == Role::Batch ? bIdx[d.batch]
                           : d.role == Role::K   ? kc
                                                 : mn);
        Value dst7 = LLVM::AddrSpaceCastOp::create(b, loc, ptr7, e.shared(dst));
        Value mask =
            both ? arith::ConstantIntOp::create(b, loc, b.getI16Type(), 0b11)
                       .getResult()
                 : Value();
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            b, loc, dst7, desc, coords, full, ValueRange{}, mask, Value(),
            NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr(), Value());
      };
      if (p.conv) {
        copyConvolutionStep(e, *p.conv, p.bKMajor, bk, pixel, stageAddr, aBytes,
                            bn, descA, descB, full, kt, n0);
      } else {
        // A multicast tile's rank r copies rows r * BM / 2 .. of A (or
        // r * BN / 2 .. of B, or its 64-column boxes from r * BN / 128).
        if (halfA)
          copy(e.add(stageAddr, e.mul(rank, bm / 2 * step)), descA, p.aDims,
               e.add(m0, e.mul(rank, bm / 2)), /*both=*/true);
        else
          copy(stageAddr, descA, p.aDims, m0);
        Value bStage = e.add(stageAddr, aBytes);
        if (p.bKMajor && halfB)
          copy(e.add(bStage, e.mul(rank, bn / 2 * step)), descB, p.bDims,
               e.add(n0, e.mul(rank, bn / 2)), /*both=*/true);
        else if (p.bKMajor)
          copy(bStage, descB, p.bDims, n0);
        else if (halfB)
          for (int64_t j = 0; j < bn / 128; ++j) {
            Value box = e.add(e.mul(rank, bn / 128), j);
            copy(e.add(bStage, e.mul(box, 64 * kStepBytes)), descB, p.bDims,
                 e.add(n0, e.mul(box, 64)), /*both=*/true);
          }
        else
          for (int64_t j = 0; j < bn / 64; ++j)
            copy(e.add(bStage, j * 64 * kStepBytes), descB, p.bDims,
                 e.add(n0, 64 * j));
      }
    });
    // A multicast tile's producer tail (one tile a block, no split K: its
    // K steps are the ring's): the releases of the last min(stages, K
    // steps) fills, as a next fill of their stage would wait for them (the
    // consumers release the last stage too, after their main loop).
    if (multicast) {
      const int64_t kSteps = p.kSteps();
      for (int64_t kl = std::max(kSteps, stages); kl < kSteps + stages; ++kl) {
        Value parity = e.i32(((kl / stages) + 1) & 1);
        NVVM::MBarrierTryWaitParityOp::create(
            b, loc, barrier(e.i32(kl % stages), true), parity, ticks);
      }
    }
  }

  // Consumers.
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    setRegisters(kConsumerRegisters, /*increase=*/true);
    Value cw = producerWarp ? wg : e.add(wg, -1);
    Value ltid = e.remu(tid, 128);
    // Gives a stage back to the producer(s): every consumer thread arrives
    // on its block's `empty`; in a multicast tile the first lane of each
    // warp (its wgmma.wait_group, warp-wide, is behind it) arrives on the
    // stage's `empty` of both blocks (the peer's through `mapa`).
    Value firstLane =
        multicast ? e.cmp(arith::CmpIPredicate::eq, e.remu(tid, 32), e.i32(0))
                  : Value();
    auto release = [&](Value stage) {
      Value empty = barrier(stage, true);
      if (!multicast) {
        NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), empty, Value());
        return;
      }
      // Both arrivals release at the block's scope (the default): what
      // they order is the warp's reads of the stage, which its
      // wgmma.wait_group has completed; a cluster-scope release costs a
      // fence each K step.
      e.ifThen(firstLane, [&] {
        NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), empty, Value());
        Value peer = arith::XOrIOp::create(b, loc, rank, e.i32(1));
        Value there = NVVM::MapaOp::create(b, loc, ptr7, empty, peer);
        NVVM::MBarrierArriveOp::create(b, loc, Type(), there, Value());
      });
    };
    auto accType = LLVM::LLVMStructType::getLiteral(
        context, SmallVector<Type>(nAcc, accElem));
    // The accumulators start undefined: the first K step's first wgmma
    // overwrites them (scale-d 0) instead of adding to zeros moved into
    // them. Registers a wgmma reads that other instructions wrote after the
    // fence make ptxas insert a warpgroup arrive of its own, and one on a
    // divergent path serializes every wgmma of the kernel (its C7519/C7520
    // notes). A fill other than 0 is added after the K loop (with split K,
    // by the launch that adds the parts).
    Value undefAcc = LLVM::UndefOp::create(b, loc, accType);
    TypedAttr fillAttr =
        splits > 1 ? cast<TypedAttr>(b.getZeroAttr(accElem)) : p.fillValue();
    // Descriptor bits above the address: the rows' swizzle (bits 62-63: 1
    // for 128 bytes, 2 for 64); A (K-major): leading offset 16 bytes
    // (unused), stride 8 rows (1024 or 512 bytes) between 8-row groups; B
    // (N-major, 128-byte steps only): 64-element atoms 64 * BK * 2 bytes
    // apart along N, 8-row groups 1024 bytes apart along K.
    const uint64_t swizzleMode = step == 128 ? 1 : 2;
    auto hiBits = [&](int64_t lbo, int64_t sbo) {
      int64_t v = int64_t(uint64_t((lbo >> 4) << 16) |
                          uint64_t((sbo >> 4) << 32) | (swizzleMode << 62));
      return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                      b.getI64IntegerAttr(v));
    };
    // B K-major (rows of 64 K, as A): the same bits as A.
    Value hiA = hiBits(16, 8 * step),
          hiB = p.bKMajor ? hiBits(16, 8 * step) : hiBits(64 * step, 1024);
    const int64_t bStep = p.bKMajor ? 32 : 16 * 128;
    auto descriptor = [&](Value addr, Value hi) {
      Value field = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, addr, e.i32(4)),
          e.i32(0x3FFF));
      Value wide = arith::ExtUIOp::create(b, loc, b.getI64Type(), field);
      return arith::OrIOp::create(b, loc, wide, hi).getResult();
    };
    // A's rows of row block r of the consumer's part of a tile: its own 64
    // (one row block), or all of a ping-pong tile's.
    auto aRowOff = [&](int64_t r) {
      return pingPong ? e.i32(r * 64 * step) : e.mul(cw, 64 * step);
    };
    // TF32 operands are the f32 bits the copies brought: the tensor core
    // reads their TF32 part (no conversion pass over shared memory).
    // 8-bit operands: u8 or s8 each, into s32 (the sums wrap as the CPU's
    // i32 ones do: no .satfinite).
    auto byteType = [](bool isSigned) {
      return isSigned ? NVVM::WGMMATypes::s8 : NVVM::WGMMATypes::u8;
    };
    NVVM::WGMMATypes wt = p.tf32()          ? NVVM::WGMMATypes::tf32
                          : p.elem.isBF16() ? NVVM::WGMMATypes::bf16
                                            : NVVM::WGMMATypes::f16;
    NVVM::WGMMATypes wa = p.integer() ? byteType(p.aSigned) : wt;
    NVVM::WGMMATypes wb = p.integer() ? byteType(p.bSigned) : wt;
    NVVM::WGMMATypes wd =
        p.integer() ? NVVM::WGMMATypes::s32 : NVVM::WGMMATypes::f32;
    // Ping-pong: the consumers' main loops take turns on named barriers
    // (all 256 consumer threads: one warpgroup arrives, the other waits),
    // so that one's epilogue runs beside the other's products instead of
    // both at once. Consumer 0 waits on kTurnBarrier + 1 before each tile
    // but its first, consumer 1 on kTurnBarrier before each; each arrives
    // on the other's after its main loop when the block has a next tile
    // (so that every arrival has its wait).
    auto turn = [&](Value id, bool wait) {
      if (wait)
        NVVM::BarrierOp::create(b, loc, Type(), id, e.i32(256),
                                NVVM::BarrierReductionAttr(), Value());
      else
        NVVM::BarrierArriveOp::create(b, loc, id, e.i32(256));
    };
    Value waitTurn, giveTurn;
    if (pingPong) {
      waitTurn = arith::SubIOp::create(b, loc, e.i32(kTurnBarrier + 1), cw);
      giveTurn = e.add(cw, kTurnBarrier);
    }
    auto consume = [&](const TileCoords &t) {
      Value m0 = t.m0, n0 = t.n0, kBegin = t.kBegin;
      ArrayRef<Value> bIdx = t.bIdx;
      // (Only consumer 0's first tile starts at ring position 0.)
      if (pingPong)
        e.ifThen(e.cmp(arith::CmpIPredicate::ne, t.ring, e.i32(0)),
                 [&] { turn(waitTurn, /*wait=*/true); });
      // One K step at `k` on the accumulators `accs` (one per row block);
      // `first`: the tile's first step (its first wgmma overwrites the
      // accumulators, and no earlier stage is to be released).
      auto kStep = [&](Value k, ValueRange accs,
                       bool first) -> SmallVector<Value> {
        // local: the tile's step; kl: the ring's (the block's count).
        Value local = arith::SubIOp::create(b, loc, k, kBegin);
        Value kl = t.ring ? e.add(local, t.ring) : local;
        Value s = e.remu(kl, stages);
        Value parity =
            arith::AndIOp::create(b, loc, e.divu(kl, stages), e.i32(1));
        NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(s, false), parity,
                                              ticks);
        Value stageAddr = e.add(base, e.mul(s, stageBytes));
        Value bAddr = e.add(stageAddr, aBytes);
        NVVM::WgmmaFenceAlignedOp::create(b, loc);
        auto shape = NVVM::MMAShapeAttr::get(context, 64, bn, p.mmaK());
        SmallVector<Value> out(accs);
        // Each wgmma takes the next 32 bytes of every row.
        for (int64_t kk = 0; kk < bk / p.mmaK(); ++kk) {
          Value db = descriptor(e.add(bAddr, bStep * kk), hiB);
          for (int64_t r = 0; r < rowBlocks; ++r) {
            Value aAddr = e.add(stageAddr, aRowOff(r));
            Value da = descriptor(e.add(aAddr, 32 * kk), hiA);
            out[r] = NVVM::WgmmaMmaAsyncOp::create(
                b, loc, accType, out[r], da, db, shape, wa, wb, wd,
                first && kk == 0 ? NVVM::WGMMAScaleOut::zero
                                 : NVVM::WGMMAScaleOut::one,
                NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
                NVVM::MMALayout::row,
                p.bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
                NVVM::MMAIntOverflowAttr());
          }
        }
        // One group stays in flight: once the previous step's group is
        // done, its stage goes back to the producer.
        NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
        if (!first)
          release(e.remu(e.add(kl, stages - 1), stages));
        return out;
      };
      // The first step peeled (a tile has at least one K step), the rest in
      // a loop.
      SmallVector<Value> acc0 =
          kStep(kBegin, SmallVector<Value>(rowBlocks, undefAcc),
                /*first=*/true);
      auto loop =
          scf::ForOp::create(b, loc, e.add(kBegin, 1), t.kEnd, e.i32(1), acc0);
      {
        OpBuilder::InsertionGuard lg(b);
        b.setInsertionPointToStart(loop.getBody());
        scf::YieldOp::create(b, loc,
                             kStep(loop.getInductionVar(),
                                   loop.getRegionIterArgs(),
                                   /*first=*/false));
      }
      // Ping-pong: the other consumer's main loop may start (its wgmmas
      // queue behind this one's).
      if (pingPong)
        e.ifThen(t.hasNext, [&] { turn(giveTurn, /*wait=*/false); });
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      // Persistent: the tile's last stage goes back to the producer before
      // the stores, so that the next tile's copies fill it meanwhile. A
      // multicast tile's too, to both producers, whose tails wait for it.
      if (t.ring) {
        Value last = e.add(
            e.add(t.ring, arith::SubIOp::create(b, loc, t.kEnd, kBegin)), -1);
        NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(),
                                       barrier(e.remu(last, stages), true),
                                       Value());
      } else if (multicast) {
        Value last = e.add(arith::SubIOp::create(b, loc, t.kEnd, kBegin), -1);
        release(e.remu(last, stages));
      }
      SmallVector<Value> accs(loop.getResults());
      bool zeroFill = isa<IntegerAttr>(fillAttr)
                          ? cast<IntegerAttr>(fillAttr).getValue().isZero()
                          : cast<FloatAttr>(fillAttr).getValue().isZero();
      if (!zeroFill) {
        Value fillValue = LLVM::ConstantOp::create(b, loc, accElem, fillAttr);
        for (Value &acc : accs)
          for (int64_t i = 0; i < nAcc; ++i) {
            Value v =
                LLVM::ExtractValueOp::create(b, loc, acc, ArrayRef<int64_t>{i});
            Value sum =
                p.integer()
                    ? arith::AddIOp::create(b, loc, v, fillValue).getResult()
                    : arith::AddFOp::create(b, loc, v, fillValue).getResult();
            acc = LLVM::InsertValueOp::create(b, loc, acc, sum,
                                              ArrayRef<int64_t>{i});
          }
      }
      if (canStageTile(p, cfg)) {
        // The staging area: the ring's memory (one tile per block), or its
        // own past the ring; a ping-pong consumer's part of it is its own,
        // 64 rows, which its row blocks take in turn.
        Value area = e.add(base, cfg.stagingOffset);
        if (pingPong) {
          area = e.add(area, e.mul(cw, stagedTileBytes(cfg.tile) / consumers));
          for (int64_t r = 0; r < rowBlocks; ++r)
            storeTileStaged(e, p, cfg, t,
                            {accs[r], e.i32(64 * r), e.i32(0),
                             e.add(cw, kStagingBarrier), 128},
                            area, ltid);
          return;
        }
        storeTileStaged(e, p, cfg, t,
                        {accs[0], e.mul(cw, 64), e.mul(cw, 64),
                         e.i32(kStagingBarrier), 128 * consumers},
                        area, ltid);
        return;
      }
      assert(!pingPong && "a ping-pong tile leaves through shared memory");
      Value acc = accs[0];
      // Accumulator 4j + 2h + e of a thread: row 16 warp + lane / 4 + 8h,
      // column 8j + 2 (lane % 4) + e of its warpgroup's 64 x BN part.
      Value warp = e.divu(ltid, 32), lane = e.remu(ltid, 32);
      Value row0 = e.add(e.add(m0, e.mul(cw, 64)),
                         e.add(e.mul(warp, 16), e.divu(lane, 4)));
      Value col0 = e.add(n0, e.mul(e.remu(lane, 4), 2));
      Value cPtr;
      if (!p.epilogue || splits > 1) {
        Value cPtrIndex = memref::ExtractAlignedPointerAsIndexOp::create(
            b, loc, splits > 1 ? parts : p.c);
        cPtr = LLVM::IntToPtrOp::create(
            b, loc, ptrType,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), cPtrIndex)
                .getResult());
      }
      Value mBound = e.i32(p.m), nBound = e.i32(p.n);
      Value batchOff = arith::MulIOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), t.bz),
          LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                   b.getI64IntegerAttr(p.m * p.n)));
      // With an epilogue: each accumulator through its body (the other
      // inputs loaded at the point); the two results of a column pair are
      // stored together when the output holds 16- or 32-bit floats.
      Type outElem;
      Value outPtr;
      if (p.epilogue) {
        Value out = p.output();
        outElem = cast<MemRefType>(out.getType()).getElementType();
        if (outElem.isF16() || outElem.isBF16() || outElem.isF32()) {
          Value index =
              memref::ExtractAlignedPointerAsIndexOp::create(b, loc, out);
          outPtr = LLVM::IntToPtrOp::create(
              b, loc, ptrType,
              arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index)
                  .getResult());
        }
      }
      auto storeEpilogue = [&](Value v, Value row, Value col, bool store) {
        SmallVector<Value> dims = cPoint(b, loc, p, bIdx, row, col);
        Value r = throughEpilogue(b, loc, p, v, dims);
        if (store)
          storeFinal(b, loc, p, r, dims);
        return r;
      };
      // Split K: the raw sums of this part, two columns per store.
      bool raw = splits > 1;
      for (int64_t h = 0; h < 2; ++h) {
        Value row = e.add(row0, 8 * h);
        Value rowOk = e.cmp(arith::CmpIPredicate::ult, row, mBound);
        Value rowOff = arith::AddIOp::create(
            b, loc, batchOff,
            arith::MulIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), row),
                LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                         b.getI64IntegerAttr(p.n))));
        for (int64_t j = 0; j < bn / 8; ++j) {
          Value col = e.add(col0, 8 * j);
          Value ok = arith::AndIOp::create(
              b, loc, rowOk, e.cmp(arith::CmpIPredicate::ult, col, nBound));
          e.ifThen(ok, [&] {
            auto accAt = [&](int64_t x) {
              return LLVM::ExtractValueOp::create(
                  b, loc, acc, ArrayRef<int64_t>{4 * j + 2 * h + x});
            };
            if (!raw && p.epilogue && !outPtr) { // stored element by element
              for (int64_t x = 0; x < 2; ++x)
                storeEpilogue(accAt(x), row, e.add(col, x), /*store=*/true);
              return;
            }
            Type elem = p.epilogue && !raw ? outElem : accElem;
            Value base = p.epilogue && !raw ? outPtr : cPtr;
            Value v = LLVM::UndefOp::create(b, loc, VectorType::get({2}, elem));
            for (int64_t x = 0; x < 2; ++x) {
              Value a = accAt(x);
              if (p.epilogue && !raw)
                a = storeEpilogue(a, row, e.add(col, x), /*store=*/false);
              v = LLVM::InsertElementOp::create(b, loc, v, a, e.i32(x));
            }
            Value idx = arith::AddIOp::create(
                b, loc, rowOff,
                arith::ExtUIOp::create(b, loc, b.getI64Type(), col));
            Value ptr = LLVM::GEPOp::create(b, loc, ptrType, elem, base,
                                            ValueRange{idx});
            LLVM::StoreOp::create(b, loc, v, ptr,
                                  /*alignment=*/2 *
                                      elem.getIntOrFloatBitWidth() / 8);
          });
        }
      }
    };
    forEachTile(consume, pingPong ? cw : Value());
  }
}
