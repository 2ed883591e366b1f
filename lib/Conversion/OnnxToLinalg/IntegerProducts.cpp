//===- IntegerProducts.cpp - MatMulInteger, ConvInteger, QLinearMatMul ---===//
//
// The integer products: MatMulInteger and QLinearMatMul (lowerIntMatMul) and
// ConvInteger, as i32 sums of the operands' products with the zero points
// subtracted; constant weights get their zero points folded at compile time
// (foldWeights: per-channel sums, padding, the K-major layout some targets
// take) so the contraction's body is a plain multiply-add the int8 kernels
// match. The IntegerProducts family of OnnxFamilies.def; the
// Quantize/Dequantize lowerings are in Quantize.cpp.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "Quantization.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;
using namespace mlir::kiln::lowering::quant;

namespace {

using utils::IteratorType;

/// The values of zero point operand `i` of `op`: {0} when absent, nullopt
/// when not a constant.
std::optional<SmallVector<int64_t>> constantZeroPoints(Operation *op,
                                                       unsigned i) {
  if (!operandPresent(op, i))
    return SmallVector<int64_t>{0};
  return onnxops::getConstantIntValues(op->getOperand(i));
}

/// Constant integer weights with their zero points subtracted at compile
/// time, and per channel their sum (what the zero point of the other
/// operand multiplies).
struct FoldedWeights {
  /// The weights to multiply (signless), and whether they extend as
  /// unsigned.
  Value w;
  bool isUnsigned = false;
  SmallVector<int64_t> sums;
};

/// `w` (constant values `values`, static `shape`) minus its zero points
/// `zp` (one, or one per index of `channelDim`): the 8-bit weights as they
/// are when every zero point is 0, else an i16 constant of the
/// differences. With `padDim` >= 0, that dim is padded to `padTo` with
/// zeros (after the subtraction: the padding adds nothing). With
/// `transposed`, a 2-D [K, N] `w` comes out [N, K] (K-major, for targets
/// whose 8-bit products read B so).
FoldedWeights foldWeights(OpBuilder &b, Location loc, Value w,
                          ArrayRef<int64_t> values, ArrayRef<int64_t> shape,
                          int64_t channelDim, ArrayRef<int64_t> zp,
                          int64_t padDim = -1, int64_t padTo = 0,
                          bool transposed = false) {
  int64_t rank = shape.size();
  int64_t channels = shape[channelDim], inner = 1;
  for (int64_t d = channelDim + 1; d < rank; ++d)
    inner *= shape[d];
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };
  auto zpOf = [&](int64_t c) { return zp.size() == 1 ? zp[0] : zp[c]; };
  FoldedWeights f;
  f.sums.assign(channels, 0);
  bool zero = llvm::all_of(zp, [](int64_t z) { return z == 0; });
  bool pad = padDim >= 0 && padTo > shape[padDim];
  assert((!transposed || (rank == 2 && !pad)) && "a 2-D, unpadded transpose");
  // Whether the values move (a new constant even without zero points).
  bool moved = pad || transposed;
  SmallVector<int64_t> outShape(shape);
  if (pad)
    outShape[padDim] = padTo;
  if (transposed)
    std::swap(outShape[0], outShape[1]);
  // Where element i lands in the (padded or transposed) result.
  int64_t padInner = 1;
  for (int64_t d = padDim + 1; pad && d < rank; ++d)
    padInner *= shape[d];
  auto dest = [&](int64_t i) -> int64_t {
    if (transposed)
      return (i % shape[1]) * shape[0] + i / shape[1];
    if (!pad)
      return i;
    int64_t lo = i % padInner, mid = (i / padInner) % shape[padDim],
            hi = i / padInner / shape[padDim];
    return (hi * padTo + mid) * padInner + lo;
  };
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<int16_t> diff(zero ? 0 : n, 0);
  std::vector<int8_t> raw(zero && moved ? n : 0, 0);
  for (auto [i, v] : llvm::enumerate(values)) {
    int64_t c = channelOf(i), d = v - zpOf(c);
    f.sums[c] += d;
    if (!zero)
      diff[dest(i)] = static_cast<int16_t>(d);
    else if (moved)
      raw[dest(i)] = static_cast<int8_t>(v);
  }
  if (zero && !moved) {
    f.isUnsigned = isUnsigned(w.getType());
    f.w = signless(b, loc, w);
    return f;
  }
  auto make = [&](Type elem, ArrayRef<char> bytes) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(int64_t));
    return arith::ConstantOp::create(
        b, loc,
        DenseResourceElementsAttr::get(RankedTensorType::get(outShape, elem),
                                       transposed ? "weights_k_major"
                                                  : "weights_minus_zero_point",
                                       std::move(blob)));
  };
  if (zero) {
    // The 8-bit values, moved (padded with zeros, or transposed).
    f.isUnsigned = isUnsigned(w.getType());
    f.w = make(
        b.getI8Type(),
        ArrayRef<char>(reinterpret_cast<const char *>(raw.data()), raw.size()));
    return f;
  }
  f.w = make(b.getI16Type(),
             ArrayRef<char>(reinterpret_cast<const char *>(diff.data()),
                            diff.size() * sizeof(int16_t)));
  return f;
}

