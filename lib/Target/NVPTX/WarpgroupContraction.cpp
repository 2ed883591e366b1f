//===- WarpgroupContraction.cpp - sm_90a matmuls on warpgroup MMA ---------===//
//
// NVPTXTargetInfo::lowerContraction on sm_90a: a matmul (or batched matmul)
// of f16 or bf16 operands accumulated in f32 becomes one kernel that feeds
// wgmma.mma_async from shared memory filled by the Tensor Memory
// Accelerator. A block computes a BM x BN tile of C (256 x 128, 128 x 128
// or 128 x 64, chosen per problem: chooseTile) with 1 + BM/64 warpgroups:
//   - warpgroup 0 is the producer: one thread issues, for each 64-wide K
//     step, cp.async.bulk.tensor loads of A's BM x 64 box and B's boxes into
//     one of 4-6 shared-memory stages (128-byte swizzle, as wgmma reads
//     it), completing on that stage's `full` mbarrier; before reusing a
//     stage it waits on its `empty` mbarrier;
//   - warpgroup 1 + c computes rows 64c .. 64c + 63 of the tile: it waits on
//     `full`, issues four m64nBNk16 wgmmas (K 16 each) from shared-memory
//     descriptors as one group, waits for the previous step's group and
//     arrives on that step's `empty`; its accumulators
//     (BN / 2 f32 per thread) stay in registers and are stored at the end,
//     with bounds checks.
// Out-of-bounds rows, columns and K read as zeros (the tile map's bounds).
// The tile maps are encoded on the host (kiln.tile_map, kiln_rt_tile_map)
// and passed by value; kiln-nvptx-grid-constants turns them into
// grid-constant parameters. The design and its measurements:
// bench/hopper (a generator of the same kernel) and docs/gpu.md.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupContraction.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

namespace {

constexpr int64_t kBK = 64;
constexpr int64_t kElemBytes = 2;
/// The SMs a tile choice fills: an H100 SXM's or H200's 132 (an H100 PCIe
/// has 114; the choice only weighs how full the last wave is).
constexpr int64_t kSMs = 132;

/// What a dim of an operand's memref indexes.
enum class Role { M, N, K, Batch };
struct DimRole {
  Role role;
  int64_t batch = 0; // which batch dim (loop order), for Role::Batch
};

/// The problem a matmul-like op poses: C[batch...][m][n] = fill + sum_k
/// A * B, all memrefs of identity layout; A's and B's dims may come in any
/// order (attention's Q [b, s, h, d] times K [b, s, h, d]) as long as A's
/// innermost is K and B's is N or K (`bKMajor`).
struct Problem {
  linalg::LinalgOp op;
  linalg::FillOp fill;
  Value a, b, c;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  SmallVector<int64_t> batchSizes;   // C's outer dims, in loop order
  SmallVector<DimRole> aDims, bDims; // per dim of A (as read) and B
  bool bKMajor = false;
  /// The sizes of C's dims that make up M (several for a linalg.generic
  /// such as [batch, seq, K] x [K, N]: contiguous, read as one).
  SmallVector<int64_t> mSizes;
  Type elem; // f16 or bf16
  /// An elementwise op just after that only consumes C (a bias, an
  /// activation, a residual add, a cast): applied to the accumulators
  /// before the one store, C itself never written.
  linalg::GenericOp epilogue;
  OpOperand *epilogueIn = nullptr;
};

bool identityStatic(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.hasStaticShape() && t.getLayout().isIdentity();
}

/// The fill of `c` just before `op` (nothing in between writes it).
linalg::FillOp fillBefore(Operation *op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.getDpsInitOperand(0)->get() != c ||
      !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
    return {};
  return fill;
}

/// The elementwise linalg.generic right after `op` that reads its output `c`
/// (identity map) where nothing else reads or writes `c`, with inputs and
/// output indexed by projected permutations of the output's dims.
std::pair<linalg::GenericOp, OpOperand *> epilogueAfter(Problem &p) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(p.op->getNextNode());
  if (!g || !g.hasPureBufferSemantics() || g.getNumReductionLoops() ||
      g.getNumDpsInits() != 1 ||
      !g.getBody()->getOps<linalg::IndexOp>().empty())
    return {};
  OpOperand *in = nullptr;
  for (OpOperand *o : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(o);
    if (!map.isProjectedPermutation())
      return {};
    if (o->get() == p.c) {
      if (in || !map.isIdentity())
        return {};
      in = o;
    }
  }
  OpOperand *out = g.getDpsInitOperand(0);
  if (!in || out->get() == p.c || !g.getMatchingIndexingMap(out).isIdentity() ||
      !identityStatic(out->get()) ||
      cast<MemRefType>(out->get().getType()).getShape() !=
          cast<MemRefType>(p.c.getType()).getShape())
    return {};
  for (Operation *u : p.c.getUsers())
    if (u != p.op && u != p.fill && u != g)
      return {};
  for (Operation &o : g.getBody()->without_terminator())
    if (o.getNumRegions() || !isMemoryEffectFree(&o))
      return {};
  return {g, in};
}

