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

#include "Lowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {

/// The dims of a 2-D convolution: four parallel loops (the output's), of
/// which A reads three (its pixels) and B one (the filters); three
/// reduction loops: the window's rows and columns (in A's expressions) and
/// the channels (a plain dim of A and B).
struct ConvDims {
  OpOperand *a = nullptr, *b = nullptr;
  SmallVector<unsigned> pixels; // loop order
  unsigned filters = 0, kh = 0, kw = 0, channels = 0;
};

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

/// What the im2col copy reads as the convolution's input `a`: `a` itself,
/// or the source of the padded copy `a` is (the fill outside it), and that
/// source through the elementwise op that wrote it (a cast, a permutation
/// of the dims), when nothing else reads them.
struct Source {
  Value a;
  std::optional<PaddedCopy> padded;
  linalg::GenericOp producer;

  /// The value of `a` at `idx` (each index in range of `a`'s dims).
  Value load(OpBuilder &b, Location l, ArrayRef<Value> idx) const;
  /// The ops and buffers the reads above made dead (`g` gone).
  void erase(RewriterBase &rewriter) const;
};

/// The only writer of `buf` (a kernel's scratch buffer) when it is an
/// elementwise generic before `reader` whose every input but one is a
/// scalar (0-d) and that one is read through a permutation, whose body is
/// pure arithmetic on its inputs and constants, and when `reader` is
/// `buf`'s only other user.
linalg::GenericOp elementwiseWriter(Value buf, Operation *reader) {
  if (!buf.getDefiningOp<BufferOp>())
    return {};
  linalg::GenericOp writer;
  for (Operation *u : buf.getUsers()) {
    if (u == reader)
      continue;
    auto gen = dyn_cast<linalg::GenericOp>(u);
    if (!gen || writer)
      return {};
    writer = gen;
  }
  if (!writer || writer->getBlock() != reader->getBlock() ||
      !writer->isBeforeInBlock(reader) || !writer.hasPureBufferSemantics() ||
      writer.getNumDpsInits() != 1 ||
      writer.getDpsInitOperand(0)->get() != buf ||
      writer.getNumLoops() != writer.getNumParallelLoops() ||
      !writer.getMatchingIndexingMap(writer.getDpsInitOperand(0)).isIdentity())
    return {};
  int64_t permuted = 0;
  for (OpOperand *in : writer.getDpsInputOperands()) {
    AffineMap map = writer.getMatchingIndexingMap(in);
    if (map.getNumResults() == 0)
      continue;
    if (!map.isPermutation() || ++permuted > 1)
      return {};
  }
  Block &body = *writer.getBlock();
  if (permuted != 1 || !body.getArguments().back().use_empty())
    return {};
  for (Operation &op : body.without_terminator()) {
    if (!isPure(&op) || op.getNumRegions() != 0 || op.getNumResults() != 1)
      return {};
    for (Value v : op.getOperands())
      if (v.getParentBlock() != &body && !v.getDefiningOp<arith::ConstantOp>())
        return {};
  }
  return writer;
}

Source traceSource(OpOperand *a, Operation *conv) {
  Source s;
  s.a = a->get();
  s.padded = matchPaddedCopy(s.a, conv, /*anyFill=*/true);
  Value buf = s.padded ? s.padded->src : s.a;
  Operation *reader = s.padded ? s.padded->copy : conv;
  s.producer = elementwiseWriter(buf, reader);
  return s;
}

Value Source::load(OpBuilder &b, Location l, ArrayRef<Value> at) const {
  SmallVector<Value> idx(at);
  Value inside = padded ? sourceIndices(b, l, *padded, a, idx) : Value();
  Value v;
  if (producer) {
    // The producer's body at the point `idx` of its (identity) output.
    IRMapping map;
    linalg::GenericOp gen = producer;
    Block &body = *gen.getBlock();
    for (auto [i, in] : llvm::enumerate(gen.getDpsInputOperands())) {
      AffineMap m = gen.getMatchingIndexingMap(in);
      SmallVector<Value> inIdx;
      for (AffineExpr e : m.getResults())
        inIdx.push_back(idx[cast<AffineDimExpr>(e).getPosition()]);
      map.map(body.getArgument(i),
              memref::LoadOp::create(b, l, in->get(), inIdx).getResult());
    }
    for (Operation &op : body.without_terminator())
      b.clone(op, map);
    v = map.lookup(body.getTerminator()->getOperand(0));
  } else {
    v = memref::LoadOp::create(b, l, padded ? padded->src : a, idx);
  }
  return inside ? arith::SelectOp::create(b, l, inside, v, padded->fillValue)
                      .getResult()
                : v;
}

