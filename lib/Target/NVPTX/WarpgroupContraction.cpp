//===- WarpgroupContraction.cpp - sm_90a matmuls on warpgroup MMA ---------===//
//
// NVPTXTargetInfo::lowerContraction on sm_90a: a matmul (or batched matmul)
// of f16 or bf16 operands accumulated in f32 (or of f32 operands marked
// kiln.tf32, multiplied as TF32) becomes one kernel that feeds
// wgmma.mma_async from shared memory filled by the Tensor Memory
// Accelerator. A block computes a BM x BN tile of C (256 x 128, 128 x 128
// or 128 x 64, chosen per problem: chooseTile) with 1 + BM/64 warpgroups:
//   - warpgroup 0 is the producer: one thread issues, for each K step of
//     128 bytes (BK = 64 f16/bf16 or 32 f32), cp.async.bulk.tensor loads of
//     A's BM x BK box and B's boxes into one of 4-6 shared-memory stages
//     (128-byte swizzle, as wgmma reads it), completing on that stage's
//     `full` mbarrier; before reusing a stage it waits on its `empty`
//     mbarrier;
//   - warpgroup 1 + c computes rows 64c .. 64c + 63 of the tile: it waits on
//     `full`, issues four m64nBNk16 wgmmas (K 16 each; m64nBNk8 .tf32 for
//     f32, whose operands wgmma reads K-major only and truncates to TF32)
//     from shared-memory descriptors as one group, waits for the previous
//     step's group and arrives on that step's `empty`; its accumulators
//     (BN / 2 f32 per thread) stay in registers and are stored at the end,
//     with bounds checks.
// Out-of-bounds rows, columns and K read as zeros (the tile map's bounds).
// A channels-last convolution is the same kernel on its implicit GEMM: each
// K step is one filter tap's BK channels, A's rows (BM output pixels) read
// by an im2col copy at the tap's filter offsets (kiln.im2col_map: the
// copy engine walks the pixels, strides and padding), B's by a tiled copy
// of the weights at that tap.
// The tile maps are encoded on the host (kiln.tile_map, kiln.im2col_map,
// kiln_rt_tile_map / kiln_rt_im2col_map) and passed by value; kiln-nvptx-grid-constants turns them into
// grid-constant parameters. The design and its measurements:
// bench/hopper (a generator of the same kernel) and docs/gpu.md.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupContraction.h"
#include "WarpgroupProblem.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {

/// Builds the kernel's body: i32 arithmetic on shared-memory addresses, the
/// NVVM ops of mbarriers, bulk copies and wgmma.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// Builds `fn` inside a new scf.if on `cond` (no else).
  void ifThen(Value cond, function_ref<void()> fn) {
    auto op = scf::IfOp::create(b, loc, TypeRange{}, cond,
                                /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    fn();
  }

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, i32(y)) : x; }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, i32(y));
  }
  Value divu(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, i32(y));
  }
  Value remu(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, i32(y));
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value toI32(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  }
  /// A shared-memory pointer at 32-bit shared address `addr`.
  Value shared(Value addr) {
    auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
    return LLVM::IntToPtrOp::create(b, loc, ptr3, addr);
  }

  OpBuilder &b;
  Location loc;
};

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
/// the channels of a 128-byte row (64 f16, 32 tf32). A: the im2col copy of
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

/// C's dims (index-typed) at batch indices `batchIdx`, row `row` of its
/// M x N view and column `col` (i32): the row is (r / (m1 m2 ..), ..,
/// r % m_last) over C's m dims.
SmallVector<Value> cPoint(OpBuilder &b, Location loc, const Problem &p,
                          ArrayRef<Value> batchIdx, Value row, Value col) {
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

/// The indices of `map` (a projected permutation of C's dims) at `dims`.
SmallVector<Value> indicesAt(AffineMap map, ArrayRef<Value> dims) {
  SmallVector<Value> idx;
  for (AffineExpr r : map.getResults())
    idx.push_back(dims[cast<AffineDimExpr>(r).getPosition()]);
  return idx;
}

/// C's value `v` at `dims` through the epilogue's body (its other inputs
/// loaded at the point); `v` itself without an epilogue.
Value throughEpilogue(OpBuilder &b, Location loc, const Problem &p, Value v,
                      ArrayRef<Value> dims) {
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
    else
      map.map(arg, memref::LoadOp::create(
                       b, loc, in->get(),
                       indicesAt(g.getMatchingIndexingMap(in), dims)));
  }
  OpOperand *out = g.getDpsInitOperand(0);
  BlockArgument outArg = gb.getArgument(gb.getNumArguments() - 1);
  if (!outArg.use_empty())
    map.map(outArg, memref::LoadOp::create(
                        b, loc, out->get(),
                        indicesAt(g.getMatchingIndexingMap(out), dims)));
  for (Operation &o : gb.without_terminator())
    b.clone(o, map);
  return map.lookupOrDefault(gb.getTerminator()->getOperand(0));
}

