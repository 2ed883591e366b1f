//===- HalfDivision.cpp - Half divisions by a constant as products --------===//
//
// A division of a half value (f16, bf16) by a constant, `x / c`, rounds the
// exact quotient to the half type; targets without a half division compute
// it as a correctly rounded f32 division (a GPU's: about ten
// instructions with its special-case path). `x * (1 / c)` in f32, rounded
// to the half type, is the same value except where x / c lies within 2^-23
// (relative) of a tie between two half values, and then one unit of the
// half type away: well inside the rounding that a half build adds to every
// op. GELU's `x / sqrt(2)` before its erf (every transformer's FFN) is one:
// in BERT-base's FFN1 epilogue it is a division per element of a
// 4096 x 3072 tile at batch 32.
//
// With the f32 option, f32 divisions by a constant take Markstein's
// correction instead: q0 = x * r (r = 1 / c correctly rounded), the exact
// residual fma(-q0, c, x), and q1 = fma(residual, r, q0), the correctly
// rounded quotient wherever |x| >= 2^-104 (utils/constant_division_check.c
// compares it with x / c on every float for seven divisors; below, the
// residual underflows and q1 may be an ulp away). Where q0 is infinite (x
// is, or the quotient overflows) q0 is taken, since the residual is NaN.
// An int8 model's QuantizeLinear (x / scale) and GELU in f32 are such
// divisions, one per element of a contraction's epilogue. A division whose
// every use rounds it to an integer (QuantizeLinear's) takes the correction
// without the option: there it is exact (the quotients where it may differ
// round to 0 either way).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHALFDIVISION
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// `x / c` in f32 as Markstein's correction of the product by the
/// correctly rounded reciprocal (the file's comment); false when c is 0,
/// not finite or its reciprocal is not a normal float.
bool correctF32Division(arith::DivFOp op, const APFloat &c) {
  if (c.isZero() || !c.isFinite())
    return false;
  APFloat r(1.0f);
  (void)r.divide(c, APFloat::rmNearestTiesToEven);
  if (!r.isNormal())
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  Value x = op.getLhs();
  Value divisor = op.getRhs();
  Value reciprocal = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, r));
  Value q0 = arith::MulFOp::create(b, loc, x, reciprocal);
  Value residual = math::FmaOp::create(
      b, loc, arith::NegFOp::create(b, loc, q0), divisor, x);
  Value q1 = math::FmaOp::create(b, loc, residual, reciprocal, q0);
  Value inf = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(f32, APFloat::getInf(APFloat::IEEEsingle())));
  Value infinite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         math::AbsFOp::create(b, loc, q0), inf);
  op.replaceAllUsesWith(
      arith::SelectOp::create(b, loc, infinite, q0, q1).getResult());
  op.erase();
  return true;
}

} // namespace

std::optional<std::pair<Value, Value>>
mlir::kiln::matchCorrectedF32Division(Value quotient) {
  auto sel = quotient.getDefiningOp<arith::SelectOp>();
  if (!sel)
    return std::nullopt;
  auto q0 = sel.getTrueValue().getDefiningOp<arith::MulFOp>();
  auto q1 = sel.getFalseValue().getDefiningOp<math::FmaOp>();
  auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!q0 || !q1 || !cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ)
    return std::nullopt;
  auto abs = cmp.getLhs().getDefiningOp<math::AbsFOp>();
  auto residual = q1.getA().getDefiningOp<math::FmaOp>();
  if (!abs || abs.getOperand() != q0.getResult() || !residual ||
      q1.getC() != q0.getResult())
    return std::nullopt;
  auto neg = residual.getA().getDefiningOp<arith::NegFOp>();
  if (!neg || neg.getOperand() != q0.getResult())
    return std::nullopt;
  Value x = residual.getC();
  Value divisor = residual.getB();
  if ((q0.getLhs() != x && q0.getRhs() != x) ||
      !matchPattern(divisor, m_Constant()))
    return std::nullopt;
  return std::make_pair(x, divisor);
}

namespace {
/// Whether every use of `op`'s quotient rounds it to the nearest integer
/// (a QuantizeLinear's `round(x / scale)`): there the corrected product
/// gives the same integer for every x, since it differs from `x / c` only
/// for quotients below 2^-100 in magnitude, which round to 0 either way
/// (floor and ceil would not: -2^-120 and -0 floor apart).
bool onlyRounded(arith::DivFOp op) {
  return !op->use_empty() && llvm::all_of(op->getUsers(), [](Operation *u) {
    return isa<math::RoundEvenOp, math::RoundOp>(u);
  });
}

struct HalfDivisionPass
    : public kiln::impl::KilnHalfDivisionBase<HalfDivisionPass> {
  using KilnHalfDivisionBase::KilnHalfDivisionBase;

  void runOnOperation() override {
    SmallVector<arith::DivFOp> divisions;
    getOperation().walk([&](arith::DivFOp op) {
      Type t = op.getType();
      if (t.isF16() || t.isBF16() ||
          (t.isF32() && (f32 || (rounded && onlyRounded(op)))))
        divisions.push_back(op);
    });
    for (arith::DivFOp op : divisions) {
      FloatAttr c;
      if (!matchPattern(op.getRhs(), m_Constant(&c)))
        continue;
      if (op.getType().isF32()) {
        (void)correctF32Division(op, c.getValue());
        continue;
      }
      double divisor = c.getValueAsDouble();
      // 0, infinities and NaN keep their IEEE division (x / 0 is not
      // x * inf for x = 0).
      if (divisor == 0.0 || !std::isfinite(divisor))
        continue;
      float reciprocal = static_cast<float>(1.0 / divisor);
      if (!std::isfinite(reciprocal) || reciprocal == 0.0f)
        continue;
      OpBuilder b(op);
      Location loc = op.getLoc();
      Type f32 = b.getF32Type();
      Value wide = arith::ExtFOp::create(b, loc, f32, op.getLhs());
      Value product = arith::MulFOp::create(
          b, loc, wide,
          arith::ConstantOp::create(b, loc, b.getF32FloatAttr(reciprocal)));
      op.replaceAllUsesWith(
          arith::TruncFOp::create(b, loc, op.getType(), product).getResult());
      op.erase();
    }
  }
};
} // namespace