/// `v` without an arith.extf from f16/bf16 to f32 (or `v` itself).
Value skipExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  return v;
}

/// Whether `op`'s body is out + ext(a) * ext(b) in f32.
bool isMulAddBody(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || !add.getType().isF32() || body.getOperations().size() > 6)
    return false;
  Value out = body.getArgument(2);
  Value prod = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if ((add.getLhs() != out && add.getRhs() != out) || prod == out)
    return false;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value x = skipExt(mul.getLhs()), y = skipExt(mul.getRhs());
  return (x == body.getArgument(0) && y == body.getArgument(1)) ||
         (x == body.getArgument(1) && y == body.getArgument(0));
}

/// A matmul (linalg.matmul, batch_matmul, or a linalg.generic as ONNX's
/// MatMul and attention lower to): C[batch..., m..., n] += A * B where C is
/// indexed [batch..., m..., n]; A [batch..., m..., k] (several m dims,
/// contiguous, read as one M) or, with one m dim, any order of the batch
/// dims, m and k with k innermost; B any order of the batch dims, k and n
/// with n or k innermost.
bool matchContraction(linalg::LinalgOp g, Problem &p) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 ||
      g.getNumDpsInits() != 1 || !isMulAddBody(g))
    return false;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(g);
  if (failed(dims) || dims->k.size() != 1 || dims->n.size() != 1 ||
      dims->m.empty() || dims->batch.size() > 3)
    return false;
  MLIRContext *ctx = g.getContext();
  auto exprs = [&](std::initializer_list<ArrayRef<unsigned>> groups) {
    SmallVector<AffineExpr> e;
    for (ArrayRef<unsigned> ds : groups)
      for (unsigned d : ds)
        e.push_back(getAffineDimExpr(d, ctx));
    return e;
  };
  unsigned mDim = dims->m.front(), nDim = dims->n.front(),
           kDim = dims->k.front();
  /// The roles of an operand's dims, or nothing when it indexes a dim twice,
  /// an expression, or the wrong set of dims.
  auto roles = [&](AffineMap map, unsigned inner) {
    SmallVector<DimRole> r;
    std::optional<SmallVector<DimRole>> none;
    for (AffineExpr e : map.getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d)
        return none;
      unsigned pos = d.getPosition();
      auto it = llvm::find(dims->batch, pos);
      if (it != dims->batch.end())
        r.push_back({Role::Batch, it - dims->batch.begin()});
      else if (pos == mDim)
        r.push_back({Role::M});
      else if (pos == nDim)
        r.push_back({Role::N});
      else if (pos == kDim)
        r.push_back({Role::K});
      else
        return none;
    }
    if (map.getNumResults() != dims->batch.size() + 2 ||
        cast<AffineDimExpr>(map.getResults().back()).getPosition() != inner)
      return none;
    return std::optional(r);
  };
  OpOperand *a = g.getDpsInputOperand(0), *b = g.getDpsInputOperand(1);
  if (!llvm::is_contained(g.getMatchingIndexingMap(a).getResults(),
                          getAffineDimExpr(mDim, ctx)))
    std::swap(a, b);
  AffineMap aMap = g.getMatchingIndexingMap(a),
            bMap = g.getMatchingIndexingMap(b);
  if (g.getMatchingIndexingMap(g.getDpsInitOperand(0)).getResults() !=
      ArrayRef(exprs({dims->batch, dims->m, dims->n})))
    return false;
  SmallVector<int64_t> loops = g.getStaticLoopRanges();
  if (dims->m.size() > 1) {
    // Several m dims: A exactly [batch..., m..., k], collapsed on the host.
    if (aMap.getResults() != ArrayRef(exprs({dims->batch, dims->m, dims->k})))
      return false;
    for (size_t i = 0; i < dims->batch.size(); ++i)
      p.aDims.push_back({Role::Batch, int64_t(i)});
    p.aDims.push_back({Role::M});
    p.aDims.push_back({Role::K});
  } else {
    std::optional<SmallVector<DimRole>> r = roles(aMap, kDim);
    if (!r)
      return false;
    p.aDims = *r;
  }
  std::optional<SmallVector<DimRole>> rb = roles(bMap, nDim);
  if (!rb) {
    rb = roles(bMap, kDim);
    p.bKMajor = true;
  }
  if (!rb)
    return false;
  p.bDims = *rb;
  p.op = g;
  p.a = a->get();
  p.b = b->get();
  p.c = g.getDpsInitOperand(0)->get();
  for (unsigned d : dims->batch)
    p.batchSizes.push_back(loops[d]);
  for (unsigned d : dims->m)
    p.mSizes.push_back(loops[d]);
  p.k = loops[kDim];
  p.n = loops[nDim];
  return true;
}

