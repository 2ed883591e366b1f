//===- SmallChannelConvRows.cpp - The im2col copies by rows ---------------===//
//
// SmallChannelConv's im2col copies by rows of output pixels (a block per
// row stages the window rows it reads in shared memory, then writes the
// row's im2col values in 16-byte runs): the source they read through a
// padded copy and its elementwise producer, the plan of the staged rows,
// and the two copies, by a table of each k's place (emitRows) or packed
// words (emitPackedRows).
//
//===----------------------------------------------------------------------===//

#include "SmallChannelConvRows.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {

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

/// `e` with every dim replaced by `dims`' constants.
std::optional<int64_t> evaluate(AffineExpr e, ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> values;
  for (int64_t v : dims)
    values.push_back(getAffineConstantExpr(v, e.getContext()));
  auto c = dyn_cast<AffineConstantExpr>(e.replaceDims(values));
  return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
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

} // namespace

Source gpumap::traceSource(OpOperand *a, Operation *conv) {
  Source s;
  s.a = a->get();
  s.padded = matchPaddedCopy(s.a, conv, /*anyFill=*/true);
  Value buf = s.padded ? s.padded->src : s.a;
  Operation *reader = s.padded ? s.padded->copy : conv;
  s.producer = elementwiseWriter(buf, reader);
  return s;
}

Value gpumap::Source::load(OpBuilder &b, Location l, ArrayRef<Value> at) const {
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

void gpumap::Source::erase(RewriterBase &rewriter) const {
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

/// The plan of the im2col copy by rows for `c`, when A's map is a plain
/// dim per result but two: the row (a pixel dim and kh) and the column (a
/// pixel dim and kw), both affine and increasing; when that column's pixel
/// dim is the innermost of the pixels (a block's values are one run of the
/// im2col buffer); and when the rows fit `maxBytes` of shared memory.
std::optional<RowPlan> gpumap::planRows(linalg::GenericOp g, const ConvDims &c,
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

/// cols[pixels..., k] by rows of output pixels: a block per row (the
/// pixels but the innermost fixed). Its threads first write a table of each
/// k's offset in the staged rows (-1 past K), then stage the window rows the
/// pixel row reads (every channel, row and column, the column fastest:
/// adjacent threads read adjacent values of the input's rows), and after a
/// barrier each thread writes 16 bytes of the row's im2col values at a
/// time, adjacent threads adjacent runs.
void gpumap::emitRows(OpBuilder &b, const GPUTargetInfo &info, Location loc,
                      linalg::GenericOp g, const ConvDims &c,
                      ArrayRef<int64_t> loops, const RowPlan &p,
                      const Source &src, int64_t K, int64_t Kp, Value cols,
                      int64_t threads) {
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
void gpumap::emitPackedRows(OpBuilder &b, const GPUTargetInfo &info,
                            Location loc, linalg::GenericOp g,
                            const ConvDims &c, ArrayRef<int64_t> loops,
                            const RowPlan &p, const Source &src, int64_t KWp,
                            int64_t Kp, Value cols, int64_t threads) {
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