/// `acc` (i32) plus `c[channel]`, the per-channel constant broadcast along
/// dim `channelDim` of `acc`; `acc` itself when every entry is 0.
Value addPerChannel(OpBuilder &b, Location loc, Value acc, ArrayRef<int64_t> c,
                    int64_t channelDim) {
  if (llvm::all_of(c, [](int64_t v) { return v == 0; }))
    return acc;
  auto t = cast<RankedTensorType>(acc.getType());
  SmallVector<int64_t> shape = {static_cast<int64_t>(c.size())};
  shape.append(t.getRank() - 1 - channelDim, 1);
  SmallVector<int32_t> v32(c.begin(), c.end());
  auto ct = RankedTensorType::get(shape, b.getI32Type());
  Value cv = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(ct, ArrayRef<int32_t>(v32)));
  return buildElementwise(b, loc, t, {acc, cv},
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return arith::AddIOp::create(nb, l, a[0], a[1]);
                          });
}

/// `acc + ext(x) * ext(w)` in i32.
Value mulAddI32(OpBuilder &b, Location loc, Value acc, Value x, bool xUns,
                Value w, bool wUns) {
  Value p = arith::MulIOp::create(b, loc, toI32(b, loc, x, xUns),
                                  toI32(b, loc, w, wUns));
  return arith::AddIOp::create(b, loc, acc, p);
}

