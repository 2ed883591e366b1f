//===- Cast.cpp - Cast, CastLike and 8-bit float conversions --------------===//
//
// The Cast family (OnnxFamilies.def). Cast and CastLike convert operand 0 to
// the result's element type elementwise; unsigned tensors are computed on
// signless views.
//
// LLVM cannot compute with f8E4M3FN, f8E4M3FNUZ, f8E5M2 and f8E5M2FNUZ, so
// their tensors are bitcast to i8 (a host view) and converted to and from
// f32 here with integer ops on the bit patterns. Conversions to f8 round to
// nearest even; the results follow ONNX's reference (ml_dtypes): NaN stays
// NaN, overflow gives +-max with `saturate` and otherwise infinity (E5M2) or
// NaN (the formats without infinity); the FNUZ formats have no -0. The f8
// codecs also serve QuantizeLinear and DequantizeLinear (Quantize.cpp).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

/// The layout of one 8-bit float format.
struct Float8Format {
  int mb;      ///< mantissa bits (exponent bits: 7 - mb)
  int bias;    ///< exponent bias
  bool fn;     ///< E4M3FN: no infinity, 0x7f/0xff are NaN
  bool uz;     ///< FNUZ: no infinity, no -0, 0x80 is the only NaN
  int maxCode; ///< bits of the largest finite magnitude
};

std::optional<Float8Format> formatOf(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return Float8Format{3, 7, true, false, 0x7e};
  if (isa<Float8E4M3FNUZType>(t))
    return Float8Format{3, 8, false, true, 0x7f};
  if (isa<Float8E5M2Type>(t))
    return Float8Format{2, 15, false, false, 0x7b};
  if (isa<Float8E5M2FNUZType>(t))
    return Float8Format{2, 16, false, true, 0x7f};
  return std::nullopt;
}

/// Scalar i32 helpers.
struct I32 {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value band(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value bor(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shl(Value x, Value y) { return arith::ShLIOp::create(b, loc, x, y); }
  Value shr(Value x, Value y) { return arith::ShRUIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value sel(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
};

} // namespace

bool lowering::isFloat8(Type t) { return formatOf(t).has_value(); }

Value lowering::float8ToF32(OpBuilder &b, Location loc, Value bits, Type f8) {
  Float8Format f = *formatOf(f8);
  using P = arith::CmpIPredicate;
  I32 i{b, loc};
  int eb = 7 - f.mb;
  Value x = arith::ExtUIOp::create(b, loc, b.getI32Type(), bits);
  Value sign = i.shl(i.shr(x, i.c(7)), i.c(31));
  Value e = i.band(i.shr(x, i.c(f.mb)), i.c((1 << eb) - 1));
  Value m = i.band(x, i.c((1 << f.mb) - 1));
  // Normal: rebias the exponent and widen the mantissa.
  Value normal = i.bor(i.shl(i.add(e, i.c(127 - f.bias)), i.c(23)),
                       i.shl(m, i.c(23 - f.mb)));
  // Subnormal: m * 2^(1 - bias - mb), exact in f32.
  Value mf = arith::UIToFPOp::create(b, loc, b.getF32Type(), m);
  Value scaled = arith::MulFOp::create(
      b, loc, mf,
      arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(std::ldexp(1.0f, 1 - f.bias - f.mb))));
  Value sub = arith::BitcastOp::create(b, loc, b.getI32Type(), scaled);
  Value r = i.bor(i.sel(i.cmp(P::eq, e, i.c(0)), sub, normal), sign);
  Value nan = i.bor(sign, i.c(0x7fc00000));
  if (f.uz) {
    r = i.sel(i.cmp(P::eq, x, i.c(0x80)), i.c(0x7fc00000), r);
  } else if (f.fn) {
    r = i.sel(i.cmp(P::eq, i.band(x, i.c(0x7f)), i.c(0x7f)), nan, r);
  } else {
    Value special = i.cmp(P::eq, e, i.c((1 << eb) - 1));
    Value inf = i.bor(sign, i.c(0x7f800000));
    r = i.sel(special, i.sel(i.cmp(P::eq, m, i.c(0)), inf, nan), r);
  }
  return arith::BitcastOp::create(b, loc, b.getF32Type(), r);
}

Value lowering::f32ToFloat8(OpBuilder &b, Location loc, Value v, Type f8,
                            bool saturate) {
  Float8Format f = *formatOf(f8);
  using P = arith::CmpIPredicate;
  I32 i{b, loc};
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), v);
  Value sign = i.shr(bits, i.c(31));
  Value a = i.band(bits, i.c(0x7fffffff));
  Value isNan = i.cmp(P::ugt, a, i.c(0x7f800000));
  Value e = i.shr(a, i.c(23));
  Value m = i.band(a, i.c(0x7fffff));
  // Target biased exponent; normal results keep f32's layout shifted right,
  // subnormal ones shift the significand (implicit bit included) further.
  Value te = i.add(e, i.c(f.bias - 127));
  Value isNormal = i.cmp(P::sge, te, i.c(1));
  Value sig = i.sel(i.cmp(P::ne, e, i.c(0)), i.bor(m, i.c(0x800000)), m);
  Value n = i.sel(isNormal, i.bor(i.shl(te, i.c(23)), m), sig);
  Value extra = i.sel(isNormal, i.c(0), i.sub(i.c(1), te));
  Value shift =
      arith::MinUIOp::create(b, loc, i.add(extra, i.c(23 - f.mb)), i.c(31));
  Value q = i.shr(n, shift);
  Value rem = i.sub(n, i.shl(q, shift));
  Value half = i.shl(i.c(1), i.sub(shift, i.c(1)));
  Value up = arith::OrIOp::create(
      b, loc, i.cmp(P::ugt, rem, half),
      arith::AndIOp::create(b, loc, i.cmp(P::eq, rem, half),
                            i.cmp(P::ne, i.band(q, i.c(1)), i.c(0))));
  q = i.add(q, arith::ExtUIOp::create(b, loc, b.getI32Type(), up));
  // Overflow (infinity included).
  Value over = i.cmp(P::ugt, q, i.c(f.maxCode));
  int overCode = saturate ? f.maxCode : (f.fn || f.uz ? 0x7f : 0x7c);
  Value mag = i.sel(over, i.c(overCode), q);
  Value r = i.bor(i.shl(sign, i.c(7)), mag);
  Value nanCode;
  if (f.uz) {
    r = i.sel(i.cmp(P::eq, mag, i.c(0)), i.c(0), r);
    if (!saturate)
      r = i.sel(over, i.c(0x80), r);
    nanCode = i.c(0x80);
  } else {
    nanCode = i.bor(i.shl(sign, i.c(7)), i.c(f.fn ? 0x7f : 0x7e));
  }
  r = i.sel(isNan, nanCode, r);
  return arith::TruncIOp::create(b, loc, b.getI8Type(), r);
}

