//===- Attention.cpp - Lowering of Attention and RotaryEmbedding ----------===//
//
// Attention (opset 23) as generics over the canonical [B, H, S, D] index
// space: 3-D inputs ([B, S, H·D]) are viewed as [B, S, H, D] and read with
// permuted maps; grouped-query heads read K/V head h floordiv (Hq / Hkv).
// scores = Q·Kᵀ·scale, + mask / causal / padding bias, softcap, softmax
// over the keys, · V. past_key/past_value are concatenated in front of K/V
// (present_key/present_value).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "Quantization.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType dynType(int64_t rank, Type elem) {
  return RankedTensorType::get(SmallVector<int64_t>(rank, kDyn), elem);
}

Value cidx(OpBuilder &b, Location l, int64_t v) {
  return arith::ConstantIndexOp::create(b, l, v);
}

/// A Q/K/V operand as a 4-D tensor with its layout: `seqMajor` when the
/// dims are [B, S, H, D] (a 3-D input viewed with H heads), else
/// [B, H, S, D].
struct HeadView {
  Value v;
  bool seqMajor = false;
  Value heads, seq, headSize;
};

FailureOr<HeadView> viewHeads(Operation *op, OpBuilder &b, Location loc,
                              Value x, std::optional<int64_t> numHeads,
                              StringRef what) {
  auto t = dyn_cast<RankedTensorType>(x.getType());
  HeadView hv;
  if (t && t.getRank() == 4) {
    hv.v = x;
    hv.heads = dimValue(b, loc, x, 1);
    hv.seq = dimValue(b, loc, x, 2);
    hv.headSize = dimValue(b, loc, x, 3);
    return hv;
  }
  if (!t || t.getRank() != 3)
    return nodeError(op) << what << " must be 3-D or 4-D", failure();
  if (!numHeads || *numHeads <= 0)
    return nodeError(op) << "3-D inputs need the num_heads attributes",
           failure();
  Value hidden = dimValue(b, loc, x, 2);
  hv.heads = cidx(b, loc, *numHeads);
  hv.headSize = arith::DivUIOp::create(b, loc, hidden, hv.heads);
  hv.seq = dimValue(b, loc, x, 1);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1), *numHeads,
                                kDyn};
  if (!t.isDynamicDim(2)) {
    if (t.getDimSize(2) % *numHeads != 0)
      return nodeError(op) << what
                           << " hidden size is not a multiple of the "
                              "number of heads",
             failure();
    shape[3] = t.getDimSize(2) / *numHeads;
  }
  hv.v = reshapeTo(b, loc, x, RankedTensorType::get(shape, t.getElementType()),
                   {dimValue(b, loc, x, 0), hv.seq, hv.heads, hv.headSize});
  hv.seqMajor = true;
  return hv;
}

/// Index expressions of a view at canonical (b, h, s, d) = dims (ib, ih,
/// is, id) of a map with `n` dims; `hDiv` divides the head index (GQA).
AffineMap viewMap(const HeadView &hv, unsigned n, unsigned ib, unsigned ih,
                  unsigned is, unsigned id, Value group, int64_t groupStatic,
                  MLIRContext *ctx) {
  AffineExpr h = getAffineDimExpr(ih, ctx);
  if (groupStatic != 1)
    h = h.floorDiv(groupStatic);
  AffineExpr B = getAffineDimExpr(ib, ctx), S = getAffineDimExpr(is, ctx),
             D = getAffineDimExpr(id, ctx);
  if (hv.seqMajor)
    return AffineMap::get(n, 0, {B, S, h, D}, ctx);
  return AffineMap::get(n, 0, {B, h, S, D}, ctx);
}

/// [B, H, P + S, D]: past (4-D) followed by the view's rows.
Value concatPast(OpBuilder &b, Location loc, Value past, const HeadView &hv,
                 Value batch, Value &total) {
  Type elem = cast<RankedTensorType>(hv.v.getType()).getElementType();
  Value p = dimValue(b, loc, past, 2);
  total = arith::AddIOp::create(b, loc, p, hv.seq);
  return generateSized(
      b, loc, dynType(4, elem), {batch, hv.heads, total, hv.headSize},
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) -> Value {
        Value inPast =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, iv[2], p);
        Value zero = cidx(nb, l, 0);
        Value pi = arith::SelectOp::create(nb, l, inPast, iv[2], zero);
        Value ni = arith::SelectOp::create(
            nb, l, inPast, zero, arith::SubIOp::create(nb, l, iv[2], p));
        Value a = tensor::ExtractOp::create(
            nb, l, past, ValueRange{iv[0], iv[1], pi, iv[3]});
        SmallVector<Value> ix =
            hv.seqMajor ? SmallVector<Value>{iv[0], ni, iv[1], iv[3]}
                        : SmallVector<Value>{iv[0], iv[1], ni, iv[3]};
        // Guard the read of the new rows when the past covers it.
        Value c = tensor::ExtractOp::create(nb, l, hv.v, ix);
        return arith::SelectOp::create(nb, l, inPast, a, c);
      });
}

