//===- Elementwise2.cpp - Math, logic, comparison and cast ops ------------===//
//
// Elementwise ops over all ONNX numeric types. Unsigned tensors (`ui8`...)
// are brought to signless tensors of the same width with `tensor.bitcast`
// (a view on the host) and the body uses the unsigned arith ops where the
// signedness matters; unsigned results are bitcast back. Transcendental math
// on f16/bf16 is computed in f32.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

static bool isUnsignedTensor(Type t) {
  return getElementTypeOrSelf(t).isUnsignedInteger();
}

Type lowering::signlessType(Type t) {
  if (auto it = dyn_cast<IntegerType>(t); it && !it.isSignless())
    return IntegerType::get(t.getContext(), it.getWidth());
  return t;
}

RankedTensorType lowering::signlessTensor(RankedTensorType t) {
  return t.clone(signlessType(t.getElementType()));
}

/// `v` viewed with a signless element type (a no-op for other types).
Value lowering::toSignless(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!isUnsignedTensor(t))
    return v;
  return tensor::BitcastOp::create(b, loc, signlessTensor(t), v);
}

/// `v` (signless) viewed as `type` (which may be unsigned).
Value lowering::fromSignless(OpBuilder &b, Location loc, Value v,
                             RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return tensor::BitcastOp::create(b, loc, type, v);
}

namespace {

enum Kind : unsigned { kFloat = 1, kInt = 2, kBool = 4, kAny = 7 };

/// What a scalar body knows about the op: the signless element type of its
/// data operand and whether that operand is unsigned.
struct Scalars {
  Operation *op;
  Type elem;
  bool isUnsigned;
};

using Body =
    std::function<Value(OpBuilder &, Location, const Scalars &, ValueRange)>;

/// The kind of an element type, 0 if unsupported (strings never get here:
/// the importer rejects them; int4, complex; f8 goes through SmallFloat.cpp).
unsigned kindOf(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64())
    return kFloat;
  if (t.isInteger(1))
    return kBool;
  if (auto it = dyn_cast<IntegerType>(t))
    return llvm::is_contained({8u, 16u, 32u, 64u}, it.getWidth()) ? kInt : 0;
  return 0;
}

/// -1 of a float or (signless) integer type: all ones for integers.
Value minusOne(OpBuilder &b, Location loc, Type t) {
  if (isa<FloatType>(t))
    return cst(b, loc, t, -1.0);
  return arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(t, APInt::getAllOnes(t.getIntOrFloatBitWidth())));
}

/// An elementwise lowering with broadcasting over the present operands;
/// `kinds` are the accepted element kinds of operand `data`.
LowerFn ew(Body body, unsigned kinds, unsigned data = 0) {
  return [body, kinds, data](Operation *op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> type = rankedResult(op);
    if (failed(type))
      return failure();
    Location loc = op->getLoc();
    Type dataElem = getElementTypeOrSelf(op->getOperand(data).getType());
    if (!(kindOf(dataElem) & kinds))
      return nodeError(op) << "element type " << dataElem
                           << " is not supported",
             failure();
    SmallVector<Value> inputs;
    SmallVector<int> position;
    for (Value v : op->getOperands()) {
      if (onnxops::isNoValue(v)) {
        position.push_back(-1);
        continue;
      }
      if (!isa<RankedTensorType>(v.getType()))
        return nodeError(op) << "an input has unknown rank", failure();
      position.push_back(0);
      inputs.push_back(toSignless(b, loc, v));
    }
    Scalars s{op, signlessType(dataElem), dataElem.isUnsignedInteger()};
    Value r =
        buildElementwise(b, loc, signlessTensor(*type), inputs,
                         [&](OpBuilder &nb, Location nloc, ValueRange args) {
                           SmallVector<Value> full;
                           unsigned k = 0;
                           for (int p : position)
                             full.push_back(p < 0 ? Value() : args[k++]);
                           return body(nb, nloc, s, full);
                         });
    results.push_back(fromSignless(b, loc, r, *type));
    return success();
  };
}

