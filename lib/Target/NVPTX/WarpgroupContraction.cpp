//===- WarpgroupContraction.cpp - sm_90a matmuls on warpgroup MMA ---------===//
//
// NVPTXTargetInfo::lowerContraction on sm_90a: a matmul (or batched matmul)
// of f16 or bf16 operands accumulated in f32 (or of f32 operands marked
// kiln.tf32, multiplied as TF32), or of 8-bit integers accumulated in i32
// (an int8 model's u8 x s8 or s8 x s8 products) becomes one kernel that feeds
// wgmma.mma_async from shared memory filled by the Tensor Memory
// Accelerator. A block computes a BM x BN tile of C (chosen per problem
// from WarpgroupMatch.cpp's table: chooseTile) with 1 + BM/64 warpgroups
// (two blocks to a multiprocessor: BM/64 warpgroups and a producer warp):
//   - the producer (warpgroup 0, or the warp after the consumers): its
//     first thread issues, for each K step of
//     128 bytes (BK = 64 f16/bf16, 32 f32 or 128 8-bit), cp.async.bulk.tensor
//     loads of
//     A's BM x BK box and B's boxes into one of 4-6 shared-memory stages
//     (128-byte swizzle, as wgmma reads it), completing on that stage's
//     `full` mbarrier; before reusing a stage it waits on its `empty`
//     mbarrier;
//   - consumer c computes rows 64c .. 64c + 63 of the tile: it waits on
//     `full`, issues four m64nBNk16 wgmmas (K 16 each; m64nBNk8 .tf32 for
//     f32, whose operands wgmma reads K-major only and truncates to TF32;
//     m64nBNk32 .u8/.s8 into .s32 for 8-bit operands, K-major only too)
//     from shared-memory descriptors as one group, waits for the previous
//     step's group and arrives on that step's `empty`; its accumulators
//     (BN / 2 f32 or i32 per thread) stay in registers and are stored at
//     the end, with bounds checks.
// The kernel's body is built by WarpgroupKernel.cpp. Persistent
// (--gpu-persistent, WarpgroupPersistent.cpp): one block per SM instead of
// one per tile, each looping over tiles with its ring going on from tile to
// tile, so that the producer loads the next tile while the consumers store
// this one. A tile of two blocks to a multiprocessor (Tile::blocksPerSM)
// keeps its stages within half the shared memory, so that one block's
// stores overlap the other's products.
// Out-of-bounds rows, columns and K read as zeros (the tile map's bounds).
// A channels-last convolution is the same kernel on its implicit GEMM: each
// K step is one filter tap's BK channels, A's rows (BM output pixels) read
// by an im2col copy at the tap's filter offsets (kiln.im2col_map: the
// copy engine walks the pixels, strides and padding), B's by a tiled copy
// of the weights at that tap.
// The tile maps are encoded on the host (kiln.tile_map, kiln.im2col_map,
// kiln_rt_tile_map / kiln_rt_im2col_map) and passed by value;
// kiln-nvptx-grid-constants turns them into grid-constant parameters. The design and its measurements:
// bench/hopper (a generator of the same kernel) and docs/gpu.md.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupContraction.h"
#include "WarpgroupKernel.h"
#include "WarpgroupProblem.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {

/// The K split of a problem whose tiles leave most SMs idle: K steps per
/// part and the parts (1: no split). Each part keeps at least 4 steps.
std::pair<int64_t, int64_t> splitK(const Problem &p, int64_t bm, int64_t bn) {
  int64_t steps = p.kSteps();
  int64_t tiles = ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn) * p.batch;
  int64_t splits = 1;
  if (2 * tiles <= kSMs && steps >= 8)
    splits = std::min({steps / 4, kSMs / tiles, int64_t(16)});
  splits = std::max<int64_t>(splits, 1);
  int64_t per = (steps + splits - 1) / splits;
  return {per, (steps + per - 1) / per};
}