/// The static size of a dim, or kDyn.
int64_t staticDim(Value v, int64_t d) {
  return cast<RankedTensorType>(v.getType()).getDimSize(d);
}

/// Attention as one kiln.attention, for a target with a fused kernel, when
/// its conditions hold: f16/bf16 Q, K, V of the result's type, or 8-bit
/// integers with their dequantization (`quant`: Q alone, K and V together,
/// or all three); static head sizes, multiples of 16
/// up to 128; a static head group; no past, present, scores output, padding
/// lengths or softcap; no mask, or an additive float mask of rank 2 to 4
/// whose leading dims are 1 or the full size. A null value (and no IR)
/// when they do not (the generics follow); failure after an error.
FailureOr<Value>
buildFusedAttention(onnxops::AttentionOp op, OpBuilder &b, HeadView q,
                    HeadView k, HeadView v,
                    ArrayRef<std::optional<quant::Dequantized>> quant = {}) {
  Location loc = op->getLoc();
  // A head-splitting transpose ([B, S, H, D] → [B, H, S, D], as exporters
  // write it) is read through: the kernel takes the [B, S, H, D] view with
  // its strides, and the copy dies.
  for (HeadView *hv : {&q, &k, &v}) {
    auto t = hv->v.getDefiningOp<linalg::TransposeOp>();
    if (!hv->seqMajor && t &&
        t.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3}) {
      hv->v = t.getInput();
      hv->seqMajor = true;
    }
  }
  // The result's type, which float operands share; 8-bit ones (`quant`)
  // are dequantized in the kernel.
  Type elem =
      cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (!elem.isF16() && !elem.isBF16())
    return Value();
  bool anyQuant = false;
  auto quantized = [&](unsigned i) { return i < quant.size() && quant[i]; };
  for (auto [i, hv] : llvm::enumerate(ArrayRef<HeadView>{q, k, v})) {
    anyQuant |= quantized(i);
    if (!quantized(i) &&
        cast<RankedTensorType>(hv.v.getType()).getElementType() != elem)
      return Value();
  }
  // (The kernel stages K and V alike: both 8-bit or both float.)
  if (quantized(1) != quantized(2))
    return Value();
  for (unsigned i = 1; i < op->getNumResults(); ++i)
    if (!op->getResult(i).use_empty())
      return Value();
  for (unsigned i = 4; i < op->getNumOperands(); ++i)
    if (!onnxops::isNoValue(op->getOperand(i)))
      return Value();
  if (asDouble(op.getSoftcap()) != 0.0)
    return Value();
  auto headOk = [](int64_t d) {
    return !ShapedType::isDynamic(d) && d > 0 && d % 16 == 0 && d <= 128;
  };
  int64_t dq = staticDim(q.v, 3), dk = staticDim(k.v, 3),
          dv = staticDim(v.v, 3);
  if (!headOk(dq) || dk != dq || !headOk(dv))
    return Value();
  auto heads = [](const HeadView &hv) -> int64_t {
    if (auto c = hv.heads.getDefiningOp<arith::ConstantIndexOp>())
      return c.value();
    return kDyn;
  };
  int64_t hq = heads(q), hkv = heads(k);
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) || hkv <= 0 ||
      hq % hkv != 0 || heads(v) != hkv)
    return Value();
  auto ty = cast<RankedTensorType>(op->getResult(0).getType());
  if (ty.getElementType() != elem || (ty.getRank() != 3 && ty.getRank() != 4))
    return Value();
  // The mask as 4-D [B | 1, Hq | 1, S | 1, M].
  Value mask = op->getOperand(3);
  if (!onnxops::isNoValue(mask)) {
    auto mt = dyn_cast<RankedTensorType>(mask.getType());
    if (!mt || mt.getRank() < 2 || mt.getRank() > 4 ||
        !isa<FloatType>(mt.getElementType()))
      return Value();
    int64_t full[] = {staticDim(q.v, 0), hq,
                      staticDim(q.v, q.seqMajor ? 1 : 2)};
    SmallVector<int64_t> shape(4 - mt.getRank(), 1);
    SmallVector<Value> sizes(4 - mt.getRank(), cidx(b, loc, 1));
    for (int64_t d = 0; d < mt.getRank(); ++d) {
      int64_t fd = d + 4 - mt.getRank(), n = mt.getDimSize(d);
      if (fd < 3 && n != 1 && !ShapedType::isDynamic(n) &&
          !ShapedType::isDynamic(full[fd]) && n != full[fd])
        return Value();
      shape.push_back(n);
      sizes.push_back(dimValue(b, loc, mask, d));
    }
    mask = reshapeTo(b, loc, mask,
                     RankedTensorType::get(shape, mt.getElementType()), sizes);
  } else {
    mask = Value();
  }
  double scale;
  if (std::optional<double> s = asDouble(op.getScale()))
    scale = *s;
  else
    scale = 1.0 / std::sqrt(static_cast<double>(dq));
  // The output: [B, S, Hq, Dv] (a 3-D output's view) or [B, Hq, S, Dv].
  bool out3 = ty.getRank() == 3;
  Value batch = dimValue(b, loc, q.v, 0);
  SmallVector<Value> sizes =
      out3 ? SmallVector<Value>{batch, q.seq, q.heads, cidx(b, loc, dv)}
           : SmallVector<Value>{batch, q.heads, q.seq, cidx(b, loc, dv)};
  SmallVector<int64_t> shape = {
      staticDim(q.v, 0), out3 ? staticDim(q.v, q.seqMajor ? 1 : 2) : hq,
      out3 ? hq : staticDim(q.v, q.seqMajor ? 1 : 2), dv};
  auto outType = RankedTensorType::get(shape, elem);
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < 4; ++d)
    if (outType.isDynamicDim(d))
      dyn.push_back(sizes[d]);
  Value init = tensor::EmptyOp::create(b, loc, shape, elem, dyn);
  DenseF64ArrayAttr scales;
  DenseI64ArrayAttr zeroPoints;
  DenseBoolArrayAttr uns;
  if (anyQuant) {
    SmallVector<double> s(3, 1.0);
    SmallVector<int64_t> z(3, 0);
    SmallVector<bool> u(3, false);
    for (unsigned i = 0; i < 3 && i < quant.size(); ++i)
      if (quant[i]) {
        s[i] = quant[i]->scale;
        z[i] = quant[i]->zeroPoint;
        u[i] = quant[i]->isUnsigned;
      }
    scales = b.getDenseF64ArrayAttr(s);
    zeroPoints = b.getDenseI64ArrayAttr(z);
    uns = b.getDenseBoolArrayAttr(u);
  }
  Value y =
      kiln::AttentionOp::create(
          b, loc, TypeRange{outType}, q.v, k.v, v.v, mask, init,
          b.getF64FloatAttr(scale),
          asInt(op.getIsCausal()) ? b.getUnitAttr() : UnitAttr(),
          b.getDenseBoolArrayAttr({q.seqMajor, k.seqMajor, v.seqMajor, out3}),
          scales, zeroPoints, uns)
          .getResult()[0];
  if (out3)
    y = reshapeTo(b, loc, y, ty,
                  {batch, q.seq,
                   arith::MulIOp::create(b, loc, q.heads, cidx(b, loc, dv))});
  return y;
}