/// Computes `fn(x)` in f32 when `x` is a narrower float.
Value inF32(OpBuilder &b, Location loc, Value x,
            function_ref<Value(Value)> fn) {
  auto ft = cast<FloatType>(x.getType());
  if (ft.getWidth() >= 32)
    return fn(x);
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  return arith::TruncFOp::create(b, loc, ft, fn(wide));
}

/// A float-only unary op computed by `fn` (in f32 for f16/bf16).
LowerFn
unaryMath(std::function<Value(OpBuilder &, Location, Operation *, Value)> fn) {
  return ew(
      [fn](OpBuilder &b, Location loc, const Scalars &s,
           ValueRange a) -> Value {
        return inF32(b, loc, a[0],
                     [&](Value x) { return fn(b, loc, s.op, x); });
      },
      kFloat);
}

template <typename MathOp> LowerFn mathOp() {
  return unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) {
    return MathOp::create(b, loc, x).getResult();
  });
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value den = arith::AddFOp::create(b, loc, cst(b, loc, t, 1.0), e);
  return arith::DivFOp::create(b, loc, cst(b, loc, t, 1.0), den);
}

/// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
Value softplus(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value pos = arith::MaximumFOp::create(b, loc, x, cst(b, loc, t, 0));
  Value e = math::ExpOp::create(
      b, loc, arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x)));
  return arith::AddFOp::create(b, loc, pos, math::Log1pOp::create(b, loc, e));
}

Value cmp(OpBuilder &b, Location loc, const Scalars &s, Value x, Value y,
          arith::CmpFPredicate fp, arith::CmpIPredicate sp,
          arith::CmpIPredicate up) {
  if (isa<FloatType>(x.getType()))
    return arith::CmpFOp::create(b, loc, fp, x, y);
  return arith::CmpIOp::create(b, loc, s.isUnsigned ? up : sp, x, y);
}

LowerFn compare(arith::CmpFPredicate fp, arith::CmpIPredicate sp,
                arith::CmpIPredicate up, unsigned kinds = kFloat | kInt) {
  return ew(
      [=](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) {
        return cmp(b, loc, s, a[0], a[1], fp, sp, up);
      },
      kinds);
}

/// Max/Min/Sum/Mean: a left fold of the operands.
LowerFn
fold(std::function<Value(OpBuilder &, Location, const Scalars &, Value, Value)>
         step,
     unsigned kinds, bool mean = false) {
  return ew(
      [=](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) {
        Value acc = a[0];
        for (Value v : a.drop_front())
          acc = step(b, loc, s, acc, v);
        if (mean)
          acc = arith::DivFOp::create(b, loc, acc,
                                      cst(b, loc, acc.getType(), a.size()));
        return acc;
      },
      kinds);
}

