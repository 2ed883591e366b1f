//===- Elementwise.cpp - Arithmetic, math and activations -----------------===//
//
// The Elementwise family (OnnxFamilies.def): arithmetic with numpy
// broadcasting, math, rounding, activations, Clip, the variadic
// Max/Min/Sum/Mean, Identity and inference-mode Dropout. Also `ew`, the
// elementwise lowering over all ONNX numeric types that the Logic family
// shares: unsigned tensors (`ui8`...) are brought to signless tensors of the
// same width with `tensor.bitcast` (a view on the host) and the body uses
// the unsigned arith ops where the signedness matters; unsigned results are
// bitcast back. Transcendental math on f16/bf16 is computed in f32.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using ScalarBody =
    std::function<Value(OpBuilder &, Location, Operation *, ValueRange, Type)>;

/// Lowers an op whose present tensor operands combine elementwise with
/// broadcasting. `floatOnly` rejects integer element types; with
/// `allowUnsigned`, unsigned integer operands are computed on signless views
/// (the body sees the signless type; it may read the op's result type to tell
/// unsigned from signed).
LowerFn elementwise(ScalarBody body, bool floatOnly = true,
                    bool allowUnsigned = false) {
  return [body, floatOnly,
          allowUnsigned](Operation *op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> type = rankedResult(op);
    if (failed(type))
      return failure();
    SmallVector<Value> inputs;
    for (Value v : op->getOperands()) {
      if (onnxops::isNoValue(v))
        continue;
      if (!isa<RankedTensorType>(v.getType()))
        return nodeError(op) << "an input has unknown rank", failure();
      inputs.push_back(v);
    }
    Type elem = type->getElementType();
    if (floatOnly && !isa<FloatType>(elem))
      return nodeError(op) << "element type " << elem
                           << " is not supported (float types only)",
             failure();
    RankedTensorType outType = *type;
    if (allowUnsigned && elem.isUnsignedInteger()) {
      for (Value &v : inputs)
        v = toSignless(b, op->getLoc(), v);
      outType = signlessTensor(*type);
      elem = outType.getElementType();
    }
    if (!isa<FloatType>(elem) && !elem.isSignlessInteger())
      return nodeError(op) << "element type " << elem << " is not supported",
             failure();
    // Operands that are NoValue keep their position for the body: pass a
    // null Value in their place.
    SmallVector<int> position;
    for (Value v : op->getOperands())
      position.push_back(onnxops::isNoValue(v) ? -1 : 0);
    Operation *capturedOp = op;
    Value r =
        buildElementwise(b, op->getLoc(), outType, inputs,
                         [&](OpBuilder &nb, Location loc, ValueRange args) {
                           SmallVector<Value> full;
                           unsigned k = 0;
                           for (int p : position)
                             full.push_back(p < 0 ? Value() : args[k++]);
                           return body(nb, loc, capturedOp, full, elem);
                         });
    results.push_back(fromSignless(b, op->getLoc(), r, *type));
    return success();
  };
}

Value relu(OpBuilder &b, Location loc, Operation *, ValueRange a, Type t) {
  if (isa<FloatType>(t))
    return arith::MaximumFOp::create(b, loc, a[0], cst(b, loc, t, 0));
  return arith::MaxSIOp::create(b, loc, a[0], cst(b, loc, t, 0));
}

