//===- WarpgroupMatch.cpp - The problems sm_90a contractions solve --------===//
//
// Recognizes what the warpgroup-MMA kernel (WarpgroupContraction.cpp)
// computes: matmul-like linalg ops (matmul, batch_matmul, ONNX MatMul's and
// attention's generics) and channels-last 2-D convolutions as implicit
// GEMMs of f16/bf16 (or, marked kiln.tf32, f32) operands after a constant
// fill of their f32 output, or of 8-bit integers (u8/s8 each, from the
// body's extensions) into i32, with an elementwise epilogue after them; and
// chooses each problem's tile.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupProblem.h"
#include "kiln/Target/GPU/PaddedCopy.h"

#include "kiln/Dialect/Kiln/IR/Precision.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::warpgroup;

namespace {

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
    // Zeros among the results: a per-channel operand of unit dims
    // ([1, 1, 1, C], as int8's requantization keeps its scales).
    AffineMap map = g.getMatchingIndexingMap(o);
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
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

/// What a multiply-add body multiplies: `integer` for 8-bit operands into
/// i32, each block argument's (0: the first input's, 1: the second's)
/// signedness from its extension.
struct MulAdd {
  bool integer = false;
  bool isSigned[2] = {false, false};
};

/// `v` as an 8-bit block argument of `body` extended to i32 (extsi: signed,
/// extui: unsigned): the argument's number, or -1.
int64_t extendedByte(Value v, Block &body, bool &isSigned) {
  Value in;
  if (auto ext = v.getDefiningOp<arith::ExtSIOp>())
    in = ext.getIn(), isSigned = true;
  else if (auto ext = v.getDefiningOp<arith::ExtUIOp>())
    in = ext.getIn(), isSigned = false;
  auto arg = dyn_cast_or_null<BlockArgument>(in);
  if (!arg || arg.getOwner() != &body || !arg.getType().isInteger(8))
    return -1;
  return arg.getArgNumber();
}

/// Whether `op`'s body is out + ext(a) * ext(b) in f32 (a, b f32 themselves
/// or extended from f16/bf16), or in i32 with a, b 8-bit integers each
/// extended by extsi or extui.
std::optional<MulAdd> matchMulAddBody(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!add || body.getOperations().size() > 6)
    return std::nullopt;
  Type sumType = add->getResult(0).getType();
  if (!(isa<arith::AddFOp>(add) && sumType.isF32()) &&
      !(isa<arith::AddIOp>(add) && sumType.isInteger(32)))
    return std::nullopt;
  Value out = body.getArgument(2);
  Value lhs = add->getOperand(0), rhs = add->getOperand(1);
  Value prod = lhs == out ? rhs : lhs;
  if ((lhs != out && rhs != out) || prod == out)
    return std::nullopt;
  MulAdd r;
  if (auto mul = prod.getDefiningOp<arith::MulFOp>()) {
    Value x = skipExt(mul.getLhs()), y = skipExt(mul.getRhs());
    if ((x == body.getArgument(0) && y == body.getArgument(1)) ||
        (x == body.getArgument(1) && y == body.getArgument(0)))
      return r;
    return std::nullopt;
  }
  auto mul = prod.getDefiningOp<arith::MulIOp>();
  if (!mul || !isa<arith::AddIOp>(add))
    return std::nullopt;
  bool sx = false, sy = false;
  int64_t x = extendedByte(mul.getLhs(), body, sx),
          y = extendedByte(mul.getRhs(), body, sy);
  if (!((x == 0 && y == 1) || (x == 1 && y == 0)))
    return std::nullopt;
  r.integer = true;
  r.isSigned[x] = sx;
  r.isSigned[y] = sy;
  return r;
}

/// The signedness of `p`'s operands A and B (8-bit operands of `body`,
/// read through operands `a` and `b`).
void setSignedness(Problem &p, const MulAdd &body, OpOperand *a, OpOperand *b) {
  p.aSigned = body.isSigned[a->getOperandNumber()];
  p.bSigned = body.isSigned[b->getOperandNumber()];
}

/// A matmul (linalg.matmul, batch_matmul, or a linalg.generic as ONNX's
/// MatMul and attention lower to): C[batch..., m..., n] += A * B where C is
/// indexed [batch..., m..., n]; A [batch..., m..., k] (several m dims,
/// contiguous, read as one M) or, with one m dim, any order of the batch
/// dims, m and k with k innermost; B any order of the batch dims, k and n
/// with n or k innermost.
bool matchContraction(linalg::LinalgOp g, Problem &p) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 ||
      g.getNumDpsInits() != 1)
    return false;
  std::optional<MulAdd> body = matchMulAddBody(g);
  if (!body)
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
  setSignedness(p, *body, a, b);
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