Value mod(OpBuilder &b, Location loc, const Scalars &s, ValueRange a) {
  Value x = a[0], y = a[1];
  Type t = x.getType();
  bool fmod = getInt(s.op, "fmod", 0);
  if (isa<FloatType>(t)) {
    Value r = inF32(b, loc, x, [&](Value xx) {
      Value yy =
          xx.getType() == t
              ? y
              : arith::ExtFOp::create(b, loc, xx.getType(), y).getResult();
      return arith::RemFOp::create(b, loc, xx, yy).getResult();
    });
    if (fmod)
      return r;
    // Python semantics: the result has the divisor's sign.
    Value zero = cst(b, loc, t, 0);
    Value nz =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, r, zero);
    Value rNeg =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, r, zero);
    Value yNeg =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, y, zero);
    Value fix = arith::AndIOp::create(
        b, loc, nz, arith::XOrIOp::create(b, loc, rNeg, yNeg));
    return arith::SelectOp::create(b, loc, fix,
                                   arith::AddFOp::create(b, loc, r, y), r);
  }
  // Integers: x mod 0 is 0 (no trap), x mod -1 is 0 (no INT_MIN overflow).
  Value zero = cst(b, loc, t, 0), one = cst(b, loc, t, 1);
  Value yZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  if (s.isUnsigned) {
    Value r = arith::RemUIOp::create(
        b, loc, x, arith::SelectOp::create(b, loc, yZero, one, y));
    return arith::SelectOp::create(b, loc, yZero, zero, r);
  }
  Value yMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y,
                                          minusOne(b, loc, t));
  Value bad = arith::OrIOp::create(b, loc, yZero, yMinusOne);
  Value r = arith::RemSIOp::create(
      b, loc, x, arith::SelectOp::create(b, loc, bad, one, y));
  r = arith::SelectOp::create(b, loc, bad, zero, r);
  if (fmod)
    return r;
  Value nz = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
  Value rNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
  Value yNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
  Value fix = arith::AndIOp::create(b, loc, nz,
                                    arith::XOrIOp::create(b, loc, rNeg, yNeg));
  return arith::SelectOp::create(b, loc, fix,
                                 arith::AddIOp::create(b, loc, r, y), r);
}

} // namespace

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
static LogicalResult lowerCast(Operation *op, OpBuilder &b,
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
    bool saturate = getInt(op, "saturate", 1) != 0;
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

static LogicalResult lowerSize(Operation *op, OpBuilder &b,
                               SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> in = rankedOperand(op, 0);
  if (failed(in))
    return failure();
  Location loc = op->getLoc();
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < in->getRank(); ++i)
    n = arith::MulIOp::create(b, loc, n,
                              dimValue(b, loc, op->getOperand(0), i));
  Value v = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
  results.push_back(tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()), v));
  return success();
}

/// Inference-mode Dropout: the identity, and a mask of all true.
static LogicalResult lowerDropout(Operation *op, OpBuilder &b,
                                  SmallVectorImpl<Value> &results) {
  Value ratio = op->getOperand(1), training = op->getOperand(2);
  if (!onnxops::isNoValue(training)) {
    std::optional<SmallVector<int64_t>> t =
        onnxops::getConstantIntValues(training);
    bool zeroRatio = false;
    if (onnxops::isNoValue(ratio)) {
      zeroRatio = false;
    } else if (auto r = onnxops::getConstantFloatValues(ratio)) {
      zeroRatio = r->size() == 1 && (*r)[0] == 0.0;
    }
    if (!t || (t->size() == 1 && (*t)[0] != 0 && !zeroRatio))
      return nodeError(op) << "training mode (random dropout) is not supported",
             failure();
  }
  results.push_back(op->getOperand(0));
  if (op->getNumResults() > 1 && !op->getResult(1).use_empty()) {
    FailureOr<RankedTensorType> mt = rankedResult(op, 1);
    if (failed(mt))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < mt->getRank(); ++i)
      if (mt->isDynamicDim(i))
        dyn.push_back(dimValue(b, loc, op->getOperand(0), i));
    results.push_back(
        filledTensor(b, loc, *mt, dyn, IntegerAttr::get(b.getI1Type(), 1)));
  }
  return success();
}

