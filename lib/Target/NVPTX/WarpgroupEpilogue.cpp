//===- WarpgroupEpilogue.cpp - A tile's stores through shared memory ------===//
//
// The accumulators of a wgmma tile sit in the fragment layout: a thread
// holds two adjacent columns of 8-row groups, so a warp's store writes 16
// bytes in each of 8 rows and a 256 x 128 tile takes 32 such stores per
// thread. Nsight Compute on an H100 (4096 x 3072 x 768 f16) had the
// consumers stalled about a third of their cycles on the LSU's queue ("LG
// throttle") in those stores. With one tile per block the ring of stages is
// idle once every consumer has waited for its last wgmma, so the tile goes
// out in two passes over that memory (a persistent block, whose ring is
// filling its next tile's stages meanwhile, has a staging area of its own
// past the ring):
//   1. each consumer thread writes its accumulators (after the fill) into
//      a BM x (BN + 8) array of 32-bit words (the 8 words of padding put
//      a warp's 8 rows on distinct banks two by two);
//   2. each warpgroup reads its own 64 rows back as chunks of 8 adjacent
//      columns, one chunk per thread and pass, runs the epilogue's body on
//      the 8 values (its other operands loaded at the point, adjacent
//      threads on adjacent addresses) and stores the 8 results with one
//      16-byte store (two for 32-bit results, one 8-byte store for 8-bit
//      ones), or element by element where the output's base address is
//      not aligned to that (a caller's buffer).
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {

/// 32-bit words of padding at the end of each staged row.
constexpr int64_t kRowPad = 8;
/// Columns per chunk of the second pass.
constexpr int64_t kChunk = 8;
} // namespace

int64_t warpgroup::stagedTileBytes(const Tile &t) {
  return stagedRows(t) * (t.bn + kRowPad) * 4;
}

int64_t warpgroup::stagedRows(const Tile &t) {
  // A ping-pong consumer stages its row blocks one at a time.
  return t.pingPong ? 64 * t.consumers() : t.bm;
}

bool warpgroup::canStageOutput(const Problem &p) {
  Type out = cast<MemRefType>(p.output().getType()).getElementType();
  if (!out.isIntOrFloat())
    return false;
  unsigned bits = out.getIntOrFloatBitWidth();
  return (bits == 8 || bits == 16 || bits == 32) && p.n % kChunk == 0;
}

bool warpgroup::canStageTile(const Problem &p, const KernelConfig &cfg) {
  if (cfg.splits > 1 || !canStageOutput(p))
    return false;
  if (cfg.persistent)
    return cfg.stagingOffset > 0;
  const Tile &t = cfg.tile;
  int64_t ring = t.stages * (t.bm + t.bn) * p.stepBytes;
  return stagedTileBytes(t) <= ring;
}