void Source::erase(RewriterBase &rewriter) const {
  SmallVector<Value> buffers;
  if (padded) {
    for (Operation *dead : {padded->copy, padded->view, padded->fill})
      rewriter.eraseOp(dead);
    buffers.push_back(a);
  }
  if (linalg::GenericOp gen = producer) {
    buffers.push_back(gen.getDpsInitOperand(0)->get());
    rewriter.eraseOp(gen);
  }
  for (Value buf : buffers)
    if (buf.use_empty())
      if (auto op = buf.getDefiningOp<BufferOp>())
        rewriter.eraseOp(op);
}

/// The im2col copy by rows of output pixels: A's results by role, the
/// window rows' (input) extent a row of pixels reads, and the staged rows'
/// size.
struct RowPlan {
  unsigned pixelH = 0, pixelW = 0, pixelN = 0; // loops
  int64_t resH = -1, resW = -1;                // results of A's map
  int64_t rows = 0, cols = 0, firstCol = 0;    // the staged rows
  int64_t hAtZero = 0;                         // resH at (pixelH, kh) = 0
  int64_t kwStep = 0; // resW's step from one kw to the next
};

/// `e` with every dim replaced by `dims`' constants.
std::optional<int64_t> evaluate(AffineExpr e, ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> values;
  for (int64_t v : dims)
    values.push_back(getAffineConstantExpr(v, e.getContext()));
  auto c = dyn_cast<AffineConstantExpr>(e.replaceDims(values));
  return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
}

/// The plan of the im2col copy by rows for `c`, when A's map is a plain
/// dim per result but two: the row (a pixel dim and kh) and the column (a
/// pixel dim and kw), both affine and increasing; when that column's pixel
/// dim is the innermost of the pixels (a block's values are one run of the
/// im2col buffer); and when the rows fit `maxBytes` of shared memory.
std::optional<RowPlan> planRows(linalg::GenericOp g, const ConvDims &c,
                                ArrayRef<int64_t> loops, int64_t bytes,
                                int64_t maxBytes) {
  AffineMap aMap = g.getMatchingIndexingMap(c.a);
  RowPlan p;
  for (auto [i, e] : llvm::enumerate(aMap.getResults())) {
    if (isa<AffineDimExpr>(e))
      continue; // checked below
    if (!e.isPureAffine())
      return std::nullopt;
    unsigned window = e.isFunctionOfDim(c.kh) ? c.kh : c.kw;
    if (!e.isFunctionOfDim(window))
      return std::nullopt;
    std::optional<unsigned> pixel;
    for (unsigned d : c.pixels)
      if (e.isFunctionOfDim(d))
        pixel = d;
    for (unsigned d = 0; d < loops.size(); ++d)
      if (e.isFunctionOfDim(d) && d != window && d != pixel)
        return std::nullopt;
    if (!pixel)
      return std::nullopt;
    (window == c.kh ? p.resH : p.resW) = i;
    (window == c.kh ? p.pixelH : p.pixelW) = *pixel;
  }
  if (p.resH < 0 || p.resW < 0 || p.pixelH == p.pixelW ||
      c.pixels.back() != p.pixelW)
    return std::nullopt;
  for (unsigned d : c.pixels)
    if (d != p.pixelH && d != p.pixelW)
      p.pixelN = d;
  // The plain results: the channels and the third pixel dim (the batch).
  for (AffineExpr e : aMap.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e);
        d && d.getPosition() != c.channels && d.getPosition() != p.pixelN)
      return std::nullopt;
  // Values of the row and column expressions at points of their dims.
  auto at = [&](int64_t res, unsigned pixel, int64_t pv, unsigned window,
                int64_t wv) -> std::optional<int64_t> {
    SmallVector<int64_t> dims(loops.size(), 0);
    dims[pixel] = pv;
    dims[window] = wv;
    return evaluate(aMap.getResult(res), dims);
  };
  std::optional<int64_t> h00 = at(p.resH, p.pixelH, 0, c.kh, 0),
                         h10 = at(p.resH, p.pixelH, 1, c.kh, 0),
                         hLast = at(p.resH, p.pixelH, 0, c.kh, loops[c.kh] - 1),
                         w00 = at(p.resW, p.pixelW, 0, c.kw, 0),
                         wLast = at(p.resW, p.pixelW, loops[p.pixelW] - 1, c.kw,
                                    loops[c.kw] - 1),
                         w01 = at(p.resW, p.pixelW, 0, c.kw, 1),
                         w10 = at(p.resW, p.pixelW, 1, c.kw, 0);
  if (!h00 || !h10 || !hLast || !w00 || !wLast || !w01 || !w10 || *h10 < *h00 ||
      *hLast < *h00 || *w01 < *w00 || *w10 < *w00)
    return std::nullopt;
  p.hAtZero = *h00;
  p.kwStep = *w01 - *w00;
  p.rows = *hLast - *h00 + 1;
  p.firstCol = *w00;
  p.cols = *wLast - *w00 + 1;
  int64_t staged = loops[c.channels] * p.rows * p.cols * bytes;
  if (staged + loops[c.kh] * loops[c.kw] * loops[c.channels] * 4 + 64 >
      maxBytes)
    return std::nullopt;
  return p;
}

