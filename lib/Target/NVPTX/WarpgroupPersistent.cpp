//===- WarpgroupPersistent.cpp - Persistent sm_90a contraction tiles ------===//
//
// The persistent schedule of the warpgroup-MMA kernel (--gpu-persistent):
// instead of one block per output tile, one block per SM (at most one per
// tile), each looping over tiles blockIdx.x, blockIdx.x + gridDim.x, ...
// A block's shared-memory ring and its mbarrier phases go on from tile to
// tile (the ring position counts every K step the block ran), so the
// producer's copies of the next tile's first stages overlap the consumers'
// last wgmmas and their stores of this tile: on problems of few K steps
// (BERT-base's K = 768 is 12 steps of 64) the pipeline's fill and the
// epilogue are otherwise a large part of each tile's time, not overlapped
// with anything but other blocks' work.
//
// Tiles are numbered batch-major, and within a batch in groups of kGroupM
// M-tiles: group g holds M-tiles g * kGroupM .. + kGroupM - 1 (fewer in the
// last) times every N-tile, walked down M first. The tiles running at once
// (consecutive numbers) then share a few of A's row blocks and B's column
// blocks, which stay in L2 (Triton's grouped ordering; CUTLASS's swizzled
// rasterization).
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {
/// The output tiles along M and N and in all.
struct TileCounts {
  int64_t m, n, total;
};

TileCounts countTiles(const Problem &p, const Tile &t) {
  int64_t tm = (p.m + t.bm - 1) / t.bm, tn = (p.n + t.bn - 1) / t.bn;
  return {tm, tn, tm * tn * p.batch};
}
} // namespace

// `auto` (the default): 8-bit products of at most 128 columns (one tile
// along N) and more tiles than SMs (so that some block runs two tiles,
// one's stores overlapping the next one's loads), at most 32 K steps,
// whose tile leaves through a staging area of its own as it is
// (lowerWarpgroupContraction). Their fill and their requantizing epilogue
// are a large share of a tile of few K steps: ResNet-50 b64's int8
// convolutions of N = 64 and 128 on an H100 (2026-12-06) took 0.73x-0.94x
// the time of one tile per block (the stem's product 0.73x, layer 1's
// 1x1 of K = 256 0.79x, its 3x3s 0.95x). Wider ones lost: layer 1 and
// 2's block ends (N = 256 and 512, one K step, 256 x 128 tiles with one
// stage at 96 registers, spilling) 1.35-1.6x, BERT-base's QKV (N = 2304,
// 192 x 128 with 3 stages) 1.03x. Float products keep one tile per block
// until theirs is measured; split K (few tiles) keeps its one tile per
// block: the two are not combined.
bool warpgroup::usePersistent(PersistentKernels mode, const Problem &p,
                              const Tile &t, int64_t splits) {
  if (mode == PersistentKernels::Off || splits > 1)
    return false;
  if (mode == PersistentKernels::On)
    return true;
  return p.integer() && p.n <= 128 && countTiles(p, t).total > kSMs &&
         p.kSteps() <= 32;
}

// One block per SM: the kernel's 4-6 stages take 128-227 KiB of shared
// memory, so one block fits an SM. kSMs is an H100 SXM's or H200's 132; on
// a GPU of fewer SMs (an H100 PCIe's 114) the last blocks start when the
// first finish, still correct.
int64_t warpgroup::persistentBlocks(const Problem &p, const Tile &t) {
  return std::min(kSMs * t.blocksPerSM, countTiles(p, t).total);
}

void warpgroup::forEachPersistentTile(
    Emitter &e, const Problem &p, const KernelConfig &cfg, Value blockId,
    function_ref<void(const TileCoords &)> body, Value first, int64_t stride) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  TileCounts n = countTiles(p, cfg.tile);
  int64_t perBatch = n.m * n.n, group = std::min(kGroupM, n.m);
  int64_t kSteps = p.kSteps();
  // The block's tile `first` (its number among the block's tiles) and the
  // ring's steps before it: every earlier tile's K steps.
  Value start = first ? e.add(blockId, e.mul(first, cfg.blocks)) : blockId;
  Value ring0 = first ? e.mul(first, kSteps) : e.i32(0);
  auto loop = scf::ForOp::create(b, loc, start, e.i32(n.total),
                                 e.i32(cfg.blocks * stride), ValueRange{ring0});
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Value tile = loop.getInductionVar();
  TileCoords c;
  c.ring = loop.getRegionIterArgs()[0];
  c.hasNext =
      e.cmp(arith::CmpIPredicate::ult, e.add(tile, cfg.blocks), e.i32(n.total));
  c.bz = p.batch > 1 ? e.divu(tile, perBatch) : e.i32(0);
  Value r = p.batch > 1 ? e.remu(tile, perBatch) : tile;
  // Group `gid` of `group` M-tiles (`size` in the last when group does not
  // divide the M-tiles), walked down M first.
  Value gid = e.divu(r, group * n.n), within = e.remu(r, group * n.n);
  Value firstM = e.mul(gid, group);
  Value mTile, nTile;
  if (n.m % group == 0) {
    mTile = e.add(firstM, e.remu(within, group));
    nTile = e.divu(within, group);
  } else {
    Value size = arith::MinUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, e.i32(n.m), firstM),
        e.i32(group));
    mTile =
        e.add(firstM, arith::RemUIOp::create(b, loc, within, size).getResult());
    nTile = arith::DivUIOp::create(b, loc, within, size);
  }
  c.m0 = e.mul(mTile, cfg.tile.bm);
  c.n0 = e.mul(nTile, cfg.tile.bn);
  c.bIdx = batchIndices(e, p, c.bz);
  c.kBegin = e.i32(0);
  c.kEnd = e.i32(kSteps);
  body(c);
  scf::YieldOp::create(b, loc, e.add(c.ring, kSteps * stride));
}