/// `e` as `d * stride + d' * dilation` (either order, coefficients of 1
/// omitted): the output dim `d`, the filter dim `d'` and the two constants.
/// The output dim is the one in `outDims`.
bool windowExpr(AffineExpr e, ArrayRef<unsigned> outDims, unsigned &out,
                unsigned &filter, int64_t &stride, int64_t &dilation) {
  auto sum = dyn_cast<AffineBinaryOpExpr>(e);
  if (!sum || sum.getKind() != AffineExprKind::Add)
    return false;
  auto term = [](AffineExpr t, unsigned &dim, int64_t &coeff) {
    if (auto d = dyn_cast<AffineDimExpr>(t)) {
      dim = d.getPosition();
      coeff = 1;
      return true;
    }
    auto mul = dyn_cast<AffineBinaryOpExpr>(t);
    if (!mul || mul.getKind() != AffineExprKind::Mul)
      return false;
    auto d = dyn_cast<AffineDimExpr>(mul.getLHS());
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    if (!d || !c || c.getValue() < 1)
      return false;
    dim = d.getPosition();
    coeff = c.getValue();
    return true;
  };
  unsigned d0, d1;
  int64_t c0, c1;
  if (!term(sum.getLHS(), d0, c0) || !term(sum.getRHS(), d1, c1))
    return false;
  if (!llvm::is_contained(outDims, d0)) {
    std::swap(d0, d1);
    std::swap(c0, c1);
  }
  if (!llvm::is_contained(outDims, d0) || llvm::is_contained(outDims, d1))
    return false;
  out = d0;
  filter = d1;
  stride = c0;
  dilation = c1;
  return true;
}

/// A read of a zero-padded copy (a buffer filled with zeros, then a copy of
/// `src` into its [0, ph, pw, 0] subview, all in the op's block before it)
/// reads `src` through a window padded by (ph, pw) instead: the fill and
/// the copy go away with the op.
void foldPaddedCopy(Problem &p, Convolution &conv) {
  std::optional<PaddedCopy> pc = matchPaddedCopy(p.a, p.op);
  if (!pc)
    return;
  ArrayRef<int64_t> offsets = pc->offsets;
  auto srcType = cast<MemRefType>(pc->src.getType());
  auto paddedType = cast<MemRefType>(p.a.getType());
  if (offsets.size() != 4 || offsets[0] != 0 || offsets[3] != 0 ||
      srcType.getDimSize(0) != paddedType.getDimSize(0) ||
      srcType.getDimSize(3) != paddedType.getDimSize(3))
    return;
  // The window's corners are 8-bit signed for 4-D im2col maps.
  if (offsets[1] > 127 || offsets[2] > 127)
    return;
  for (int i = 0; i < 2; ++i) {
    conv.pad[i] = offsets[1 + i];
    conv.in[i] = srcType.getDimSize(1 + i);
  }
  p.a = pc->src;
  conv.padOps = {pc->fill, pc->view, pc->copy};
}