/// A launch of one block of `threads` threads per row of output pixels (the
/// pixels but the innermost fixed) with `shared` as its workgroup buffers,
/// the builder inside it; what both row copies build on.
struct RowLaunch {
  OpBuilder &b;
  Location loc;
  AffineMap aMap;
  int64_t loops, threads;
  Value tid;
  /// The convolution's loops at this block's row (the others 0).
  SmallVector<Value> pt;
  SmallVector<Value> buffers;

  RowLaunch(OpBuilder &b, const GPUTargetInfo &info, Location loc,
            linalg::GenericOp g, const ConvDims &c, ArrayRef<int64_t> sizes,
            int64_t threads, ArrayRef<MemRefType> shared)
      : b(b), loc(loc), aMap(g.getMatchingIndexingMap(c.a)),
        loops(sizes.size()), threads(threads) {
    int64_t P1 = sizes[c.pixels[1]];
    auto launch =
        gpu::LaunchOp::create(b, loc, idx(sizes[c.pixels[0]] * P1), idx(1),
                              idx(1), idx(threads), idx(1), idx(1));
    Attribute wg = info.getSharedMemorySpace(b.getContext());
    for (MemRefType t : shared)
      buffers.push_back(launch.addWorkgroupAttribution(
          MemRefType::get(t.getShape(), t.getElementType(),
                          MemRefLayoutAttrInterface(), wg),
          loc));
    b.setInsertionPointToEnd(&launch.getBody().front());
    b.setInsertionPoint(gpu::TerminatorOp::create(b, loc));
    tid = launch.getThreadIds().x;
    Value blk = launch.getBlockIds().x;
    pt.assign(loops, idx(0));
    pt[c.pixels[0]] = arith::DivUIOp::create(b, loc, blk, idx(P1));
    pt[c.pixels[1]] = arith::RemUIOp::create(b, loc, blk, idx(P1));
  }

  Value idx(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  }
  /// A's result `res` at the loops' `point`.
  Value result(int64_t res, ArrayRef<Value> point) {
    return affine::AffineApplyOp::create(
        b, loc, AffineMap::get(loops, 0, aMap.getResult(res)), point);
  }
  /// for (i = tid; i < n; i += threads) body(i)
  void strided(int64_t n, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, idx(n), idx(threads));
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }
};

