//===- FlashAttention.cpp - kiln.attention as one fused kernel ------------===//
//
// FlashAttention (Lowering.h): softmax(Q·Kᵀ·scale + mask)·V in one launch
// with an online softmax, in the style of FlashAttention-2's forward pass.
// The scores live in the matrix instruction's accumulators and never reach
// memory. Vendor-neutral: the instruction and its fragment layout come from
// GPUTargetInfo::getMMA, the shuffles and the barrier from the target-info.
//
// A block of kWarps warps takes kWarps * m query rows of one (batch, head),
// each warp m rows (the instruction's M: 16 on NVIDIA, so 64 rows a block;
// --gpu-attention-block chooses other warps, keys a step and blocks a
// multiprocessor).
// Each warp loads its Q fragments once (a register's adjacent elements in
// one load where Q's layout aligns them). The block walks the keys in tiles
// of kKeys. Where the target has asynchronous copies and K's and V's
// layouts allow 16-byte runs, the tiles go straight from global to shared
// memory, two buffers deep: the copies of the first two tiles start before
// Q's loads, and tile t + 2's start as soon as every warp is done with
// tile t's buffer, so that S = 128 keys (BERT) are both in flight from the
// start and no register holds a staged tile. Otherwise they come 16 bytes
// at a time (when every base and stride allows it, checked on the host
// before the launch; else element by element) into registers, one tile
// ahead of the products, and through one shared buffer. Per tile, each warp computes its
// m x kKeys scores S = Q·Kᵀ in f32 accumulators, scales them (in base 2,
// for exp2), adds the mask, sets keys past L (and, causal, past the query)
// to -inf, updates each row's running max across the lanes holding the row
// (xor shuffles), rescales its output accumulators and running sums, and
// multiplies P = exp2(S - max), rounded to the operand type, by the V tile:
// P's operand registers are the score accumulators themselves (the C and A
// fragments of the instruction agree on NVIDIA's m16n8k16). The B registers
// of both products come from the target's matrix fragment loads where it
// has them (GPUTargetInfo::buildMatrixLoad: ldmatrix on NVIDIA, K's rows as
// they are and V's transposed, four 8 x 8 matrices an instruction), else a
// shared load per register. At the end the lanes of a row add their
// partial sums and the rows are stored divided by them, in the output's
// type and layout, a row's two adjacent columns in one store where the
// output aligns them. An elementwise epilogue of the output (an int8
// build's quantization) is applied as the rows are stored; where it widens
// the output to f32 and divides it by a scalar (QuantizeLinear's x /
// scale), it takes the f32 row value without the half rounding and the
// row's 1 / sum divided by the scale (epilogueEntry).
//
//===----------------------------------------------------------------------===//

#include "AttentionEpilogue.h"
#include "AttentionOperands.h"
#include "Lowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

