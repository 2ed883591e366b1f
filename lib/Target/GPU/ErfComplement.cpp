//===- ErfComplement.cpp - 1 + erf(y) as a branch-free erfc(-y) -----------===//
//
// kiln-erf-complement (Passes.td): GELU's 1 + erf(y) in device code as
// erfc(-y) evaluated in one range. The polynomial was fitted by weighted
// least squares (weight erfc(t), Lawson iterations) to -log2(erfc(t)) on
// [0, 3.9] and its f32 evaluation (Horner with FMAs) checked on 400001
// points against double erfc: largest difference 5.1e-8.
// test/Target/GPU/erf-complement-values.py checks the whole rewrite from
// this file's constants against 1 + erf(y) in double (1.3e-7 at most).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/Passes.h"

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <optional>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNERFCOMPLEMENT
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Past this |y|, f32's erf(y) rounds to +-1: 1 + erf(y) is 0 or 2.
constexpr double kErfSaturation = 3.9;

/// g(t) = t * (c0 + c1 t + ... + c7 t^7) ~ -log2(erfc(t)) on [0, 3.9].
constexpr double kLog2Erfc[] = {
    1.6279085874557495f,     0.9184163808822632f,    0.14848162233829498f,
    -0.028253687545657158f,  0.0007746367482468486f, 0.0014894376508891582f,
    -0.0004455065354704857f, 4.5358483475865796e-05f};

/// A positive constant f32 scalar's value.
std::optional<double> positiveConstant(Value v) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  double d = attr.getValueAsDouble();
  if (!(d > 0) || !std::isfinite(d))
    return std::nullopt;
  return d;
}

/// When `y` is a positive constant multiple of another value x (x * c,
/// x / c, or kiln-half-division's correctly rounded x / c), x and the
/// multiplier. GELU's erf argument is x / sqrt(2): the polynomial then takes
/// |x| with scaled coefficients and the division goes away.
std::optional<std::pair<Value, double>> scaledValue(Value y) {
  Operation *def = y.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto mul = dyn_cast<arith::MulFOp>(def)) {
    for (int i = 0; i < 2; ++i)
      if (std::optional<double> c = positiveConstant(mul.getOperand(1 - i)))
        return std::make_pair(mul.getOperand(i), *c);
    return std::nullopt;
  }
  if (auto div = dyn_cast<arith::DivFOp>(def)) {
    if (std::optional<double> c = positiveConstant(div.getRhs()))
      return std::make_pair(div.getLhs(), 1.0 / *c);
    return std::nullopt;
  }
  if (std::optional<std::pair<Value, Value>> xc = matchCorrectedF32Division(y))
    if (std::optional<double> c = positiveConstant(xc->second))
      return std::make_pair(xc->first, 1.0 / *c);
  return std::nullopt;
}

/// addf(erf(y), 1) (either order) on f32 scalars.
struct ErfPlusOne : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!add.getType().isF32())
      return failure();
    math::ErfOp erf;
    for (int i = 0; i < 2 && !erf; ++i)
      if (matchPattern(add.getOperand(1 - i), m_OneFloat()))
        erf = add.getOperand(i).getDefiningOp<math::ErfOp>();
    if (!erf)
      return failure();
    Location loc = add.getLoc();
    Value y = erf.getOperand();
    // y = x * s (s > 0) read by the erf alone: the polynomial takes |x|, its
    // coefficients c_k * s^(k+1) and its bound 3.9 / s (in double, rounded
    // once), which is x * s unrounded.
    double scale = 1.0;
    if (y.hasOneUse())
      if (std::optional<std::pair<Value, double>> xs = scaledValue(y)) {
        y = xs->first;
        scale = xs->second;
      }
    Type f32 = rewriter.getF32Type();
    auto cst = [&](float v) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getFloatAttr(f32, v))
          .getResult();
    };
    auto coeff = [&](int k) {
      return cst(static_cast<float>(kLog2Erfc[k] * std::pow(scale, k + 1)));
    };
    Value t = math::AbsFOp::create(rewriter, loc, y);
    Value bound = cst(static_cast<float>(kErfSaturation / scale));
    // NaN stays NaN through minimumf; t > bound is false for it.
    Value tc = arith::MinimumFOp::create(rewriter, loc, t, bound);
    Value p = coeff(std::size(kLog2Erfc) - 1);
    for (int k = std::size(kLog2Erfc) - 2; k >= 0; --k)
      p = math::FmaOp::create(rewriter, loc, p, tc, coeff(k));
    // u = 2^-g = erfc(tc).
    Value negT = arith::NegFOp::create(rewriter, loc, tc);
    // g <= 26 (the polynomial at the bound): the exponential's result is a
    // normal float, which a target may use for a cheaper instruction.
    auto exp2 = math::Exp2Op::create(
        rewriter, loc, arith::MulFOp::create(rewriter, loc, p, negT));
    exp2->setAttr("kiln.exp2_normal", rewriter.getUnitAttr());
    Value u = exp2;
    Value saturated = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGT, t, bound);
    u = arith::SelectOp::create(rewriter, loc, saturated, cst(0.0f), u);
    Value positive = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGE, y, cst(0.0f));
    Value upper = arith::SubFOp::create(rewriter, loc, cst(2.0f), u);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(add, positive, upper, u);
    return success();
  }
};

struct ErfComplementPass
    : public kiln::impl::KilnErfComplementBase<ErfComplementPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ErfPlusOne>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