/// cols[pixels..., k] by rows of output pixels: a block per row (the
/// pixels but the innermost fixed). Its threads first write a table of each
/// k's offset in the staged rows (-1 past K), then stage the window rows the
/// pixel row reads (every channel, row and column, the column fastest:
/// adjacent threads read adjacent values of the input's rows), and after a
/// barrier each thread writes 16 bytes of the row's im2col values at a
/// time, adjacent threads adjacent runs.
void emitRows(OpBuilder &b, const GPUTargetInfo &info, Location loc,
              linalg::GenericOp g, const ConvDims &c, ArrayRef<int64_t> loops,
              const RowPlan &p, const Source &src, int64_t K, int64_t Kp,
              Value cols, int64_t threads) {
  AffineMap aMap = g.getMatchingIndexingMap(c.a);
  int64_t C = loops[c.channels], KW = loops[c.kw];
  int64_t OW = loops[p.pixelW];
  Type elem = getElementTypeOrSelf(cols.getType());
  int64_t vec = 16 / (elem.getIntOrFloatBitWidth() / 8), chunks = Kp / vec;
  int64_t plane = p.rows * p.cols, staged = C * plane;
  RowLaunch row(
      b, info, loc, g, c, loops, threads,
      {MemRefType::get({staged}, elem), MemRefType::get({Kp}, b.getI32Type())});
  Value rows = row.buffers[0], table = row.buffers[1];
  SmallVector<Value> &pt = row.pt;
  auto sub = [&](Value v, int64_t n) -> Value {
    return arith::SubIOp::create(b, loc, v, row.idx(n));
  };
  Value firstRow = row.result(p.resH, pt); // kh = 0
  row.strided(Kp, [&](Value k) {
    Value kk = arith::MinUIOp::create(b, loc, k, row.idx(K - 1));
    SmallVector<Value> q(loops.size(), row.idx(0));
    q[c.kh] = arith::DivUIOp::create(b, loc, kk, row.idx(KW * C));
    q[c.kw] = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, kk, row.idx(C)), row.idx(KW));
    Value ch = arith::RemUIOp::create(b, loc, kk, row.idx(C));
    Value r = sub(row.result(p.resH, q), p.hAtZero);
    Value col = sub(row.result(p.resW, q), p.firstCol);
    Value off = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, ch, row.idx(plane)),
        arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, r, row.idx(p.cols)), col));
    Value in =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k, row.idx(K));
    off = arith::SelectOp::create(b, loc, in, off, row.idx(-1));
    memref::StoreOp::create(
        b, loc, arith::IndexCastOp::create(b, loc, b.getI32Type(), off), table,
        k);
  });
  row.strided(staged, [&](Value e) {
    Value ch = arith::DivUIOp::create(b, loc, e, row.idx(plane));
    Value r = arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, e, row.idx(p.cols)),
        row.idx(p.rows));
    Value col = arith::RemUIOp::create(b, loc, e, row.idx(p.cols));
    SmallVector<Value> at;
    for (auto [i, ex] : llvm::enumerate(aMap.getResults())) {
      if ((int64_t)i == p.resH)
        at.push_back(arith::AddIOp::create(b, loc, firstRow, r));
      else if ((int64_t)i == p.resW)
        at.push_back(arith::AddIOp::create(b, loc, col, row.idx(p.firstCol)));
      else if (cast<AffineDimExpr>(ex).getPosition() == c.channels)
        at.push_back(ch);
      else
        at.push_back(pt[p.pixelN]);
    }
    memref::StoreOp::create(b, loc, src.load(b, loc, at), rows, e);
  });
  info.buildBarrier(b, loc);
  Value zero = arith::ConstantOp::create(b, loc, elem, b.getZeroAttr(elem));
  row.strided(OW * chunks, [&](Value e) {
    Value ow = arith::DivUIOp::create(b, loc, e, row.idx(chunks));
    Value k0 = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, e, row.idx(chunks)),
        row.idx(vec));
    SmallVector<Value> q(loops.size(), row.idx(0));
    q[p.pixelW] = ow;
    Value shift = sub(row.result(p.resW, q), p.firstCol); // kw = 0
    SmallVector<Value> vals;
    for (int64_t j = 0; j < vec; ++j) {
      Value k = arith::AddIOp::create(b, loc, k0, row.idx(j));
      Value t = arith::IndexCastOp::create(
          b, loc, b.getIndexType(), memref::LoadOp::create(b, loc, table, k));
      Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t,
                                          row.idx(0));
      Value at = arith::SelectOp::create(
          b, loc, valid, arith::AddIOp::create(b, loc, t, shift), row.idx(0));
      vals.push_back(arith::SelectOp::create(
          b, loc, valid, memref::LoadOp::create(b, loc, rows, at), zero));
    }
    Value v = vector::FromElementsOp::create(
        b, loc, VectorType::get({vec}, elem), vals);
    auto st = vector::StoreOp::create(
        b, loc, v, cols, ValueRange{pt[c.pixels[0]], pt[c.pixels[1]], ow, k0});
    st.setAlignment(16);
  });
}