/// Replaces the N-major `p.b` by a K-major copy that a launch before the
/// kernel writes (TF32 and 8-bit integers: wgmma reads both operands
/// K-major): B viewed as
/// [batch][R][C] (its two innermost dims K x N, or HWCF weights as
/// [KH KW C][F]) into [batch][C][R] (N x K, or FHWC), through 32 x 33 tiles
/// of shared memory so that both the reads and the writes coalesce.
void transposeB(RewriterBase &rewriter, Problem &p, Value ctx) {
  Location loc = p.op.getLoc();
  auto bt = cast<MemRefType>(p.b.getType());
  SmallVector<int64_t> shape(bt.getShape()), tShape = shape;
  int64_t rank = shape.size(), outer = 1, rows, cols;
  if (p.conv) {
    tShape = {shape[3], shape[0], shape[1], shape[2]};
    rows = shape[0] * shape[1] * shape[2];
    cols = shape[3];
  } else {
    std::swap(tShape[rank - 2], tShape[rank - 1]);
    std::swap(p.bDims[rank - 2], p.bDims[rank - 1]);
    rows = shape[rank - 2];
    cols = shape[rank - 1];
    for (int64_t d = 0; d < rank - 2; ++d)
      outer *= shape[d];
  }
  Value t;
  {
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(
        &p.op->getParentOfType<func::FuncOp>().getBody().front());
    t = BufferOp::create(rewriter, loc,
                         MemRefType::get(tShape, bt.getElementType()), ctx,
                         ValueRange{}, IntegerAttr())
            .getBuffer();
  }
  ReassociationIndices all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  Value src = memref::CollapseShapeOp::create(
      rewriter, loc, p.b, ArrayRef<ReassociationIndices>{all});
  Value dst = memref::CollapseShapeOp::create(
      rewriter, loc, t, ArrayRef<ReassociationIndices>{all});
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };
  const int64_t side = 32, rowsPerPass = 8;
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, idx((cols + side - 1) / side),
                            idx((rows + side - 1) / side), idx(outer),
                            idx(side), idx(rowsPerPass), idx(1));
  Value tile = launch.addWorkgroupAttribution(
      MemRefType::get({side, side + 1}, bt.getElementType(),
                      MemRefLayoutAttrInterface(),
                      gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                                 gpu::AddressSpace::Workgroup)),
      loc);
  noteGPUContraction(launch, "B transposed to K-major for " +
                                 std::string(p.integer() ? "8-bit" : "TF32") +
                                 " wgmma: " + std::to_string(outer) + " x " +
                                 std::to_string(rows) + " x " +
                                 std::to_string(cols));
  OpBuilder::InsertionGuard g(rewriter);
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(term);
  OpBuilder &b = rewriter;
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  auto mul = [&](Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, idx(y)).getResult();
  };
  auto inside = [&](Value r, Value c) {
    Value rOk =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, idx(rows));
    Value cOk =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c, idx(cols));
    return arith::AndIOp::create(b, loc, rOk, cOk).getResult();
  };
  auto guarded = [&](Value cond, function_ref<void()> fn) {
    auto op = scf::IfOp::create(b, loc, TypeRange{}, cond,
                                /*withElseRegion=*/false);
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    fn();
  };
  Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
  Value c0 = mul(launch.getBlockIds().x, side);
  Value r0 = mul(launch.getBlockIds().y, side);
  Value base = mul(launch.getBlockIds().z, rows * cols);
  // Rows r0 + ty + 8j of the source, columns c0 + tx: tile[row][col].
  for (int64_t j = 0; j < side / rowsPerPass; ++j) {
    Value tr = add(ty, idx(rowsPerPass * j));
    Value r = add(r0, tr), c = add(c0, tx);
    guarded(inside(r, c), [&] {
      Value v = memref::LoadOp::create(
          b, loc, src, ValueRange{add(base, add(mul(r, cols), c))});
      memref::StoreOp::create(b, loc, v, tile, ValueRange{tr, tx});
    });
  }
  gpu::BarrierOp::create(b, loc);
  // Columns c0 + ty + 8j, rows r0 + tx: the destination's rows are the
  // source's columns.
  for (int64_t j = 0; j < side / rowsPerPass; ++j) {
    Value tc = add(ty, idx(rowsPerPass * j));
    Value r = add(r0, tx), c = add(c0, tc);
    guarded(inside(r, c), [&] {
      Value v = memref::LoadOp::create(b, loc, tile, ValueRange{tx, tc});
      memref::StoreOp::create(b, loc, v, dst,
                              ValueRange{add(base, add(mul(c, rows), r))});
    });
  }
  p.b = t;
  p.bKMajor = true;
  p.transposeB = false;
}

} // namespace