std::optional<Problem> analyze(Operation *operation) {
  Problem p;
  auto op = dyn_cast<linalg::LinalgOp>(operation);
  if (!op || !matchContraction(op, p))
    return std::nullopt;
  if (!identityStatic(p.a) || !identityStatic(p.b) || !identityStatic(p.c))
    return std::nullopt;
  auto at = cast<MemRefType>(p.a.getType());
  auto bt = cast<MemRefType>(p.b.getType());
  auto ct = cast<MemRefType>(p.c.getType());
  p.elem = at.getElementType();
  if (!(p.elem.isF16() || p.elem.isBF16()) || bt.getElementType() != p.elem ||
      !ct.getElementType().isF32())
    return std::nullopt;
  for (int64_t size : p.batchSizes)
    p.batch *= size;
  p.m = 1;
  for (int64_t size : p.mSizes)
    p.m *= size;
  // The tile maps' strides are multiples of 16 bytes; the stores write
  // pairs of columns.
  if (p.k % 8 != 0 || p.n % 8 != 0 || p.m < 1 || p.batch > 65535 ||
      (p.n + 63) / 64 > 65535 || (p.m + 127) / 128 > 65535)
    return std::nullopt;
  p.fill = fillBefore(p.op, p.c);
  if (!p.fill ||
      !isa<FloatAttr>(
          p.fill.getInputs()[0].getDefiningOp<arith::ConstantOp>().getValue()))
    return std::nullopt;
  std::tie(p.epilogue, p.epilogueIn) = epilogueAfter(p);
  return p;
}

struct Tile {
  int64_t bm, bn, stages;
  /// Its throughput relative to 256 x 128 on a problem that fills every
  /// wave (bench/hopper, 8192^3 fp16: 0.88x torch.matmul, 0.77x, 0.52x).
  double rate;
};

