//===- AsyncStaging.cpp - A tiled contraction's ring of shared buffers ----===//
//
// TiledContraction::buildAsyncLoop: the K loop of a tiled contraction on
// the matrix instruction whose operands each read one input 16 bytes at a
// time (TiledContraction.cpp's vectorSlots), staged through `stages`
// shared buffers per operand that the target's asynchronous copies fill
// (GPUTargetInfo::buildAsyncCopy) while the warps multiply an earlier
// slab, and read with the target's matrix fragment loads
// (GPUTargetInfo::buildMatrixLoad). Step t:
//
//   wait until slab t's group is in (stages - 2 groups may stay in flight)
//   barrier (every thread's copies of slab t seen; every warp done with
//            slab t - 1, whose buffer the next line refills)
//   copies of slab t + stages - 1 into buffer (t - 1) % stages, a group
//   the instruction on slab t from buffer t % stages
//
// after a prologue that starts the first stages - 1 slabs, one group each
// (empty groups past the last slab keep the count uniform). Copies outside
// the problem or the block's K part write zeros.
//
// The buffers hold rows of 16-bit elements without padding; each 16-byte
// run of a row is xor-swizzled with the row (swizzle) so that the copies'
// stores and the fragment loads are free of bank conflicts.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

int64_t TiledContraction::asyncStages(int64_t tile, int64_t bk) {
  // Both operands' buffers within 48 KiB of static shared memory.
  int64_t perStage = 2 * tile * bk * 2;
  return std::min<int64_t>(4, (48 * 1024) / perStage);
}

Value TiledContraction::swizzle(Location loc, Value row, Value e,
                                int64_t width) {
  // Runs of 8 elements; rows of 4 runs (64 bytes) pair up on the 8 runs of
  // 128 bytes of banks, so they xor with (row / 2) % 4; wider rows (a
  // multiple of 8 runs) with row % 8.
  int64_t runs = width / 8;
  assert((runs == 4 || runs % 8 == 0) && "unsupported ring row width");
  Value bits =
      runs == 4 ? arith::AndIOp::create(
                      rewriter, loc,
                      arith::ShRUIOp::create(rewriter, loc, row, index(loc, 1)),
                      index(loc, 3))
                      .getResult()
                : arith::AndIOp::create(rewriter, loc, row, index(loc, 7))
                      .getResult();
  Value run = arith::ShRUIOp::create(rewriter, loc, e, index(loc, 3));
  Value within = arith::AndIOp::create(rewriter, loc, e, index(loc, 7));
  Value swizzled = arith::XOrIOp::create(rewriter, loc, run, bits);
  return add(loc, mul(loc, swizzled, 8), within);
}

scf::ForOp TiledContraction::buildAsyncLoop(Location loc, AsyncLoop &l) {
  const MMALayout &layout = *l.layout;
  int64_t S = l.stages;
  // The buffer row width of an operand: K runs (rows of BK) or column runs
  // (rows of T).
  auto width = [&](const Stage &s) { return s.vecK ? l.bk : l.tile; };
  // Starts the copies of slab `slab` (an index) into buffer `buf`; the
  // caller commits them as a group.
  auto issue = [&](Value slab, Value buf) {
    Value k0 =
        add(loc, l.kBegin,
            arith::MulIOp::create(rewriter, loc, slab, index(loc, l.bk)));
    for (Stage *s : {l.x, l.w}) {
      OpOperand *in = l.op.getDpsInputOperand(s->inputs[0]);
      AffineMap map = l.op.getMatchingIndexingMap(in);
      for (auto [r, kr] : llvm::enumerate(s->kr)) {
        Value k = add(loc, k0, kr);
        Value ok = ult(loc, k, l.kEnd);
        Value kc = arith::SelectOp::create(rewriter, loc, ok, k, l.kBegin);
        SmallVector<Value> pt = s->pt[r];
        delinearize(loc, kc, l.red, l.sizeOf, pt);
        ok = arith::AndIOp::create(rewriter, loc, ok, s->colOk[r]);
        Value row = s->vecK ? s->col[r] : kr;
        Value e = s->vecK ? kr : s->col[r];
        info.buildAsyncCopy(
            rewriter, loc, s->dst,
            ValueRange{buf, row, swizzle(loc, row, e, width(*s))}, in->get(),
            apply(loc, map, pt), ok);
      }
    }
  };
  auto ifSlab = [&](Value slab, function_ref<void()> fn) {
    auto guard = scf::IfOp::create(rewriter, loc, ult(loc, slab, l.slabs),
                                   /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    fn();
  };
  // The prologue: slabs 0 .. S - 2 into buffers 0 .. S - 2, a group each.
  for (int64_t p = 0; p < S - 1; ++p) {
    Value slab = index(loc, p);
    ifSlab(slab, [&] { issue(slab, slab); });
    info.buildAsyncCommit(rewriter, loc);
  }
  auto loop = scf::ForOp::create(rewriter, loc, index(loc, 0), l.slabs,
                                 index(loc, 1), l.inits);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  info.buildAsyncWait(rewriter, loc, S - 2);
  info.buildBarrier(rewriter, loc);
  Value next = add(loc, t, index(loc, S - 1));
  ifSlab(next, [&] {
    issue(next, arith::RemUIOp::create(rewriter, loc, next, index(loc, S)));
  });
  info.buildAsyncCommit(rewriter, loc);
  Value buf = arith::RemUIOp::create(rewriter, loc, t, index(loc, S));

  SmallVector<Value> acc(loop.getRegionIterArgs());
  int64_t nC = layout.cElems.size();
  int64_t aRegs = layout.aRegs.size(), bRegs = layout.bRegs.size();
  // Fragment loads of one operand at K step ks: `outer` counted from the
  // warp's first row (A) or column (B).
  auto fragments = [&](Stage &s, bool isB, int64_t tiles, Value warpBase,
                       int64_t ks) {
    Value ksv = index(loc, ks);
    return info.buildMatrixLoad(
        rewriter, loc, layout, isB, tiles, s.vecK, l.lane, s.dst,
        [&](Value outer, Value inner) -> SmallVector<Value> {
          Value o = add(loc, warpBase, outer), k = add(loc, ksv, inner);
          if (s.vecK)
            return {buf, o, swizzle(loc, o, k, width(s))};
          return {buf, k, swizzle(loc, k, o, width(s))};
        });
  };
  for (int64_t ks = 0; ks < l.bk; ks += layout.k) {
    SmallVector<Value> a = fragments(*l.x, false, l.mTiles, l.warpM, ks);
    SmallVector<Value> b = fragments(*l.w, true, l.nTiles, l.warpN, ks);
    for (int64_t i = 0; i < l.mTiles; ++i)
      for (int64_t j = 0; j < l.nTiles; ++j) {
        int64_t c = (i * l.nTiles + j) * nC;
        SmallVector<Value> res = info.buildMMA(
            rewriter, loc, layout, ArrayRef<Value>(a).slice(i * aRegs, aRegs),
            ArrayRef<Value>(b).slice(j * bRegs, bRegs),
            ArrayRef<Value>(acc).slice(c, nC));
        for (int64_t e = 0; e < nC; ++e)
          acc[c + e] = res[e];
      }
  }
  scf::YieldOp::create(rewriter, loc, acc);
  rewriter.setInsertionPointAfter(loop);
  return loop;
}