/// A channels-last 2-D convolution (Convolution): C indexed [n, oh, ow, f]
/// by four parallel loops, A [n, oh * s + kh * d, ow * s + kw * d, c] and B
/// [kh, kw, c, f] or [f, kh, kw, c] over the three reduction loops.
bool matchConvolution(linalg::LinalgOp g, Problem &p) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 ||
      g.getNumDpsInits() != 1 || g.getNumLoops() != 7 ||
      g.getNumParallelLoops() != 4)
    return false;
  std::optional<MulAdd> body = matchMulAddBody(g);
  if (!body)
    return false;
  OpOperand *a = g.getDpsInputOperand(0), *b = g.getDpsInputOperand(1);
  if (g.getMatchingIndexingMap(a).getNumResults() != 4 ||
      isa<AffineDimExpr>(g.getMatchingIndexingMap(a).getResult(1)))
    std::swap(a, b);
  AffineMap aMap = g.getMatchingIndexingMap(a),
            bMap = g.getMatchingIndexingMap(b),
            cMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (aMap.getNumResults() != 4 || bMap.getNumResults() != 4 ||
      !cMap.isProjectedPermutation() || cMap.getNumResults() != 4)
    return false;
  SmallVector<unsigned> outDims;
  for (AffineExpr e : cMap.getResults())
    outDims.push_back(cast<AffineDimExpr>(e).getPosition());
  auto dimAt = [](AffineMap map, unsigned i) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)))
      return d.getPosition();
    return std::nullopt;
  };
  std::optional<unsigned> aN = dimAt(aMap, 0), aC = dimAt(aMap, 3);
  Convolution conv;
  unsigned oh, ow, kh, kw;
  if (!aN || !aC || *aN != outDims[0] ||
      !windowExpr(aMap.getResult(1), outDims, oh, kh, conv.strides[0],
                  conv.dilations[0]) ||
      !windowExpr(aMap.getResult(2), outDims, ow, kw, conv.strides[1],
                  conv.dilations[1]) ||
      oh != outDims[1] || ow != outDims[2])
    return false;
  // Every loop but the output's is a reduction read by A and B.
  SmallVector<unsigned> hwcf = {kh, kw, *aC, outDims[3]};
  SmallVector<unsigned> fhwc = {outDims[3], kh, kw, *aC};
  SmallVector<unsigned> bDims;
  for (unsigned i = 0; i < 4; ++i) {
    std::optional<unsigned> d = dimAt(bMap, i);
    if (!d)
      return false;
    bDims.push_back(*d);
  }
  if (bDims == fhwc)
    p.bKMajor = true;
  else if (bDims != hwcf)
    return false;
  if (llvm::is_contained(outDims, *aC) || kh == kw || kh == *aC || kw == *aC)
    return false;
  SmallVector<int64_t> loops = g.getStaticLoopRanges();
  conv.filter[0] = loops[kh];
  conv.filter[1] = loops[kw];
  conv.out[0] = loops[oh];
  conv.out[1] = loops[ow];
  conv.channels = loops[*aC];
  auto at = dyn_cast<MemRefType>(a->get().getType());
  if (!at || !at.hasStaticShape())
    return false;
  conv.in[0] = at.getDimSize(1);
  conv.in[1] = at.getDimSize(2);
  for (int i = 0; i < 2; ++i)
    if (conv.in[i] < (conv.out[i] - 1) * conv.strides[i] +
                         (conv.filter[i] - 1) * conv.dilations[i] + 1 ||
        conv.strides[i] > 8)
      return false;
  setSignedness(p, *body, a, b);
  p.op = g;
  p.a = a->get();
  p.b = b->get();
  p.c = g.getDpsInitOperand(0)->get();
  foldPaddedCopy(p, conv);
  // 4-D im2col maps hold 8-bit window corners and filter offsets.
  for (int i = 0; i < 2; ++i) {
    int64_t upper =
        (conv.out[i] - 1) * conv.strides[i] - conv.pad[i] - (conv.in[i] - 1);
    if (upper < -128 || upper > 127 ||
        (conv.filter[i] - 1) * conv.dilations[i] > 255)
      return false;
  }
  p.mSizes = {loops[outDims[0]], conv.out[0], conv.out[1]};
  p.n = loops[outDims[3]];
  // K as the copies see it: the channels, read 64 at a time per tap (at
  // least one full slice: the im2col copies' boxes do not exceed them).
  p.k = conv.channels;
  p.conv = conv;
  return true;
}

} // namespace