void lowering::registerElementwise2Lowerings(llvm::StringMap<LowerFn> &t) {
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  // Comparisons.
  t["Equal"] = compare(FP::OEQ, IP::eq, IP::eq, kAny);
  t["Less"] = compare(FP::OLT, IP::slt, IP::ult);
  t["Greater"] = compare(FP::OGT, IP::sgt, IP::ugt);
  t["LessOrEqual"] = compare(FP::OLE, IP::sle, IP::ule);
  t["GreaterOrEqual"] = compare(FP::OGE, IP::sge, IP::uge);

  // Logical and bitwise.
  auto bitwise = [](auto make, unsigned kinds) {
    return ew([make](OpBuilder &b, Location loc, const Scalars &,
                     ValueRange a) { return make(b, loc, a[0], a[1]); },
              kinds);
  };
  auto andOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::AndIOp::create(b, l, x, y);
  };
  auto orOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::OrIOp::create(b, l, x, y);
  };
  auto xorOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::XOrIOp::create(b, l, x, y);
  };
  t["And"] = bitwise(andOp, kBool);
  t["Or"] = bitwise(orOp, kBool);
  t["Xor"] = bitwise(xorOp, kBool);
  t["BitwiseAnd"] = bitwise(andOp, kInt);
  t["BitwiseOr"] = bitwise(orOp, kInt);
  t["BitwiseXor"] = bitwise(xorOp, kInt);
  auto notOp = [](OpBuilder &b, Location loc, const Scalars &,
                  ValueRange a) -> Value {
    return arith::XOrIOp::create(b, loc, a[0],
                                 minusOne(b, loc, a[0].getType()));
  };
  t["Not"] = ew(notOp, kBool);
  t["BitwiseNot"] = ew(notOp, kInt);
  t["BitShift"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Type ty = a[0].getType();
        bool left = getStr(s.op, "direction", "LEFT") == "LEFT";
        // Shifting by the width or more gives 0 (LLVM would give poison).
        Value tooFar = arith::CmpIOp::create(
            b, loc, IP::uge, a[1], cst(b, loc, ty, ty.getIntOrFloatBitWidth()));
        Value r = left ? arith::ShLIOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::ShRUIOp::create(b, loc, a[0], a[1]).getResult();
        return arith::SelectOp::create(b, loc, tooFar, cst(b, loc, ty, 0), r);
      },
      kInt);

  t["Where"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
      },
      kAny, /*data=*/1);

  // Variadic.
  t["Max"] = fold(
      [](OpBuilder &b, Location l, const Scalars &s, Value x,
         Value y) -> Value {
        if (isa<FloatType>(x.getType()))
          return arith::MaximumFOp::create(b, l, x, y);
        return s.isUnsigned ? arith::MaxUIOp::create(b, l, x, y).getResult()
                            : arith::MaxSIOp::create(b, l, x, y).getResult();
      },
      kFloat | kInt);
  t["Min"] = fold(
      [](OpBuilder &b, Location l, const Scalars &s, Value x,
         Value y) -> Value {
        if (isa<FloatType>(x.getType()))
          return arith::MinimumFOp::create(b, l, x, y);
        return s.isUnsigned ? arith::MinUIOp::create(b, l, x, y).getResult()
                            : arith::MinSIOp::create(b, l, x, y).getResult();
      },
      kFloat | kInt);
  auto add = [](OpBuilder &b, Location l, const Scalars &, Value x,
                Value y) -> Value {
    if (isa<FloatType>(x.getType()))
      return arith::AddFOp::create(b, l, x, y);
    return arith::AddIOp::create(b, l, x, y);
  };
  t["Sum"] = fold(add, kFloat | kInt);
  t["Mean"] = fold(add, kFloat, /*mean=*/true);
  t["Mod"] = ew(mod, kFloat | kInt);

  // Rounding and sign.
  t["Round"] = mathOp<math::RoundEvenOp>();
  t["Floor"] = mathOp<math::FloorOp>();
  t["Ceil"] = mathOp<math::CeilOp>();
  t["Sign"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Value x = a[0];
        Type ty = x.getType();
        Value zero = cst(b, loc, ty, 0), one = cst(b, loc, ty, 1);
        if (isa<FloatType>(ty)) {
          Value pos = arith::CmpFOp::create(b, loc, FP::OGT, x, zero);
          Value neg = arith::CmpFOp::create(b, loc, FP::OLT, x, zero);
          return arith::SelectOp::create(
              b, loc, pos, one,
              arith::SelectOp::create(b, loc, neg, minusOne(b, loc, ty), x));
        }
        if (s.isUnsigned)
          return arith::SelectOp::create(
              b, loc, arith::CmpIOp::create(b, loc, IP::ne, x, zero), one,
              zero);
        Value pos = arith::CmpIOp::create(b, loc, IP::sgt, x, zero);
        Value neg = arith::CmpIOp::create(b, loc, IP::slt, x, zero);
        return arith::SelectOp::create(
            b, loc, pos, one,
            arith::SelectOp::create(b, loc, neg, minusOne(b, loc, ty), zero));
      },
      kFloat | kInt);
  t["Reciprocal"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::DivFOp::create(b, loc, cst(b, loc, a[0].getType(), 1),
                                     a[0]);
      },
      kFloat);

  // Trigonometric and hyperbolic.
  t["Sin"] = mathOp<math::SinOp>();
  t["Cos"] = mathOp<math::CosOp>();
  t["Tan"] = mathOp<math::TanOp>();
  t["Asin"] = mathOp<math::AsinOp>();
  t["Acos"] = mathOp<math::AcosOp>();
  t["Atan"] = mathOp<math::AtanOp>();
  t["Sinh"] = mathOp<math::SinhOp>();
  t["Cosh"] = mathOp<math::CoshOp>();
  t["Asinh"] = mathOp<math::AsinhOp>();
  t["Acosh"] = mathOp<math::AcoshOp>();
  t["Atanh"] = mathOp<math::AtanhOp>();
  t["Erf"] = mathOp<math::ErfOp>();

  // Activations.
  t["Gelu"] = unaryMath([](OpBuilder &b, Location loc, Operation *op,
                           Value x) -> Value {
    Type ty = x.getType();
    Value half = cst(b, loc, ty, 0.5), one = cst(b, loc, ty, 1.0);
    Value inner;
    if (getStr(op, "approximate", "none") == "tanh") {
      Value x3 =
          arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
      Value u = arith::AddFOp::create(
          b, loc, x,
          arith::MulFOp::create(b, loc, cst(b, loc, ty, 0.044715), x3));
      u = arith::MulFOp::create(b, loc, cst(b, loc, ty, std::sqrt(2.0 / M_PI)),
                                u);
      inner = math::TanhOp::create(b, loc, u);
    } else {
      inner = math::ErfOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, cst(b, loc, ty, M_SQRT1_2)));
    }
    Value y = arith::MulFOp::create(b, loc, half, x);
    return arith::MulFOp::create(b, loc, y,
                                 arith::AddFOp::create(b, loc, one, inner));
  });
  t["Elu"] = unaryMath([](OpBuilder &b, Location loc, Operation *op,
                          Value x) -> Value {
    Type ty = x.getType();
    Value alpha = cst(b, loc, ty, getFloat(op, "alpha", 1.0));
    Value em1 = arith::SubFOp::create(b, loc, math::ExpOp::create(b, loc, x),
                                      cst(b, loc, ty, 1.0));
    Value neg = arith::CmpFOp::create(b, loc, FP::OLT, x, cst(b, loc, ty, 0));
    return arith::SelectOp::create(
        b, loc, neg, arith::MulFOp::create(b, loc, alpha, em1), x);
  });
  t["Selu"] = unaryMath([](OpBuilder &b, Location loc, Operation *op,
                           Value x) -> Value {
    Type ty = x.getType();
    Value alpha =
        cst(b, loc, ty, getFloat(op, "alpha", 1.67326319217681884765625));
    Value gamma =
        cst(b, loc, ty, getFloat(op, "gamma", 1.05070102214813232421875));
    Value negPart = arith::SubFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, alpha, math::ExpOp::create(b, loc, x)),
        alpha);
    Value le = arith::CmpFOp::create(b, loc, FP::OLE, x, cst(b, loc, ty, 0));
    Value v = arith::SelectOp::create(b, loc, le, negPart, x);
    return arith::MulFOp::create(b, loc, gamma, v);
  });
  t["Celu"] = unaryMath([](OpBuilder &b, Location loc, Operation *op,
                           Value x) -> Value {
    Type ty = x.getType();
    Value alpha = cst(b, loc, ty, getFloat(op, "alpha", 1.0));
    Value zero = cst(b, loc, ty, 0);
    Value e =
        math::ExpOp::create(b, loc, arith::DivFOp::create(b, loc, x, alpha));
    Value neg = arith::MulFOp::create(
        b, loc, alpha, arith::SubFOp::create(b, loc, e, cst(b, loc, ty, 1.0)));
    return arith::AddFOp::create(b, loc,
                                 arith::MaximumFOp::create(b, loc, zero, x),
                                 arith::MinimumFOp::create(b, loc, zero, neg));
  });
  t["Softplus"] =
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        return softplus(b, loc, x);
      });
  t["Softsign"] =
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        Value den = arith::AddFOp::create(b, loc, cst(b, loc, x.getType(), 1.0),
                                          math::AbsFOp::create(b, loc, x));
        return arith::DivFOp::create(b, loc, x, den);
      });
  t["ThresholdedRelu"] = unaryMath(
      [](OpBuilder &b, Location loc, Operation *op, Value x) -> Value {
        Type ty = x.getType();
        Value gt = arith::CmpFOp::create(
            b, loc, FP::OGT, x, cst(b, loc, ty, getFloat(op, "alpha", 1.0)));
        return arith::SelectOp::create(b, loc, gt, x, cst(b, loc, ty, 0));
      });
  t["Mish"] =
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        return arith::MulFOp::create(
            b, loc, x, math::TanhOp::create(b, loc, softplus(b, loc, x)));
      });
  t["HardSwish"] = unaryMath([](OpBuilder &b, Location loc, Operation *,
                                Value x) -> Value {
    Type ty = x.getType();
    Value v = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, cst(b, loc, ty, 1.0 / 6.0)),
        cst(b, loc, ty, 0.5));
    v = arith::MinimumFOp::create(b, loc, v, cst(b, loc, ty, 1.0));
    v = arith::MaximumFOp::create(b, loc, v, cst(b, loc, ty, 0.0));
    return arith::MulFOp::create(b, loc, x, v);
  });
  t["Swish"] = unaryMath(
      [](OpBuilder &b, Location loc, Operation *op, Value x) -> Value {
        Value ax = arith::MulFOp::create(
            b, loc, x, cst(b, loc, x.getType(), getFloat(op, "alpha", 1.0)));
        return arith::MulFOp::create(b, loc, x, sigmoid(b, loc, ax));
      });
  t["PRelu"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Value x = a[0], slope = a[1];
        Type ty = x.getType();
        Value zero = cst(b, loc, ty, 0);
        if (isa<FloatType>(ty))
          return arith::SelectOp::create(
              b, loc, arith::CmpFOp::create(b, loc, FP::OLT, x, zero),
              arith::MulFOp::create(b, loc, x, slope), x);
        if (s.isUnsigned)
          return x;
        return arith::SelectOp::create(
            b, loc, arith::CmpIOp::create(b, loc, IP::slt, x, zero),
            arith::MulIOp::create(b, loc, x, slope), x);
      },
      kFloat | kInt);

  // Classification.
  t["IsNaN"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::CmpFOp::create(b, loc, FP::UNO, a[0], a[0]);
      },
      kFloat);
  t["IsInf"] = ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Type ty = a[0].getType();
        Value r = cst(b, loc, b.getI1Type(), 0);
        if (getInt(s.op, "detect_positive", 1))
          r = arith::OrIOp::create(
              b, loc, r,
              arith::CmpFOp::create(b, loc, FP::OEQ, a[0],
                                    cst(b, loc, ty, INFINITY)));
        if (getInt(s.op, "detect_negative", 1))
          r = arith::OrIOp::create(
              b, loc, r,
              arith::CmpFOp::create(b, loc, FP::OEQ, a[0],
                                    cst(b, loc, ty, -INFINITY)));
        return r;
      },
      kFloat);

  // Dtypes and shapes.
  t["Cast"] = lowerCast;
  t["CastLike"] = lowerCast;
  t["Size"] = lowerSize;
  t["Dropout"] = lowerDropout;
}