/// Stores the final value `r` at `dims`: into the epilogue's output, or C.
void storeFinal(OpBuilder &b, Location loc, const Problem &p, Value r,
                ArrayRef<Value> dims) {
  if (!p.epilogue) {
    memref::StoreOp::create(b, loc, r, p.c, dims);
    return;
  }
  linalg::GenericOp g = p.epilogue;
  OpOperand *out = g.getDpsInitOperand(0);
  memref::StoreOp::create(b, loc, r, out->get(),
                          indicesAt(g.getMatchingIndexingMap(out), dims));
}

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
/// kernel writes (TF32: wgmma reads both operands K-major): B viewed as
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
  noteGPUContraction(
      launch,
      "B transposed to K-major for TF32 wgmma: " + std::to_string(outer) +
          " x " + std::to_string(rows) + " x " + std::to_string(cols));
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

LogicalResult mlir::kiln::lowerWarpgroupContraction(RewriterBase &rewriter,
                                                    Operation *operation,
                                                    Value ctx) {
  std::optional<Problem> prob = analyze(operation);
  if (!prob)
    return failure();
  Problem &p = *prob;
  MLIRContext *context = rewriter.getContext();
  Location loc = p.op.getLoc();
  const Tile tile = chooseTile(p);
  const int64_t bm = tile.bm, bn = tile.bn, stages = tile.stages;
  const int64_t consumers = bm / 64, threads = 128 * (1 + consumers);
  const int64_t bk = p.bk();
  const int64_t aBytes = bm * kStepBytes, bBytes = bn * kStepBytes;
  const int64_t stageBytes = aBytes + bBytes, barOff = stages * stageBytes;
  // + 1024: the base is aligned up to the swizzle atom in the kernel.
  const int64_t smemBytes = barOff + 16 * stages + 1024;
  const int64_t nAcc = bn / 2;
  // Split K: each part's sums go to a scratch buffer [batch x parts][M][N];
  // a second launch adds them and applies the epilogue.
  const auto [kPer, splits] = splitK(p, bm, bn);
  Value parts;
  if (splits > 1) {
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(
        &p.op->getParentOfType<func::FuncOp>().getBody().front());
    parts = BufferOp::create(rewriter, loc,
                             MemRefType::get({p.batch * splits, p.m, p.n},
                                             rewriter.getF32Type()),
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
  auto boxOf = [&](ArrayRef<DimRole> dims) {
    SmallVector<int64_t> box;
    for (DimRole d : dims)
      box.push_back(d.role == Role::Batch ? 1
                    : d.role == Role::M   ? bm
                    : d.role == Role::K   ? bk
                    : p.bKMajor           ? bn
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
        rewriter.getI64IntegerAttr(128));
    bBox = p.bKMajor ? SmallVector<int64_t>{bn, 1, 1, bk}
                     : SmallVector<int64_t>{1, 1, bk, 64};
  } else {
    mapA = TileMapOp::create(rewriter, loc, mapType, ctx, aView,
                             rewriter.getDenseI64ArrayAttr(aBox),
                             rewriter.getI64IntegerAttr(128));
  }
  mapB = TileMapOp::create(rewriter, loc, mapType, ctx, p.b,
                           rewriter.getDenseI64ArrayAttr(bBox),
                           rewriter.getI64IntegerAttr(128));
  auto cIndex = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value smemSize = arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI32Type(), smemBytes);
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, cIndex((p.n + bn - 1) / bn), cIndex((p.m + bm - 1) / bm),
      cIndex(p.batch * splits), cIndex(threads), cIndex(1), cIndex(1),
      smemSize);
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
       << "k" << p.mmaK() << (p.tf32() ? " tf32" : "") << ", " << stages
       << " stages, " << consumers + 1 << " warpgroups";
    if (transposedB)
      os << ", B transposed to K-major first";
    if (splits > 1)
      os << ", split-K " << splits;
    noteGPUContraction(launch, what);
  }
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto term = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(term);
  Emitter e(rewriter, loc);
  OpBuilder &b = rewriter;
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto ptr7 = LLVM::LLVMPointerType::get(context, 7);
  Type f32 = b.getF32Type();

  Value tid = e.toI32(launch.getThreadIds().x);
  Value n0 = e.mul(e.toI32(launch.getBlockIds().x), bn);
  Value m0 = e.mul(e.toI32(launch.getBlockIds().y), bm);
  // Grid z: the batch (the last batch dim fastest), then the K part.
  Value bzAll = e.toI32(launch.getBlockIds().z);
  Value bz = splits > 1 ? e.divu(bzAll, splits) : bzAll;
  Value kBegin = splits > 1 ? e.mul(e.remu(bzAll, splits), kPer) : e.i32(0);
  Value kEnd =
      arith::MinUIOp::create(b, loc, e.add(kBegin, kPer), e.i32(p.kSteps()));
  // The batch indices of this block (the last batch dim fastest).
  SmallVector<Value> bIdx(p.batchSizes.size());
  {
    Value rest = bz;
    for (int64_t d = p.batchSizes.size() - 1; d >= 0; --d) {
      bIdx[d] = d ? e.remu(rest, p.batchSizes[d]) : rest;
      if (d)
        rest = e.divu(rest, p.batchSizes[d]);
    }
  }
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

  // Thread 0 initializes the barriers: `full` expects the producer's one
  // arrival (and the copies' bytes), `empty` every consumer thread's.
  Value isT0 = e.cmp(arith::CmpIPredicate::eq, tid, e.i32(0));
  e.ifThen(isT0, [&] {
    for (int64_t s = 0; s < stages; ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(e.i32(s), false), e.i32(1),
                                   Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(e.i32(s), true),
                                   e.i32(128 * consumers), Value());
    }
    NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  NVVM::Barrier0Op::create(b, loc);

  Value ticks = e.i32(10000000);
  Value isProducer = e.cmp(arith::CmpIPredicate::eq, wg, e.i32(0));
  auto branch = scf::IfOp::create(b, loc, TypeRange{}, isProducer,
                                  /*withElseRegion=*/true);

  // Producer.
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    auto issuer = scf::IfOp::create(b, loc, TypeRange{}, isT0,
                                    /*withElseRegion=*/false);
    b.setInsertionPoint(issuer.thenBlock()->getTerminator());
    SmallVector<Value> pixel;
    if (p.conv)
      pixel = firstPixel(e, *p.conv, m0);
    auto loop = scf::ForOp::create(b, loc, kBegin, kEnd, e.i32(1));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    // kt: the K step; kl: this block's count of steps (the ring's).
    Value kt = loop.getInductionVar();
    Value kl = arith::SubIOp::create(b, loc, kt, kBegin);
    Value s = e.remu(kl, stages), round = e.divu(kl, stages);
    Value reuse = e.cmp(arith::CmpIPredicate::uge, kl, e.i32(stages));
    e.ifThen(reuse, [&] {
      Value parity = arith::AndIOp::create(b, loc, e.add(round, 1), e.i32(1));
      NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(s, true), parity,
                                            ticks);
    });
    Value full = barrier(s, false);
    NVVM::MBarrierArriveExpectTxOp::create(
        b, loc, Type(), full, e.i32(stageBytes), NVVM::MemScopeKind::CTA, false,
        Value());
    Value stageAddr = e.add(base, e.mul(s, stageBytes));
    Value kc = e.mul(kt, bk);
    // Coordinates innermost first, as the tile map's dims.
    auto copy = [&](Value dst, Value desc, ArrayRef<DimRole> dims, Value mn) {
      SmallVector<Value> coords;
      for (DimRole d : llvm::reverse(dims))
        coords.push_back(d.role == Role::Batch ? bIdx[d.batch]
                         : d.role == Role::K   ? kc
                                               : mn);
      Value dst7 = LLVM::AddrSpaceCastOp::create(b, loc, ptr7, e.shared(dst));
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          b, loc, dst7, desc, coords, full, ValueRange{}, Value(), Value(),
          NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr(), Value());
    };
    if (p.conv) {
      copyConvolutionStep(e, *p.conv, p.bKMajor, bk, pixel, stageAddr, aBytes,
                          bn, descA, descB, full, kt, n0);
    } else {
      copy(stageAddr, descA, p.aDims, m0);
      if (p.bKMajor)
        copy(e.add(stageAddr, aBytes), descB, p.bDims, n0);
      else
        for (int64_t j = 0; j < bn / 64; ++j)
          copy(e.add(stageAddr, aBytes + j * 64 * kStepBytes), descB, p.bDims,
               e.add(n0, 64 * j));
    }
  }

  // Consumers.
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    Value cw = e.add(wg, -1);
    Value ltid = e.remu(tid, 128);
    auto accType =
        LLVM::LLVMStructType::getLiteral(context, SmallVector<Type>(nAcc, f32));
    Value init = LLVM::UndefOp::create(b, loc, accType);
    auto fillConst = p.fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
    double fillDouble =
        cast<FloatAttr>(fillConst.getValue()).getValueAsDouble();
    Value fillValue = LLVM::ConstantOp::create(
        b, loc, f32, b.getF32FloatAttr(splits > 1 ? 0.0 : fillDouble));
    for (int64_t i = 0; i < nAcc; ++i)
      init = LLVM::InsertValueOp::create(b, loc, init, fillValue,
                                         ArrayRef<int64_t>{i});
    // Descriptor bits above the address: 128-byte swizzle (bit 62); A
    // (K-major): leading offset 16 bytes (unused), stride 1024 bytes between
    // 8-row groups; B (N-major): 64-element atoms 64 * BK * 2 bytes apart
    // along N, 8-row groups 1024 bytes apart along K.
    auto hiBits = [&](int64_t lbo, int64_t sbo) {
      int64_t v = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (int64_t(1) << 62);
      return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                      b.getI64IntegerAttr(v));
    };
    // B K-major (rows of 64 K, as A): the same bits as A.
    Value hiA = hiBits(16, 1024),
          hiB = p.bKMajor ? hiBits(16, 1024) : hiBits(64 * kStepBytes, 1024);
    const int64_t bStep = p.bKMajor ? 32 : 16 * 128;
    auto descriptor = [&](Value addr, Value hi) {
      Value field = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, addr, e.i32(4)),
          e.i32(0x3FFF));
      Value wide = arith::ExtUIOp::create(b, loc, b.getI64Type(), field);
      return arith::OrIOp::create(b, loc, wide, hi).getResult();
    };
    Value aRowOff = e.mul(cw, 64 * kStepBytes);
    // TF32 operands are the f32 bits the copies brought: the tensor core
    // reads their TF32 part (no conversion pass over shared memory).
    NVVM::WGMMATypes wt = p.tf32()          ? NVVM::WGMMATypes::tf32
                          : p.elem.isBF16() ? NVVM::WGMMATypes::bf16
                                            : NVVM::WGMMATypes::f16;
    auto loop =
        scf::ForOp::create(b, loc, kBegin, kEnd, e.i32(1), ValueRange{init});
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kl = arith::SubIOp::create(b, loc, loop.getInductionVar(), kBegin);
      Value acc = loop.getRegionIterArgs()[0];
      Value s = e.remu(kl, stages);
      Value parity =
          arith::AndIOp::create(b, loc, e.divu(kl, stages), e.i32(1));
      NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(s, false), parity,
                                            ticks);
      Value stageAddr = e.add(base, e.mul(s, stageBytes));
      Value aAddr = e.add(stageAddr, aRowOff);
      Value bAddr = e.add(stageAddr, aBytes);
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      auto shape = NVVM::MMAShapeAttr::get(context, 64, bn, p.mmaK());
      // Each wgmma takes the next 32 bytes of every row.
      for (int64_t kk = 0; kk < bk / p.mmaK(); ++kk) {
        Value da = descriptor(e.add(aAddr, 32 * kk), hiA);
        Value db = descriptor(e.add(bAddr, bStep * kk), hiB);
        acc = NVVM::WgmmaMmaAsyncOp::create(
            b, loc, accType, acc, da, db, shape, wt, wt, NVVM::WGMMATypes::f32,
            NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one,
            NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
            p.bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
            NVVM::MMAIntOverflowAttr());
      }
      // One group stays in flight: once the previous step's group is
      // done, its stage goes back to the producer.
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
      e.ifThen(e.cmp(arith::CmpIPredicate::ugt, kl, e.i32(0)), [&] {
        Value prev = e.remu(e.add(kl, stages - 1), stages);
        NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(),
                                       barrier(prev, true), Value());
      });
      scf::YieldOp::create(b, loc, acc);
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    Value acc = loop.getResult(0);
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
        b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), bzAll),
        LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                 b.getI64IntegerAttr(p.m * p.n)));
    // With an epilogue: each accumulator through its body (the other
    // inputs loaded at the point); the two results of a column pair are
    // stored together when the output holds 16- or 32-bit floats.
    Type outElem;
    Value outPtr;
    if (p.epilogue) {
      Value out = p.epilogue.getDpsInitOperand(0)->get();
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
          Type elem = p.epilogue && !raw ? outElem : f32;
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
          Value ptr =
              LLVM::GEPOp::create(b, loc, ptrType, elem, base, ValueRange{idx});
          LLVM::StoreOp::create(b, loc, v, ptr,
                                /*alignment=*/2 * elem.getIntOrFloatBitWidth() /
                                    8);
        });
      }
    }
  }
  if (splits > 1) {
    // The parts added to the fill, one thread per output, then the
    // epilogue.
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
    Value v = arith::ConstantOp::create(
        b, loc,
        b.getF32FloatAttr(
            cast<FloatAttr>(p.fill.getInputs()[0]
                                .getDefiningOp<arith::ConstantOp>()
                                .getValue())
                .getValueAsDouble()));
    for (int64_t k = 0; k < splits; ++k) {
      Value z = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, bl, cIndex(splits)), cIndex(k));
      v = arith::AddFOp::create(
          b, loc, v,
          memref::LoadOp::create(b, loc, parts, ValueRange{z, row, col}));
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