/// The im2col copy by rows where a pixel's C channels are one 32-bit word
/// (four 8-bit channels, a stem's RGB padded to 4) and adjacent kw read
/// adjacent columns: the K layout gives each window row KWp = KW rounded up
/// to 4 taps (its taps past KW have zero filters), so 16 bytes of a row of
/// cols are 4 adjacent pixels of one staged row. The block stages its
/// window rows as words (rows[r][col], a pixel's channels packed, zeros in
/// the KWp - KW columns past the last) and each thread writes a 16-byte run
/// from 4 word loads, without the per-byte table of emitRows: ResNet-50's
/// int8 stem at batch 64 spent 0.18 ms on an H100 in emitRows's copy, 26
/// instructions per byte (Nsight Compute: issue-bound at 86%).
void emitPackedRows(OpBuilder &b, const GPUTargetInfo &info, Location loc,
                    linalg::GenericOp g, const ConvDims &c,
                    ArrayRef<int64_t> loops, const RowPlan &p,
                    const Source &src, int64_t KWp, int64_t Kp, Value cols,
                    int64_t threads) {
  AffineMap aMap = g.getMatchingIndexingMap(c.a);
  const int64_t C = loops[c.channels], KW = loops[c.kw];
  const int64_t OW = loops[p.pixelW];
  const int64_t colsP = p.cols + (KWp - KW), chunks = Kp / 16;
  Type i32 = b.getI32Type();
  RowLaunch row(b, info, loc, g, c, loops, threads,
                {MemRefType::get({p.rows * colsP}, i32)});
  Value rows = row.buffers[0];
  SmallVector<Value> &pt = row.pt;
  Value firstRow = row.result(p.resH, pt); // kh = 0
  // Word e: column e % colsP of staged row e / colsP, its C channels
  // (adjacent threads read adjacent columns of each channel's row).
  row.strided(p.rows * colsP, [&](Value e) {
    Value r = arith::DivUIOp::create(b, loc, e, row.idx(colsP));
    Value col = arith::RemUIOp::create(b, loc, e, row.idx(colsP));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col,
                                         row.idx(p.cols));
    // Columns past the window's are never read with a nonzero filter:
    // the last column's values stand in for them, in range of A.
    Value readCol = arith::MinUIOp::create(b, loc, col, row.idx(p.cols - 1));
    Value word = arith::ConstantIntOp::create(b, loc, i32, 0);
    for (int64_t ch = 0; ch < C; ++ch) {
      SmallVector<Value> at;
      for (auto [i, ex] : llvm::enumerate(aMap.getResults())) {
        if ((int64_t)i == p.resH)
          at.push_back(arith::AddIOp::create(b, loc, firstRow, r));
        else if ((int64_t)i == p.resW)
          at.push_back(
              arith::AddIOp::create(b, loc, readCol, row.idx(p.firstCol)));
        else if (cast<AffineDimExpr>(ex).getPosition() == c.channels)
          at.push_back(row.idx(ch));
        else
          at.push_back(pt[p.pixelN]);
      }
      Value w = arith::ExtUIOp::create(b, loc, i32, src.load(b, loc, at));
      if (ch)
        w = arith::ShLIOp::create(
            b, loc, w, arith::ConstantIntOp::create(b, loc, i32, 8 * ch));
      word = arith::OrIOp::create(b, loc, word, w);
    }
    word = arith::SelectOp::create(
        b, loc, inside, word, arith::ConstantIntOp::create(b, loc, i32, 0));
    memref::StoreOp::create(b, loc, word, rows, e);
  });
  info.buildBarrier(b, loc);
  Type elem = getElementTypeOrSelf(cols.getType());
  row.strided(OW * chunks, [&](Value e) {
    Value ow = arith::DivUIOp::create(b, loc, e, row.idx(chunks));
    Value chunk = arith::RemUIOp::create(b, loc, e, row.idx(chunks));
    // k0 = 16 chunk: window row kh = k0 / (KWp C), first tap 4 (chunk %
    // (KWp / 4)); rows of cols past KH KWp C (K's padding) are zeros.
    const int64_t perRow = KWp / 4;
    Value kh = arith::DivUIOp::create(b, loc, chunk, row.idx(perRow));
    Value tap = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, chunk, row.idx(perRow)),
        row.idx(4));
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, kh,
                                        row.idx(loops[c.kh]));
    SmallVector<Value> q(loops.size(), row.idx(0));
    q[c.kh] = arith::MinUIOp::create(b, loc, kh, row.idx(loops[c.kh] - 1));
    q[p.pixelW] = ow;
    // The word of (kh, tap 0) at this pixel, then `tap` columns on.
    Value r = arith::SubIOp::create(b, loc, row.result(p.resH, q),
                                    row.idx(p.hAtZero));
    Value col = arith::AddIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, row.result(p.resW, q),
                              row.idx(p.firstCol)),
        tap);
    Value at = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, r, row.idx(colsP)), col);
    SmallVector<Value> words;
    for (int64_t j = 0; j < 4; ++j) {
      Value w = memref::LoadOp::create(
          b, loc, rows,
          ValueRange{arith::AddIOp::create(b, loc, at, row.idx(j))});
      words.push_back(arith::SelectOp::create(
          b, loc, valid, w, arith::ConstantIntOp::create(b, loc, i32, 0)));
    }
    Value v = vector::FromElementsOp::create(b, loc, VectorType::get({4}, i32),
                                             words);
    v = vector::BitCastOp::create(b, loc, VectorType::get({16}, elem), v);
    auto st = vector::StoreOp::create(
        b, loc, v, cols,
        ValueRange{pt[c.pixels[0]], pt[c.pixels[1]], ow,
                   arith::MulIOp::create(b, loc, chunk, row.idx(16))});
    st.setAlignment(16);
  });
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
