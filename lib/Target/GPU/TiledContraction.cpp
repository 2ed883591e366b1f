//===- TiledContraction.cpp - Contractions as shared-memory tiles ---------===//
//
// TiledContraction (Lowering.h): matmuls, batched matmuls and convolutions
// as tiled products through shared memory, on SIMT FMAs or the target's
// matrix instruction (GPUTargetInfo::getMMA and its fragment layout), K
// split when the tiles alone do not fill the GPU.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Kiln/IR/Precision.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

/// A contraction body `acc + a * b` whose product's operands are computed
/// from disjoint sets of inputs: `a` from X's, `b` from W's, each through a
/// chain of pure scalar ops (the casts mixed precision inserts, a fused
/// producer's bias and ReLU). Zero-padded steps (a = b = 0) then leave the
/// accumulator unchanged, and partial sums over parts of K may be added.
struct mlir::kiln::gpumap::MulAccBody {
  Operation *add = nullptr, *mul = nullptr;
  Value acc, a, b;
  SmallVector<unsigned> xInputs, wInputs; // input numbers
};

/// The body ops `root` is computed from (in body order) and the inputs it
/// reads; false when it reads the accumulator or an op with effects.
static bool sliceOf(Block &body, unsigned numInputs, Value root,
                    SmallVectorImpl<Operation *> &ops,
                    SmallVectorImpl<unsigned> &inputs) {
  llvm::SmallPtrSet<Operation *, 8> set;
  llvm::SmallBitVector args(numInputs);
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        continue;
      if (arg.getArgNumber() >= numInputs)
        return false;
      args.set(arg.getArgNumber());
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue; // defined above the op
    if (def->getNumRegions() || !isMemoryEffectFree(def) ||
        isa<linalg::IndexOp>(def))
      return false;
    if (set.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  for (Operation &o : body.without_terminator())
    if (set.contains(&o))
      ops.push_back(&o);
  for (unsigned i : args.set_bits())
    inputs.push_back(i);
  return true;
}

static std::optional<MulAccBody> analyzeMulAcc(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  unsigned numIn = op.getNumDpsInputs();
  if (body.getNumArguments() != numIn + 1)
    return std::nullopt;
  Value acc = body.getArgument(numIn);
  Operation *add = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!add || add->getBlock() != &body ||
      !isa<arith::AddFOp, arith::AddIOp>(add) || !acc.hasOneUse() ||
      !llvm::is_contained(add->getOperands(), acc))
    return std::nullopt;
  Value prod =
      add->getOperand(0) == acc ? add->getOperand(1) : add->getOperand(0);
  Operation *mul = prod.getDefiningOp();
  if (!mul || mul->getBlock() != &body ||
      !isa<arith::MulFOp, arith::MulIOp>(mul) || !prod.hasOneUse())
    return std::nullopt;
  MulAccBody r;
  r.add = add;
  r.mul = mul;
  r.acc = acc;
  r.a = mul->getOperand(0);
  r.b = mul->getOperand(1);
  SmallVector<Operation *> ops;
  if (!sliceOf(body, numIn, r.a, ops, r.xInputs) ||
      !sliceOf(body, numIn, r.b, ops, r.wInputs) || r.xInputs.empty() ||
      r.wInputs.empty())
    return std::nullopt;
  for (unsigned i : r.xInputs)
    if (llvm::is_contained(r.wInputs, i))
      return std::nullopt;
  return r;
}

Value TiledContraction::mulAdd(const MulAccBody &ma, Value a, Value b,
                               Value acc) {
  IRMapping map;
  map.map(ma.a, a);
  map.map(ma.b, b);
  map.map(ma.acc, acc);
  cloneContracting(*ma.mul, map);
  return cloneContracting(*ma.add, map)->getResult(0);
}

Value TiledContraction::laneCoord(Location loc, LaneCoord coord, Value group,
                                  Value thread) {
  auto term = [&](int64_t f, Value v) -> Value {
    if (f == 0)
      return {};
    return f == 1 ? v : mul(loc, v, f);
  };
  Value g = term(coord.group, group);
  Value t = term(coord.thread, thread);
  if (g && t)
    return add(loc, g, t);
  if (g)
    return g;
  return t ? t : index(loc, 0);
}