Value lowering::float8BitsView(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!isFloat8(t.getElementType()))
    return v;
  return tensor::BitcastOp::create(b, loc, t.clone(b.getI8Type()), v);
}

/// Converts scalar `v` (signless; `fromUnsigned` tells how to read integers)
/// to `to` (signless; `toUnsigned` for integer results).
static Value castScalar(OpBuilder &b, Location loc, Value v, bool fromUnsigned,
                        Type to, bool toUnsigned) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = dyn_cast<FloatType>(from);
  auto toF = dyn_cast<FloatType>(to);
  if (fromF && toF) {
    if (fromF.getWidth() == toF.getWidth()) // f16 <-> bf16
      return arith::TruncFOp::create(
          b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
    return fromF.getWidth() < toF.getWidth()
               ? arith::ExtFOp::create(b, loc, to, v).getResult()
               : arith::TruncFOp::create(b, loc, to, v).getResult();
  }
  if (fromF) {
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   cst(b, loc, from, 0.0));
    return toUnsigned ? arith::FPToUIOp::create(b, loc, to, v).getResult()
                      : arith::FPToSIOp::create(b, loc, to, v).getResult();
  }
  bool srcUnsigned = fromUnsigned || from.isInteger(1);
  if (toF)
    return srcUnsigned ? arith::UIToFPOp::create(b, loc, to, v).getResult()
                       : arith::SIToFPOp::create(b, loc, to, v).getResult();
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (tw == 1)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 cst(b, loc, from, 0));
  if (fw < tw)
    return srcUnsigned ? arith::ExtUIOp::create(b, loc, to, v).getResult()
                       : arith::ExtSIOp::create(b, loc, to, v).getResult();
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, to, v);
  return v;
}

/// Cast and CastLike: converts operand 0 to the result's element type.
template <typename OpTy>
static LogicalResult lowerCast(OpTy op, OpBuilder &b,
                               SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> type = rankedResult(op);
  FailureOr<RankedTensorType> in = rankedOperand(op, 0);
  if (failed(type) || failed(in))
    return failure();
  Type fromT = in->getElementType(), toT = type->getElementType();
  bool fromF8 = isFloat8(fromT), toF8 = isFloat8(toT);
  if ((!kindOf(fromT) && !fromF8) || (!kindOf(toT) && !toF8))
    return nodeError(op) << "cast from " << fromT << " to " << toT
                         << " is not supported (strings, 4-bit and complex "
                            "types are not)",
           failure();
  Location loc = op->getLoc();
  if (fromF8 || toF8) {
    // 8-bit floats go through f32, computed on their i8 bits.
    bool saturate = asInt(op.getSaturate()) != 0;
    bool fromU = fromT.isUnsignedInteger(), toU = toT.isUnsignedInteger();
    Type f32 = b.getF32Type();
    Type to = toF8 ? b.getI8Type() : signlessType(toT);
    Value x = float8BitsView(b, loc, toSignless(b, loc, op->getOperand(0)));
    Value r = buildElementwise(
        b, loc, type->clone(to), x,
        [&](OpBuilder &nb, Location nloc, ValueRange a) {
          Value v = fromF8 ? float8ToF32(nb, nloc, a[0], fromT)
                           : castScalar(nb, nloc, a[0], fromU, f32, false);
          if (toF8)
            return f32ToFloat8(nb, nloc, v, toT, saturate);
          return castScalar(nb, nloc, v, false, to, toU);
        });
    results.push_back(fromSignless(b, loc, r, *type));
    return success();
  }
  Type to = signlessType(toT);
  bool fromU = fromT.isUnsignedInteger(), toU = toT.isUnsignedInteger();
  Value r = buildElementwise(
      b, loc, signlessTensor(*type), toSignless(b, loc, op->getOperand(0)),
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        return castScalar(nb, nloc, a[0], fromU, to, toU);
      });
  results.push_back(fromSignless(b, loc, r, *type));
  return success();
}

void lowering::populateCastLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Cast> t(patterns);
  t.add<onnxops::CastOp>(lowerCast<onnxops::CastOp>);
  t.add<onnxops::CastLikeOp>(lowerCast<onnxops::CastLikeOp>);
}