/// MatMulInteger with constant weights B ([K, N]) and constant zero points
/// (a_zero_point one value, b_zero_point one or one per column):
///   sum_k (a - za)(b - zb[n]) = sum_k a (b - zb[n]) - za colsum[n]
/// with b - zb[n] and colsum[n] = sum_k (b - zb[n]) computed here. The
/// product is a plain `acc + ext(a) * ext(b)` contraction (the CPU codegen
/// runs uint8 x int8 ones as VNNI dot products); the column term is a
/// per-column constant added after it. Where the target reads 8-bit
/// weights K-major (targetWantsKMajorInt8Weights), the
/// constant is laid out [N, K] here and the product reads it so, instead of
/// a launch transposing it every run. Fails (nothing built) when the
/// operands are not such constants.
FailureOr<Value> lowerMatMulIntegerConstB(Operation *op, OpBuilder &b,
                                          RankedTensorType ta,
                                          RankedTensorType tb,
                                          RankedTensorType ty) {
  std::optional<SmallVector<int64_t>> bv =
      onnxops::getConstantIntValues(op->getOperand(1));
  std::optional<SmallVector<int64_t>> za = constantZeroPoints(op, 2);
  std::optional<SmallVector<int64_t>> zb = constantZeroPoints(op, 3);
  if (!bv || !za || !zb || tb.getRank() != 2 || !tb.hasStaticShape() ||
      za->size() != 1 ||
      (zb->size() != 1 &&
       static_cast<int64_t>(zb->size()) != tb.getDimSize(1)) ||
      getElementTypeOrSelf(tb).getIntOrFloatBitWidth() != 8)
    return failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  const bool kMajor = targetWantsKMajorInt8Weights();
  FoldedWeights w = foldWeights(b, loc, op->getOperand(1), *bv, tb.getShape(),
                                1, *zb, /*padDim=*/-1, /*padTo=*/0, kMajor);
  bool ua = isUnsigned(ta.getElementType());
  Value A = signless(b, loc, op->getOperand(0));
  int64_t ra = ta.getRank(), ry = ty.getRank(), nBatch = ry - 2;
  int64_t nl = ry + 1;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> ae, ye;
  SmallVector<AffineExpr> be =
      kMajor ? SmallVector<AffineExpr>{d(nBatch + 1), d(nBatch + 2)}
             : SmallVector<AffineExpr>{d(nBatch + 2), d(nBatch + 1)};
  for (int64_t i = 0; i < ra - 2; ++i)
    ae.push_back(ta.getDimSize(i) == 1 && ty.getDimSize(i) != 1
                     ? getAffineConstantExpr(0, ctx)
                     : d(i));
  ae.append({d(nBatch), d(nBatch + 2)});
  for (int64_t i = 0; i < ry; ++i)
    ye.push_back(d(i));
  auto accT = ty.clone(b.getI32Type());
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i)
    if (accT.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, A, i));
  Value init =
      filledTensor(b, loc, accT, dyn, IntegerAttr::get(b.getI32Type(), 0));
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  Value acc =
      linalg::GenericOp::create(
          b, loc, TypeRange{accT}, ValueRange{A, w.w}, ValueRange{init},
          {AffineMap::get(nl, 0, ae, ctx), AffineMap::get(nl, 0, be, ctx),
           AffineMap::get(nl, 0, ye, ctx)},
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(
                nb, l, mulAddI32(nb, l, a[2], a[0], ua, a[1], w.isUnsigned));
          })
          .getResult(0);
  SmallVector<int64_t> c;
  for (int64_t s : w.sums)
    c.push_back(-(*za)[0] * s);
  return addPerChannel(b, loc, acc, c, ry - 1);
}