/// The tile of least estimated time: waves of kSMs blocks times the tile's
/// elements over its rate. Larger tiles load less per product; smaller ones
/// fill the last wave of a small problem. On bench/hopper's 20 shapes this
/// picks the fastest of the measured tiles or one within 6% of it.
Tile chooseTile(const Problem &p) {
  SmallVector<Tile> candidates;
  if (p.n > 64)
    candidates = {{256, 128, 4, 1.0}, {128, 128, 4, 0.88}, {128, 64, 6, 0.6}};
  else
    candidates = {{256, 64, 4, 0.75}, {128, 64, 6, 0.6}};
  auto cost = [&](const Tile &t) {
    int64_t tm = (p.m + t.bm - 1) / t.bm, tn = (p.n + t.bn - 1) / t.bn;
    int64_t waves = (tm * tn * p.batch + kSMs - 1) / kSMs;
    return double(waves) * double(t.bm * t.bn) / t.rate;
  };
  Tile best = candidates.front();
  for (const Tile &t : candidates)
    if (cost(t) < cost(best))
      best = t;
  return best;
}

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
  const int64_t aBytes = bm * kBK * kElemBytes, bBytes = bn * kBK * kElemBytes;
  const int64_t stageBytes = aBytes + bBytes, barOff = stages * stageBytes;
  // + 1024: the base is aligned up to the swizzle atom in the kernel.
  const int64_t smemBytes = barOff + 16 * stages + 1024;
  const int64_t nAcc = bn / 2;

  rewriter.setInsertionPoint(p.op);
  // Host: the tile maps. A's boxes are BM x 64 (K innermost); B's are
  // 64 (K) x 64 (N), bn / 64 of them per stage (N innermost), or bn (N) x 64
  // (K) when K is innermost; 1 along the batch dims.
  auto boxOf = [&](ArrayRef<DimRole> dims) {
    SmallVector<int64_t> box;
    for (DimRole d : dims)
      box.push_back(d.role == Role::Batch ? 1
                    : d.role == Role::M   ? bm
                    : d.role == Role::K   ? kBK
                    : p.bKMajor           ? bn
                                          : 64);
    return box;
  };
  SmallVector<int64_t> aBox = boxOf(p.aDims), bBox = boxOf(p.bDims);
  // Several m dims (contiguous in A): A read as [batch...,] M x K.
  Value aView = p.a;
  if (p.mSizes.size() > 1) {
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
  Value mapA = TileMapOp::create(rewriter, loc, mapType, ctx, aView,
                                 rewriter.getDenseI64ArrayAttr(aBox),
                                 rewriter.getI64IntegerAttr(128));
  Value mapB = TileMapOp::create(rewriter, loc, mapType, ctx, p.b,
                                 rewriter.getDenseI64ArrayAttr(bBox),
                                 rewriter.getI64IntegerAttr(128));
  auto cIndex = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value smemSize = arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI32Type(), smemBytes);
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, cIndex((p.n + bn - 1) / bn), cIndex((p.m + bm - 1) / bm),
      cIndex(p.batch), cIndex(threads), cIndex(1), cIndex(1), smemSize);
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
  Value bz = e.toI32(launch.getBlockIds().z);
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
  Value kTiles = e.i32((p.k + kBK - 1) / kBK);
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
    auto loop = scf::ForOp::create(b, loc, e.i32(0), kTiles, e.i32(1));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value kt = loop.getInductionVar();
    Value s = e.remu(kt, stages), round = e.divu(kt, stages);
    Value reuse = e.cmp(arith::CmpIPredicate::uge, kt, e.i32(stages));
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
    Value kc = e.mul(kt, kBK);
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
    copy(stageAddr, descA, p.aDims, m0);
    if (p.bKMajor)
      copy(e.add(stageAddr, aBytes), descB, p.bDims, n0);
    else
      for (int64_t j = 0; j < bn / 64; ++j)
        copy(e.add(stageAddr, aBytes + j * 64 * kBK * kElemBytes), descB,
             p.bDims, e.add(n0, 64 * j));
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
    Value fillValue = LLVM::ConstantOp::create(
        b, loc, f32,
        b.getF32FloatAttr(
            cast<FloatAttr>(fillConst.getValue()).getValueAsDouble()));
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
          hiB = p.bKMajor ? hiBits(16, 1024)
                          : hiBits(64 * kBK * kElemBytes, 1024);
    const int64_t bStep = p.bKMajor ? 32 : 16 * 128;
    auto descriptor = [&](Value addr, Value hi) {
      Value field = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, addr, e.i32(4)),
          e.i32(0x3FFF));
      Value wide = arith::ExtUIOp::create(b, loc, b.getI64Type(), field);
      return arith::OrIOp::create(b, loc, wide, hi).getResult();
    };
    Value aRowOff = e.mul(cw, 64 * kBK * kElemBytes);
    NVVM::WGMMATypes wt =
        p.elem.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
    auto loop = scf::ForOp::create(b, loc, e.i32(0), kTiles, e.i32(1),
                                   ValueRange{init});
    {
      OpBuilder::InsertionGuard lg(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kt = loop.getInductionVar();
      Value acc = loop.getRegionIterArgs()[0];
      Value s = e.remu(kt, stages);
      Value parity =
          arith::AndIOp::create(b, loc, e.divu(kt, stages), e.i32(1));
      NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier(s, false), parity,
                                            ticks);
      Value stageAddr = e.add(base, e.mul(s, stageBytes));
      Value aAddr = e.add(stageAddr, aRowOff);
      Value bAddr = e.add(stageAddr, aBytes);
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      auto shape = NVVM::MMAShapeAttr::get(context, 64, bn, 16);
      for (int64_t kk = 0; kk < kBK / 16; ++kk) {
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
      e.ifThen(e.cmp(arith::CmpIPredicate::ugt, kt, e.i32(0)), [&] {
        Value prev = e.remu(e.add(kt, stages - 1), stages);
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
    if (!p.epilogue) {
      Value cPtrIndex =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, p.c);
      cPtr = LLVM::IntToPtrOp::create(
          b, loc, ptrType,
          arith::IndexCastUIOp::create(b, loc, b.getI64Type(), cPtrIndex)
              .getResult());
    }
    Value mBound = e.i32(p.m), nBound = e.i32(p.n);
    Value batchOff = arith::MulIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), bz),
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
      linalg::GenericOp g = p.epilogue;
      SmallVector<Value> dims;
      for (Value i : bIdx)
        dims.push_back(
            arith::IndexCastUIOp::create(b, loc, b.getIndexType(), i));
      // Row r of the M x N view is (r / (m1 m2 ..), .., r % m_last) in C.
      Value rowIndex =
          arith::IndexCastUIOp::create(b, loc, b.getIndexType(), row);
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
      dims.push_back(
          arith::IndexCastUIOp::create(b, loc, b.getIndexType(), col));
      auto at = [&](AffineMap map) {
        SmallVector<Value> idx;
        for (AffineExpr r : map.getResults())
          idx.push_back(dims[cast<AffineDimExpr>(r).getPosition()]);
        return idx;
      };
      Block &gb = *g.getBody();
      IRMapping map;
      for (OpOperand *in : g.getDpsInputOperands()) {
        Value arg = gb.getArgument(in->getOperandNumber());
        if (in == p.epilogueIn)
          map.map(arg, v);
        else if (!isa<MemRefType>(in->get().getType()))
          map.map(arg, in->get());
        else
          map.map(arg,
                  memref::LoadOp::create(b, loc, in->get(),
                                         at(g.getMatchingIndexingMap(in))));
      }
      OpOperand *out = g.getDpsInitOperand(0);
      BlockArgument outArg = gb.getArgument(gb.getNumArguments() - 1);
      if (!outArg.use_empty())
        map.map(outArg,
                memref::LoadOp::create(b, loc, out->get(),
                                       at(g.getMatchingIndexingMap(out))));
      for (Operation &o : gb.without_terminator())
        b.clone(o, map);
      Value r = map.lookupOrDefault(gb.getTerminator()->getOperand(0));
      if (store)
        memref::StoreOp::create(b, loc, r, out->get(),
                                at(g.getMatchingIndexingMap(out)));
      return r;
    };
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
          if (p.epilogue && !outPtr) { // stored element by element
            for (int64_t x = 0; x < 2; ++x)
              storeEpilogue(accAt(x), row, e.add(col, x), /*store=*/true);
            return;
          }
          Type elem = p.epilogue ? outElem : f32;
          Value base = p.epilogue ? outPtr : cPtr;
          Value v = LLVM::UndefOp::create(b, loc, VectorType::get({2}, elem));
          for (int64_t x = 0; x < 2; ++x) {
            Value a = accAt(x);
            if (p.epilogue)
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
  rewriter.eraseOp(p.op);
  rewriter.eraseOp(p.fill);
  if (p.epilogue)
    rewriter.eraseOp(p.epilogue);
  return success();
}
