//===- Elementwise.cpp - Lowering of unary, binary and cast ops -----------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

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

LogicalResult lowerIdentity(Operation *op, OpBuilder &,
                            SmallVectorImpl<Value> &results) {
  results.push_back(op->getOperand(0));
  return success();
}

} // namespace

void lowering::registerElementwiseLowerings(llvm::StringMap<LowerFn> &t) {
  t["Relu"] = elementwise(relu, /*floatOnly=*/false);
  t["LeakyRelu"] = elementwise([](OpBuilder &b, Location loc, Operation *op,
                                  ValueRange a, Type ty) -> Value {
    Value alpha = cst(b, loc, ty, getFloat(op, "alpha", 0.01));
    Value scaled = arith::MulFOp::create(b, loc, a[0], alpha);
    Value neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0],
                                      cst(b, loc, ty, 0));
    return arith::SelectOp::create(b, loc, neg, scaled, a[0]);
  });
  t["Sigmoid"] = elementwise(sigmoid);
  t["Tanh"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::TanhOp::create(b, loc, a[0]);
      });
  t["HardSigmoid"] = elementwise([](OpBuilder &b, Location loc, Operation *op,
                                    ValueRange a, Type ty) -> Value {
    Value alpha = cst(b, loc, ty, getFloat(op, "alpha", 0.2));
    Value beta = cst(b, loc, ty, getFloat(op, "beta", 0.5));
    Value v = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, a[0], alpha), beta);
    v = arith::MinimumFOp::create(b, loc, v, cst(b, loc, ty, 1.0));
    return arith::MaximumFOp::create(b, loc, v, cst(b, loc, ty, 0.0));
  });
  t["Clip"] = elementwise(
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
      /*floatOnly=*/false);
  t["Exp"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::ExpOp::create(b, loc, a[0]);
      });
  t["Log"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::LogOp::create(b, loc, a[0]);
      });
  t["Sqrt"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a, Type) -> Value {
        return math::SqrtOp::create(b, loc, a[0]);
      });
  t["Neg"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *, ValueRange a,
         Type ty) -> Value {
        if (isa<FloatType>(ty))
          return arith::NegFOp::create(b, loc, a[0]);
        return arith::SubIOp::create(b, loc, cst(b, loc, ty, 0), a[0]);
      },
      /*floatOnly=*/false);
  t["Abs"] = elementwise(
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
      /*floatOnly=*/false);

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
  t["Add"] =
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::AddFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::AddIOp::create(b, l, x, y);
             });
  t["Sub"] =
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::SubFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::SubIOp::create(b, l, x, y);
             });
  t["Mul"] =
      binary([](OpBuilder &b, Location l, Value x,
                Value y) -> Value { return arith::MulFOp::create(b, l, x, y); },
             [](OpBuilder &b, Location l, Value x, Value y, bool) -> Value {
               return arith::MulIOp::create(b, l, x, y);
             });
  t["Div"] = binary(
      [](OpBuilder &b, Location l, Value x, Value y) -> Value {
        return arith::DivFOp::create(b, l, x, y);
      },
      [](OpBuilder &b, Location l, Value x, Value y, bool isUnsigned) -> Value {
        // Division by zero must not trap the host process.
        Value zero = cst(b, l, y.getType(), 0);
        Value isZero =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
        Value safe =
            arith::SelectOp::create(b, l, isZero, cst(b, l, y.getType(), 1), y);
        Value q = isUnsigned
                      ? arith::DivUIOp::create(b, l, x, safe).getResult()
                      : arith::DivSIOp::create(b, l, x, safe).getResult();
        return arith::SelectOp::create(b, l, isZero, zero, q);
      });
  t["Pow"] = [](Operation *op, OpBuilder &b,
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
  };
  // Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
  t["Shrink"] = elementwise(
      [](OpBuilder &b, Location loc, Operation *op, ValueRange a,
         Type ty) -> Value {
        double lambd = getFloat(op, "lambd", 0.5);
        double bias = getFloat(op, "bias", 0.0);
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
      /*floatOnly=*/false);
  t["Identity"] = lowerIdentity;
}