/// MatMulInteger and QLinearMatMul: 2-D or batched (equal batch dims)
/// products of zero-point-shifted integers, accumulated in i32.
LogicalResult lowerIntMatMul(Operation *op, OpBuilder &b,
                             SmallVectorImpl<Value> &results, bool qlinear) {
  unsigned ia = 0, ib = qlinear ? 3 : 1;
  FailureOr<RankedTensorType> ta = rankedOperand(op, ia);
  FailureOr<RankedTensorType> tb = rankedOperand(op, ib);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  int64_t ra = ta->getRank(), rb = tb->getRank(), ry = ty->getRank();
  if (ra < 2 || rb < 2 || ry != std::max(ra, rb) ||
      !supportedInt(ta->getElementType()) ||
      !supportedInt(tb->getElementType()))
    return nodeError(op) << "operands must be integer tensors of rank >= 2",
           failure();
  if (!qlinear) {
    if (ty->getElementType() != b.getI32Type())
      return nodeError(op) << "result must be int32", failure();
    FailureOr<Value> acc = lowerMatMulIntegerConstB(op, b, *ta, *tb, *ty);
    if (succeeded(acc)) {
      results.push_back(*acc);
      return success();
    }
  }
  bool ua = isUnsigned(ta->getElementType()),
       ub = isUnsigned(tb->getElementType());
  Value A = signless(b, loc, op->getOperand(ia));
  Value B = signless(b, loc, op->getOperand(ib));
  Value azp = operandPresent(op, qlinear ? 2 : 2)
                  ? signless(b, loc, op->getOperand(2))
                  : Value();
  Value bzp = operandPresent(op, qlinear ? 5 : 3)
                  ? signless(b, loc, op->getOperand(qlinear ? 5 : 3))
                  : Value();
  // Loops: batch (ry - 2), m, n, k.
  int64_t nb_ = ry - 2, nl = ry + 1;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> ae, be, ye;
  for (int64_t i = 0; i < ra - 2; ++i)
    ae.push_back(ta->getDimSize(i) == 1 ? getAffineConstantExpr(0, ctx)
                                        : d(i + (nb_ - (ra - 2))));
  ae.append({d(nb_), d(nb_ + 2)});
  for (int64_t i = 0; i < rb - 2; ++i)
    be.push_back(tb->getDimSize(i) == 1 ? getAffineConstantExpr(0, ctx)
                                        : d(i + (nb_ - (rb - 2))));
  be.append({d(nb_ + 2), d(nb_ + 1)});
  for (int64_t i = 0; i < ry; ++i)
    ye.push_back(d(i));
  auto i32 = b.getI32Type();
  auto accT = ty->clone(i32);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i)
    if (accT.isDynamicDim(i)) {
      if (i == ry - 1)
        dyn.push_back(tensor::DimOp::create(b, loc, B, rb - 1));
      else if (i == ry - 2)
        dyn.push_back(tensor::DimOp::create(b, loc, A, ra - 2));
      else
        dyn.push_back(tensor::DimOp::create(b, loc, ra >= rb ? A : B,
                                            i - (ry - (ra >= rb ? ra : rb))));
    }
  Value init = filledTensor(b, loc, accT, dyn, IntegerAttr::get(i32, 0));
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  // A parameter with one element, or one per row of A (`dimIdx` = m) or per
  // column of B (n): read at that (clamped) position.
  auto paramAt = [&](OpBuilder &nb, Location l, Value p,
                     int64_t loop) -> Value {
    auto t = cast<RankedTensorType>(p.getType());
    SmallVector<Value> z(t.getRank(), idx(nb, l, 0));
    if (t.getRank() >= 1 && t.getDimSize(t.getRank() - 1) != 1) {
      Value i = linalg::IndexOp::create(nb, l, loop);
      Value n = dimValue(nb, l, p, t.getRank() - 1);
      z.back() = clampIntoRange(nb, l, i, n);
    }
    return tensor::ExtractOp::create(nb, l, p, z);
  };
  auto zpAt = [&](OpBuilder &nb, Location l, Value zp, bool uns,
                  int64_t loop) -> Value {
    if (!zp)
      return arith::ConstantIntOp::create(nb, l, i32, 0);
    return toI32(nb, l, paramAt(nb, l, zp, loop), uns);
  };
  Value acc =
      linalg::GenericOp::create(
          b, loc, TypeRange{accT}, ValueRange{A, B}, ValueRange{init},
          {AffineMap::get(nl, 0, ae, ctx), AffineMap::get(nl, 0, be, ctx),
           AffineMap::get(nl, 0, ye, ctx)},
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value x = arith::SubIOp::create(nb, l, toI32(nb, l, a[0], ua),
                                            zpAt(nb, l, azp, ua, nb_));
            Value y = arith::SubIOp::create(nb, l, toI32(nb, l, a[1], ub),
                                            zpAt(nb, l, bzp, ub, nb_ + 1));
            linalg::YieldOp::create(
                nb, l,
                arith::AddIOp::create(nb, l, a[2],
                                      arith::MulIOp::create(nb, l, x, y))
                    .getResult());
          })
          .getResult(0);
  if (!qlinear) {
    if (ty->getElementType() != i32)
      return nodeError(op) << "result must be int32", failure();
    results.push_back(acc);
    return success();
  }
  // y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zp).
  Type ye_ = ty->getElementType();
  if (!supportedInt(ye_))
    return nodeError(op) << "result must be an 8-bit integer", failure();
  bool uy = isUnsigned(ye_);
  auto intTy = IntegerType::get(ctx, ye_.getIntOrFloatBitWidth());
  Value as = op->getOperand(1), bs = op->getOperand(4), ys = op->getOperand(6);
  Value yzp =
      operandPresent(op, 7) ? signless(b, loc, op->getOperand(7)) : Value();
  auto first = [&](OpBuilder &nb, Location l, Value v) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<Value> z(t.getRank(), idx(nb, l, 0));
    return tensor::ExtractOp::create(nb, l, v, z);
  };
  auto rt = ty->clone(intTy);
  SmallVector<Value> rdyn;
  for (int64_t i = 0; i < ry; ++i)
    if (rt.isDynamicDim(i))
      rdyn.push_back(tensor::DimOp::create(b, loc, acc, i));
  Value rinit = emptyTensor(b, loc, rt, rdyn);
  Value r =
      linalg::GenericOp::create(
          b, loc, TypeRange{rt}, ValueRange{acc}, ValueRange{rinit},
          {AffineMap::getMultiDimIdentityMap(ry, ctx),
           AffineMap::getMultiDimIdentityMap(ry, ctx)},
          SmallVector<IteratorType>(ry, IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value v = toF32(nb, l, a[0], false);
            Value s = arith::MulFOp::create(
                nb, l, toF32(nb, l, paramAt(nb, l, as, ry - 2), false),
                toF32(nb, l, paramAt(nb, l, bs, ry - 1), false));
            s = arith::DivFOp::create(nb, l, s,
                                      toF32(nb, l, first(nb, l, ys), false));
            v = arith::MulFOp::create(nb, l, v, s);
            v = math::RoundEvenOp::create(nb, l, v);
            if (yzp)
              v = arith::AddFOp::create(
                  nb, l, v,
                  toF32(nb, l, toI32(nb, l, first(nb, l, yzp), uy), false));
            linalg::YieldOp::create(nb, l, saturate(nb, l, v, intTy, uy));
          })
          .getResult(0);
  results.push_back(toType(b, loc, r, *ty));
  return success();
}