void warpgroup::storeTileStaged(Emitter &e, const Problem &p,
                                const KernelConfig &cfg, const TileCoords &t,
                                const StagedPart &part, Value base,
                                Value ltid) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  MLIRContext *context = b.getContext();
  const int64_t bn = cfg.tile.bn;
  Value acc = part.acc;
  const int64_t pitch = (bn + kRowPad) * 4; // bytes per staged row
  Type accElem = p.acc;
  Value out = p.output();
  Type outElem = cast<MemRefType>(out.getType()).getElementType();
  const int64_t outBytes = outElem.getIntOrFloatBitWidth() / 8;

  const int64_t perRow = bn / kChunk, chunks = 64 * perRow;
  // Where perRow divides 128, i / perRow is ltid / perRow + pass *
  // (128 / perRow) and i % perRow is ltid % perRow: one division for all,
  // and a thread's chunk is the same 8 columns in every pass. Their
  // per-column operands (an int8 product's scales and zero-point sums, a
  // bias) are then loaded once, not once a pass: the stores between the
  // passes keep the compiler from reusing the loads itself, and the
  // repeated loads were most of the epilogue's load instructions (3 of 4
  // for a requantized int8 product). A chunk past N (an edge tile) loads
  // the last chunk's, unused.
  //
  // A one-block tile loads them before the barriers, so that their latency
  // passes while the consumers wait for each other and stage their
  // accumulators, not after (a latency a tile: BERT-base's QKV product's
  // loads followed the second barrier). A tile of two blocks to a
  // multiprocessor loads them after the barriers: its 9 warps fit twice
  // only at 96 registers or fewer (each of the 4 quarters of the register
  // file holds 16K, and one of them takes 5 of the 18 warps), and holding
  // the columns' operands across the staging took ResNet-50 b64's int8
  // block ends (a residual, one K step) from 90 to 109 registers, one
  // block an SM and 72 to 110 us on an H100 (2026-12-07).
  const bool whole = 128 % perRow == 0;
  SmallVector<llvm::DenseMap<OpOperand *, Value>> perColumn(kChunk);
  // The thread's chunk's first column (whole), clamped into the output.
  Value chunk0;
  SmallVector<OpOperand *> columnOps = columnOperands(p);
  auto loadColumns = [&] {
    if (!whole)
      return;
    chunk0 = e.add(t.n0, e.mul(e.remu(ltid, perRow), kChunk));
    chunk0 = arith::MinUIOp::create(b, loc, chunk0, e.i32(p.n - kChunk));
    for (OpOperand *in : columnOps)
      for (int64_t x = 0; x < kChunk; ++x)
        perColumn[x][in] = loadEpilogueOperand(
            b, loc, p, in, cPoint(b, loc, p, t.bIdx, t.m0, e.add(chunk0, x)));
  };
  const bool columnsFirst = cfg.tile.blocksPerSM == 1;
  if (columnsFirst)
    loadColumns();

  // Every consumer is past its last wgmma (so no stage is read any more)
  // before any of them writes over the ring.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
  auto consumerBarrier = [&] {
    NVVM::BarrierOp::create(b, loc, Type(), part.barrier,
                            e.i32(part.barrierThreads),
                            NVVM::BarrierReductionAttr(), Value());
  };
  consumerBarrier();

  // Pass 1: accumulator 4j + 2h + x at row 16 warp + lane / 4 + 8h and
  // column 8j + 2 (lane % 4) + x of the part's 64 rows.
  Value warp = e.divu(ltid, 32), lane = e.remu(ltid, 32);
  Value row0 = e.add(part.stagedRow, e.add(e.mul(warp, 16), e.divu(lane, 4)));
  Value col0 = e.mul(e.remu(lane, 4), 2);
  auto pairType = VectorType::get({2}, accElem);
  for (int64_t h = 0; h < 2; ++h) {
    Value rowAddr = e.add(base, e.mul(e.add(row0, 8 * h), pitch));
    for (int64_t j = 0; j < bn / 8; ++j) {
      Value v = LLVM::UndefOp::create(b, loc, pairType);
      for (int64_t x = 0; x < 2; ++x) {
        Value a = LLVM::ExtractValueOp::create(
            b, loc, acc, ArrayRef<int64_t>{4 * j + 2 * h + x});
        v = LLVM::InsertElementOp::create(b, loc, v, a, e.i32(x));
      }
      Value addr = e.add(rowAddr, e.mul(e.add(col0, 8 * j), 4));
      LLVM::StoreOp::create(b, loc, v, e.shared(addr), /*alignment=*/8);
    }
  }
  consumerBarrier();
  if (!columnsFirst)
    loadColumns();

  // Pass 2: pass `pass` takes chunk i = 128 pass + ltid of the warpgroup's
  // 64 x perRow chunks, row-major: chunk i % perRow of row i / perRow (a
  // row of 24 chunks, BN = 192, straddles two passes).
  Value mBound = e.i32(p.m), nBound = e.i32(p.n);
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i64 = [&](Value v) {
    return arith::ExtUIOp::create(b, loc, b.getI64Type(), v).getResult();
  };
  auto i64c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v).getResult();
  };
  // A buffer laid out as the output: its base pointer, and whether that is
  // aligned to `bytes` (a caller's buffer need not be).
  auto baseOf = [&](Value memref, int64_t bytes) {
    Value addr = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
    Value isAligned = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, addr, i64c(bytes - 1)), i64c(0));
    return std::make_pair(
        LLVM::IntToPtrOp::create(b, loc, ptrType, addr).getResult(), isAligned);
  };
  // The element offset of (row, col) of this batch in such a buffer.
  Value batchOff = arith::MulIOp::create(b, loc, i64(t.bz), i64c(p.m * p.n));
  auto linear = [&](Value row, Value col) {
    return arith::AddIOp::create(
               b, loc, batchOff,
               arith::AddIOp::create(
                   b, loc, arith::MulIOp::create(b, loc, i64(row), i64c(p.n)),
                   i64(col)))
        .getResult();
  };
  // The output's base address and whether it takes whole-chunk stores.
  const int64_t align = std::min<int64_t>(16, kChunk * outBytes);
  Value outPtr, aligned;
  std::tie(outPtr, aligned) = baseOf(out, align);
  auto quadType = VectorType::get({4}, accElem);
  // The epilogue's operands read at C's own point from a buffer laid out as
  // the output (a residual): where every such base address is aligned, all
  // passes' chunks are loaded up front, 16 bytes at a time (at most 128
  // bytes a thread), so the passes wait for one load latency instead of one
  // each (ResNet-50 int8's 1x1 convolutions with their residual, one K step
  // a tile, were bound by those waits); elsewhere each pass loads its own
  // elements.
  const int64_t passes = (chunks + 127) / 128;
  struct RowOperand {
    OpOperand *in;
    Type elem;
    int64_t align; // of a chunk's vector load
    Value ptr;
  };
  SmallVector<RowOperand> rowOps;
  if (whole && p.epilogue) {
    linalg::GenericOp g = p.epilogue;
    AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
    auto outType = cast<MemRefType>(out.getType());
    int64_t bytes = 0;
    for (OpOperand *in : g.getDpsInputOperands()) {
      auto type = dyn_cast<MemRefType>(in->get().getType());
      if (in == p.epilogueIn || !type || llvm::is_contained(columnOps, in) ||
          !type.getLayout().isIdentity() ||
          type.getShape() != outType.getShape() ||
          g.getMatchingIndexingMap(in) != outMap ||
          !type.getElementType().isIntOrFloat())
        continue;
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      if (bits != 8 && bits != 16 && bits != 32)
        continue;
      bytes += passes * kChunk * bits / 8;
      if (bytes > 128)
        break;
      rowOps.push_back({in, type.getElementType(),
                        std::min<int64_t>(16, kChunk * bits / 8), Value()});
    }
  }
  SmallVector<SmallVector<Value>> prefetched; // [operand][pass]
  Value rowAligned;
  if (!rowOps.empty()) {
    rowAligned = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    SmallVector<Type> types;
    for (RowOperand &r : rowOps) {
      auto [ptr, isAligned] = baseOf(r.in->get(), r.align);
      r.ptr = ptr;
      rowAligned = arith::AndIOp::create(b, loc, rowAligned, isAligned);
      types.append(passes, VectorType::get({kChunk}, r.elem));
    }
    auto load = scf::IfOp::create(b, loc, types, rowAligned,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(load.thenBlock());
      // Rows past the end (a partial tile, a pass past the last chunk) load
      // the last row's elements, unused.
      SmallVector<Value> loaded;
      for (const RowOperand &r : rowOps)
        for (int64_t pass = 0; pass < passes; ++pass) {
          Value local = e.add(part.tileRow,
                              e.add(e.divu(ltid, perRow), pass * 128 / perRow));
          Value row = arith::MinUIOp::create(b, loc, e.add(t.m0, local),
                                             e.i32(p.m - 1));
          Value at = LLVM::GEPOp::create(b, loc, ptrType, r.elem, r.ptr,
                                         ValueRange{linear(row, chunk0)});
          loaded.push_back(LLVM::LoadOp::create(
              b, loc, VectorType::get({kChunk}, r.elem), at, r.align));
        }
      scf::YieldOp::create(b, loc, loaded);
      b.setInsertionPointToStart(load.elseBlock());
      SmallVector<Value> none;
      for (Type type : types)
        none.push_back(LLVM::UndefOp::create(b, loc, type));
      scf::YieldOp::create(b, loc, none);
    }
    for (size_t o = 0; o < rowOps.size(); ++o)
      prefetched.push_back(
          SmallVector<Value>(load.getResults().slice(o * passes, passes)));
  }
  // A pass's chunk: its column in the tile and its row among the part's 64.
  auto chunkOf = [&](int64_t pass) {
    Value i = e.add(ltid, 128 * pass);
    Value chunkCol = e.mul(e.remu(whole ? ltid : i, perRow), kChunk);
    Value inPart = whole ? e.add(e.divu(ltid, perRow), pass * 128 / perRow)
                         : e.divu(i, perRow);
    return std::make_pair(chunkCol, inPart);
  };
  // The chunk's staged accumulators, 16 bytes a load.
  auto loadStaged = [&](Value chunkCol, Value inPart) {
    Value addr =
        e.add(e.mul(e.add(part.stagedRow, inPart), pitch), e.mul(chunkCol, 4));
    addr = e.add(base, addr);
    SmallVector<Value> vals;
    for (int64_t q = 0; q < kChunk / 4; ++q) {
      Value quad = LLVM::LoadOp::create(b, loc, quadType,
                                        e.shared(e.add(addr, 16 * q)), 16);
      for (int64_t x = 0; x < 4; ++x)
        vals.push_back(LLVM::ExtractElementOp::create(b, loc, quad, e.i32(x)));
    }
    return vals;
  };
  // Where every pass's chunk lies in the staged rows (chunks a multiple of
  // 128), the next pass's accumulators are loaded before this pass's
  // elements are computed and stored, whether or not the chunks are inside
  // the output: the loads' latency passes under the previous pass's work
  // instead of starting each pass (the passes' epilogue chains, such as
  // BERT's FFN1 with its GELU and requantization, were latency-bound:
  // Nsight Compute, one eligible warp a scheduler). Eight registers a
  // thread, after the accumulators are staged (so below the main loop's).
  const bool prefetchStaged = chunks % 128 == 0;
  SmallVector<std::pair<Value, Value>> chunkAt;
  for (int64_t pass = 0; pass < passes; ++pass)
    chunkAt.push_back(chunkOf(pass));
  SmallVector<Value> nextStaged;
  if (prefetchStaged)
    nextStaged = loadStaged(chunkAt[0].first, chunkAt[0].second);
  for (int64_t pass = 0; pass < passes; ++pass) {
    // (Named, not bound: the lambdas below capture them.)
    Value chunkCol = chunkAt[pass].first, inPart = chunkAt[pass].second;
    Value i = e.add(ltid, 128 * pass);
    SmallVector<Value> staged = nextStaged;
    if (prefetchStaged && pass + 1 < passes)
      nextStaged =
          loadStaged(chunkAt[pass + 1].first, chunkAt[pass + 1].second);
    Value row = e.add(t.m0, e.add(part.tileRow, inPart));
    Value col = e.add(t.n0, chunkCol);
    Value ok = arith::AndIOp::create(
        b, loc, e.cmp(arith::CmpIPredicate::ult, row, mBound),
        e.cmp(arith::CmpIPredicate::ult, col, nBound));
    if (chunks % 128 != 0)
      ok = arith::AndIOp::create(
          b, loc, ok, e.cmp(arith::CmpIPredicate::ult, i, e.i32(chunks)));
    e.ifThen(ok, [&] {
      SmallVector<Value> vals =
          prefetchStaged ? staged : loadStaged(chunkCol, inPart);
      SmallVector<SmallVector<Value>> dims;
      for (int64_t x = 0; x < kChunk; ++x)
        dims.push_back(cPoint(b, loc, p, t.bIdx, row, e.add(col, x)));
      // This pass's elements of the row operands: from the prefetched
      // chunks where they were aligned, else loaded one by one.
      SmallVector<llvm::DenseMap<OpOperand *, Value>> operands(perColumn);
      for (auto [o, r] : llvm::enumerate(rowOps)) {
        auto pick = scf::IfOp::create(b, loc, SmallVector<Type>(kChunk, r.elem),
                                      rowAligned, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(pick.thenBlock());
        SmallVector<Value> got;
        for (int64_t x = 0; x < kChunk; ++x)
          got.push_back(LLVM::ExtractElementOp::create(
              b, loc, prefetched[o][pass], e.i32(x)));
        scf::YieldOp::create(b, loc, got);
        b.setInsertionPointToStart(pick.elseBlock());
        got.clear();
        for (int64_t x = 0; x < kChunk; ++x)
          got.push_back(loadEpilogueOperand(b, loc, p, r.in, dims[x]));
        scf::YieldOp::create(b, loc, got);
        for (int64_t x = 0; x < kChunk; ++x)
          operands[x][r.in] = pick.getResult(x);
      }
      for (int64_t x = 0; x < kChunk; ++x)
        vals[x] = throughEpilogue(b, loc, p, vals[x], dims[x],
                                  whole ? &operands[x] : nullptr);
      auto branch = scf::IfOp::create(b, loc, TypeRange{}, aligned,
                                      /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(branch.thenBlock()->getTerminator());
        Value idx = linear(row, col);
        // 16 bytes per store: 8 16-bit or 4 32-bit results (8 8-bit ones
        // in one 8-byte store).
        const int64_t perStore = std::min<int64_t>(kChunk, 16 / outBytes);
        for (int64_t s = 0; s < kChunk / perStore; ++s) {
          Value v = LLVM::UndefOp::create(b, loc,
                                          VectorType::get({perStore}, outElem));
          for (int64_t x = 0; x < perStore; ++x)
            v = LLVM::InsertElementOp::create(b, loc, v, vals[s * perStore + x],
                                              e.i32(x));
          Value at = arith::AddIOp::create(b, loc, idx, i64c(s * perStore));
          Value ptr = LLVM::GEPOp::create(b, loc, ptrType, outElem, outPtr,
                                          ValueRange{at});
          LLVM::StoreOp::create(b, loc, v, ptr, align);
        }
      }
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
      for (int64_t x = 0; x < kChunk; ++x)
        storeFinal(b, loc, p, vals[x], dims[x]);
    });
  }
}