LogicalResult FlashAttention::lower(AttentionOp op) {
  // The block: --gpu-attention-block's, else the kernel's own.
  const bool chosen = !block.isDefault();
  const int64_t blockWarps = chosen ? block.warps : kWarps;
  const int64_t tileKeys = chosen ? block.keys : kKeys;
  Location loc = op.getLoc();
  MLIRContext *ctxt = op.getContext();
  auto qType = cast<MemRefType>(op.getQuery().getType());
  auto oType = cast<MemRefType>(op.getInit().getType());
  Type outElem = oType.getElementType();
  Type f32 = rewriter.getF32Type();
  FailureOr<AttentionOperands> operands = AttentionOperands::of(op);
  if (failed(operands))
    return failure();
  Type elem = operands->elem;
  const bool qInt = operands->qInt, kvInt = operands->kvInt;
  std::optional<MMALayout> mmaLayout = info.getMMA(elem, f32);
  if (!mmaLayout)
    return op.emitError("fused attention needs the target's matrix "
                        "instruction for ")
           << elem << " operands and f32 accumulators";
  const MMALayout &L = *mmaLayout;
  int64_t warpSize = info.getWarpSize();
  int64_t headQK = qType.getDimSize(3);
  int64_t headV = cast<MemRefType>(op.getValue().getType()).getDimSize(3);
  int64_t bm = blockWarps * L.m;
  SmallVector<int32_t> rowLanes = rowLaneOffsets(L, warpSize);
  std::optional<SmallVector<std::pair<int64_t, int64_t>>> pMap =
      scoreOperandMap(L);
  int64_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
  auto memrefOf = [](Value m) { return cast<MemRefType>(m.getType()); };
  const TileStaging staging = TileStaging::plan(
      *operands, memrefOf(op.getKey()), memrefOf(op.getValue()), tileKeys,
      blockWarps * warpSize, info.hasAsyncCopy(), kMaxSharedBytes);
  Type srcElem = staging.srcElem;
  const int64_t srcBytes = staging.srcBytes, chunk = staging.chunk,
                pad = staging.pad, stages = staging.stages;
  const bool wide = staging.wide, widenShared = staging.widenShared,
             async = staging.async;
  if (ShapedType::isDynamic(headQK) || ShapedType::isDynamic(headV) ||
      headQK % L.k != 0 || headQK % chunk != 0 || headV % L.n != 0 ||
      headV % chunk != 0 || tileKeys % L.n != 0 || tileKeys % L.k != 0 ||
      (tileKeys * headQK / chunk) % (blockWarps * warpSize) != 0 ||
      (tileKeys * headV / chunk) % (blockWarps * warpSize) != 0)
    return op.emitError("fused attention: head sizes ")
           << headQK << " and " << headV
           << " do not fit the matrix instruction's tiles"
           << (chosen ? " with --gpu-attention-block=" +
                            stringifyAttentionBlock(block) +
                            " (its keys a step times a head size must "
                            "divide among the block's threads in runs of " +
                            std::to_string(chunk) + ")"
                      : std::string());
  if (rowLanes.empty() && L.groupSize > 1)
    return op.emitError("fused attention: the target's accumulator layout "
                        "spreads a row over lanes the kernel cannot combine");
  if (!pMap)
    return op.emitError(
        "fused attention: the target's accumulator and operand fragments "
        "differ (the scores cannot serve as P·V's operands in registers)");

  rewriter.setInsertionPoint(op);
  auto dim = [&](Value v, unsigned operand, int64_t d) -> Value {
    return memref::DimOp::create(rewriter, loc, v, op.canonicalDim(operand, d));
  };
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue(),
        out = op.getInit(), mask = op.getMask();
  Value batch = dim(q, 0, 0), heads = dim(q, 0, 1), seqQ = dim(q, 0, 2);
  Value kvHeads = dim(k, 1, 1), seqK = dim(k, 1, 2);
  Value group = arith::DivUIOp::create(rewriter, loc, heads, kvHeads);
  // The mask's dims; a dim of size 1 broadcasts.
  SmallVector<Value> maskDims;
  if (mask)
    for (int64_t d = 0; d < 4; ++d)
      maskDims.push_back(memref::DimOp::create(rewriter, loc, mask, d));

  // An elementwise epilogue of the output: its result viewed in the
  // output's shape (both contiguous: the same element order).
  std::optional<OutputEpilogue> epilogue = outputEpilogue(op);
  Value result = out;
  if (epilogue) {
    Value dst = epilogue->op.getDpsInitOperand(0)->get();
    auto dstType = cast<MemRefType>(dst.getType());
    auto outType = cast<MemRefType>(out.getType());
    auto viewType =
        MemRefType::get(outType.getShape(), dstType.getElementType());
    auto [strides, offset] = viewType.getStridesAndOffset();
    result = memref::ReinterpretCastOp::create(
        rewriter, loc, viewType, dst, offset, outType.getShape(), strides);
  }
  Value one = index(loc, 1);
  Value gridX = arith::CeilDivUIOp::create(rewriter, loc, seqQ, index(loc, bm));
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, gridX, heads, batch,
                            index(loc, blockWarps * warpSize), one, one);
  Attribute wg = info.getSharedMemorySpace(ctxt);
  auto kType = MemRefType::get({stages * tileKeys, headQK + pad}, elem,
                               MemRefLayoutAttrInterface(), wg);
  auto vType = MemRefType::get({stages * tileKeys, headV + pad}, elem,
                               MemRefLayoutAttrInterface(), wg);
  Value ks = launch.addWorkgroupAttribution(kType, loc);
  Value vs = launch.addWorkgroupAttribution(vType, loc);
  // The 8-bit tiles' two buffers (rows padded by 16 bytes).
  Value ks8, vs8;
  if (widenShared) {
    ks8 = launch.addWorkgroupAttribution(
        MemRefType::get({2 * tileKeys, headQK + chunk}, srcElem,
                        MemRefLayoutAttrInterface(), wg),
        loc);
    vs8 = launch.addWorkgroupAttribution(
        MemRefType::get({2 * tileKeys, headV + chunk}, srcElem,
                        MemRefLayoutAttrInterface(), wg),
        loc);
  }
  // The output leaves through shared memory in runs of 16 bytes where its
  // rows hold them (the head dim contiguous, every outer stride and the
  // offset a multiple of 16 bytes, the bases aligned as above) and the
  // block's static shared memory allows: each warp writes its m x headV
  // rows there as the fragments hold them (two adjacent columns of a row
  // per lane), then reads back whole runs. A store of the fragments goes
  // to 8 rows at 2 elements a row per lane quad: 4 bytes a row (an int8
  // build's quantized output) left most of each sector unwritten, and
  // BERT-base b32's int8 attention kernel spent 14% of its stall samples
  // draining its stores at the end (Nsight Compute, H100, 2026-12-07).
  Type stagedElem = memrefOf(result).getElementType();
  const int64_t stagedBytes =
      stagedElem.isIntOrFloat() ? stagedElem.getIntOrFloatBitWidth() / 8 : 0;
  const int64_t run = stagedBytes ? 16 / stagedBytes : 0;
  const int64_t sharedBytes =
      widenShared
          ? staging.widenBytes
          : (kType.getNumElements() + vType.getNumElements()) * elemBytes;
  const int64_t stagingBytes = blockWarps * L.m * headV * stagedBytes;
  const bool stageOut = stagedBytes && 16 % stagedBytes == 0 &&
                        headV % run == 0 &&
                        (L.m * headV / run) % warpSize == 0 &&
                        alignedRuns(memrefOf(result), run) &&
                        sharedBytes + stagingBytes <= kMaxSharedBytes;
  Value outStage;
  if (stageOut)
    outStage = launch.addWorkgroupAttribution(
        MemRefType::get({blockWarps * L.m, headV}, stagedElem,
                        MemRefLayoutAttrInterface(), wg),
        loc);
  // An output epilogue with heads of up to 64: four blocks to a
  // multiprocessor (16 warps; their stages take 4 x 37 KB of shared
  // memory), which bounds the registers at 128 a thread. BERT-base b32's
  // half kernel fit them on its own (128 registers), but with the epilogue
  // that quantizes its output for an int8 product it took 141, three
  // blocks, and 21.2 us against half's 17.9 (H200, 2026-12-07). Kernels
  // without an epilogue keep the vendor compiler's choice: under the bound
  // two of the lit kernels spill 8 and 16 bytes, and that is unmeasured.
  // A block chosen by --gpu-attention-block with blocks a multiprocessor
  // asks for them whatever the epilogue; chosen without, for none.
  int64_t minBlocks = 0;
  if (chosen)
    minBlocks = block.blocksPerSM;
  else if (epilogue && headQK <= 64 && headV <= 64)
    minBlocks = kMinAttentionBlocks;
  if (minBlocks)
    if (std::optional<NamedAttribute> a =
            info.getMinBlocksPerSMAttr(ctxt, minBlocks))
      addKernelAttr(launch, *a);
  {
    std::string what;
    llvm::raw_string_ostream os(what);
    os << "attention head " << headQK << "/" << headV << ": fused, " << bm
       << " queries x " << tileKeys << " keys a step, matrix instruction "
       << L.m << "x" << L.n << "x" << L.k << ", " << blockWarps << " warps of "
       << warpSize;
    if (async)
      os << ", asynchronous copies, 2 buffers";
    if (qInt || kvInt)
      os << ", 8-bit "
         << (qInt && kvInt ? "Q/K/V"
             : qInt        ? "Q"
                           : "K/V")
         << " widened to " << elem;
    noteGPUContraction(launch, what);
  }
  enterLaunch(launch);

  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(rewriter, loc, tid, index(loc, warpSize));
  Value warp = arith::DivUIOp::create(rewriter, loc, tid, index(loc, warpSize));
  Value grp =
      arith::DivUIOp::create(rewriter, loc, lane, index(loc, L.groupSize));
  Value thr =
      arith::RemUIOp::create(rewriter, loc, lane, index(loc, L.groupSize));
  Value b = launch.getBlockIds().z, h = launch.getBlockIds().y;
  Value kvh = arith::DivUIOp::create(rewriter, loc, h, group);
  Value qBase = mul(loc, launch.getBlockIds().x, bm);
  Value row0 = add(loc, qBase, mul(loc, warp, L.m));
  Value lastQ = arith::SubIOp::create(
      rewriter, loc, arith::MaxUIOp::create(rewriter, loc, seqQ, one), one);
  Value lastK = arith::SubIOp::create(
      rewriter, loc, arith::MaxUIOp::create(rewriter, loc, seqK, one), one);
  // Operand `operand`'s element at canonical (b, h, s, d).
  auto at = [&](unsigned operand, Value bi, Value hi, Value si, Value di) {
    return op.getSeqMajor()[operand] ? SmallVector<Value>{bi, si, hi, di}
                                     : SmallVector<Value>{bi, hi, si, di};
  };
  auto coord = [&](LaneCoord c) -> Value {
    Value r = index(loc, 0);
    if (c.group)
      r = add(loc, r, mul(loc, grp, c.group));
    if (c.thread)
      r = add(loc, r, mul(loc, thr, c.thread));
    return r;
  };
  Value aRow = coord(L.aRow), aK = coord(L.aK), bCol = coord(L.bCol),
        bK = coord(L.bK), cRow = coord(L.cRow), cCol = coord(L.cCol);
  auto runType = VectorType::get({L.kPack}, elem);
  auto widen = [&](Value ints, unsigned operand) {
    return widenQuantized(rewriter, loc, op, operand, ints, elem);
  };
  auto qRunType = VectorType::get({L.kPack}, qType.getElementType());
  const int64_t qBytes = qInt ? 1 : elemBytes;

  // Q's fragments, once: rows past S read row S - 1 (their results are
  // never stored). Built after the first tiles' asynchronous copies start.
  SmallVector<SmallVector<Value>> qFrag;
  auto loadQ = [&] {
    for (int64_t kt = 0; kt < headQK / L.k; ++kt) {
      SmallVector<Value> regs;
      for (const FragmentOffset &r : L.aRegs) {
        Value row = arith::MinUIOp::create(
            rewriter, loc, add(loc, add(loc, row0, aRow), index(loc, r.outer)),
            lastQ);
        Value d = add(loc, aK, index(loc, kt * L.k + r.inner));
        Value run;
        if (L.kPack > 1 && alignedRuns(memrefOf(q), L.kPack) &&
            runAligned(L.aK, kt * L.k + r.inner, L.kPack)) {
          // The register's elements are adjacent along the head dim: one
          // load of all of them.
          auto ld = vector::LoadOp::create(rewriter, loc, qRunType, q,
                                           at(0, b, h, row, d));
          ld.setAlignment(L.kPack * qBytes);
          run = ld;
        } else {
          SmallVector<Value> elems;
          for (int64_t p = 0; p < L.kPack; ++p)
            elems.push_back(memref::LoadOp::create(
                rewriter, loc, q,
                at(0, b, h, row, add(loc, d, index(loc, p)))));
          run = vector::FromElementsOp::create(rewriter, loc, qRunType, elems);
        }
        if (qInt)
          run = widen(run, 0);
        regs.push_back(info.buildMMAOperand(rewriter, loc, L, run));
      }
      qFrag.push_back(regs);
    }
  };

  // Staging: chunk c of a tile's tileKeys x D elements is key c / (D / V),
  // elements (c % (D / V)) * V onwards (V = one 16-byte load): consecutive
  // threads read consecutive 16 bytes of a row.
  auto chunkType = VectorType::get({chunk}, srcElem);
  struct Side {
    Value src, dst;
    unsigned operand;
    int64_t head;
    Value stage8; // the 8-bit buffers the copies fill (widenShared)
  };
  Side sides[] = {{k, ks, 1, headQK, ks8}, {v, vs, 2, headV, vs8}};
  int64_t threads = blockWarps * warpSize;
  // Run `c` of rows of `perRow` runs of `width` elements: its row and its
  // first element.
  auto runPosition = [&](Value c, int64_t perRow, int64_t width) {
    Value row = arith::DivUIOp::create(rewriter, loc, c, index(loc, perRow));
    Value first =
        mul(loc, arith::RemUIOp::create(rewriter, loc, c, index(loc, perRow)),
            width);
    return std::make_pair(row, first);
  };
  // This thread's chunks of a tile, K's then V's: `fn(side, row, d)` with
  // the chunk's row in the tile and its first element.
  auto forEachChunk = [&](llvm::function_ref<void(Side &, Value, Value)> fn) {
    for (Side &s : sides) {
      int64_t perRow = s.head / chunk;
      for (int64_t r = 0; r < tileKeys * perRow / threads; ++r) {
        auto [row, d] =
            runPosition(add(loc, tid, index(loc, r * threads)), perRow, chunk);
        fn(s, row, d);
      }
    }
  };
  // Key `key0 + row` of the operand, clamped to the last one.
  auto clampedKey = [&](Value key0, Value row) -> Value {
    return arith::MinUIOp::create(rewriter, loc, add(loc, key0, row), lastK);
  };
  auto loadTile = [&](Value tile, SmallVectorImpl<Value> &vals) {
    Value key0 = mul(loc, tile, tileKeys);
    forEachChunk([&](Side &s, Value row, Value d) {
      Value key = clampedKey(key0, row);
      if (wide) {
        auto ld = vector::LoadOp::create(rewriter, loc, chunkType, s.src,
                                         at(s.operand, b, kvh, key, d));
        ld.setAlignment(chunk * srcBytes);
        vals.push_back(ld);
        return;
      }
      SmallVector<Value> elems;
      for (int64_t e = 0; e < chunk; ++e)
        elems.push_back(memref::LoadOp::create(
            rewriter, loc, s.src,
            at(s.operand, b, kvh, key, add(loc, d, index(loc, e)))));
      vals.push_back(
          vector::FromElementsOp::create(rewriter, loc, chunkType, elems));
    });
  };
  auto storeTile = [&](ValueRange vals) {
    unsigned i = 0;
    forEachChunk([&](Side &s, Value row, Value d) {
      Value val = vals[i++];
      if (kvInt)
        val = widen(val, s.operand);
      auto st = vector::StoreOp::create(rewriter, loc, val, s.dst,
                                        ValueRange{row, d});
      st.setAlignment(16);
    });
  };

  // Asynchronous: where `cond` (uniform across the block), a barrier when
  // `barrier` (every warp done with the buffer) and tile `tile`'s copies
  // into buffer `stage`; then, either way, the group closes (empty when
  // nothing was copied).
  auto copyTile = [&](Value tile, Value stage, Value cond, bool barrier) {
    scf::IfOp guard;
    if (!matchPattern(cond, m_One())) {
      guard = scf::IfOp::create(rewriter, loc, cond, /*withElseRegion=*/false);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    }
    if (barrier)
      info.buildBarrier(rewriter, loc);
    Value valid = arith::ConstantIntOp::create(rewriter, loc, 1, 1);
    Value key0 = mul(loc, tile, tileKeys), row0 = mul(loc, stage, tileKeys);
    forEachChunk([&](Side &s, Value row, Value d) {
      info.buildAsyncCopy(rewriter, loc, s.stage8 ? s.stage8 : s.dst,
                          ValueRange{add(loc, row0, row), d}, s.src,
                          at(s.operand, b, kvh, clampedKey(key0, row), d),
                          valid);
    });
    if (guard)
      rewriter.setInsertionPointAfter(guard);
    info.buildAsyncCommit(rewriter, loc);
  };

  // The key tiles: all of them, or (causal) those up to the block's last
  // query row.
  Value tiles =
      arith::CeilDivUIOp::create(rewriter, loc, seqK, index(loc, tileKeys));
  if (op.getCausal()) {
    Value last = add(loc, qBase, index(loc, bm - 1));
    Value upTo = add(
        loc, arith::DivUIOp::create(rewriter, loc, last, index(loc, tileKeys)),
        one);
    tiles = arith::MinUIOp::create(rewriter, loc, tiles, upTo);
  }
  // The lane's row offsets (distinct C element rows).
  SmallVector<int64_t> rowOffs;
  for (const FragmentOffset &c : L.cElems)
    if (!llvm::is_contained(rowOffs, c.outer))
      rowOffs.push_back(c.outer);
  int64_t nC = L.cElems.size();
  int64_t oTiles = headV / L.n, sTiles = tileKeys / L.n;
  Value zeroF =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
  Value negInf = arith::ConstantOp::create(
      rewriter, loc,
      rewriter.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  SmallVector<Value> inits(oTiles * nC, zeroF);
  inits.append(rowOffs.size(), negInf); // running max (base 2)
  inits.append(rowOffs.size(), zeroF);  // this lane's running sums
  SmallVector<Value> first;
  if (async) {
    Value trueV = arith::ConstantIntOp::create(rewriter, loc, 1, 1);
    copyTile(index(loc, 0), index(loc, 0), trueV, /*barrier=*/false);
    copyTile(one, one, ult(loc, one, tiles), /*barrier=*/false);
    loadQ();
  } else {
    loadQ();
    loadTile(index(loc, 0), first);
  }
  inits.append(first);
  int64_t nO = oTiles * nC, nR = rowOffs.size();
  auto loop =
      scf::ForOp::create(rewriter, loc, index(loc, 0), tiles, one, inits);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  ValueRange iter = loop.getRegionIterArgs();
  SmallVector<Value> o(iter.begin(), iter.begin() + nO);
  SmallVector<Value> rowMax(iter.begin() + nO, iter.begin() + nO + nR);
  SmallVector<Value> rowSum(iter.begin() + nO + nR, iter.begin() + nO + 2 * nR);
  ValueRange staged = iter.drop_front(nO + 2 * nR);
  // Asynchronous: tile t's group is in (tile t + 1's may be in flight) and,
  // after the barrier, every thread's copies are seen; its buffer's rows
  // start at `sOff`. Else: the previous tile's readers are done, this tile
  // into the one buffer.
  Value sOff = index(loc, 0);
  scf::IfOp more;
  if (async) {
    info.buildAsyncWait(rewriter, loc, /*pending=*/1);
    info.buildBarrier(rewriter, loc);
    sOff = mul(loc, arith::RemUIOp::create(rewriter, loc, t, index(loc, 2)),
               tileKeys);
    if (widenShared) {
      // The 8-bit tile into the one wide buffer (its readers of the last
      // tile passed the barrier above), then a barrier before its reads.
      forEachChunk([&](Side &s, Value row, Value d) {
        auto ld = vector::LoadOp::create(rewriter, loc, chunkType, s.stage8,
                                         ValueRange{add(loc, sOff, row), d});
        ld.setAlignment(16);
        auto st = vector::StoreOp::create(rewriter, loc, widen(ld, s.operand),
                                          s.dst, ValueRange{row, d});
        st.setAlignment(16);
      });
      info.buildBarrier(rewriter, loc);
      sOff = index(loc, 0);
    }
  } else {
    info.buildBarrier(rewriter, loc);
    storeTile(staged);
    info.buildBarrier(rewriter, loc);
    Value tNext = add(loc, t, one);
    more = loadNextIf(loc, ult(loc, tNext, tiles), staged,
                      [&](SmallVector<Value> &next) { loadTile(tNext, next); });
  }

  // S = Q·Kᵀ: B's columns are keys, its K the head dim (K-contiguous rows
  // of the K tile).
  auto runAt = [&](Value smem, Value r, Value c) {
    auto ld =
        vector::LoadOp::create(rewriter, loc, runType, smem, ValueRange{r, c});
    ld.setAlignment(L.kPack * elemBytes);
    return info.buildMMAOperand(rewriter, loc, L, ld);
  };
  SmallVector<Value> s(sTiles * nC, zeroF);
  const int64_t nb = L.bRegs.size();
  // The target's matrix fragment loads (a warp's B registers of all key
  // tiles at one K step: the K tile's rows run along the head dim, V's
  // along the output columns) where it has them, else a load per register.
  const bool fragmentLoads = info.hasMatrixLoad(L);
  for (int64_t kt = 0; kt < headQK / L.k; ++kt) {
    SmallVector<Value> all;
    if (fragmentLoads)
      all = info.buildMatrixLoad(
          rewriter, loc, L, /*isB=*/true, sTiles, /*kContiguous=*/true, lane,
          ks, [&](Value outer, Value inner) -> SmallVector<Value> {
            return {add(loc, outer, sOff),
                    add(loc, inner, index(loc, kt * L.k))};
          });
    for (int64_t j = 0; j < sTiles; ++j) {
      SmallVector<Value> regs;
      if (fragmentLoads)
        regs.append(all.begin() + j * nb, all.begin() + (j + 1) * nb);
      else
        for (const FragmentOffset &r : L.bRegs)
          regs.push_back(runAt(
              ks, add(loc, sOff, add(loc, bCol, index(loc, j * L.n + r.outer))),
              add(loc, bK, index(loc, kt * L.k + r.inner))));
      SmallVector<Value> acc =
          info.buildMMA(rewriter, loc, L, qFrag[kt], regs,
                        ArrayRef<Value>(s).slice(j * nC, nC));
      llvm::copy(acc, s.begin() + j * nC);
    }
  }
  // Scale (base 2), mask, bounds and causality.
  double log2e = 1.4426950408889634;
  // 8-bit Q and K: their scales multiply the scores.
  double qkScale = 1.0;
  for (unsigned i = 0; i < 2; ++i)
    if (op.isQuantized(i))
      qkScale *= (*op.getDequantScales())[i];
  Value scale2 = arith::ConstantOp::create(
      rewriter, loc,
      rewriter.getF32FloatAttr(op.getScale().convertToDouble() * log2e *
                               qkScale));
  Value log2eV =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(log2e));
  Value key0 = mul(loc, t, tileKeys);
  Value zero = index(loc, 0);
  int64_t staticKeys = cast<MemRefType>(k.getType())
                           .getDimSize(op.canonicalDim(/*operand=*/1, 2));
  const bool fullTiles =
      !ShapedType::isDynamic(staticKeys) && staticKeys % tileKeys == 0;
  auto bcast = [&](int64_t d, Value i) -> Value {
    Value unit = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       maskDims[d], one);
    return arith::SelectOp::create(rewriter, loc, unit, zero, i);
  };
  Value mb, mh;
  if (mask) {
    mb = bcast(0, b);
    mh = bcast(1, h);
  }
  for (int64_t j = 0; j < sTiles; ++j)
    for (int64_t e = 0; e < nC; ++e) {
      Value &x = s[j * nC + e];
      Value row = add(loc, add(loc, row0, cRow), index(loc, L.cElems[e].outer));
      Value key = add(loc, add(loc, key0, cCol),
                      index(loc, j * L.n + L.cElems[e].inner));
      x = arith::MulFOp::create(rewriter, loc, x, scale2);
      if (mask) {
        Value inCols = ult(loc, key, maskDims[3]);
        Value mi = bcast(2, arith::MinUIOp::create(rewriter, loc, row, lastQ));
        Value mj = arith::SelectOp::create(rewriter, loc, inCols, key, zero);
        Value m = memref::LoadOp::create(rewriter, loc, mask,
                                         ValueRange{mb, mh, mi, mj});
        if (m.getType() != f32)
          m = m.getType().getIntOrFloatBitWidth() < 32
                  ? arith::ExtFOp::create(rewriter, loc, f32, m).getResult()
                  : arith::TruncFOp::create(rewriter, loc, f32, m).getResult();
        m = arith::MulFOp::create(rewriter, loc, m, log2eV);
        m = arith::SelectOp::create(rewriter, loc, inCols, m, negInf);
        x = arith::AddFOp::create(rewriter, loc, x, m);
      }
      // Keys past L: none when L is a static multiple of the tile.
      Value masked;
      if (!fullTiles)
        masked = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge,
                                       key, seqK);
      if (op.getCausal()) {
        Value later = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::ugt, key, row);
        masked =
            masked
                ? arith::OrIOp::create(rewriter, loc, masked, later).getResult()
                : later;
      }
      if (masked)
        x = arith::SelectOp::create(rewriter, loc, masked, negInf, x);
    }
  // The online softmax, row by row.
  auto butterfly = [&](Value x, bool isMax) {
    for (int32_t off : rowLanes) {
      Value y = info.buildShuffleXor(rewriter, loc, x, off, warpSize);
      x = isMax ? arith::MaximumFOp::create(rewriter, loc, x, y).getResult()
                : arith::AddFOp::create(rewriter, loc, x, y).getResult();
    }
    return x;
  };
  SmallVector<Value> alpha(nR), base(nR);
  for (auto [ri, ro] : llvm::enumerate(rowOffs)) {
    Value mx = rowMax[ri];
    for (int64_t j = 0; j < sTiles; ++j)
      for (int64_t e = 0; e < nC; ++e)
        if (L.cElems[e].outer == ro)
          mx = arith::MaximumFOp::create(rewriter, loc, mx, s[j * nC + e]);
    mx = butterfly(mx, /*isMax=*/true);
    // A row with every key so far masked keeps base 0 (its terms are 0).
    Value none = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                       mx, negInf);
    base[ri] = arith::SelectOp::create(rewriter, loc, none, zeroF, mx);
    alpha[ri] = math::Exp2Op::create(
        rewriter, loc,
        arith::SubFOp::create(rewriter, loc, rowMax[ri], base[ri]));
    rowMax[ri] = mx;
    rowSum[ri] = arith::MulFOp::create(rewriter, loc, rowSum[ri], alpha[ri]);
  }
  auto rowIndex = [&](int64_t e) {
    return llvm::find(rowOffs, L.cElems[e].outer) - rowOffs.begin();
  };
  for (int64_t j = 0; j < sTiles; ++j)
    for (int64_t e = 0; e < nC; ++e) {
      Value &x = s[j * nC + e];
      int64_t ri = rowIndex(e);
      x = math::Exp2Op::create(
          rewriter, loc, arith::SubFOp::create(rewriter, loc, x, base[ri]));
      rowSum[ri] = arith::AddFOp::create(rewriter, loc, rowSum[ri], x);
    }
  for (int64_t dn = 0; dn < oTiles; ++dn)
    for (int64_t e = 0; e < nC; ++e)
      o[dn * nC + e] = arith::MulFOp::create(rewriter, loc, o[dn * nC + e],
                                             alpha[rowIndex(e)]);
  // O += P·V: P's operand registers from the scores (same lanes); V's B
  // registers read K (keys) down a column of the V tile.
  for (int64_t kt = 0; kt < tileKeys / L.k; ++kt) {
    SmallVector<Value> pRegs;
    unsigned m = 0;
    for (size_t r = 0; r < L.aRegs.size(); ++r) {
      SmallVector<Value> elems;
      for (int64_t p = 0; p < L.kPack; ++p, ++m) {
        auto [tile, e] = (*pMap)[m];
        Value x = s[(kt * L.k / L.n + tile) * nC + e];
        elems.push_back(arith::TruncFOp::create(rewriter, loc, elem, x));
      }
      pRegs.push_back(info.buildMMAOperand(
          rewriter, loc, L,
          vector::FromElementsOp::create(rewriter, loc, runType, elems)));
    }
    SmallVector<Value> vAll;
    if (fragmentLoads)
      vAll = info.buildMatrixLoad(
          rewriter, loc, L, /*isB=*/true, oTiles, /*kContiguous=*/false, lane,
          vs, [&](Value outer, Value inner) -> SmallVector<Value> {
            return {add(loc, sOff, add(loc, inner, index(loc, kt * L.k))),
                    outer};
          });
    for (int64_t dn = 0; dn < oTiles; ++dn) {
      SmallVector<Value> regs;
      if (fragmentLoads)
        regs.append(vAll.begin() + dn * nb, vAll.begin() + (dn + 1) * nb);
      for (const FragmentOffset &r :
           fragmentLoads ? ArrayRef<FragmentOffset>() : ArrayRef(L.bRegs)) {
        Value col = add(loc, bCol, index(loc, dn * L.n + r.outer));
        Value key =
            add(loc, sOff, add(loc, bK, index(loc, kt * L.k + r.inner)));
        SmallVector<Value> elems;
        for (int64_t p = 0; p < L.kPack; ++p)
          elems.push_back(memref::LoadOp::create(
              rewriter, loc, vs,
              ValueRange{add(loc, key, index(loc, p)), col}));
        regs.push_back(info.buildMMAOperand(
            rewriter, loc, L,
            vector::FromElementsOp::create(rewriter, loc, runType, elems)));
      }
      SmallVector<Value> acc = info.buildMMA(
          rewriter, loc, L, pRegs, regs, ArrayRef<Value>(o).slice(dn * nC, nC));
      llvm::copy(acc, o.begin() + dn * nC);
    }
  }
  if (async) {
    // Once every warp is done with this buffer, tile t + 2's copies into
    // it (if there is one).
    Value tAfter = add(loc, t, index(loc, 2));
    copyTile(tAfter, arith::RemUIOp::create(rewriter, loc, t, index(loc, 2)),
             ult(loc, tAfter, tiles), /*barrier=*/true);
  }
  SmallVector<Value> yields = o;
  llvm::append_range(yields, rowMax);
  llvm::append_range(yields, rowSum);
  if (more)
    llvm::append_range(yields, more.getResults());
  scf::YieldOp::create(rewriter, loc, yields);
  rewriter.setInsertionPointAfter(loop);
  // No copy outlives the kernel (the last ones only fill zeros).
  if (async)
    info.buildAsyncWait(rewriter, loc, /*pending=*/0);

  // The rows' sums across their lanes; O / sum in the output's type (O
  // times V's scale / sum for an 8-bit V).
  SmallVector<Value> inv(nR);
  Value oneF = arith::ConstantOp::create(
      rewriter, loc,
      rewriter.getF32FloatAttr(kvInt ? (*op.getDequantScales())[2] : 1.0));
  for (int64_t ri = 0; ri < nR; ++ri)
    inv[ri] = arith::DivFOp::create(
        rewriter, loc, oneF,
        butterfly(loop.getResult(nO + nR + ri), /*isMax=*/false));
  // The epilogue's scalar operands, loaded once; its body on each value in
  // the output's type, or in f32 where it starts by widening it
  // (epilogueEntry).
  EpilogueApplier applier(rewriter, loc, epilogue, outElem, result, inv);
  Type resultElem = applier.resultElem();
  // Two accumulators of a row in adjacent columns (m16n8's pairs) leave in
  // one store where the output allows it.
  int64_t outBytes = resultElem.getIntOrFloatBitWidth() / 8;
  bool pairs = alignedRuns(memrefOf(result), 2);
  for (int64_t dn = 0; dn < oTiles; ++dn)
    for (int64_t e = 0; e < nC; ++e) {
      const FragmentOffset &c = L.cElems[e];
      bool pair = pairs && e + 1 < nC && L.cElems[e + 1].outer == c.outer &&
                  L.cElems[e + 1].inner == c.inner + 1 &&
                  runAligned(L.cCol, dn * L.n + c.inner, 2);
      Value row = add(loc, add(loc, row0, cRow), index(loc, c.outer));
      Value col = add(loc, cCol, index(loc, dn * L.n + c.inner));
      SmallVector<Value> ys;
      for (int64_t i = 0; i < (pair ? 2 : 1); ++i)
        ys.push_back(applier.apply(
            rewriter, loc, loop.getResult(dn * nC + e + i), rowIndex(e)));
      // Staged: the warp's own rows of the staging buffer, every row
      // (those past the queries are not copied out).
      Value stageRow = stageOut ? add(loc, add(loc, mul(loc, warp, L.m), cRow),
                                      index(loc, c.outer))
                                : Value();
      std::optional<OpBuilder::InsertionGuard> g;
      if (!stageOut) {
        auto guard = scf::IfOp::create(rewriter, loc, ult(loc, row, seqQ),
                                       /*withElseRegion=*/false);
        g.emplace(rewriter);
        rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
      }
      Value dst = stageOut ? outStage : result;
      SmallVector<Value> idx =
          stageOut ? SmallVector<Value>{stageRow, col} : at(3, b, h, row, col);
      if (pair) {
        Value v = vector::FromElementsOp::create(
            rewriter, loc, VectorType::get({2}, resultElem), ys);
        auto st = vector::StoreOp::create(rewriter, loc, v, dst, idx);
        st.setAlignment(2 * outBytes);
        ++e;
      } else {
        memref::StoreOp::create(rewriter, loc, ys[0], dst, idx);
      }
    }
  if (stageOut) {
    // Each warp reads back its rows in runs of 16 bytes, lane by lane
    // along the rows (a warp's store: whole rows of the output), after a
    // barrier (every warp gets here).
    info.buildBarrier(rewriter, loc);
    const int64_t runsPerRow = headV / run;
    for (int64_t i = 0; i < L.m * runsPerRow / warpSize; ++i) {
      auto [within, col] = runPosition(add(loc, lane, index(loc, i * warpSize)),
                                       runsPerRow, run);
      auto runType = VectorType::get({run}, resultElem);
      auto ld = vector::LoadOp::create(
          rewriter, loc, runType, outStage,
          ValueRange{add(loc, mul(loc, warp, L.m), within), col});
      ld.setAlignment(16);
      Value row = add(loc, row0, within);
      auto guard = scf::IfOp::create(rewriter, loc, ult(loc, row, seqQ),
                                     /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
      auto st = vector::StoreOp::create(rewriter, loc, ld, result,
                                        at(3, b, h, row, col));
      st.setAlignment(16);
    }
  }
  rewriter.eraseOp(op);
  if (epilogue) {
    rewriter.eraseOp(epilogue->op);
    for (Operation *v : llvm::reverse(epilogue->views))
      rewriter.eraseOp(v);
    // The buffer the output went to, now only released.
    if (Operation *def = out.getDefiningOp();
        def && isa<memref::AllocOp, BufferOp>(def) &&
        llvm::all_of(def->getUsers(),
                     [](Operation *u) { return isa<ReleaseOp>(u); })) {
      for (Operation *u : llvm::make_early_inc_range(def->getUsers()))
        rewriter.eraseOp(u);
      rewriter.eraseOp(def);
    }
  }
  return success();
}