Value sigmoid(OpBuilder &b, Location loc, Operation *, ValueRange a, Type t) {
  Value neg = arith::NegFOp::create(b, loc, a[0]);
  Value e = math::ExpOp::create(b, loc, neg);
  Value den = arith::AddFOp::create(b, loc, cst(b, loc, t, 1.0), e);
  return arith::DivFOp::create(b, loc, cst(b, loc, t, 1.0), den);
}

Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = dyn_cast<FloatType>(from);
  auto toF = dyn_cast<FloatType>(to);
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? arith::ExtFOp::create(b, loc, to, v).getResult()
               : arith::TruncFOp::create(b, loc, to, v).getResult();
  if (fromF) {
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   cst(b, loc, from, 0.0));
    return to.isUnsignedInteger()
               ? arith::FPToUIOp::create(b, loc, to, v).getResult()
               : arith::FPToSIOp::create(b, loc, to, v).getResult();
  }
  if (toF) {
    if (from.isInteger(1) || from.isUnsignedInteger())
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::SIToFPOp::create(b, loc, to, v);
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (tw == 1)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 cst(b, loc, from, 0));
  if (fw < tw)
    return (from.isInteger(1) || from.isUnsignedInteger())
               ? arith::ExtUIOp::create(b, loc, to, v).getResult()
               : arith::ExtSIOp::create(b, loc, to, v).getResult();
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, to, v);
  return v;
}

LogicalResult lowerIdentity(onnxops::IdentityOp op, OpBuilder &,
                            SmallVectorImpl<Value> &results) {
  results.push_back(op->getOperand(0));
  return success();
}

} // namespace

unsigned lowering::kindOf(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64())
    return kFloat;
  if (t.isInteger(1))
    return kBool;
  if (auto it = dyn_cast<IntegerType>(t))
    return llvm::is_contained({8u, 16u, 32u, 64u}, it.getWidth()) ? kInt : 0;
  return 0;
}

Value lowering::minusOne(OpBuilder &b, Location loc, Type t) {
  if (isa<FloatType>(t))
    return cst(b, loc, t, -1.0);
  return arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(t, APInt::getAllOnes(t.getIntOrFloatBitWidth())));
}

LowerFn lowering::ew(Body body, unsigned kinds, unsigned data) {
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

namespace {

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

Value sigmoidOf(OpBuilder &b, Location loc, Value x) {
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
  bool fmod = asInt(cast<onnxops::ModOp>(s.op).getFmod());
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

/// Integer Div and Mod: the kernel never traps (a zero divisor reads as 1,
/// INT_MIN / -1 wraps), and before it the run fails when a divisor is zero
/// or, for Div, INT_MIN is divided by -1: one pass over the operands
/// (broadcast like the op) counts both.
static LowerFn checkedDivision(LowerFn lower, bool isDiv) {
  return [lower, isDiv](Operation *op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> type = rankedResult(op);
    Type elem = getElementTypeOrSelf(op->getOperand(0).getType());
    if (failed(type) || !isa<IntegerType>(elem) ||
        !isa<RankedTensorType>(op->getOperand(0).getType()) ||
        !isa<RankedTensorType>(op->getOperand(1).getType()))
      return lower(op, b, results);
    Location loc = op->getLoc();
    Type i64 = b.getI64Type();
    bool isSigned = !elem.isUnsignedInteger();
    unsigned width = elem.getIntOrFloatBitWidth();
    auto flagsType = RankedTensorType::get(type->getShape(), i64);
    // 1: a zero divisor; 2: INT_MIN / -1.
    Value flags = buildElementwise(
        b, loc, flagsType,
        {toSignless(b, loc, op->getOperand(0)),
         toSignless(b, loc, op->getOperand(1))},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Type t = a[1].getType();
          Value zero = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                             a[1], cst(nb, l, t, 0));
          Value flag = arith::ExtUIOp::create(nb, l, i64, zero);
          if (!isDiv || !isSigned)
            return flag;
          Value minusOneY = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a[1], minusOne(nb, l, t));
          Value minX = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a[0],
              arith::ConstantOp::create(
                  nb, l,
                  nb.getIntegerAttr(t, APInt::getSignedMinValue(width))));
          Value overflow = arith::AndIOp::create(nb, l, minusOneY, minX);
          return arith::OrIOp::create(
              nb, l, flag,
              arith::ShLIOp::create(
                  nb, l, arith::ExtUIOp::create(nb, l, i64, overflow),
                  arith::ConstantIntOp::create(nb, l, 1, 64)));
        });
    auto count = [&](bool overflows) {
      return reduceToScalar(
          b, loc, flags, 0, [&](OpBuilder &nb, Location l, Value f, Value acc) {
            Value one = arith::ConstantIntOp::create(nb, l, 1, 64);
            Value bit = overflows ? Value(arith::ShRUIOp::create(nb, l, f, one))
                                  : Value(arith::AndIOp::create(nb, l, f, one));
            return Value(arith::AddIOp::create(nb, l, acc, bit));
          });
    };
    Value zeros = count(false);
    Value overflows = isDiv && isSigned ? count(true) : Value();
    Value none = arith::ConstantIntOp::create(b, loc, 0, 64);
    checkAtRunTime(
        b, op,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, zeros, none),
        "{0} integer divisors are zero", {zeros});
    if (isDiv && isSigned)
      checkAtRunTime(b, op,
                     arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           overflows, none),
                     "{0} integer divisions overflow (the minimum value "
                     "divided by -1)",
                     {overflows});
    return lower(op, b, results);
  };
}

