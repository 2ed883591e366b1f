//===- SmallChannelConv.cpp - Few-channel convolutions as im2col GEMMs ----===//
//
// SmallChannelConv (Lowering.h): a 2-D convolution whose input has fewer
// channels than a tensor-core tile reads per tap (a network's stem: RGB
// images, 3 channels) cannot be staged per tap by the tiled or warpgroup
// kernels, and as a plain reduction it runs one thread per output. It
// becomes an explicit GEMM: the windows are copied into an im2col buffer
// [pixels..., K'] (K = KH * KW * C padded with zeros to a multiple of 8),
// the filter into [K', F] (zeros past K; [F, K'] for 8-bit integers, K
// padded to 16, which warpgroup MMA reads K-major only), and the
// contraction of the two is a matmul the tensor-core lowerings take. The output, its fill and its
// epilogue are the convolution's own.
//
// The im2col copy reads what the convolution's input was made from: through
// a padded copy (the padding as bounds checks) and through the elementwise
// op that wrote that copy's source (a network's NCHW f32 image cast to NHWC
// half is a permuted load and the cast), so those launches and their
// buffers go away. Where the window's rows of a row of output pixels fit
// shared memory, a block stages them there (coalesced reads of the input's
// rows) and writes the row's im2col values in 16-byte stores.
//
//===----------------------------------------------------------------------===//

#include "SmallChannelConvRows.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {

std::optional<ConvDims> matchConv(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 ||
      g.getNumDpsInits() != 1 || g.getNumLoops() != 7 ||
      g.getNumParallelLoops() != 4 || g.getNumReductionLoops() != 3)
    return std::nullopt;
  ConvDims c;
  c.a = g.getDpsInputOperand(0);
  c.b = g.getDpsInputOperand(1);
  auto isWindowed = [&](OpOperand *o) {
    return llvm::any_of(g.getMatchingIndexingMap(o).getResults(),
                        [](AffineExpr e) { return !isa<AffineDimExpr>(e); });
  };
  if (!isWindowed(c.a))
    std::swap(c.a, c.b);
  AffineMap aMap = g.getMatchingIndexingMap(c.a);
  AffineMap bMap = g.getMatchingIndexingMap(c.b);
  AffineMap cMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (!isWindowed(c.a) || isWindowed(c.b) || !bMap.isProjectedPermutation() ||
      !cMap.isProjectedPermutation() || cMap.getNumResults() != 4)
    return std::nullopt;
  // The body: out + a * b (in f32 from the operands' extensions or not), or
  // its integer form on the operands' extensions (an int8 product's i32
  // sums; zero points subtracted in the body would make the zero padding
  // past K count, so not those).
  Block &body = *g.getBlock();
  Operation *add = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
      body.getNumArguments() != 3)
    return std::nullopt;
  Value acc = body.getArgument(2);
  Value lhs = add->getOperand(0), rhs = add->getOperand(1);
  Value prod = lhs == acc ? rhs : lhs;
  if (lhs != acc && rhs != acc)
    return std::nullopt;
  if (isa<arith::AddFOp>(add) && !prod.getDefiningOp<arith::MulFOp>())
    return std::nullopt;
  if (isa<arith::AddIOp>(add)) {
    auto mul = prod.getDefiningOp<arith::MulIOp>();
    auto extendedArg = [&](Value v) {
      if (isa_and_nonnull<arith::ExtSIOp, arith::ExtUIOp>(v.getDefiningOp()))
        v = v.getDefiningOp()->getOperand(0);
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &body && arg.getArgNumber() < 2;
    };
    if (!mul || !extendedArg(mul.getLhs()) || !extendedArg(mul.getRhs()))
      return std::nullopt;
  }
  SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
  SmallVector<unsigned> windowed;
  for (unsigned d = 0; d < 7; ++d) {
    bool inA = aMap.isFunctionOfDim(d), inB = bMap.isFunctionOfDim(d);
    if (iters[d] == utils::IteratorType::parallel) {
      if (inA && !inB)
        c.pixels.push_back(d);
      else if (inB && !inA)
        c.filters = d;
      else
        return std::nullopt;
      continue;
    }
    if (!inA || !inB)
      return std::nullopt;
    // A plain result of A: the channels; inside an expression: the window.
    bool plain = llvm::any_of(aMap.getResults(), [&](AffineExpr e) {
      auto de = dyn_cast<AffineDimExpr>(e);
      return de && de.getPosition() == d;
    });
    if (plain)
      c.channels = d;
    else
      windowed.push_back(d);
  }
  if (c.pixels.size() != 3 || windowed.size() != 2)
    return std::nullopt;
  // kh is the one in the earlier result of A.
  auto firstResult = [&](unsigned d) {
    for (auto [i, e] : llvm::enumerate(aMap.getResults()))
      if (e.isFunctionOfDim(d))
        return (int64_t)i;
    return (int64_t)-1;
  };
  c.kh = windowed[0], c.kw = windowed[1];
  if (firstResult(c.kh) > firstResult(c.kw))
    std::swap(c.kh, c.kw);
  if (firstResult(c.kh) == firstResult(c.kw))
    return std::nullopt;
  return c;
}

} // namespace