/// ConvInteger: the convolution of x - x_zero_point (the padding is the
/// zero point: zero after the subtraction) by w - w_zero_point (per tensor
/// or per filter), accumulated in i32. Constant weights and zero points
/// take the algebra of lowerMatMulIntegerConstB (the product of the raw
/// 8-bit input, the filter sums times the input's zero point subtracted
/// after it); otherwise the zero points are subtracted in the loop body.
LogicalResult lowerConvInteger(onnxops::ConvIntegerOp op, OpBuilder &b,
                               SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tw = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tw) || failed(ty))
    return failure();
  if (!supportedInt(tx->getElementType()) ||
      tx->getElementType().getIntOrFloatBitWidth() != 8 ||
      !supportedInt(tw->getElementType()) ||
      tw->getElementType().getIntOrFloatBitWidth() != 8 ||
      !ty->getElementType().isInteger(32))
    return nodeError(op) << "ConvInteger takes 8-bit integer input and "
                            "weights and gives int32",
           failure();
  if (!tw->hasStaticShape())
    return nodeError(op) << "the weights must have a static shape", failure();
  Location loc = op->getLoc();
  bool last = onnxops::isChannelsLast(op);
  bool filterFirst = onnxops::isFilterFirst(op);
  int64_t rank = tw->getRank();
  int64_t fDim = last && !filterFirst ? rank - 1 : 0;
  int64_t F = tw->getDimSize(fDim);
  bool ux = isUnsigned(tx->getElementType());
  Value x = signless(b, loc, op->getOperand(0));
  Type xElem = cast<RankedTensorType>(x.getType()).getElementType();
  std::optional<SmallVector<int64_t>> wv =
      onnxops::getConstantIntValues(op->getOperand(1));
  std::optional<SmallVector<int64_t>> zx = constantZeroPoints(op, 2);
  std::optional<SmallVector<int64_t>> zw = constantZeroPoints(op, 3);
  if (zx && zx->size() != 1)
    return nodeError(op) << "x_zero_point must hold one value", failure();
  if (zw && zw->size() != 1 && static_cast<int64_t>(zw->size()) != F)
    return nodeError(op) << "w_zero_point must hold one value or one per "
                            "filter",
           failure();
  ConvArith arith;
  arith.accElem = b.getI32Type();
  if (wv && zx && zw) {
    // Input channels padded to a multiple of 4 (an RGB image's 3): the
    // reduction then groups by four bytes, what int8 dot-product
    // instructions take; the padding is the input's zero point and zero
    // weights, so it adds nothing.
    int64_t cDim = !last ? 1 : filterFirst ? rank - 1 : rank - 2;
    int64_t xc = last ? rank - 1 : 1;
    int64_t C = tw->getDimSize(cDim);
    bool padChannels =
        asInt(op.getGroup()) == 1 && C % 4 != 0 && !tx->isDynamicDim(xc);
    int64_t padTo = padChannels ? (C + 3) / 4 * 4 : 0;
    FoldedWeights w =
        foldWeights(b, loc, op->getOperand(1), *wv, tw->getShape(), fDim, *zw,
                    padChannels ? cDim : -1, padTo);
    arith.padValue = arith::ConstantOp::create(
        b, loc,
        IntegerAttr::get(xElem, APInt(8, (*zx)[0], /*isSigned=*/!ux,
                                      /*implicitTrunc=*/true)));
    if (padChannels) {
      auto xt = cast<RankedTensorType>(x.getType());
      SmallVector<OpFoldResult> lo(rank, b.getIndexAttr(0)),
          hi(rank, b.getIndexAttr(0));
      hi[xc] = b.getIndexAttr(padTo - C);
      SmallVector<int64_t> padded(xt.getShape());
      padded[xc] = padTo;
      x = tensor::PadOp::create(b, loc, xt.clone(padded), x, lo, hi,
                                arith.padValue);
    }

    arith.body = [&](OpBuilder &nb, Location l, Value xv, Value wv_,
                     Value acc) {
      return mulAddI32(nb, l, acc, xv, ux, wv_, w.isUnsigned);
    };
    FailureOr<Value> conv = buildConvolution(op, b, x, w.w, arith);
    if (failed(conv))
      return failure();
    SmallVector<int64_t> c;
    for (int64_t s : w.sums)
      c.push_back(-(*zx)[0] * s);
    results.push_back(addPerChannel(b, loc, *conv, c, last ? rank - 1 : 1));
    return success();
  }
  // Zero points at run time: one each.
  auto scalar = [&](unsigned i) -> Value {
    if (!operandPresent(op, i))
      return Value();
    auto t = cast<RankedTensorType>(op->getOperand(i).getType());
    if (t.hasStaticShape() && t.getNumElements() != 1)
      return Value();
    return extractScalarOperand(b, op, signless(b, loc, op->getOperand(i)),
                                "the zero point");
  };
  if (operandPresent(op, 3) && !scalar(3))
    return nodeError(op) << "a per-filter w_zero_point must be a constant",
           failure();
  Value zxv = scalar(2), zwv = scalar(3);
  bool uw = isUnsigned(tw->getElementType());
  arith.padValue =
      zxv ? zxv : arith::ConstantOp::create(b, loc, IntegerAttr::get(xElem, 0));
  arith.body = [&](OpBuilder &nb, Location l, Value xv, Value wv_, Value acc) {
    Value xi = toI32(nb, l, xv, ux), wi = toI32(nb, l, wv_, uw);
    if (zxv)
      xi = arith::SubIOp::create(nb, l, xi, toI32(nb, l, zxv, ux));
    if (zwv)
      wi = arith::SubIOp::create(nb, l, wi, toI32(nb, l, zwv, uw));
    return arith::AddIOp::create(nb, l, acc,
                                 arith::MulIOp::create(nb, l, xi, wi))
        .getResult();
  };
  FailureOr<Value> conv =
      buildConvolution(op, b, x, signless(b, loc, op->getOperand(1)), arith);
  if (failed(conv))
    return failure();
  results.push_back(*conv);
  return success();
}

} // namespace

void lowering::populateIntegerProductsLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::IntegerProducts> t(patterns);
  t.add<onnxops::MatMulIntegerOp>(
      [](onnxops::MatMulIntegerOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerIntMatMul(op, b, r, /*qlinear=*/false);
      });
  t.add<onnxops::ConvIntegerOp>(lowerConvInteger);
  t.add<onnxops::QLinearMatMulOp>(
      [](onnxops::QLinearMatMulOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerIntMatMul(op, b, r, /*qlinear=*/true);
      });
}