/// Inference-mode Dropout: the identity, and a mask of all true.
static LogicalResult lowerDropout(onnxops::DropoutOp op, OpBuilder &b,
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

void lowering::populateElementwiseLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Elementwise> t(patterns);
  t.add<onnxops::ReluOp>(elementwise(relu, /*floatOnly=*/false));
  t.add<onnxops::LeakyReluOp>(elementwise([](OpBuilder &b, Location loc,
                                             Operation *op, ValueRange a,
                                             Type ty) -> Value {
    Value alpha =
        cst(b, loc, ty, asDouble(cast<onnxops::LeakyReluOp>(op).getAlpha()));
    Value scaled = arith::MulFOp::create(b, loc, a[0], alpha);
    Value neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0],
                                      cst(b, loc, ty, 0));
    return arith::SelectOp::create(b, loc, neg, scaled, a[0]);
  }));
  t.add<onnxops::SigmoidOp>(elementwise(sigmoid));
  t.add<onnxops::TanhOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::TanhOp::create(b, loc, a[0]);
      }));
  t.add<onnxops::HardSigmoidOp>(elementwise([](OpBuilder &b, Location loc,
                                               Operation *op, ValueRange a,
                                               Type ty) -> Value {
    Value alpha =
        cst(b, loc, ty, asDouble(cast<onnxops::HardSigmoidOp>(op).getAlpha()));
    Value beta =
        cst(b, loc, ty, asDouble(cast<onnxops::HardSigmoidOp>(op).getBeta()));
    Value v = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, a[0], alpha), beta);
    v = arith::MinimumFOp::create(b, loc, v, cst(b, loc, ty, 1.0));
    return arith::MaximumFOp::create(b, loc, v, cst(b, loc, ty, 0.0));
  }));
  t.add<onnxops::ClipOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a,
         Type ty) -> Value {
        Value v = a[0];
        bool f = isa<FloatType>(ty);
        if (a.size() > 1 && a[1])
          v = f ? arith::MaximumFOp::create(b, loc, v, a[1]).getResult()
                : arith::MaxSIOp::create(b, loc, v, a[1]).getResult();
        if (a.size() > 2 && a[2])
          v = f ? arith::MinimumFOp::create(b, loc, v, a[2]).getResult()
                : arith::MinSIOp::create(b, loc, v, a[2]).getResult();
        return v;
      },
      /*floatOnly=*/false));
  t.add<onnxops::ExpOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::ExpOp::create(b, loc, a[0]);
      }));
  t.add<onnxops::LogOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::LogOp::create(b, loc, a[0]);
      }));
  t.add<onnxops::SqrtOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::SqrtOp::create(b, loc, a[0]);
      }));
  t.add<onnxops::NegOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a,
         Type ty) -> Value {
        if (isa<FloatType>(ty))
          return arith::NegFOp::create(b, loc, a[0]);
        return arith::SubIOp::create(b, loc, cst(b, loc, ty, 0), a[0]);
      },
      /*floatOnly=*/false));
  t.add<onnxops::AbsOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a,
         Type ty) -> Value {
        if (isa<FloatType>(ty))
          return math::AbsFOp::create(b, loc, a[0]);
        // math.absi has no lowering to LLVM here: select(x < 0, -x, x).
        Value zero = cst(b, loc, ty, 0);
        Value isNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                            a[0], zero);
        Value neg = arith::SubIOp::create(b, loc, zero, a[0]);
        return arith::SelectOp::create(b, loc, isNeg, neg, a[0]);
      },
      /*floatOnly=*/false));

  auto binary = [](auto fop, auto iop) {
    return elementwise(
        [fop, iop](OpBuilder &b, Location loc, Operation *op, ValueRange a,
                   Type ty) -> Value {
          if (isa<FloatType>(ty))
            return fop(b, loc, a[0], a[1]);
          bool isUnsigned = getElementTypeOrSelf(op->getResult(0).getType())
                                .isUnsignedInteger();
          return iop(b, loc, a[0], a[1], isUnsigned);
        },
        /*floatOnly=*/false, /*allowUnsigned=*/true);
  };
  t.add<onnxops::AddOp>(
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::AddFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::AddIOp::create(b, l, x, y);
             }));
  t.add<onnxops::SubOp>(
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::SubFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::SubIOp::create(b, l, x, y);
             }));
  t.add<onnxops::MulOp>(
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::MulFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::MulIOp::create(b, l, x, y);
             }));
  t.add<onnxops::DivOp>(checkedDivision(
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::DivFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y,
                bool isUnsigned) -> Value {
               // Division by zero, or INT_MIN / -1, must not trap the host
               // process (checkedDivision fails the run first): the divisor 1.
               Type t = y.getType();
               Value zero = cst(b, l, t, 0);
               Value isZero = arith::CmpIOp::create(
                   b, l, arith::CmpIPredicate::eq, y, zero);
               Value bad = isZero;
               if (!isUnsigned)
                 bad = arith::OrIOp::create(
                     b, l, isZero,
                     arith::AndIOp::create(
                         b, l,
                         arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                               y, minusOne(b, l, t)),
                         arith::CmpIOp::create(
                             b, l, arith::CmpIPredicate::eq, x,
                             arith::ConstantOp::create(
                                 b, l,
                                 b.getIntegerAttr(
                                     t, APInt::getSignedMinValue(
                                            t.getIntOrFloatBitWidth()))))));
               Value safe =
                   arith::SelectOp::create(b, l, bad, cst(b, l, t, 1), y);
               Value q =
                   isUnsigned
                       ? arith::DivUIOp::create(b, l, x, safe).getResult()
                       : arith::DivSIOp::create(b, l, x, safe).getResult();
               return arith::SelectOp::create(b, l, isZero, zero, q);
             }),
      /*isDiv=*/true));
  t.add<onnxops::PowOp>([](onnxops::PowOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> type = rankedResult(op);
    if (failed(type))
      return failure();
    Location loc = op->getLoc();
    Type elem = type->getElementType();
    Type baseElem = getElementTypeOrSelf(op->getOperand(0).getType());
    Type expElem = getElementTypeOrSelf(op->getOperand(1).getType());
    if (!isa<FloatType>(elem) && !elem.isInteger())
      return nodeError(op) << "element type " << elem << " is not supported",
             failure();
    // Unsigned operands are read through signless views; the scalar
    // conversions below still see their signedness.
    RankedTensorType outType = signlessTensor(*type);
    SmallVector<Value> ins = {toSignless(b, loc, op->getOperand(0)),
                              toSignless(b, loc, op->getOperand(1))};
    auto widen = [&](OpBuilder &nb, Location l, Value v, Type orig,
                     Type to) -> Value {
      if (isa<FloatType>(orig))
        return convertScalar(nb, l, v, to);
      if (orig.isUnsignedInteger() || orig.isInteger(1))
        return arith::UIToFPOp::create(nb, l, to, v);
      return arith::SIToFPOp::create(nb, l, to, v);
    };
    Value r = buildElementwise(
        b, loc, outType, ins,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          if (isa<FloatType>(elem)) {
            Value e = widen(nb, l, a[1], expElem, elem);
            return math::PowFOp::create(nb, l, a[0], e);
          }
          // Integer base: computed in f64 (exact while the result fits in
          // 53 bits) and truncated toward zero, like numpy's power.
          Type f64 = nb.getF64Type();
          Value x = widen(nb, l, a[0], baseElem, f64);
          Value e = widen(nb, l, a[1], expElem, f64);
          Value p = math::PowFOp::create(nb, l, x, e);
          Type outElem = outType.getElementType();
          return elem.isUnsignedInteger()
                     ? arith::FPToUIOp::create(nb, l, outElem, p).getResult()
                     : arith::FPToSIOp::create(nb, l, outElem, p).getResult();
        });
    results.push_back(fromSignless(b, loc, r, *type));
    return success();
  });
  // Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
  t.add<onnxops::ShrinkOp>(elementwise(
      [](OpBuilder &b, Location loc, Operation *op, ValueRange a,
         Type ty) -> Value {
        double lambd = asDouble(cast<onnxops::ShrinkOp>(op).getLambd());
        double bias = asDouble(cast<onnxops::ShrinkOp>(op).getBias());
        Value x = a[0];
        Value zero = cst(b, loc, ty, 0);
        if (isa<FloatType>(ty)) {
          Value lo = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                           cst(b, loc, ty, -lambd));
          Value hi = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                           cst(b, loc, ty, lambd));
          Value plus = arith::AddFOp::create(b, loc, x, cst(b, loc, ty, bias));
          Value minus = arith::SubFOp::create(b, loc, x, cst(b, loc, ty, bias));
          Value r = arith::SelectOp::create(b, loc, hi, minus, zero);
          return arith::SelectOp::create(b, loc, lo, plus, r);
        }
        // Integers compare in f64 against lambd; the bias is an integer.
        Type f64 = b.getF64Type();
        Value xf = arith::SIToFPOp::create(b, loc, f64, x);
        Value lo = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, xf,
                                         cst(b, loc, f64, -lambd));
        Value hi = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, xf,
                                         cst(b, loc, f64, lambd));
        Value bi = cst(b, loc, ty, bias);
        Value plus = arith::AddIOp::create(b, loc, x, bi);
        Value minus = arith::SubIOp::create(b, loc, x, bi);
        Value r = arith::SelectOp::create(b, loc, hi, minus, zero);
        return arith::SelectOp::create(b, loc, lo, plus, r);
      },
      /*floatOnly=*/false));
  t.add<onnxops::IdentityOp>(lowerIdentity);

  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  // Variadic.
  t.add<onnxops::MaxOp>(fold(
      [](OpBuilder &b, Location l, const Scalars &s, Value x,
         Value y) -> Value {
        if (isa<FloatType>(x.getType()))
          return arith::MaximumFOp::create(b, l, x, y);
        return s.isUnsigned ? arith::MaxUIOp::create(b, l, x, y).getResult()
                            : arith::MaxSIOp::create(b, l, x, y).getResult();
      },
      kFloat | kInt));
  t.add<onnxops::MinOp>(fold(
      [](OpBuilder &b, Location l, const Scalars &s, Value x,
         Value y) -> Value {
        if (isa<FloatType>(x.getType()))
          return arith::MinimumFOp::create(b, l, x, y);
        return s.isUnsigned ? arith::MinUIOp::create(b, l, x, y).getResult()
                            : arith::MinSIOp::create(b, l, x, y).getResult();
      },
      kFloat | kInt));
  auto add = [](OpBuilder &b, Location l, const Scalars &, Value x,
                Value y) -> Value {
    if (isa<FloatType>(x.getType()))
      return arith::AddFOp::create(b, l, x, y);
    return arith::AddIOp::create(b, l, x, y);
  };
  t.add<onnxops::SumOp>(fold(add, kFloat | kInt));
  t.add<onnxops::MeanOp>(fold(add, kFloat, /*mean=*/true));
  t.add<onnxops::ModOp>(
      checkedDivision(ew(mod, kFloat | kInt), /*isDiv=*/false));

  // Rounding and sign.
  t.add<onnxops::RoundOp>(mathOp<math::RoundEvenOp>());
  t.add<onnxops::FloorOp>(mathOp<math::FloorOp>());
  t.add<onnxops::CeilOp>(mathOp<math::CeilOp>());
  t.add<onnxops::SignOp>(ew(
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
      kFloat | kInt));
  t.add<onnxops::ReciprocalOp>(ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::DivFOp::create(b, loc, cst(b, loc, a[0].getType(), 1),
                                     a[0]);
      },
      kFloat));

  // Trigonometric and hyperbolic.
  t.add<onnxops::SinOp>(mathOp<math::SinOp>());
  t.add<onnxops::CosOp>(mathOp<math::CosOp>());
  t.add<onnxops::TanOp>(mathOp<math::TanOp>());
  t.add<onnxops::AsinOp>(mathOp<math::AsinOp>());
  t.add<onnxops::AcosOp>(mathOp<math::AcosOp>());
  t.add<onnxops::AtanOp>(mathOp<math::AtanOp>());
  t.add<onnxops::SinhOp>(mathOp<math::SinhOp>());
  t.add<onnxops::CoshOp>(mathOp<math::CoshOp>());
  t.add<onnxops::AsinhOp>(mathOp<math::AsinhOp>());
  t.add<onnxops::AcoshOp>(mathOp<math::AcoshOp>());
  t.add<onnxops::AtanhOp>(mathOp<math::AtanhOp>());
  t.add<onnxops::ErfOp>(mathOp<math::ErfOp>());

  // Activations.
  t.add<onnxops::GeluOp>(unaryMath([](OpBuilder &b, Location loc, Operation *op,
                                      Value x) -> Value {
    Type ty = x.getType();
    Value half = cst(b, loc, ty, 0.5), one = cst(b, loc, ty, 1.0);
    Value inner;
    if (cast<onnxops::GeluOp>(op).getApproximate().str() == "tanh") {
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
  }));
  t.add<onnxops::EluOp>(unaryMath([](OpBuilder &b, Location loc, Operation *op,
                                     Value x) -> Value {
    Type ty = x.getType();
    Value alpha =
        cst(b, loc, ty, asDouble(cast<onnxops::EluOp>(op).getAlpha()));
    Value em1 = arith::SubFOp::create(b, loc, math::ExpOp::create(b, loc, x),
                                      cst(b, loc, ty, 1.0));
    Value neg = arith::CmpFOp::create(b, loc, FP::OLT, x, cst(b, loc, ty, 0));
    return arith::SelectOp::create(
        b, loc, neg, arith::MulFOp::create(b, loc, alpha, em1), x);
  }));
  t.add<onnxops::SeluOp>(unaryMath([](OpBuilder &b, Location loc, Operation *op,
                                      Value x) -> Value {
    Type ty = x.getType();
    Value alpha =
        cst(b, loc, ty, asDouble(cast<onnxops::SeluOp>(op).getAlpha()));
    Value gamma =
        cst(b, loc, ty, asDouble(cast<onnxops::SeluOp>(op).getGamma()));
    Value negPart = arith::SubFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, alpha, math::ExpOp::create(b, loc, x)),
        alpha);
    Value le = arith::CmpFOp::create(b, loc, FP::OLE, x, cst(b, loc, ty, 0));
    Value v = arith::SelectOp::create(b, loc, le, negPart, x);
    return arith::MulFOp::create(b, loc, gamma, v);
  }));
  t.add<onnxops::CeluOp>(unaryMath([](OpBuilder &b, Location loc, Operation *op,
                                      Value x) -> Value {
    Type ty = x.getType();
    Value alpha =
        cst(b, loc, ty, asDouble(cast<onnxops::CeluOp>(op).getAlpha()));
    Value zero = cst(b, loc, ty, 0);
    Value e =
        math::ExpOp::create(b, loc, arith::DivFOp::create(b, loc, x, alpha));
    Value neg = arith::MulFOp::create(
        b, loc, alpha, arith::SubFOp::create(b, loc, e, cst(b, loc, ty, 1.0)));
    return arith::AddFOp::create(b, loc,
                                 arith::MaximumFOp::create(b, loc, zero, x),
                                 arith::MinimumFOp::create(b, loc, zero, neg));
  }));
  t.add<onnxops::SoftplusOp>(
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        return softplus(b, loc, x);
      }));
  t.add<onnxops::SoftsignOp>(
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        Value den = arith::AddFOp::create(b, loc, cst(b, loc, x.getType(), 1.0),
                                          math::AbsFOp::create(b, loc, x));
        return arith::DivFOp::create(b, loc, x, den);
      }));
  t.add<onnxops::ThresholdedReluOp>(unaryMath(
      [](OpBuilder &b, Location loc, Operation *op, Value x) -> Value {
        Type ty = x.getType();
        Value gt = arith::CmpFOp::create(
            b, loc, FP::OGT, x,
            cst(b, loc, ty,
                asDouble(cast<onnxops::ThresholdedReluOp>(op).getAlpha())));
        return arith::SelectOp::create(b, loc, gt, x, cst(b, loc, ty, 0));
      }));
  t.add<onnxops::MishOp>(
      unaryMath([](OpBuilder &b, Location loc, Operation *, Value x) -> Value {
        return arith::MulFOp::create(
            b, loc, x, math::TanhOp::create(b, loc, softplus(b, loc, x)));
      }));
  t.add<onnxops::HardSwishOp>(unaryMath([](OpBuilder &b, Location loc,
                                           Operation *, Value x) -> Value {
    Type ty = x.getType();
    Value v = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, x, cst(b, loc, ty, 1.0 / 6.0)),
        cst(b, loc, ty, 0.5));
    v = arith::MinimumFOp::create(b, loc, v, cst(b, loc, ty, 1.0));
    v = arith::MaximumFOp::create(b, loc, v, cst(b, loc, ty, 0.0));
    return arith::MulFOp::create(b, loc, x, v);
  }));
  t.add<onnxops::SwishOp>(unaryMath(
      [](OpBuilder &b, Location loc, Operation *op, Value x) -> Value {
        Value ax = arith::MulFOp::create(
            b, loc, x,
            cst(b, loc, x.getType(),
                asDouble(cast<onnxops::SwishOp>(op).getAlpha())));
        return arith::MulFOp::create(b, loc, x, sigmoidOf(b, loc, ax));
      }));
  t.add<onnxops::PReluOp>(ew(
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
      kFloat | kInt));

  // Classification.
  t.add<onnxops::IsNaNOp>(ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::CmpFOp::create(b, loc, FP::UNO, a[0], a[0]);
      },
      kFloat));
  t.add<onnxops::IsInfOp>(ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Type ty = a[0].getType();
        Value r = cst(b, loc, b.getI1Type(), 0);
        if (asInt(cast<onnxops::IsInfOp>(s.op).getDetectPositive()))
          r = arith::OrIOp::create(
              b, loc, r,
              arith::CmpFOp::create(b, loc, FP::OEQ, a[0],
                                    cst(b, loc, ty, INFINITY)));
        if (asInt(cast<onnxops::IsInfOp>(s.op).getDetectNegative()))
          r = arith::OrIOp::create(
              b, loc, r,
              arith::CmpFOp::create(b, loc, FP::OEQ, a[0],
                                    cst(b, loc, ty, -INFINITY)));
        return r;
      },
      kFloat));
  t.add<onnxops::DropoutOp>(lowerDropout);
}