LogicalResult TiledContraction::lower(linalg::LinalgOp op) {
  SmallVector<unsigned> par, red;
  if (!isLowerableReduction(op, par, red))
    return failure();
  Block &body = *op.getBlock();
  if (!body.getOps<linalg::IndexOp>().empty())
    return failure();
  std::optional<MulAccBody> ma = analyzeMulAcc(op);
  if (!ma)
    return failure();
  Type accType = body.getArgument(op.getNumDpsInputs()).getType();
  // Half operands accumulated in f32: the target's matrix instruction,
  // staging the half values before their extension.
  auto halfSource = [&](Value v) -> Value {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    if (!ext || ext->getBlock() != &body)
      return {};
    Type t = ext.getIn().getType();
    return t.isF16() || t.isBF16() ? ext.getIn() : Value();
  };
  Value aHalf = halfSource(ma->a), bHalf = halfSource(ma->b);
  // 8-bit integers extended to the accumulator (an int8 product's u8 x s8):
  // the 8-bit values and whether each is read signed.
  auto byteSource = [&](Value v, bool &isSigned) -> Value {
    Operation *ext = v.getDefiningOp();
    if (!ext || ext->getBlock() != &body ||
        !isa<arith::ExtSIOp, arith::ExtUIOp>(ext) ||
        !ext->getOperand(0).getType().isInteger(8))
      return {};
    isSigned = isa<arith::ExtSIOp>(ext);
    return ext->getOperand(0);
  };
  bool aSigned = true, bSigned = true;
  Value aByte = byteSource(ma->a, aSigned), bByte = byteSource(ma->b, bSigned);
  // The block's warps as 2 x (warps / 2), each a T/2 x T/(warps / 2) part
  // of the tile in M x N tiles of the instruction: it must divide the parts
  // of a 64 tile (and so of a 128 one) and the slab's K.
  int64_t warpSize = info.getWarpSize(), warps = kThreads / warpSize;
  int64_t warpsN = warps / 2;
  std::optional<MMALayout> mmaLayout;
  // The instruction's operands: the half values, or the f32 product
  // operands: rounded to TF32 when the contraction allows it and the chip
  // has such an instruction, else on an instruction of full f32 precision.
  Value xMMA = aHalf, wMMA = bHalf;
  if (tensorCores && isa<arith::MulIOp>(ma->mul) && aByte && bByte &&
      accType.isInteger(32)) {
    mmaLayout = info.getIntegerMMA(aSigned, bSigned, accType);
    xMMA = aByte, wMMA = bByte;
  }
  if (tensorCores && isa<arith::MulFOp>(ma->mul)) {
    if (aHalf && bHalf && aHalf.getType() == bHalf.getType()) {
      mmaLayout = info.getMMA(aHalf.getType(), accType);
    } else if (ma->a.getType() == accType && ma->b.getType() == accType) {
      if (accType.isF32() && op->hasAttr(kTF32Attr))
        mmaLayout = info.getTF32MMA(accType);
      if (!mmaLayout)
        mmaLayout = info.getMMA(accType, accType);
      xMMA = ma->a, wMMA = ma->b;
    }
  }
  if (mmaLayout &&
      (warps < 2 || warps % 2 != 0 || 64 % (2 * mmaLayout->m) != 0 ||
       64 % (warpsN * mmaLayout->n) != 0 || kMMASlabK % mmaLayout->k != 0 ||
       warpSize % mmaLayout->groupSize != 0))
    mmaLayout.reset();
  bool mma = mmaLayout.has_value();
  Value xRoot = mma ? xMMA : ma->a, wRoot = mma ? wMMA : ma->b;
  Type xElem = xRoot.getType(), wElem = wRoot.getType();
  for (Type t : {xElem, wElem})
    if (!t.isIntOrFloat() || t.getIntOrFloatBitWidth() < 8)
      return failure();
  // Run-time sizes (symbolic dims) are read before the launch; the tile
  // and the K split are then chosen without them (below), and every tile's
  // loads and stores are bounds-checked as a partial tile's are.
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  bool dynamic = llvm::any_of(sizes, ShapedType::isDynamic);
  ReductionFusion fusion = detectFusion(op, par);
  if (!fusion.fillValue)
    return failure();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto reads = [&](ArrayRef<unsigned> inputs, unsigned d) {
    return llvm::any_of(inputs, [&](unsigned i) {
      return op.getMatchingIndexingMap(op.getDpsInputOperand(i))
          .isFunctionOfDim(d);
    });
  };
  SmallVector<unsigned> mDims, nDims, bDims;
  for (unsigned d : par) {
    bool x = reads(ma->xInputs, d), w = reads(ma->wInputs, d);
    (x && !w ? mDims : !x && w ? nDims : bDims).push_back(d);
  }
  // A product of sizes, or kDynamic when one of them is.
  auto prod = [&](ArrayRef<unsigned> dims) {
    int64_t p = 1;
    for (unsigned d : dims) {
      if (ShapedType::isDynamic(sizes[d]))
        return ShapedType::kDynamic;
      p *= sizes[d];
    }
    return p;
  };
  int64_t M = prod(mDims), N = prod(nDims), B = prod(bDims), K = prod(red);
  auto known = [](int64_t v) { return !ShapedType::isDynamic(v); };
  if (mDims.empty() || nDims.empty() || (known(M) && M < 16) ||
      (known(N) && N < 16) || (known(K) && K < 1))
    return failure();
  // The thread x direction follows the output's innermost dim.
  unsigned innermost =
      cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  bool xIsM = llvm::is_contained(mDims, innermost);
  if (!xIsM && !llvm::is_contained(nDims, innermost))
    return failure();

  // The tile: 128 when its blocks still fill the GPU once and both sides
  // span more than 64 (a side of 32, a U-Net's 32 filters, would leave
  // three quarters of a 128 tile idle: half of a 64 one), else 64.
  auto ceil = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  auto blocksFor = [&](int64_t t) { return ceil(M, t) * ceil(N, t) * B; };
  int64_t tile =
      !dynamic && blocksFor(128) * 2 >= fillBlocks && std::min(M, N) > 64 ? 128
                                                                          : 64;
  int64_t elemBits =
      std::max(xElem.getIntOrFloatBitWidth(), wElem.getIntOrFloatBitWidth());
  // The instruction's slabs ([2][T][BK + 16 bytes] per operand, 40 KiB for
  // both at T = 128) stay within 48 KiB of shared memory. 32-bit operands
  // take 128 tiles only on TF32, whose instruction (one K element per
  // register) needs their fragment reuse; an f32 one keeps 64 tiles (24
  // KiB: two blocks per 64 KiB of shared memory).
  if (mma && elemBits > 16 && !mmaLayout->tf32)
    tile = 64;
  int64_t bk = 1024 / tile, runs = tile / kChunk, perThread = runs * kRun;
  int64_t blocks = dynamic ? 0 : blocksFor(tile);
  // The matrix instruction: K advances 32 (16) at a time; each warp's part of
  // the tile in mTiles x nTiles tiles of the instruction.
  int64_t mTiles = 0, nTiles = 0;
  if (mma) {
    // The same bytes per row whatever the operands' width: slabs of half
    // the K for 32-bit operands, twice the K for 8-bit ones.
    bk = kMMASlabK * 16 / elemBits;
    if (bk % mmaLayout->k != 0)
      return failure();
    mTiles = tile / (2 * mmaLayout->m);
    nTiles = tile / (warpsN * mmaLayout->n);
  }
  // Split K while the blocks do not fill the GPU and each part keeps at
  // least 128 steps.
  int64_t splits = 1, kPart = K;
  if (!dynamic && blocks < fillBlocks) {
    splits = std::max<int64_t>(1, std::min(ceil(fillBlocks, blocks), K / 128));
    kPart = ceil(ceil(K, splits), bk) * bk;
    splits = ceil(K, kPart);
  }
  if (!dynamic && (blocks * splits < minBlocks || B * splits > 65535))
    return failure();
  if (dynamic && known(B) && B > 65535)
    return failure();
  int64_t slabs = known(kPart) ? ceil(kPart, bk) : 0;

  // A slot of the matrix instruction's operands may load 16 bytes at once
  // (on targets where an unaligned 16-byte load is one load):
  // when the side reads one input directly (no fused producer ops), whose
  // last memory dim (stride 1) is indexed by a plain loop dim that is the
  // innermost non-unit one of K (vecK) or of the side's columns,
  // with a size that is a multiple of the vector. The vector then never
  // straddles that dim, nor the end of K (a multiple of it, as are the
  // K parts) or of the columns: one bound check covers it. `aligned`
  // (the asynchronous copies, on any target): instead, each vector 16-byte
  // aligned, the input's offset and strides multiples of it (its base is:
  // the arena's buffers and the inputs used in place are).
  auto vectorSlots = [&](Stage &s, ArrayRef<unsigned> cols,
                         bool aligned = false) -> void {
    if (!mma || !(aligned || info.hasUnalignedWideLoads()) || !s.ops.empty() ||
        s.inputs.size() != 1)
      return;
    OpOperand *in = op.getDpsInputOperand(s.inputs[0]);
    auto arg = dyn_cast<BlockArgument>(s.root);
    auto t = dyn_cast<MemRefType>(in->get().getType());
    if (!arg || arg.getOwner() != &body || arg.getArgNumber() != s.inputs[0] ||
        !t || !t.hasStaticShape() || !s.root.getType().isIntOrFloat())
      return;
    int64_t bits = s.root.getType().getIntOrFloatBitWidth();
    if (bits % 8 != 0 || 128 % bits != 0)
      return;
    int64_t v = 128 / bits;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(t.getStridesAndOffset(strides, offset)))
      return;
    // vector.load reads along the memref's last dim.
    int64_t md = t.getRank() - 1;
    AffineMap map = op.getMatchingIndexingMap(in);
    if (md < 0 || strides[md] != 1 || map.getNumResults() != t.getRank())
      return;
    if (aligned && !alignedRuns(t, v))
      return;
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(md));
    if (!dim)
      return;
    // The innermost non-unit dim of `dims` (delinearized innermost last).
    auto innermost = [&](ArrayRef<unsigned> dims) -> int64_t {
      for (int64_t i = dims.size() - 1; i >= 0; --i)
        if (sizes[dims[i]] != 1)
          return dims[i];
      return -1;
    };
    unsigned d = dim.getPosition();
    if (ShapedType::isDynamic(sizes[d]) || sizes[d] % v != 0)
      return;
    if (innermost(red) == d) {
      if (bk % v != 0 || (bk * tile) % (kThreads * v) != 0)
        return;
      s.vec = v, s.vecK = true;
    } else if (innermost(cols) == d) {
      if (tile % v != 0 || (bk * tile) % (kThreads * v) != 0)
        return;
      s.vec = v, s.vecK = false;
    }
  };
  // The ring of shared buffers filled by asynchronous copies
  // (AsyncStaging.cpp): with --gpu-async-copy, 16-bit operands that both
  // load 16 bytes per slot, on a target with the copies and the fragment
  // loads.
  Stage xProbe, wProbe;
  bool async = false;
  int64_t stages = 0;
  if (asyncCopy && mma && elemBits == 16 && info.hasAsyncCopy() &&
      info.hasMatrixLoad(*mmaLayout)) {
    for (auto [s, root, inputs, cols] :
         {std::make_tuple(&xProbe, xRoot, ArrayRef<unsigned>(ma->xInputs),
                          ArrayRef<unsigned>(mDims)),
          std::make_tuple(&wProbe, wRoot, ArrayRef<unsigned>(ma->wInputs),
                          ArrayRef<unsigned>(nDims))}) {
      s->root = root;
      SmallVector<unsigned> unused;
      (void)sliceOf(body, op.getNumDpsInputs(), root, s->ops, unused);
      s->inputs.assign(inputs.begin(), inputs.end());
      vectorSlots(*s, cols, /*aligned=*/true);
    }
    stages = asyncStages(tile, bk);
    async = xProbe.vec > 1 && wProbe.vec > 1 && stages >= 2;
  }
  Location loc = op.getLoc();
  MLIRContext *ctxt = op.getContext();
  // An input read through a zero-padded copy (a convolution's padded input)
  // is read from the copy's source instead: the fill, the copy and their
  // scratch buffer go away. Not with the asynchronous copies (whole 16-byte
  // runs); 16-byte loads (along the last dim) need that dim unpadded.
  PaddedInputs padded;
  if (!async)
    padded = matchPaddedInputs(op, /*lastDimUnpadded=*/mma);
  rewriter.setInsertionPoint(op);
  // The loops' run-time sizes (before the launch), and a size as a value:
  // a constant when static.
  SmallVector<Value> dynSizes(sizes.size());
  if (dynamic) {
    SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
    for (auto [d, r] : llvm::enumerate(ranges))
      if (ShapedType::isDynamic(sizes[d]))
        dynSizes[d] = getValueOrCreateConstantIndexOp(rewriter, loc, r.size);
  }
  auto sizeOf = [&](unsigned d) -> Value {
    return dynSizes[d] ? dynSizes[d] : index(loc, sizes[d]);
  };
  auto prodOf = [&](ArrayRef<unsigned> dims, int64_t p) -> Value {
    if (known(p))
      return index(loc, p);
    Value v;
    for (unsigned d : dims)
      v = v ? arith::MulIOp::create(rewriter, loc, v, sizeOf(d)).getResult()
            : sizeOf(d);
    return v;
  };
  auto ceilOf = [&](Value v, int64_t t) -> Value {
    return arith::CeilDivUIOp::create(rewriter, loc, v, index(loc, t));
  };
  // Split K: the parts go through a scratch buffer [B * S][Y][X].
  int64_t X = xIsM ? M : N, Y = xIsM ? N : M;
  Value parts;
  if (splits > 1) {
    auto partsType = MemRefType::get({B * splits, Y, X}, accType);
    Block *entry = &op->getParentOfType<func::FuncOp>().getBody().front();
    OpBuilder::InsertionGuard g(rewriter);
    rewriter.setInsertionPointToStart(entry);
    parts = BufferOp::create(rewriter, loc, partsType, ctx, ValueRange{},
                             IntegerAttr())
                .getBuffer();
  }
  Value one = index(loc, 1);
  Attribute wg = info.getSharedMemorySpace(ctxt);
  // Shared slabs [2][BK][T + 4] (a thread's columns read 4 at a time), or
  // for the matrix instruction [2][T][BK + 16 bytes] (fragments read as K
  // runs; rows of 80 bytes: 8 rows of a fragment read start 20 banks
  // apart); the padding keeps both the stores and the reads free of bank
  // conflicts.
  SmallVector<int64_t> slabShape = {2, bk, tile + 4};
  if (mma)
    slabShape = {2, tile, bk + 128 / elemBits};
  // The asynchronous ring: `stages` buffers of rows without padding, along
  // K or along the columns as the operand is read (swizzled instead).
  auto ringShape = [&](const Stage &s) -> SmallVector<int64_t> {
    if (!async)
      return slabShape;
    return s.vecK ? SmallVector<int64_t>{stages, tile, bk}
                  : SmallVector<int64_t>{stages, bk, tile};
  };
  auto xsType = MemRefType::get(ringShape(xProbe), xElem,
                                MemRefLayoutAttrInterface(), wg);
  auto wsType = MemRefType::get(ringShape(wProbe), wElem,
                                MemRefLayoutAttrInterface(), wg);
  SmallVector<unsigned> xDims = xIsM ? mDims : nDims,
                        yDims = xIsM ? nDims : mDims;
  Value gridX =
      known(X) ? index(loc, ceil(X, tile)) : ceilOf(prodOf(xDims, X), tile);
  Value gridY =
      known(Y) ? index(loc, ceil(Y, tile)) : ceilOf(prodOf(yDims, Y), tile);
  Value gridZ = known(B) ? index(loc, B * splits) : prodOf(bDims, B);
  // The K loop's trip count (slabs of BK).
  Value slabCount = known(K) ? Value() : ceilOf(prodOf(red, K), bk);
  Value mTotal = prodOf(mDims, M), nTotal = prodOf(nDims, N),
        kTotal = prodOf(red, K);
  auto launch = gpu::LaunchOp::create(rewriter, loc, gridX, gridY, gridZ,
                                      index(loc, kThreads), one, one);
  Value xs = launch.addWorkgroupAttribution(xsType, loc);
  Value ws = launch.addWorkgroupAttribution(wsType, loc);
  // What was chosen, for kilnc --report (the kernel's "gpu_contractions").
  {
    std::string what;
    llvm::raw_string_ostream os(what);
    auto dim = [&](int64_t v) {
      return known(v) ? std::to_string(v) : std::string("?");
    };
    os << dim(M) << "x" << dim(N) << "x" << dim(K);
    if (!known(B) || B > 1)
      os << " (batch " << dim(B) << ")";
    os << ": tile " << tile << "x" << tile << "x" << bk << ", "
       << (mma ? "matrix instruction " + std::to_string(mmaLayout->m) + "x" +
                     std::to_string(mmaLayout->n) + "x" +
                     std::to_string(mmaLayout->k) +
                     (mmaLayout->tf32 ? " tf32" : "") +
                     (mmaLayout->operand.isInteger(8)
                          ? std::string(mmaLayout->aSigned ? " s8" : " u8") +
                                (mmaLayout->bSigned ? "xs8" : "xu8")
                          : std::string())
               : std::string("FMA"))
       << ", " << warps << " warps of " << warpSize;
    if (async)
      os << ", async copies in " << stages << " stages";
    if (splits > 1)
      os << ", split-K " << splits;
    noteGPUContraction(launch, what);
  }
  Block &lb = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&lb);
  auto term = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(term);

  Value tid = launch.getThreadIds().x;
  Value lx = arith::RemUIOp::create(rewriter, loc, tid, index(loc, kSide));
  Value ly = arith::DivUIOp::create(rewriter, loc, tid, index(loc, kSide));
  Value tileX = mul(loc, launch.getBlockIds().x, tile);
  Value tileY = mul(loc, launch.getBlockIds().y, tile);
  Value mBase = xIsM ? tileX : tileY, nBase = xIsM ? tileY : tileX;
  Value mThr = xIsM ? lx : ly, nThr = xIsM ? ly : lx;
  // The batch point and the K part of this block.
  Value bz = launch.getBlockIds().z, batch = bz, kBegin = index(loc, 0);
  Value kEnd = kTotal;
  if (splits > 1) {
    batch = arith::DivUIOp::create(rewriter, loc, bz, index(loc, splits));
    kBegin =
        mul(loc, arith::RemUIOp::create(rewriter, loc, bz, index(loc, splits)),
            kPart);
    kEnd = arith::MinUIOp::create(rewriter, loc,
                                  add(loc, kBegin, index(loc, kPart)), kEnd);
  }
  SmallVector<Value> base(op.getNumLoops(), index(loc, 0));
  if (!bDims.empty())
    delinearize(loc, batch, bDims, sizeOf, base);

  auto makeStage = [&](Value root, ArrayRef<unsigned> inputs, Value dst,
                       ArrayRef<unsigned> cols, Value colBase, Value colSize) {
    Stage s;
    s.root = root;
    s.dst = dst;
    SmallVector<unsigned> unused;
    (void)sliceOf(body, op.getNumDpsInputs(), root, s.ops, unused);
    s.inputs.assign(inputs.begin(), inputs.end());
    vectorSlots(s, cols, /*aligned=*/async);
    Type staged = root.getType();
    if (s.vec > 1)
      staged = VectorType::get({s.vec}, staged);
    s.zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(staged));
    // Consecutive threads follow the side's largest input in memory.
    AffineMap map;
    int64_t rank = -1;
    for (unsigned i : inputs) {
      OpOperand *in = op.getDpsInputOperand(i);
      auto t = dyn_cast<MemRefType>(in->get().getType());
      if (t && t.getRank() > rank)
        rank = t.getRank(), map = op.getMatchingIndexingMap(in);
    }
    AffineExpr last = map && map.getNumResults()
                          ? map.getResults().back()
                          : getAffineConstantExpr(0, op.getContext());
    bool colFast =
        llvm::any_of(cols, [&](unsigned d) { return last.isFunctionOfDim(d); });
    bool kFast = !colFast && llvm::any_of(red, [&](unsigned d) {
      return last.isFunctionOfDim(d);
    });
    for (int64_t r = 0; r < bk * tile / kThreads / s.vec; ++r) {
      Value e = add(loc, tid, index(loc, r * kThreads));
      Value kr, cc;
      if (s.vec > 1 && s.vecK) {
        // Slot e: the vector at K (e % (BK / V)) V of column e / (BK / V).
        kr = mul(
            loc,
            arith::RemUIOp::create(rewriter, loc, e, index(loc, bk / s.vec)),
            s.vec);
        cc = arith::DivUIOp::create(rewriter, loc, e, index(loc, bk / s.vec));
      } else if (s.vec > 1) {
        // Slot e: columns (e % (T / V)) V onwards at K e / (T / V).
        kr = arith::DivUIOp::create(rewriter, loc, e, index(loc, tile / s.vec));
        cc = mul(
            loc,
            arith::RemUIOp::create(rewriter, loc, e, index(loc, tile / s.vec)),
            s.vec);
      } else if (kFast) {
        kr = arith::RemUIOp::create(rewriter, loc, e, index(loc, bk));
        cc = arith::DivUIOp::create(rewriter, loc, e, index(loc, bk));
      } else {
        kr = arith::DivUIOp::create(rewriter, loc, e, index(loc, tile));
        cc = arith::RemUIOp::create(rewriter, loc, e, index(loc, tile));
      }
      Value c = add(loc, colBase, cc);
      Value ok = ult(loc, c, colSize);
      Value clamped =
          arith::SelectOp::create(rewriter, loc, ok, c, index(loc, 0));
      SmallVector<Value> pt = base;
      delinearize(loc, clamped, cols, sizeOf, pt);
      s.kr.push_back(kr);
      s.col.push_back(cc);
      s.colOk.push_back(ok);
      s.pt.push_back(pt);
    }
    return s;
  };
  Stage sx = makeStage(xRoot, ma->xInputs, xs, mDims, mBase, mTotal);
  Stage sw = makeStage(wRoot, ma->wInputs, ws, nDims, nBase, nTotal);
  // The slab at k0 into registers: zero outside [kBegin, kEnd) and outside
  // the problem (the point clamped to one inside it).
  auto loadSlab = [&](Value k0, SmallVectorImpl<Value> &vals) {
    for (Stage *s : {&sx, &sw})
      for (auto [r, kr] : llvm::enumerate(s->kr)) {
        Value k = add(loc, k0, kr);
        Value ok = ult(loc, k, kEnd);
        Value kc = arith::SelectOp::create(rewriter, loc, ok, k, kBegin);
        SmallVector<Value> pt = s->pt[r];
        delinearize(loc, kc, red, sizeOf, pt);
        if (s->vec > 1) {
          SmallVector<Value> idx;
          Value inside = inputIndices(loc, op, padded, s->inputs[0], pt, idx);
          Value v = vector::LoadOp::create(
              rewriter, loc, cast<VectorType>(s->zero.getType()),
              inputMemRef(op, padded, s->inputs[0]), idx);
          ok = arith::AndIOp::create(rewriter, loc, ok, s->colOk[r]);
          if (inside)
            ok = arith::AndIOp::create(rewriter, loc, ok, inside);
          vals.push_back(
              arith::SelectOp::create(rewriter, loc, ok, v, s->zero));
          continue;
        }
        IRMapping values;
        for (unsigned i : s->inputs) {
          OpOperand *in = op.getDpsInputOperand(i);
          if (!isa<MemRefType>(in->get().getType())) {
            values.map(body.getArgument(i), in->get());
            continue;
          }
          SmallVector<Value> idx;
          Value inside = inputIndices(loc, op, padded, i, pt, idx);
          Value v = memref::LoadOp::create(rewriter, loc,
                                           inputMemRef(op, padded, i), idx);
          if (inside) {
            // The padded copy holds zeros there.
            Type t = v.getType();
            Value zero = arith::ConstantOp::create(rewriter, loc, t,
                                                   rewriter.getZeroAttr(t));
            v = arith::SelectOp::create(rewriter, loc, inside, v, zero);
          }
          values.map(body.getArgument(i), v);
        }
        for (Operation *o : s->ops)
          rewriter.clone(*o, values);
        Value v = values.lookupOrDefault(s->root);
        ok = arith::AndIOp::create(rewriter, loc, ok, s->colOk[r]);
        vals.push_back(arith::SelectOp::create(rewriter, loc, ok, v, s->zero));
      }
  };

  // The matrix instruction: lane = (group, thread) = (lane / G, lane % G)
  // with G the layout's group size; warp w covers rows warpM + [0, T/2)
  // and columns warpN + [0, T/(warps / 2)) of the tile.
  Value group, thread, warpM, warpN, lane;
  if (mma) {
    lane = arith::RemUIOp::create(rewriter, loc, tid, index(loc, warpSize));
    Value warp =
        arith::DivUIOp::create(rewriter, loc, tid, index(loc, warpSize));
    group = arith::DivUIOp::create(rewriter, loc, lane,
                                   index(loc, mmaLayout->groupSize));
    thread = arith::RemUIOp::create(rewriter, loc, lane,
                                    index(loc, mmaLayout->groupSize));
    warpM = mul(loc, arith::RemUIOp::create(rewriter, loc, warp, index(loc, 2)),
                tile / 2);
    warpN = mul(loc, arith::DivUIOp::create(rewriter, loc, warp, index(loc, 2)),
                tile / warpsN);
  }
  Value accInit = fusion.fillValue;
  if (splits > 1)
    accInit =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(accType));
  int64_t nAcc =
      mma ? mTiles * nTiles * mmaLayout->cElems.size() : perThread * perThread;
  SmallVector<Value> inits(nAcc, accInit);
  Value slabsV = slabCount ? slabCount : index(loc, slabs);
  scf::ForOp kLoop;
  if (async) {
    AsyncLoop l;
    l.op = op;
    l.layout = &*mmaLayout;
    l.x = &sx, l.w = &sw;
    l.red = red;
    l.sizeOf = sizeOf;
    l.kBegin = kBegin, l.kEnd = kEnd, l.slabs = slabsV, l.lane = lane;
    l.warpM = warpM, l.warpN = warpN;
    l.bk = bk, l.tile = tile, l.stages = stages;
    l.mTiles = mTiles, l.nTiles = nTiles;
    l.inits = inits;
    kLoop = buildAsyncLoop(loc, l);
  } else {
    SmallVector<Value> first;
    loadSlab(kBegin, first);
    inits.append(first);
    kLoop =
        scf::ForOp::create(rewriter, loc, index(loc, 0), slabsV, one, inits);
    rewriter.setInsertionPointToStart(kLoop.getBody());
    Value t = kLoop.getInductionVar();
    Value buf = arith::AndIOp::create(rewriter, loc, t, one);
    ValueRange iter = kLoop.getRegionIterArgs();
    ValueRange accs = iter.take_front(nAcc);
    ValueRange staged = iter.drop_front(nAcc);
    {
      int64_t i = 0;
      for (Stage *s : {&sx, &sw})
        for (auto [kr, col] : llvm::zip(s->kr, s->col)) {
          // For the matrix instruction, as it wants the values staged (e.g.
          // rounded to TF32): here, where the stores wait for the loads
          // anyway, not where they are issued.
          Value v = staged[i++];
          if (mma)
            v = info.buildMMAStaged(rewriter, loc, *mmaLayout, v);
          if (s->vec > 1 && s->vecK) {
            // K runs are contiguous in the slab's rows (16-byte aligned: rows
            // of BK elements + 16 bytes, runs at multiples of V).
            auto st = vector::StoreOp::create(rewriter, loc, v, s->dst,
                                              ValueRange{buf, col, kr});
            st.setAlignment(16);
          } else if (s->vec > 1) {
            for (int64_t j = 0; j < s->vec; ++j)
              memref::StoreOp::create(
                  rewriter, loc, vector::ExtractOp::create(rewriter, loc, v, j),
                  s->dst, ValueRange{buf, add(loc, col, index(loc, j)), kr});
          } else {
            memref::StoreOp::create(rewriter, loc, v, s->dst,
                                    mma ? ValueRange{buf, col, kr}
                                        : ValueRange{buf, kr, col});
          }
        }
    }
    info.buildBarrier(rewriter, loc);
    // The next slab's loads are issued before this one's products.
    Value tNext = add(loc, t, one);
    scf::IfOp more = loadNextIf(
        loc, ult(loc, tNext, slabsV), staged, [&](SmallVector<Value> &next) {
          loadSlab(add(loc, kBegin, mul(loc, tNext, bk)), next);
        });

    SmallVector<Value> acc(accs.begin(), accs.end());
    if (mma) {
      const MMALayout &layout = *mmaLayout;
      auto runType = VectorType::get({layout.kPack}, xElem);
      // A run of K elements of one row of a shared slab, as an operand
      // register of the instruction.
      auto run = [&](Value smem, Value r, Value k) -> Value {
        auto ld = vector::LoadOp::create(rewriter, loc, runType, smem,
                                         ValueRange{buf, r, k});
        ld.setAlignment(std::min<int64_t>(
            16, layout.kPack * xElem.getIntOrFloatBitWidth() / 8));
        return info.buildMMAOperand(rewriter, loc, layout, ld);
      };
      // The lane's coordinates (B's K shared with A's when they agree).
      Value aK = laneCoord(loc, layout.aK, group, thread);
      Value bK = layout.bK == layout.aK
                     ? aK
                     : laneCoord(loc, layout.bK, group, thread);
      Value aRow = laneCoord(loc, layout.aRow, group, thread);
      Value bCol = laneCoord(loc, layout.bCol, group, thread);
      // base + each distinct offset, in order of first use; base itself for
      // offset 0.
      using Offsets = SmallVector<std::pair<int64_t, Value>>;
      auto offsets = [&](Value base, ArrayRef<int64_t> offs) {
        Offsets v = {{0, base}};
        for (int64_t o : offs)
          if (!llvm::any_of(v, [&](auto &p) { return p.first == o; }))
            v.push_back({o, add(loc, base, index(loc, o))});
        return v;
      };
      auto at = [](const Offsets &v, int64_t o) {
        return llvm::find_if(v, [&](auto &p) { return p.first == o; })->second;
      };
      auto outerOf = [](ArrayRef<FragmentOffset> regs) {
        return llvm::map_to_vector(regs, [](auto &r) { return r.outer; });
      };
      auto innerOf = [](ArrayRef<FragmentOffset> regs) {
        return llvm::map_to_vector(regs, [](auto &r) { return r.inner; });
      };
      int64_t nC = layout.cElems.size();
      for (int64_t ks = 0; ks < bk; ks += layout.k) {
        Value aK0 = add(loc, aK, index(loc, ks));
        Offsets aKs, bKs;
        if (bK == aK) {
          SmallVector<int64_t> both = innerOf(layout.aRegs);
          llvm::append_range(both, innerOf(layout.bRegs));
          aKs = bKs = offsets(aK0, both);
        } else {
          aKs = offsets(aK0, innerOf(layout.aRegs));
          bKs = offsets(add(loc, bK, index(loc, ks)), innerOf(layout.bRegs));
        }
        SmallVector<SmallVector<Value>> aFrag, bFrag;
        for (int64_t i = 0; i < mTiles; ++i) {
          Value r0 = add(loc, add(loc, warpM, aRow), index(loc, i * layout.m));
          Offsets rows = offsets(r0, outerOf(layout.aRegs));
          SmallVector<Value> regs;
          for (const FragmentOffset &r : layout.aRegs)
            regs.push_back(run(xs, at(rows, r.outer), at(aKs, r.inner)));
          aFrag.push_back(regs);
        }
        for (int64_t j = 0; j < nTiles; ++j) {
          Value n0 = add(loc, add(loc, warpN, bCol), index(loc, j * layout.n));
          Offsets cols = offsets(n0, outerOf(layout.bRegs));
          SmallVector<Value> regs;
          for (const FragmentOffset &r : layout.bRegs)
            regs.push_back(run(ws, at(cols, r.outer), at(bKs, r.inner)));
          bFrag.push_back(regs);
        }
        for (int64_t i = 0; i < mTiles; ++i)
          for (int64_t j = 0; j < nTiles; ++j) {
            int64_t c = (i * nTiles + j) * nC;
            SmallVector<Value> next =
                info.buildMMA(rewriter, loc, layout, aFrag[i], bFrag[j],
                              ArrayRef<Value>(acc).slice(c, nC));
            for (int64_t e = 0; e < nC; ++e)
              acc[c + e] = next[e];
          }
      }
    } else {
      // A thread's columns in the shared slab: runs of 4, 64 apart.
      auto threadCols = [&](Value thr) {
        SmallVector<Value> v;
        for (int64_t c = 0; c < runs; ++c)
          v.push_back(add(loc, mul(loc, thr, kRun), index(loc, c * kChunk)));
        return v;
      };
      auto vecOf = [&](Type et) { return VectorType::get({kRun}, et); };
      SmallVector<Value> xCols = threadCols(mThr), wCols = threadCols(nThr);
      VectorType xvt = vecOf(xElem), wvt = vecOf(wElem);
      int64_t xAlign = kRun * xElem.getIntOrFloatBitWidth() / 8;
      int64_t wAlign = kRun * wElem.getIntOrFloatBitWidth() / 8;
      for (int64_t kk = 0; kk < bk; ++kk) {
        Value kkv = index(loc, kk);
        auto fetch = [&](Value smem, ArrayRef<Value> cols, VectorType vt,
                         int64_t align) {
          SmallVector<Value> v;
          for (Value col : cols) {
            auto ld = vector::LoadOp::create(rewriter, loc, vt, smem,
                                             ValueRange{buf, kkv, col});
            ld.setAlignment(align);
            for (int64_t e = 0; e < kRun; ++e)
              v.push_back(vector::ExtractOp::create(rewriter, loc, ld, e));
          }
          return v;
        };
        SmallVector<Value> a = fetch(xs, xCols, xvt, xAlign);
        SmallVector<Value> w = fetch(ws, wCols, wvt, wAlign);
        for (int64_t i = 0; i < perThread; ++i)
          for (int64_t j = 0; j < perThread; ++j)
            acc[i * perThread + j] =
                mulAdd(*ma, a[i], w[j], acc[i * perThread + j]);
      }
    }
    SmallVector<Value> yields = acc;
    llvm::append_range(yields, more.getResults());
    scf::YieldOp::create(rewriter, loc, yields);
    rewriter.setInsertionPointAfter(kLoop);
  }

  // Results: (m, n, accumulator) of this thread. SIMT: point i along a
  // tile dim is base + (i / 4) * 64 + thread * 4 + i % 4. The matrix
  // instruction: accumulator e of tile (i, j) is at the layout's cRow, cCol
  // plus cElems[e].
  struct Out {
    Value m, n;
    int64_t acc;
  };
  SmallVector<Out> outs;
  if (mma) {
    const MMALayout &layout = *mmaLayout;
    Value cRow = laneCoord(loc, layout.cRow, group, thread);
    Value cCol = laneCoord(loc, layout.cCol, group, thread);
    int64_t nC = layout.cElems.size();
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j)
        for (int64_t e = 0; e < nC; ++e) {
          const FragmentOffset &c = layout.cElems[e];
          Value m = add(loc, add(loc, mBase, add(loc, warpM, cRow)),
                        index(loc, i * layout.m + c.outer));
          Value n = add(loc, add(loc, nBase, add(loc, warpN, cCol)),
                        index(loc, j * layout.n + c.inner));
          outs.push_back({m, n, (i * nTiles + j) * nC + e});
        }
  } else {
    auto coord = [&](Value tileBase, Value thread, int64_t i) -> Value {
      return add(loc, add(loc, tileBase, mul(loc, thread, kRun)),
                 index(loc, (i / kRun) * kChunk + i % kRun));
    };
    for (int64_t i = 0; i < perThread; ++i)
      for (int64_t j = 0; j < perThread; ++j)
        outs.push_back(
            {coord(mBase, mThr, i), coord(nBase, nThr, j), i * perThread + j});
  }
  for (Out &o : outs) {
    Value m = o.m, n = o.n;
    Value ok = arith::AndIOp::create(rewriter, loc, ult(loc, m, mTotal),
                                     ult(loc, n, nTotal));
    auto guard = scf::IfOp::create(rewriter, loc, ok, /*withElse=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value v = kLoop.getResult(o.acc);
    if (splits > 1) {
      memref::StoreOp::create(rewriter, loc, v, parts,
                              ValueRange{bz, xIsM ? n : m, xIsM ? m : n});
    } else {
      SmallVector<Value> pt = base;
      delinearize(loc, m, mDims, sizeOf, pt);
      delinearize(loc, n, nDims, sizeOf, pt);
      storeResult(loc, v, op, par, pt, fusion);
    }
    rewriter.setInsertionPointAfter(guard);
  }

  if (splits > 1) {
    // The parts added, one thread per output along X.
    rewriter.setInsertionPoint(op);
    int64_t total = B * Y * X;
    auto sum =
        gpu::LaunchOp::create(rewriter, loc, index(loc, ceil(total, kThreads)),
                              one, one, index(loc, kThreads), one, one);
    Block &sb = sum.getBody().front();
    rewriter.setInsertionPointToEnd(&sb);
    auto sterm = gpu::TerminatorOp::create(rewriter, loc);
    rewriter.setInsertionPoint(sterm);
    Value g =
        add(loc, mul(loc, sum.getBlockIds().x, kThreads), sum.getThreadIds().x);
    auto guard =
        scf::IfOp::create(rewriter, loc, ult(loc, g, index(loc, total)),
                          /*withElse=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value x = arith::RemUIOp::create(rewriter, loc, g, index(loc, X));
    Value rest = arith::DivUIOp::create(rewriter, loc, g, index(loc, X));
    Value y = arith::RemUIOp::create(rewriter, loc, rest, index(loc, Y));
    Value b = arith::DivUIOp::create(rewriter, loc, rest, index(loc, Y));
    Value total_ = fusion.fillValue;
    bool isFloat = isa<FloatType>(accType);
    for (int64_t s = 0; s < splits; ++s) {
      Value part = memref::LoadOp::create(
          rewriter, loc, parts,
          ValueRange{add(loc, mul(loc, b, splits), index(loc, s)), y, x});
      total_ =
          isFloat
              ? arith::AddFOp::create(rewriter, loc, total_, part).getResult()
              : arith::AddIOp::create(rewriter, loc, total_, part).getResult();
    }
    SmallVector<Value> pt(op.getNumLoops(), index(loc, 0));
    if (!bDims.empty())
      delinearize(loc, b, bDims, sizes, pt);
    delinearize(loc, xIsM ? x : y, mDims, sizes, pt);
    delinearize(loc, xIsM ? y : x, nDims, sizes, pt);
    storeResult(loc, total_, op, par, pt, fusion);
  }
  eraseFused(op, fusion);
  erasePaddedCopies(padded);
  return success();
}