ContractionTiles mlir::kiln::warpgroupTiles() {
  ContractionTiles tiles;
  for (const Tile &t : tileTable())
    tiles.push_back(t.key());
  return tiles;
}

LogicalResult
mlir::kiln::lowerWarpgroupContraction(RewriterBase &rewriter,
                                      Operation *operation, Value ctx,
                                      const ContractionChoices &choices) {
  PersistentKernels mode = choices.persistent;
  std::optional<Problem> prob = analyze(operation);
  if (!prob)
    return failure();
  Problem &p = *prob;
  Location loc = p.op.getLoc();
  // A persistent block's tiles leave through a staging area past the ring
  // (the ring fills the next tile meanwhile): the ring gives up the stages
  // it needs, down to 2 (one where a tile is one K step would do, its
  // stage going back to the producer before the stores, but 256 x 128 so
  // spilled at its 96 registers and ran 1.35-1.6x slower); stages beyond
  // the tile's K steps plus one only prefetch further ahead. Asked for
  // (on), a tile whose staging does not fit a block's 227 KiB with those
  // stages gives way to the best one that does (256 x 128: 128 x 128);
  // auto takes the persistent kernel only where the tile fits as it is
  // (ResNet-50 int8 on an H100, 2026-12-06: the smaller tile made its
  // block ends 1.2x slower); without one, the tiles are stored from their
  // fragments.
  const int64_t minStages = 2;
  auto ringBytes = [&](const Tile &t, int64_t stages) {
    int64_t stageBytes = (t.bm + t.bn) * p.stepBytes;
    return (stages * stageBytes + 16 * stages + 127) / 128 * 128;
  };
  auto fitsStaged = [&](const Tile &t) {
    return t.blocksPerSM == 1 &&
           ringBytes(t, minStages) + stagedTileBytes(t) + 1024 <=
               kMaxSharedBytes;
  };
  auto splitsOf = [&](const Tile &t) {
    return choices.splitK ? splitK(p, t.bm, t.bn)
                          : std::make_pair(p.kSteps(), int64_t(1));
  };
  // The table's stages are of 128-byte steps: narrower steps take as many
  // more in the same shared memory.
  auto withSteps = [&](Tile t) {
    t.stages *= kStepBytes / p.stepBytes;
    return t;
  };
  const bool stageable = canStageOutput(p);
  // A multicast tile's two blocks each take one tile, whole along K, of a
  // matmul (an im2col copy has no half boxes), and pair up along the dim
  // they do not share: that dim's tiles must come in pairs (a lone block
  // would wait for a peer that does not exist). B is shared from K-major
  // rows, or by whole 64-column boxes of N-major ones.
  auto multicastFits = [&](const Tile &t) {
    int64_t tm = (p.m + t.bm - 1) / t.bm, tn = (p.n + t.bn - 1) / t.bn;
    return !p.conv && t.blocksPerSM == 1 && splitsOf(t).second == 1 &&
           (t.sharesA() ? tn % 2 == 0 && t.bm % 16 == 0
                        : tm % 2 == 0 &&
                              (p.bKMajor || p.transposeB || t.bn % 128 == 0));
  };
  // A ping-pong tile is persistent, whole along K, and leaves through its
  // consumer's staging area: an output that cannot takes the best other.
  Tile tile = withSteps(chooseTile(p, choices.tiles, [&](const Tile &t) {
    return (stageable || !t.pingPong) && (!t.multicast || multicastFits(t));
  }));
  // Split K: each part's sums go to a scratch buffer [batch x parts][M][N];
  // a second launch adds them and applies the epilogue.
  auto [kPer, splits] = tile.pingPong || tile.multicast
                            ? std::make_pair(p.kSteps(), int64_t(1))
                            : splitsOf(tile);
  bool persistent = tile.pingPong;
  if (!tile.pingPong && !tile.multicast) {
    persistent = usePersistent(mode, p, tile, splits);
    if (persistent && mode == PersistentKernels::Auto)
      persistent = stageable && fitsStaged(tile);
    if (persistent && stageable && !fitsStaged(tile)) {
      Tile other = withSteps(chooseTile(p, choices.tiles, [&](const Tile &t) {
        return !t.pingPong && fitsStaged(withSteps(t));
      }));
      auto [otherPer, otherSplits] = splitsOf(other);
      if (fitsStaged(other) && usePersistent(mode, p, other, otherSplits)) {
        tile = other;
        kPer = otherPer;
        splits = otherSplits;
      }
    }
  }
  const int64_t bm = tile.bm, bn = tile.bn;
  const int64_t consumers = tile.consumers(), threads = tile.threads();
  const int64_t bk = p.bk();
  const int64_t aBytes = bm * p.stepBytes, bBytes = bn * p.stepBytes;
  const int64_t stageBytes = aBytes + bBytes;
  KernelConfig cfg;
  cfg.kPer = kPer;
  cfg.splits = splits;
  cfg.persistent = persistent;
  const int64_t staged = stagedTileBytes(tile);
  if (cfg.persistent && stageable && fitsStaged(tile)) {
    int64_t stages = std::min(tile.stages, p.kSteps() + 1);
    while (stages > minStages &&
           ringBytes(tile, stages) + staged + 1024 > kMaxSharedBytes)
      --stages;
    tile.stages = stages;
    cfg.stagingOffset = ringBytes(tile, tile.stages);
  }
  cfg.tile = tile;
  if (cfg.persistent)
    cfg.blocks = persistentBlocks(p, tile);
  const int64_t stages = tile.stages, barOff = stages * stageBytes;
  // + 1024: the base is aligned up to the swizzle atom in the kernel.
  const int64_t smemBytes =
      (cfg.stagingOffset ? cfg.stagingOffset + staged : barOff + 16 * stages) +
      1024;
  assert((tile.blocksPerSM == 1 || smemBytes <= 113 * 1024) &&
         "two blocks to a multiprocessor take at most 113 KiB each");
  assert(smemBytes <= kMaxSharedBytes && "within a block's shared memory");
  Value parts;
  if (splits > 1) {
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(
        &p.op->getParentOfType<func::FuncOp>().getBody().front());
    parts =
        BufferOp::create(rewriter, loc,
                         MemRefType::get({p.batch * splits, p.m, p.n}, p.acc),
                         ctx, ValueRange{}, IntegerAttr())
            .getBuffer();
  }

  rewriter.setInsertionPoint(p.op);
  const bool transposedB = p.transposeB;
  if (transposedB)
    transposeB(rewriter, p, ctx);
  // Host: the tile maps. A's boxes are BM x BK (K innermost); B's are
  // 64 (K) x 64 (N), bn / 64 of them per stage (N innermost, f16/bf16), or
  // bn (N) x BK (K) when K is innermost; 1 along the batch dims.
  // A multicast tile's shared operand: boxes of half its rows (each block
  // of the pair copies one half), or half of B's 64-column boxes each.
  const bool halfA = tile.multicast && tile.sharesA();
  const bool halfB = tile.multicast && !tile.sharesA();
  auto boxOf = [&](ArrayRef<DimRole> dims) {
    SmallVector<int64_t> box;
    for (DimRole d : dims)
      box.push_back(d.role == Role::Batch ? 1
                    : d.role == Role::M   ? (halfA ? bm / 2 : bm)
                    : d.role == Role::K   ? bk
                    : p.bKMajor           ? (halfB ? bn / 2 : bn)
                                          : 64);
    return box;
  };
  SmallVector<int64_t> aBox = boxOf(p.aDims), bBox = boxOf(p.bDims);
  // Several m dims (contiguous in A): A read as [batch...,] M x K.
  Value aView = p.a;
  if (p.mSizes.size() > 1 && !p.conv) {
    int64_t nb = p.batchSizes.size(), rank = nb + p.mSizes.size() + 1;
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < nb; ++d)
      groups.push_back({d});
    ReassociationIndices mGroup;
    for (int64_t d = nb; d < rank - 1; ++d)
      mGroup.push_back(d);
    groups.push_back(mGroup);
    groups.push_back({rank - 1});
    aView = memref::CollapseShapeOp::create(rewriter, loc, p.a, groups);
  }
  auto mapType = VectorType::get({16}, rewriter.getI64Type());
  Value mapA, mapB;
  if (const std::optional<Convolution> &cv = p.conv) {
    // A: BM pixels of 64 channels per copy, walking each spatial dim's
    // window of output positions ((out - 1) * stride + 1 wide from 0); B: a
    // 64 (C) x 64 (F) box of one tap (BN x 64 for FHWC weights).
    // A padded copy's source reads its padding as the out-of-bounds zeros
    // of a window that starts `pad` before it.
    SmallVector<int64_t> lower, upper, strides;
    for (int i = 0; i < 2; ++i) {
      lower.push_back(-cv->pad[i]);
      upper.push_back((cv->out[i] - 1) * cv->strides[i] - cv->pad[i] -
                      (cv->in[i] - 1));
      strides.push_back(cv->strides[i]);
    }
    mapA = Im2colMapOp::create(
        rewriter, loc, mapType, ctx, p.a, rewriter.getI64IntegerAttr(bm),
        rewriter.getI64IntegerAttr(bk), rewriter.getDenseI64ArrayAttr(lower),
        rewriter.getDenseI64ArrayAttr(upper),
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getI64IntegerAttr(p.stepBytes));
    bBox = p.bKMajor ? SmallVector<int64_t>{bn, 1, 1, bk}
                     : SmallVector<int64_t>{1, 1, bk, 64};
  } else {
    mapA = TileMapOp::create(rewriter, loc, mapType, ctx, aView,
                             rewriter.getDenseI64ArrayAttr(aBox),
                             rewriter.getI64IntegerAttr(p.stepBytes));
  }
  mapB = TileMapOp::create(rewriter, loc, mapType, ctx, p.b,
                           rewriter.getDenseI64ArrayAttr(bBox),
                           rewriter.getI64IntegerAttr(p.stepBytes));
  auto cIndex = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value smemSize = arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI32Type(), smemBytes);
  // One block per tile (grid x along N, y along M, z the batch and the K
  // parts), or the persistent blocks along x. A multicast tile's blocks
  // are clusters of two along x (sharing A: the same rows, next columns)
  // or y (sharing B); the kernel's .reqnctapercluster lets a plain launch
  // make them.
  auto launch =
      cfg.persistent
          ? gpu::LaunchOp::create(rewriter, loc, cIndex(cfg.blocks), cIndex(1),
                                  cIndex(1), cIndex(threads), cIndex(1),
                                  cIndex(1), smemSize)
      : !tile.multicast
          ? gpu::LaunchOp::create(rewriter, loc, cIndex((p.n + bn - 1) / bn),
                                  cIndex((p.m + bm - 1) / bm),
                                  cIndex(p.batch * splits), cIndex(threads),
                                  cIndex(1), cIndex(1), smemSize)
          : gpu::LaunchOp::create(rewriter, loc, cIndex((p.n + bn - 1) / bn),
                                  cIndex((p.m + bm - 1) / bm), cIndex(p.batch),
                                  cIndex(threads), cIndex(1), cIndex(1),
                                  smemSize, Type(), ValueRange{}, TypeRange{},
                                  TypeRange{}, cIndex(halfA ? 2 : 1),
                                  cIndex(halfA ? 1 : 2), cIndex(1));
  // The builder leaves out the region's cluster ids and sizes (the six
  // arguments after the block sizes) that the verifier expects.
  if (tile.multicast) {
    Block &body = launch.getBody().front();
    while (body.getNumArguments() < 18)
      body.addArgument(rewriter.getIndexType(), loc);
  }
  // Two blocks to a multiprocessor need their registers to fit twice: at
  // most 96 a thread for 9 warps (each quarter of the register file, 16 K,
  // takes 5 of the 18 warps: 3072 a warp). No bound goes to the vendor
  // compiler: .minnctapersm 2 made ptxas hold ResNet-50 b64's int8 block
  // ends to 96 registers with 40-56 bytes of spills, 70-72 to 94-113 us on
  // an H100 (2026-12-07); what keeps them at 90 is the epilogue's order
  // (storeTileStaged; lit wgmma-serialization.test checks both).
  // What was chosen, for kilnc --report (the kernel's "gpu_contractions").
  {
    std::string what;
    llvm::raw_string_ostream os(what);
    os << p.m << "x" << p.n << "x"
       << (p.conv ? p.conv->filter[0] * p.conv->filter[1] * p.conv->channels
                  : p.k);
    if (p.batch > 1)
      os << " (batch " << p.batch << ")";
    if (p.conv)
      os << " (convolution " << p.conv->filter[0] << "x" << p.conv->filter[1]
         << ", im2col copies)";
    os << ": tile " << bm << "x" << bn << "x" << bk << ", wgmma m64n" << bn
       << "k" << p.mmaK();
    if (p.tf32())
      os << " tf32";
    if (p.integer())
      os << " " << (p.aSigned ? "s8" : "u8") << "x"
         << (p.bSigned ? "s8" : "u8");
    os << ", " << stages << " stages, ";
    if (tile.producerWarp())
      os << consumers << " warpgroups and a producer warp, " << tile.blocksPerSM
         << " blocks an SM";
    else if (tile.pingPong)
      os << "ping-pong: " << consumers
         << " consumer warpgroups taking turns on whole tiles and a producer "
            "warpgroup";
    else
      os << consumers + 1 << " warpgroups";
    if (tile.multicast)
      os << ", clusters of 2 blocks along " << (halfA ? "N" : "M")
         << " sharing " << (halfA ? "A" : "B") << "'s tile by multicast";
    if (transposedB)
      os << ", B transposed to K-major first";
    if (splits > 1)
      os << ", split-K " << splits;
    if (cfg.persistent)
      os << ", persistent: " << cfg.blocks << " blocks over "
         << ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn) * p.batch << " tiles";
    noteGPUContraction(launch, what);
  }
  cfg.mapA = mapA;
  cfg.mapB = mapB;
  cfg.parts = parts;
  buildKernel(rewriter, p, launch, cfg);
  if (splits > 1) {
    // The parts added to the fill, one thread per output, then the
    // epilogue (i32 parts of 8-bit products: their sums are exact, as
    // wrapping as the CPU's).
    rewriter.setInsertionPoint(p.op);
    int64_t total = p.batch * p.m * p.n, block = 256;
    auto sum = gpu::LaunchOp::create(
        rewriter, loc, cIndex((total + block - 1) / block), cIndex(1),
        cIndex(1), cIndex(block), cIndex(1), cIndex(1));
    Block &sb = sum.getBody().front();
    rewriter.setInsertionPointToEnd(&sb);
    auto sterm = gpu::TerminatorOp::create(rewriter, loc);
    rewriter.setInsertionPoint(sterm);
    OpBuilder &b = rewriter;
    Value g = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, sum.getBlockIds().x, cIndex(block)),
        sum.getThreadIds().x);
    auto guard = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, g,
                              cIndex(total)),
        /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value col = arith::RemUIOp::create(b, loc, g, cIndex(p.n));
    Value rest = arith::DivUIOp::create(b, loc, g, cIndex(p.n));
    Value row = arith::RemUIOp::create(b, loc, rest, cIndex(p.m));
    Value bl = arith::DivUIOp::create(b, loc, rest, cIndex(p.m));
    Value v = arith::ConstantOp::create(b, loc, p.fillValue());
    for (int64_t k = 0; k < splits; ++k) {
      Value z = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, bl, cIndex(splits)), cIndex(k));
      Value part =
          memref::LoadOp::create(b, loc, parts, ValueRange{z, row, col});
      v = p.integer() ? arith::AddIOp::create(b, loc, v, part).getResult()
                      : arith::AddFOp::create(b, loc, v, part).getResult();
    }
    SmallVector<Value> batchIdx(p.batchSizes.size());
    {
      Value r = bl;
      for (int64_t d = p.batchSizes.size() - 1; d >= 0; --d) {
        batchIdx[d] =
            d ? arith::RemUIOp::create(b, loc, r, cIndex(p.batchSizes[d]))
                    .getResult()
              : r;
        if (d)
          r = arith::DivUIOp::create(b, loc, r, cIndex(p.batchSizes[d]));
      }
    }
    SmallVector<Value> dims = cPoint(b, loc, p, batchIdx, row, col);
    storeFinal(b, loc, p, throughEpilogue(b, loc, p, v, dims), dims);
  }
  rewriter.eraseOp(p.op);
  rewriter.eraseOp(p.fill);
  if (p.conv)
    for (Operation *op : llvm::reverse(p.conv->padOps))
      rewriter.eraseOp(op);
  if (p.epilogue)
    rewriter.eraseOp(p.epilogue);
  return success();
}