LogicalResult lowerAttention(onnxops::AttentionOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  FailureOr<RankedTensorType> tq = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op, 0);
  if (failed(tq) || failed(ty))
    return failure();
  Type elem = tq->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "float types only", failure();
  // Half-precision Q/K/V: both products accumulate in f32, the scores and
  // the softmax stay f32 (P·V multiplies f32 probabilities by V), and the
  // output rounds once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto toAcc = [&](OpBuilder &nb, Location l, Value v) -> Value {
    return halfInputs ? arith::ExtFOp::create(nb, l, accElem, v).getResult()
                      : v;
  };
  std::optional<int64_t> qHeadsAttr = asInt(op.getQNumHeads()),
                         kvHeadsAttr = asInt(op.getKvNumHeads());
  FailureOr<HeadView> q =
      viewHeads(op, b, loc, op->getOperand(0), qHeadsAttr, "Q");
  if (failed(q))
    return failure();
  FailureOr<HeadView> k =
      viewHeads(op, b, loc, op->getOperand(1), kvHeadsAttr, "K");
  if (failed(k))
    return failure();
  FailureOr<HeadView> v =
      viewHeads(op, b, loc, op->getOperand(2), kvHeadsAttr, "V");
  if (failed(v))
    return failure();
  Value mask = op->getOperand(3), pastK = op->getOperand(4),
        pastV = op->getOperand(5), nonpad = op->getOperand(6);
  bool hasMask = !onnxops::isNoValue(mask),
       hasPast = !onnxops::isNoValue(pastK),
       hasNonpad = !onnxops::isNoValue(nonpad);
  if (hasPast != !onnxops::isNoValue(pastV))
    return nodeError(op) << "past_key and past_value go together", failure();
  if (targetHasFusedAttention()) {
    // Q, K, V dequantized from 8 bits (an int8 build's attention inputs):
    // the kernel reads the integers, a quarter of f32's bytes.
    SmallVector<std::optional<quant::Dequantized>> quant;
    SmallVector<HeadView> views = {*q, *k, *v};
    for (unsigned i = 0; i < 3; ++i) {
      quant.push_back(quant::dequantizedInput(b, op->getOperand(i)));
      if (!quant.back())
        continue;
      FailureOr<HeadView> hv =
          viewHeads(op, b, loc, quant.back()->ints,
                    i == 0 ? qHeadsAttr : kvHeadsAttr, "Q/K/V");
      if (failed(hv))
        return failure();
      views[i] = *hv;
    }
    FailureOr<Value> fused =
        llvm::any_of(quant, [](const auto &d) { return d.has_value(); })
            ? buildFusedAttention(op, b, views[0], views[1], views[2], quant)
            : Value();
    if (succeeded(fused) && !*fused)
      fused = buildFusedAttention(op, b, *q, *k, *v);
    if (failed(fused))
      return failure();
    if (*fused) {
      results.push_back(*fused);
      return success();
    }
  }
  // Grouped-query attention reads K/V head h floordiv (Hq / Hkv). With head
  // counts known only at run time the group is checked there and K/V are
  // expanded to Hq heads (below) so the products keep affine maps.
  auto staticHeads = [&](const HeadView &hv) -> int64_t {
    if (auto c = hv.heads.getDefiningOp<arith::ConstantIndexOp>())
      return c.value();
    return kDyn;
  };
  int64_t hq = staticHeads(*q), hkv = staticHeads(*k);
  bool staticGroup = !ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv);
  if (staticGroup && (hkv <= 0 || hq % hkv != 0))
    return nodeError(op) << "the number of query heads (" << hq
                         << ") must be a multiple of the number of key/value "
                            "heads ("
                         << hkv << ")",
           failure();
  int64_t group = staticGroup ? hq / hkv : 1;
  Value dynGroup;
  if (!staticGroup) {
    Value zero = cidx(b, loc, 0);
    Value kvPos = cmpI(b, loc, arith::CmpIPredicate::ugt, k->heads, zero);
    Value safeKv = select(b, loc, kvPos, k->heads, cidx(b, loc, 1));
    Value rem = arith::RemUIOp::create(b, loc, q->heads, safeKv);
    Value ok = arith::AndIOp::create(
        b, loc, kvPos, cmpI(b, loc, arith::CmpIPredicate::eq, rem, zero));
    Value sameV = cmpI(b, loc, arith::CmpIPredicate::eq, v->heads, k->heads);
    checkAtRunTime(b, op, arith::AndIOp::create(b, loc, ok, sameV),
                   "the number of query heads ({0}) must be a multiple of the "
                   "number of key/value heads ({1}, {2})",
                   {q->heads, k->heads, v->heads});
    dynGroup = arith::DivUIOp::create(b, loc, q->heads, safeKv);
  }
  Value batch = dimValue(b, loc, q->v, 0);

  // present_key / present_value.
  Value presentK, presentV, total = k->seq, totalV;
  Value pastLen = cidx(b, loc, 0);
  HeadView kc = *k, vc = *v;
  if (hasPast) {
    pastLen = dimValue(b, loc, pastK, 2);
    presentK = concatPast(b, loc, pastK, *k, batch, total);
    presentV = concatPast(b, loc, pastV, *v, batch, totalV);
    kc = {presentK, false, k->heads, total, k->headSize};
    vc = {presentV, false, v->heads, totalV, v->headSize};
  } else {
    auto canon = [&](const HeadView &hv) -> Value {
      if (!hv.seqMajor)
        return hv.v;
      Value init = emptyTensor(b, loc, dynType(4, elem),
                               {batch, hv.heads, hv.seq, hv.headSize});
      return linalg::GenericOp::create(
                 b, loc, TypeRange{init.getType()}, ValueRange{hv.v},
                 ValueRange{init},
                 {viewMap(hv, 4, 0, 1, 2, 3, Value(), 1, ctx),
                  AffineMap::getMultiDimIdentityMap(4, ctx)},
                 SmallVector<IteratorType>(4, IteratorType::parallel),
                 [](OpBuilder &nb, Location l, ValueRange a) {
                   linalg::YieldOp::create(nb, l, a[0]);
                 })
          .getResult(0);
    };
    if (op->getNumResults() > 1 && !op->getResult(1).use_empty())
      presentK = canon(*k);
    if (op->getNumResults() > 2 && !op->getResult(2).use_empty())
      presentV = canon(*v);
  }

  // Run-time group: K/V as [B, Hq, S, D] read at head h / group.
  if (dynGroup) {
    auto expand = [&](const HeadView &hv) -> HeadView {
      Value src = hv.v;
      bool seqMajor = hv.seqMajor;
      Value x = generateSized(
          b, loc, dynType(4, elem), {batch, q->heads, hv.seq, hv.headSize},
          [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) -> Value {
            Value h = arith::DivUIOp::create(nb, l, iv[1], dynGroup);
            SmallVector<Value> ix =
                seqMajor ? SmallVector<Value>{iv[0], iv[2], h, iv[3]}
                         : SmallVector<Value>{iv[0], h, iv[2], iv[3]};
            return tensor::ExtractOp::create(nb, l, src, ix);
          });
      return {x, false, q->heads, hv.seq, hv.headSize};
    };
    kc = expand(kc);
    vc = expand(vc);
  }

  // scores[b, h, i, j] = Σ_d Q[b, h, i, d] · K[b, h / g, j, d]
  Value zeroF = scalarConstant(b, loc, accElem, 0.0);
  auto sType = dynType(4, accElem);
  Value sInit =
      linalg::FillOp::create(
          b, loc, zeroF,
          emptyTensor(b, loc, sType, {batch, q->heads, q->seq, kc.seq}))
          .getResult(0);
  SmallVector<IteratorType> it5(4, IteratorType::parallel);
  it5.push_back(IteratorType::reduction);
  Value scores =
      linalg::GenericOp::create(
          b, loc, TypeRange{sType}, ValueRange{q->v, kc.v}, ValueRange{sInit},
          {viewMap(*q, 5, 0, 1, 2, 4, Value(), 1, ctx),
           viewMap(kc, 5, 0, 1, 3, 4, Value(), group, ctx),
           AffineMap::get(5, 0,
                          {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                           getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)},
                          ctx)},
          it5,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value m = arith::MulFOp::create(nb, l, toAcc(nb, l, a[0]),
                                            toAcc(nb, l, a[1]));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[2], m).getResult());
          })
          .getResult(0);

  // Scale, bias (mask, causal, padding) and softcap.
  // The scale: the attribute, else 1 / sqrt(head size) (at run time when the
  // head size is dynamic).
  Value scaleV;
  if (std::optional<double> s = asDouble(op.getScale())) {
    scaleV = scalarConstant(b, loc, accElem, *s);
  } else {
    auto qt = cast<RankedTensorType>(q->v.getType());
    if (!qt.isDynamicDim(3)) {
      scaleV = scalarConstant(
          b, loc, accElem,
          1.0 / std::sqrt(static_cast<double>(qt.getDimSize(3))));
    } else {
      Value d =
          arith::IndexCastUIOp::create(b, loc, b.getI64Type(), q->headSize);
      Value df = arith::UIToFPOp::create(b, loc, b.getF64Type(), d);
      Value inv = arith::DivFOp::create(
          b, loc, scalarConstant(b, loc, b.getF64Type(), 1.0),
          math::SqrtOp::create(b, loc, df));
      scaleV = accElem.isF64()
                   ? inv
                   : arith::TruncFOp::create(b, loc, accElem, inv).getResult();
    }
  }
  bool causal = asInt(op.getIsCausal());
  double softcap = asDouble(op.getSoftcap());
  int64_t mode = asInt(op.getQkMatmulOutputMode());
  RankedTensorType maskT;
  if (hasMask) {
    maskT = dyn_cast<RankedTensorType>(mask.getType());
    if (!maskT || maskT.getRank() < 2 || maskT.getRank() > 4)
      return nodeError(op) << "attn_mask must be 2-D to 4-D", failure();
  }
  Value maskLast =
      hasMask ? dimValue(b, loc, mask, maskT.getRank() - 1) : Value();
  // Dynamic mask dims broadcast when they are 1 at run time.
  SmallVector<Value> maskDims;
  if (hasMask)
    for (int64_t d = 0; d < maskT.getRank(); ++d)
      maskDims.push_back(dimValue(b, loc, mask, d));
  Value one = cidx(b, loc, 1);
  Value negInf = arith::ConstantOp::create(
      b, loc,
      FloatAttr::get(
          accElem,
          APFloat::getInf(cast<FloatType>(accElem).getFloatSemantics(), true)));
  auto biasBody = [&](bool withBias, bool withCap) {
    return [&, withBias, withCap](OpBuilder &nb, Location l, ValueRange a) {
      Value s = arith::MulFOp::create(nb, l, a[0], scaleV);
      if (withBias) {
        Value ib = linalg::IndexOp::create(nb, l, 0);
        Value ih = linalg::IndexOp::create(nb, l, 1);
        Value ii = linalg::IndexOp::create(nb, l, 2);
        Value ij = linalg::IndexOp::create(nb, l, 3);
        Value zero = cidx(nb, l, 0);
        if (hasMask) {
          int64_t mr = maskT.getRank();
          SmallVector<Value> full = {ib, ih, ii, ij};
          SmallVector<Value> ix;
          for (int64_t d = 0; d < mr; ++d) {
            int64_t fd = d + (4 - mr);
            if (maskT.getDimSize(d) == 1)
              ix.push_back(zero);
            else if (maskT.isDynamicDim(d) && d + 1 < mr)
              ix.push_back(select(
                  nb, l,
                  cmpI(nb, l, arith::CmpIPredicate::eq, maskDims[d], one), zero,
                  full[fd]));
            else
              ix.push_back(full[fd]);
          }
          Value inCols = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                               ij, maskLast);
          ix.back() = arith::SelectOp::create(nb, l, inCols, ix.back(), zero);
          Value m = tensor::ExtractOp::create(nb, l, mask, ix);
          if (m.getType().isInteger(1)) {
            Value keep = arith::AndIOp::create(nb, l, m, inCols);
            s = arith::SelectOp::create(nb, l, keep, s, negInf);
          } else {
            if (halfInputs && isa<FloatType>(m.getType()) &&
                m.getType() != accElem)
              m = arith::ExtFOp::create(nb, l, accElem, m);
            Value add = arith::SelectOp::create(nb, l, inCols, m, negInf);
            s = arith::AddFOp::create(nb, l, s, add);
          }
        }
        if (causal) {
          Value lim = arith::AddIOp::create(nb, l, ii, pastLen);
          Value masked =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, ij, lim);
          s = arith::SelectOp::create(nb, l, masked, negInf, s);
        }
        if (hasNonpad) {
          Value n = tensor::ExtractOp::create(nb, l, nonpad, ValueRange{ib});
          Value ji = arith::IndexCastOp::create(nb, l, n.getType(), ij);
          Value masked =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, ji, n);
          s = arith::SelectOp::create(nb, l, masked, negInf, s);
        }
      }
      if (withCap && softcap > 0) {
        Value c = scalarConstant(nb, l, accElem, softcap);
        s = arith::MulFOp::create(
            nb, l,
            math::TanhOp::create(nb, l, arith::DivFOp::create(nb, l, s, c)), c);
      }
      linalg::YieldOp::create(nb, l, s);
    };
  };
  auto mapScores = [&](Value in, auto body) {
    Value init = emptyTensor(b, loc, sType, {batch, q->heads, q->seq, kc.seq});
    SmallVector<AffineMap> maps(2, AffineMap::getMultiDimIdentityMap(4, ctx));
    return linalg::GenericOp::create(
               b, loc, TypeRange{sType}, ValueRange{in}, ValueRange{init}, maps,
               SmallVector<IteratorType>(4, IteratorType::parallel), body)
        .getResult(0);
  };
  Value biased = mapScores(scores, biasBody(true, true));
  Value qkOut;
  if (op->getNumResults() > 3 && !op->getResult(3).use_empty()) {
    if (mode == 0)
      qkOut = mapScores(scores, biasBody(false, false));
    else if (mode == 1)
      qkOut = mapScores(scores, biasBody(true, false));
    else if (mode == 2)
      qkOut = biased;
  }

  // Softmax over j.
  SmallVector<bool> lastDim = {false, false, false, true};
  Value mx = reduceKept(b, loc, biased, lastDim, /*isMax=*/true);
  SmallVector<Value> dyn4 = {batch, q->heads, q->seq, kc.seq};
  Value e = buildBroadcastGeneric(
      b, loc, sType, {biased, mx}, dyn4, {},
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return math::ExpOp::create(nb, l,
                                   arith::SubFOp::create(nb, l, a[0], a[1]));
      });
  Value sum = reduceKept(b, loc, e, lastDim);
  Value probs = buildBroadcastGeneric(
      b, loc, sType, {e, sum}, dyn4, {},
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::DivFOp::create(nb, l, a[0], a[1]);
      });
  if (mode == 3)
    qkOut = probs;
  if (qkOut && halfInputs)
    qkOut = buildBroadcastGeneric(
        b, loc, dynType(4, elem), {qkOut}, dyn4, {},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, l, elem, a[0]);
        });

  // Y[b, h, i, e] = Σ_j P[b, h, i, j] · V[b, h / g, j, e]; 3-D outputs are
  // written as [B, S, H, Dv] and reshaped.
  bool out3 = ty->getRank() == 3;
  if (!out3 && ty->getRank() != 4)
    return nodeError(op) << "output must be 3-D or 4-D", failure();
  SmallVector<Value> ySizes =
      out3 ? SmallVector<Value>{batch, q->seq, q->heads, vc.headSize}
           : SmallVector<Value>{batch, q->heads, q->seq, vc.headSize};
  Value yInit =
      linalg::FillOp::create(b, loc, zeroF, emptyTensor(b, loc, sType, ySizes))
          .getResult(0);
  AffineExpr B = getAffineDimExpr(0, ctx), H = getAffineDimExpr(1, ctx),
             I = getAffineDimExpr(2, ctx), E = getAffineDimExpr(3, ctx),
             J = getAffineDimExpr(4, ctx);
  AffineMap yMap = out3 ? AffineMap::get(5, 0, {B, I, H, E}, ctx)
                        : AffineMap::get(5, 0, {B, H, I, E}, ctx);
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{sType}, ValueRange{probs, vc.v}, ValueRange{yInit},
          {AffineMap::get(5, 0, {B, H, I, J}, ctx),
           viewMap(vc, 5, 0, 1, 4, 3, Value(), group, ctx), yMap},
          it5,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value m = arith::MulFOp::create(nb, l, a[0], toAcc(nb, l, a[1]));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[2], m).getResult());
          })
          .getResult(0);
  if (halfInputs)
    y = buildBroadcastGeneric(
        b, loc, dynType(4, elem), {y}, ySizes, {},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, l, elem, a[0]);
        });
  if (out3)
    y = reshapeTo(
        b, loc, y, dynType(3, elem),
        {batch, q->seq, arith::MulIOp::create(b, loc, q->heads, vc.headSize)});
  results.push_back(y);
  for (unsigned i = 1; i < op->getNumResults(); ++i) {
    Value r = i == 1 ? presentK : i == 2 ? presentV : qkOut;
    if (!r) {
      if (!op->getResult(i).use_empty())
        return nodeError(op) << "output " << i << " is not supported",
               failure();
    }
    results.push_back(r);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

LogicalResult lowerRotary(onnxops::RotaryEmbeddingOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  Type elem = tx->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "float types only", failure();
  int64_t r = tx->getRank();
  if (r != 3 && r != 4)
    return nodeError(op) << "input must be 3-D or 4-D", failure();
  Value x = op->getOperand(0), cosC = op->getOperand(1),
        sinC = op->getOperand(2), pos = op->getOperand(3);
  bool hasPos = !onnxops::isNoValue(pos);
  int64_t numHeads = asInt(op.getNumHeads()).value_or(0);
  Value headSize;
  if (r == 4) {
    headSize = dimValue(b, loc, x, 3);
  } else {
    if (numHeads <= 0)
      return nodeError(op) << "3-D input needs num_heads", failure();
    headSize = arith::DivUIOp::create(b, loc, dimValue(b, loc, x, 2),
                                      cidx(b, loc, numHeads));
  }
  int64_t rdAttr = asInt(op.getRotaryEmbeddingDim());
  Value rd = rdAttr > 0 ? cidx(b, loc, rdAttr) : headSize;
  rd = arith::MinUIOp::create(b, loc, rd, headSize);
  Value half = arith::DivUIOp::create(b, loc, rd, cidx(b, loc, 2));
  bool interleaved = asInt(op.getInterleaved());
  auto ct = dyn_cast<RankedTensorType>(cosC.getType());
  if (!ct || ct.getRank() != (hasPos ? 2 : 3))
    return nodeError(op) << "cos_cache must be 2-D with position_ids, else 3-D",
           failure();
  Value maxPos = hasPos ? dimValue(b, loc, cosC, 0) : Value();
  Value cacheLast = dimValue(b, loc, cosC, ct.getRank() - 1);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < r; ++i)
    if (tx->isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  Value init = emptyTensor(b, loc, *tx, dyn);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(2, AffineMap::getMultiDimIdentityMap(r, ctx));
  results.push_back(
      linalg::GenericOp::create(
          b, loc, TypeRange{*tx}, ValueRange{x}, ValueRange{init}, maps,
          SmallVector<IteratorType>(r, IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange a) {
            SmallVector<Value> ix;
            for (int64_t i = 0; i < r; ++i)
              ix.push_back(linalg::IndexOp::create(nb, l, i));
            Value bi = ix[0];
            Value si = r == 4 ? ix[2] : ix[1];
            Value last = ix.back();
            Value d =
                r == 4
                    ? last
                    : arith::RemUIOp::create(nb, l, last, headSize).getResult();
            Value base =
                arith::SubIOp::create(nb, l, last, d); // start of the head
            Value rotated =
                arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, d, rd);
            Value one = cidx(nb, l, 1), zero = cidx(nb, l, 0);
            Value kk, first, partner;
            if (interleaved) {
              kk = arith::DivUIOp::create(nb, l, d, cidx(nb, l, 2));
              first = arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::eq,
                  arith::RemUIOp::create(nb, l, d, cidx(nb, l, 2)), zero);
              partner = arith::SelectOp::create(
                  nb, l, first, arith::AddIOp::create(nb, l, d, one),
                  arith::SubIOp::create(nb, l, d, one));
            } else {
              first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, d,
                                            half);
              kk = arith::SelectOp::create(
                  nb, l, first, d, arith::SubIOp::create(nb, l, d, half));
              partner = arith::SelectOp::create(
                  nb, l, first, arith::AddIOp::create(nb, l, d, half),
                  arith::SubIOp::create(nb, l, d, half));
            }
            // Guard every index (rows past rd are not rotated).
            partner = arith::SelectOp::create(nb, l, rotated, partner, d);
            Value kmax = arith::SubIOp::create(nb, l, cacheLast, one);
            kk = arith::MinSIOp::create(
                nb, l, arith::SelectOp::create(nb, l, rotated, kk, zero), kmax);
            kk = arith::MaxSIOp::create(nb, l, kk, zero);
            SmallVector<Value> pix(ix);
            pix.back() = arith::AddIOp::create(nb, l, base, partner);
            Value other = tensor::ExtractOp::create(nb, l, x, pix);
            SmallVector<Value> cix;
            if (hasPos) {
              Value p =
                  tensor::ExtractOp::create(nb, l, pos, ValueRange{bi, si});
              Value pi =
                  arith::IndexCastOp::create(nb, l, nb.getIndexType(), p);
              pi = arith::MaxSIOp::create(nb, l, pi, zero);
              pi = arith::MinSIOp::create(
                  nb, l, pi, arith::SubIOp::create(nb, l, maxPos, one));
              cix = {pi, kk};
            } else {
              cix = {bi, si, kk};
            }
            Value c = tensor::ExtractOp::create(nb, l, cosC, cix);
            Value s = tensor::ExtractOp::create(nb, l, sinC, cix);
            Value self = a[0];
            // first: x1 = self, x2 = other → cos·x1 − sin·x2
            // else:  x1 = other, x2 = self → sin·x1 + cos·x2
            Value outFirst = arith::SubFOp::create(
                nb, l, arith::MulFOp::create(nb, l, c, self),
                arith::MulFOp::create(nb, l, s, other));
            Value outSecond = arith::AddFOp::create(
                nb, l, arith::MulFOp::create(nb, l, s, other),
                arith::MulFOp::create(nb, l, c, self));
            Value rot =
                arith::SelectOp::create(nb, l, first, outFirst, outSecond);
            linalg::YieldOp::create(
                nb, l,
                arith::SelectOp::create(nb, l, rotated, rot, self).getResult());
          })
          .getResult(0));
  return success();
}

} // namespace

void lowering::populateAttentionLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Attention> t(patterns);
  t.add<onnxops::AttentionOp>(lowerAttention);
  t.add<onnxops::RotaryEmbeddingOp>(lowerRotary);
}