int64_t SmallChannelConv::run(Block &block, Value ctx) {
  SmallVector<linalg::GenericOp> convs;
  block.walk([&](linalg::GenericOp g) { convs.push_back(g); });
  int64_t rewritten = 0;
  for (linalg::GenericOp g : convs)
    rewritten += succeeded(rewrite(g, ctx));
  return rewritten;
}

LogicalResult SmallChannelConv::rewrite(linalg::GenericOp g, Value ctx) {
  std::optional<ConvDims> c = matchConv(g);
  if (!c)
    return failure();
  SmallVector<int64_t> loops = g.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return failure();
  Type aElem = getElementTypeOrSelf(c->a->get().getType());
  Type bElem = getElementTypeOrSelf(c->b->get().getType());
  // 8-bit products: K padded to the integer instructions' 16 and the
  // filters K-major ([F, K']: what 8-bit matrix instructions that read
  // shared memory take).
  bool bytes8 = aElem.isInteger(8);
  if (aElem != bElem || !(aElem.isF16() || aElem.isBF16() || bytes8))
    return failure();
  int64_t C = loops[c->channels], KH = loops[c->kh], KW = loops[c->kw];
  int64_t bytes = aElem.getIntOrFloatBitWidth() / 8;
  // The copy by rows where they fit shared memory (reading through the
  // padded copy and the cast before it); packed where a pixel's channels
  // are one 32-bit word and adjacent taps adjacent columns, its window rows
  // then KWp taps long (emitPackedRows).
  std::optional<RowPlan> plan = planRows(g, *c, loops, bytes, kMaxRowBytes);
  const bool packed = plan && bytes8 && C == 4 && plan->kwStep == 1;
  const int64_t KWp = packed ? (KW + 3) / 4 * 4 : KW;
  int64_t align = bytes8 ? 16 : 8;
  int64_t K = KH * KWp * C, Kp = (K + align - 1) / align * align;
  // Few channels (what a tap's tile would read mostly as padding), a short
  // K (the whole window fits a few K steps), and an im2col buffer of at
  // most 1 GiB.
  int64_t pixels = 1;
  for (unsigned d : c->pixels)
    pixels *= loops[d];
  if (C >= kMaxChannels || C % 8 == 0 || Kp > kMaxK ||
      pixels * Kp * bytes > (int64_t(1) << 30) || loops[c->filters] % 8 != 0)
    return failure();

  Location loc = g.getLoc();
  MLIRContext *context = g.getContext();
  // The buffers go to the kernel's entry block (static shapes: the arena).
  auto makeBuffer = [&](ArrayRef<int64_t> shape, Type elem) {
    OpBuilder::InsertionGuard ig(rewriter);
    Block *entry = &g->getParentOfType<func::FuncOp>().getBody().front();
    rewriter.setInsertionPointToStart(entry);
    return BufferOp::create(rewriter, loc, MemRefType::get(shape, elem), ctx,
                            ValueRange{}, IntegerAttr())
        .getBuffer();
  };
  SmallVector<int64_t> colShape;
  for (unsigned d : c->pixels)
    colShape.push_back(loops[d]);
  colShape.push_back(Kp);
  Value cols = makeBuffer(colShape, aElem);
  int64_t F = loops[c->filters];
  Value filters =
      bytes8 ? makeBuffer({F, Kp}, bElem) : makeBuffer({Kp, F}, bElem);

  // The new ops go before the output's fill (the matmul stays right after
  // it), else before the convolution.
  Operation *anchor = g;
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(g->getPrevNode());
      fill && fill.getDpsInitOperand(0)->get() == g.getDpsInitOperand(0)->get())
    anchor = fill;
  rewriter.setInsertionPoint(anchor);

  // A point of the convolution's loops from (pixels or filter, k): the
  // window position and channel of k (clamped to K - 1 and to the window's
  // last tap; the value is replaced by zero past K and at the taps KW ..
  // KWp - 1 of a packed layout).
  auto windowPoint = [&](OpBuilder &b, Location l, Value k,
                         SmallVectorImpl<Value> &pt) {
    auto cst = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, l, v).getResult();
    };
    Value kk = arith::MinUIOp::create(b, l, k, cst(K - 1));
    pt[c->kh] = arith::DivUIOp::create(b, l, kk, cst(KWp * C));
    Value kw = arith::RemUIOp::create(
        b, l, arith::DivUIOp::create(b, l, kk, cst(C)), cst(KWp));
    pt[c->channels] = arith::RemUIOp::create(b, l, kk, cst(C));
    Value inRange =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, k, cst(K));
    if (KWp == KW) {
      pt[c->kw] = kw;
      return inRange;
    }
    pt[c->kw] = arith::MinUIOp::create(b, l, kw, cst(KW - 1));
    return arith::AndIOp::create(
               b, l, inRange,
               arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, kw,
                                     cst(KW)))
        .getResult();
  };
  auto loadAt = [&](OpBuilder &b, Location l, OpOperand *operand,
                    ArrayRef<Value> pt, Value inRange) -> Value {
    AffineMap map = g.getMatchingIndexingMap(operand);
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults())
      idx.push_back(affine::AffineApplyOp::create(
          b, l, AffineMap::get(map.getNumDims(), 0, e), pt));
    Value v = memref::LoadOp::create(b, l, operand->get(), idx);
    Value zero = arith::ConstantOp::create(b, l, v.getType(),
                                           b.getZeroAttr(v.getType()));
    return arith::SelectOp::create(b, l, inRange, v, zero);
  };
  auto parallel = [&](int64_t n) {
    return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
  };
  std::optional<Source> src;
  if (plan) {
    src = traceSource(c->a, g);
    OpBuilder::InsertionGuard ig(rewriter);
    if (packed)
      emitPackedRows(rewriter, info, loc, g, *c, loops, *plan, *src, KWp, Kp,
                     cols, kRowThreads);
    else
      emitRows(rewriter, info, loc, g, *c, loops, *plan, *src, K, Kp, cols,
               kRowThreads);
  }
  // Else: cols[pixels..., k] = A at the pixels and k's window position (zero
  // past K), by a launch of its own: thread x of a block is k (its window
  // position computed once), thread y a pixel, and each thread copies k of
  // kPixelsPerThread pixels `py` apart. Adjacent threads write adjacent k
  // (whole rows of cols) and read a window row's adjacent values. (As a
  // parallel loop of one element per thread, ResNet-50's stem at batch 64
  // spent 0.47 ms on an H100 on k's and the pixel's divisions, 244 MB; one
  // thread per pixel and window row, 1.36 ms: its stores 42 bytes apart.)
  if (!plan) {
    OpBuilder::InsertionGuard ig(rewriter);
    OpBuilder &b = rewriter;
    auto idx = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };
    const int64_t kx = (Kp + 31) / 32 * 32;
    const int64_t py = std::max<int64_t>(1, kMaxIm2colThreads / kx);
    const int64_t perBlock = py * kPixelsPerThread;
    auto launch =
        gpu::LaunchOp::create(b, loc, idx((pixels + perBlock - 1) / perBlock),
                              idx(1), idx(1), idx(kx), idx(py), idx(1));
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto term = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(term);
    auto guarded = [&](Value cond, function_ref<void()> fn) {
      auto op = scf::IfOp::create(b, loc, TypeRange{}, cond,
                                  /*withElseRegion=*/false);
      OpBuilder::InsertionGuard gg(b);
      b.setInsertionPoint(op.thenBlock()->getTerminator());
      fn();
    };
    Value k = launch.getThreadIds().x;
    guarded(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k, idx(Kp)),
        [&] {
          SmallVector<Value> pt(7);
          pt[c->filters] = idx(0);
          Value inRange = windowPoint(b, loc, k, pt);
          Value first = arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                    idx(perBlock)),
              launch.getThreadIds().y);
          for (int64_t i = 0; i < kPixelsPerThread; ++i) {
            Value pixel = arith::AddIOp::create(b, loc, first, idx(i * py));
            guarded(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          pixel, idx(pixels)),
                    [&] {
                      // The pixel's indices, the last fastest.
                      SmallVector<Value> at(3);
                      Value rest = pixel;
                      for (int64_t j = 2; j >= 0; --j) {
                        Value size = idx(loops[c->pixels[j]]);
                        at[j] = j ? arith::RemUIOp::create(b, loc, rest, size)
                                        .getResult()
                                  : rest;
                        if (j)
                          rest = arith::DivUIOp::create(b, loc, rest, size);
                        pt[c->pixels[j]] = at[j];
                      }
                      Value v = loadAt(b, loc, c->a, pt, inRange);
                      memref::StoreOp::create(
                          b, loc, v, cols, ValueRange{at[0], at[1], at[2], k});
                    });
          }
        });
  }
  // filters[k, f] (8-bit: filters[f, k]) = B at k's window position and f.
  int64_t kPos = bytes8 ? 1 : 0, fPos = 1 - kPos;
  linalg::GenericOp::create(
      rewriter, loc, TypeRange{}, ValueRange{}, ValueRange{filters},
      ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(2, context)},
      parallel(2), [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value> pt(7);
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        for (unsigned d : c->pixels)
          pt[d] = zero;
        pt[c->filters] = linalg::IndexOp::create(b, l, fPos);
        Value inRange =
            windowPoint(b, l, linalg::IndexOp::create(b, l, kPos), pt);
        linalg::YieldOp::create(b, l, loadAt(b, l, c->b, pt, inRange));
      });
  // The matmul over (pixels..., f, k) into the convolution's output.
  rewriter.setInsertionPoint(g);
  SmallVector<unsigned> newDim(7, 0);
  for (auto [i, d] : llvm::enumerate(c->pixels))
    newDim[d] = i;
  newDim[c->filters] = 3;
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, context); };
  AffineMap colsMap =
      AffineMap::get(5, 0, {dim(0), dim(1), dim(2), dim(4)}, context);
  AffineMap filtersMap = bytes8
                             ? AffineMap::get(5, 0, {dim(3), dim(4)}, context)
                             : AffineMap::get(5, 0, {dim(4), dim(3)}, context);
  SmallVector<AffineExpr> outExprs;
  OpOperand *out = g.getDpsInitOperand(0);
  for (AffineExpr e : g.getMatchingIndexingMap(out).getResults())
    outExprs.push_back(dim(newDim[cast<AffineDimExpr>(e).getPosition()]));
  AffineMap outMap = AffineMap::get(5, 0, outExprs, context);
  bool aFirst = c->a == g.getDpsInputOperand(0);
  SmallVector<Value> ins = {cols, filters};
  SmallVector<AffineMap> maps = {colsMap, filtersMap};
  if (!aFirst) {
    std::swap(ins[0], ins[1]);
    std::swap(maps[0], maps[1]);
  }
  maps.push_back(outMap);
  SmallVector<utils::IteratorType> iters = parallel(4);
  iters.push_back(utils::IteratorType::reduction);
  auto matmul = linalg::GenericOp::create(rewriter, loc, TypeRange{}, ins,
                                          ValueRange{out->get()}, maps, iters);
  rewriter.cloneRegionBefore(g.getRegion(), matmul.getRegion(),
                             matmul.getRegion().end());
  // Attributes the lowerings read (a precision mark) carry over.
  for (NamedAttribute attr : g->getDiscardableAttrs())
    matmul->setAttr(attr.getName(), attr.getValue());
  rewriter.eraseOp(g);
  if (src)
    src->erase(rewriter);
  return success();
}