std::optional<Problem> warpgroup::analyze(Operation *operation) {
  Problem p;
  auto op = dyn_cast<linalg::LinalgOp>(operation);
  if (!op || !(matchContraction(op, p) || matchConvolution(op, p)))
    return std::nullopt;
  if (!identityStatic(p.a) || !identityStatic(p.b) || !identityStatic(p.c))
    return std::nullopt;
  auto at = cast<MemRefType>(p.a.getType());
  auto bt = cast<MemRefType>(p.b.getType());
  auto ct = cast<MemRefType>(p.c.getType());
  p.elem = at.getElementType();
  bool tf32 = p.elem.isF32() && op->hasAttr(kTF32Attr);
  // 8-bit operands come from an integer body (matchMulAddBody), which
  // accumulates in i32.
  bool bytes = p.elem.isInteger(8);
  p.acc = ct.getElementType();
  if (!(p.elem.isF16() || p.elem.isBF16() || tf32 || bytes) ||
      bt.getElementType() != p.elem ||
      !(bytes ? p.acc.isInteger(32) : p.acc.isF32()))
    return std::nullopt;
  // Each K step of a convolution copies a slice of bk channels of one
  // filter tap; fewer channels than that are read as the copies'
  // out-of-bounds zeros (A's im2col box and B's box both pass the
  // channels' end), which multiply into nothing. 8-bit convolutions of at
  // most 64 channels take steps of 64 bytes (64-byte swizzle), so that
  // half of each stage is not zeros. At least half a slice: below that
  // most of the instruction's work would be zeros (a stem's three channels
  // take SmallChannelConv's im2col GEMM instead).
  if (p.conv && bytes && p.conv->channels <= 64)
    p.stepBytes = 64;
  if (p.conv && 2 * p.conv->channels < p.bk())
    return std::nullopt;
  // wgmma reads TF32 and 8-bit operands K-major only: an N-major B is
  // transposed first, when its K and N are its two innermost dims (or it is
  // HWCF).
  if ((tf32 || bytes) && !p.bKMajor) {
    size_t r = p.bDims.size();
    if (!p.conv && (r < 2 || p.bDims[r - 2].role != Role::K))
      return std::nullopt;
    p.transposeB = true;
  }
  for (int64_t size : p.batchSizes)
    p.batch *= size;
  p.m = 1;
  for (int64_t size : p.mSizes)
    p.m *= size;
  // The tile maps' strides are multiples of 16 bytes (K of 8 elements, 16
  // 8-bit ones); the stores write pairs of columns.
  if (p.k % (bytes ? 16 : 8) != 0 || p.n % 8 != 0 || p.m < 1 ||
      p.batch > 65535 || (p.n + 63) / 64 > 65535 || (p.m + 127) / 128 > 65535)
    return std::nullopt;
  p.fill = fillBefore(p.op, p.c);
  if (!p.fill)
    return std::nullopt;
  Attribute fill =
      p.fill.getInputs()[0].getDefiningOp<arith::ConstantOp>().getValue();
  if (bytes ? !isa<IntegerAttr>(fill) : !isa<FloatAttr>(fill))
    return std::nullopt;
  std::tie(p.epilogue, p.epilogueIn) = epilogueAfter(p);
  return p;
}

bool Problem::transcendentalEpilogue() const {
  if (!epilogue)
    return false;
  linalg::GenericOp g = epilogue;
  return llvm::any_of(g.getBody()->getOperations(), [](Operation &op) {
    return isa<math::ErfOp, math::ExpOp, math::Exp2Op, math::ExpM1Op,
               math::TanhOp, math::LogOp, math::Log1pOp, math::PowFOp>(op);
  });
}

bool Problem::epilogueBound() const {
  if (!integer())
    return false;
  return kSteps() <= kShortKSteps || transcendentalEpilogue();
}

bool Problem::shortK() const {
  return !conv && batch == 1 && elemBytes() <= 2 && k <= kShortK &&
         !epilogueBound() && !transcendentalEpilogue();
}

Value Problem::output() const {
  if (!epilogue)
    return c;
  return linalg::GenericOp(epilogue).getDpsInitOperand(0)->get();
}

TypedAttr Problem::fillValue() const {
  Attribute v = linalg::FillOp(fill)
                    .getInputs()[0]
                    .getDefiningOp<arith::ConstantOp>()
                    .getValue();
  Builder b(acc.getContext());
  if (auto i = dyn_cast<IntegerAttr>(v))
    return b.getIntegerAttr(acc, i.getValue().sextOrTrunc(32));
  return b.getF32FloatAttr(cast<FloatAttr>(v).getValueAsDouble());
}

ArrayRef<Tile> warpgroup::tileTable() {
  // 192 x 128 (three consumer warpgroups): 22 x 6 = 132 tiles of BERT-base's
  // N = 768 products at batch 32 x 128, one wave, where 256 x 128 gives 96.
  // Its rate, 0.86, is what two H100 runs of 2026-12-05 give alike: 8192^3
  // fp16 (21 waves of it against 16 of 256 x 128) 0.88x the default build,
  // BERT-base b32's FFN1 (4 waves against 3) 62.5 us against 53.9; it was
  // then faster where its waves are fuller: BERT's QKV 32.0 us against 36.6
  // (128 x 128), FFN2 33.0 against 38.1, the output projection 14.6 against
  // 16.5 (docs/benchmarks.md). On u8 x s8 matmuls (bench/hopper/int8_gemm.py,
  // an H100, 2026-12-06) BERT's N = 768 products take 0.81x (FFN2) and
  // 0.83x (output projection) the kernel time of 256 x 128, its QKV (N =
  // 2304) 0.90x that of 128 x 128, and FFN1 with GELU 1.09x that of 256 x
  // 128, which the rate keeps. On u8 x s8 convolutions (ResNet-50 b64 int8,
  // an H100, 2026-12-06, docs/gpu-results/int8-networks-resnet-*-06i):
  // layer 3's 1x1 of K = 1024 (12544 x 256, 132 tiles of 192 rows: one
  // full wave, against 98 of 256) 13.0 us against 14.8, its 3x3s 17.3
  // against 20.3. Not measured on 16-bit convolutions or TF32.
  // 128 x 256, 128 x 192 and 192 x 192 (two or three consumer warpgroups of
  // m64n256 or m64n192 wgmmas: more columns per instruction, so fewer
  // shared-memory reads of A per product) are not measured yet: --gpu-tiles
  // only. So are the tiles "/2" whose 3 or 4 stages take 96 KiB, two blocks
  // to a multiprocessor: one block's epilogue (the staged stores, GELU)
  // runs while the other multiplies; but 128 x 128 /2 is measured on 8-bit
  // products of one or two K steps with a requantizing epilogue and a
  // uint8 residual (ResNet-50 b64's block ends; bench/hopper/int8_gemm.py,
  // an H100, 2026-12-06, docs/gpu-results/int8-gemm-block-ends-*-06h):
  // 200704 x 256 x 64 88.0 us against 110.5 (256 x 128), 50176 x 512 x
  // 128 48.0 against 60.7, 12544 x 1024 x 256 27.6 against 33.2, 0.80x to
  // 0.83x, where 128 x 128 with one block took 1.16x-1.19x, 256 x 64 1.10x-
  // 1.16x, persistent 128 x 128 1.03x-1.11x; 3136 x 2048 x 512 (four K
  // steps, dequantized to half) 0.93x, while BERT's products of 6 to 24 K
  // steps took 1.06x-1.17x, except FFN1 with GELU and its requantization
  // in the epilogue: 0.95x (-tiles2-*-06h) and 41.9 against 45.7 us (0.92x,
  // int8-gemm-gelu-tiles-h100-2026-12-06e): rate 1.25 on epilogue-bound
  // 8-bit products (Problem::epilogueBound: at most kShortKSteps = 4 K
  // steps, or a transcendental function in the epilogue). ResNet-50 b64
  // int8 with it: 1.733 ms against 1.865 without the /2 tiles.
  // 128 x 128 /pingpong (persistent; two consumer warpgroups taking whole
  // tiles in turns, each two m64n128 row blocks) took 0.94x the kernel time
  // of 128 x 128 /2 on BERT-base b32's int8 FFN1 with GELU and 0.92x (int8)
  // and 0.87x (fp16) of 192 x 128 on its QKV, but 1.14x-1.39x on its
  // N = 768 products and 1.01x on fp16 FFN1 (an H100, 2026-12-07,
  // docs/gpu-results/int8-gemm-pingpong-h100-2026-12-06o.json): too little
  // for the cost model to take it, --gpu-tiles only. In the network
  // (BERT-base b32, an H100, 2026-12-07, docs/gpu-results/
  // int8-networks-bert-pingpong-h100-2026-12-07g) QKV took 22.1 us against
  // 24.5 in int8 and 30.3 against 33.5 in fp16, the int8 run 0.963x: rate
  // 1.0 on short-K matmuls (Problem::shortK: K <= 768, 16- or 8-bit, one
  // batch, no transcendental epilogue, not epilogue-bound) of at least two
  // tiles a block, where it takes
  // BERT's QKV (5 waves of 128 x 128 against 3 of 192 x 128 at 0.86) and
  // not its N = 768 products (2 waves against 1).
  // 1.0 ties with 256 x 128 wherever both fill their waves (four times the
  // tiles); the order keeps 256 x 128 there.
  // The multicast tiles (clusters of two blocks loading the larger operand
  // tile once: 192 x 128 reads 30% fewer bytes from L2) gave the same
  // results but were slower on BERT-base b32 (H200, 2026-12-07, releases
  // at cluster scope, docs/gpu-results/int8-networks-bert-h200-2026-12-07c):
  // int8 1.754 ms (192 x 128), 1.717 (128 x 256) against 1.278 for the
  // cost model's tiles, QKV 32.4 us against 23.3, FFN2 32.7 against 19.4;
  // fp16 2.64-2.76 ms against 1.66. Without the end's cluster barrier (a
  // producer tail instead; an H100, 2026-12-07, docs/gpu-results/
  // int8-gemm-multicast-tail-h100-2026-12-07e) 192 x 128 multicast took
  // 1.03x the kernel time of 192 x 128 on BERT's int8 QKV and FFN2, 1.06x
  // on FFN1 with GELU (against 128 x 128 /2), 0.87x on the output
  // projection, 0.99x-1.02x in fp16; BERT-base b32 int8 1.037x the
  // default build: --gpu-tiles only.
  // The order breaks ties of the cost model.
  static const Tile table[] = {{256, 128, 4, 1.0},
                               {128, 128, 4, 0.88},
                               {256, 64, 4, 0.75},
                               {128, 64, 6, 0.6},
                               {192, 128, 4, 0.86, /*matmulsOnly=*/true},
                               {128, 256, 4, 0.0},
                               {128, 192, 5, 0.0},
                               {192, 192, 4, 0.0},
                               {128, 128, 3, 0.0, false, /*blocksPerSM=*/2,
                                /*epilogueBoundRate=*/1.25},
                               {128, 64, 4, 0.0, false, /*blocksPerSM=*/2},
                               {128, 128, 4, 0.0, false, 1, 0.0,
                                /*shortKRate=*/1.0, /*pingPong=*/true},
                               {192, 128, 4, 0.0, true, 1, 0.0, 0.0, false,
                                /*multicast=*/true},
                               {256, 128, 4, 0.0, false, 1, 0.0, 0.0, false,
                                /*multicast=*/true},
                               {128, 256, 4, 0.0, false, 1, 0.0, 0.0, false,
                                /*multicast=*/true},
                               {128, 128, 4, 0.0, false, 1, 0.0, 0.0, false,
                                /*multicast=*/true}};
  return table;
}

/// The tile of least estimated time: waves of kSMs blocks times the tile's
/// elements over its rate. Larger tiles load less per product; smaller ones
/// fill the last wave of a small problem. On bench/hopper's 20 shapes this
/// picks the fastest of the measured tiles or one within 6% of it.
Tile warpgroup::chooseTile(const Problem &p, const ContractionTiles &allowed,
                           function_ref<bool(const Tile &)> accept) {
  const bool epilogueBound = p.epilogueBound();
  const bool shortK = p.shortK();
  auto tilesOf = [&](const Tile &t) {
    return ((p.m + t.bm - 1) / t.bm) * ((p.n + t.bn - 1) / t.bn) * p.batch;
  };
  auto rateOf = [&](const Tile &t) {
    if (epilogueBound && t.epilogueBoundRate > 0)
      return t.epilogueBoundRate;
    // (A persistent tile of fewer than two tiles a block has nothing to
    // overlap.)
    if (shortK && t.shortKRate > 0 && tilesOf(t) >= 2 * kSMs)
      return t.shortKRate;
    return t.rate;
  };
  SmallVector<Tile> candidates;
  for (const Tile &t : tileTable()) {
    if (accept && !accept(t))
      continue;
    if (!allowed.empty()) {
      if (llvm::is_contained(allowed, t.key()))
        candidates.push_back(t);
      continue;
    }
    // Measured tiles only (for this kind of problem); N of at most 64 takes
    // 64-column tiles, a wider N the others but 256 x 64.
    bool narrow = t.bn == 64 && t.bm == 256;
    bool measured =
        rateOf(t) > 0 &&
        (!t.matmulsOnly || (p.conv ? p.elemBytes() == 1 : p.elemBytes() <= 2));
    if (measured && (p.n > 64 ? !narrow : t.bn == 64))
      candidates.push_back(t);
  }
  if (candidates.empty()) // none of `allowed` is a tile of the kernel's
    return allowed.empty() ? chooseTile(p) : chooseTile(p, {}, accept);
  auto cost = [&](const Tile &t) {
    int64_t tm = (p.m + t.bm - 1) / t.bm, tn = (p.n + t.bn - 1) / t.bn;
    int64_t slots = kSMs * t.blocksPerSM;
    int64_t waves = (tm * tn * p.batch + slots - 1) / slots;
    return double(waves) * double(t.bm * t.bn * t.blocksPerSM) /
           (rateOf(t) > 0 ? rateOf(t) : 1.0);
  };
  Tile best = candidates.front();
  for (const Tile &t : candidates)
    if (cost(t) < cost(best))
      best = t;
  return best;
}
