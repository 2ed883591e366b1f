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

#include "mlir/Dialect/Math/IR/Math.h"
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

/// The same fit with five coefficients, for GELUs whose result is rounded
/// to an integer (a quantization, GeluProduct): |(1 + erf) - ref| at most
/// 7.1e-7 in f32 (test/Target/GPU/erf-complement-values.py), three FMAs
/// fewer an element.
constexpr double kLog2ErfcShort[] = {
    1.6278890371322632f, 0.9185095429420471f, 0.14866502583026886f,
    -0.029589436948299408f, 0.0029439800418913364f};
/// kLog2ErfcShort's largest error in 1 + erf.
constexpr double kShortError = 7.1e-7;
/// The largest error, in units of the integer a GELU's result is rounded
/// to, for which GeluProduct takes kLog2ErfcShort.
constexpr double kRoundedTolerance = 1e-3;

/// A finite nonzero constant f32 scalar's value.
std::optional<double> finiteConstant(Value v) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  double d = attr.getValueAsDouble();
  if (d == 0 || !std::isfinite(d))
    return std::nullopt;
  return d;
}

/// A positive constant f32 scalar's value.
std::optional<double> positiveConstant(Value v) {
  std::optional<double> c = finiteConstant(v);
  return c && *c > 0 ? c : std::nullopt;
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

/// For y = x * scale (scale > 0): t = |x|, the bound 3.9 / scale, and
/// 2^(log2c - g(min(t, bound))) = 2^log2c erfc(min(|y|, 3.9)), the
/// polynomial's coefficients c_k * scale^(k+1) (in double, rounded once)
/// and log2c in its last FMA (a product where it is 0). g <= 26 at the
/// bound: for log2c > -100 the exponential's result is a normal float,
/// which a target may use for a cheaper instruction (kiln.exp2_normal).
/// NaN stays NaN through minimumf; t > bound is false for it.
struct ScaledErfc {
  Value t, bound, value;
};
ScaledErfc scaledErfc(PatternRewriter &rewriter, Location loc, Value x,
                      double scale, double log2c,
                      ArrayRef<double> coeffs = kLog2Erfc) {
  Type f32 = rewriter.getF32Type();
  auto cst = [&](double v) {
    return arith::ConstantOp::create(
               rewriter, loc, rewriter.getFloatAttr(f32, static_cast<float>(v)))
        .getResult();
  };
  ScaledErfc r;
  r.t = math::AbsFOp::create(rewriter, loc, x);
  r.bound = cst(kErfSaturation / scale);
  Value tc = arith::MinimumFOp::create(rewriter, loc, r.t, r.bound);
  const int n = coeffs.size();
  Value p = cst(coeffs[n - 1] * std::pow(scale, n));
  for (int k = n - 2; k >= 0; --k)
    p = math::FmaOp::create(rewriter, loc, p, tc,
                            cst(coeffs[k] * std::pow(scale, k + 1)));
  Value negTc = arith::NegFOp::create(rewriter, loc, tc);
  Value g = log2c == 0
                ? arith::MulFOp::create(rewriter, loc, p, negTc).getResult()
                : math::FmaOp::create(rewriter, loc, p, negTc, cst(log2c))
                      .getResult();
  auto exp2 = math::Exp2Op::create(rewriter, loc, g);
  exp2->setAttr("kiln.exp2_normal", rewriter.getUnitAttr());
  r.value = exp2;
  return r;
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
    // u = 2^-g = erfc(min(|y|, 3.9)), 0 past the bound.
    ScaledErfc e = scaledErfc(rewriter, loc, y, scale, 0.0);
    Value saturated = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGT, e.t, e.bound);
    Value u =
        arith::SelectOp::create(rewriter, loc, saturated, cst(0.0f), e.value);
    Value positive = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGE, y, cst(0.0f));
    Value upper = arith::SubFOp::create(rewriter, loc, cst(2.0f), u);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(add, positive, upper, u);
    return success();
  }
};

/// When every use of `v` ends in a rounding to an integer (math.roundeven
/// or math.round: a quantization) through products and quotients by
/// constants, sums with constants, negations and clamps by constants: the
/// largest factor by which those scale v's error (the sums and clamps do
/// not widen it).
std::optional<double> roundedFactor(Value v, int depth = 0) {
  if (depth > 8 || v.use_empty())
    return std::nullopt;
  double worst = 0;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    Value other = user->getNumOperands() == 2
                      ? user->getOperand(1 - use.getOperandNumber())
                      : Value();
    std::optional<double> k;
    if (isa<math::RoundEvenOp, math::RoundOp>(user)) {
      k = 1.0;
    } else if (isa<arith::MulFOp>(user)) {
      if (std::optional<double> c = finiteConstant(other))
        if (std::optional<double> rest =
                roundedFactor(user->getResult(0), depth + 1))
          k = std::fabs(*c) * *rest;
    } else if (isa<arith::DivFOp>(user)) {
      if (use.getOperandNumber() == 0)
        if (std::optional<double> c = finiteConstant(other))
          if (std::optional<double> rest =
                  roundedFactor(user->getResult(0), depth + 1))
            k = *rest / std::fabs(*c);
    } else if (isa<arith::NegFOp>(user) ||
               (isa<arith::AddFOp, arith::SubFOp, arith::MinimumFOp,
                    arith::MaximumFOp, arith::MinNumFOp, arith::MaxNumFOp>(
                    user) &&
                matchPattern(other, m_Constant()))) {
      k = roundedFactor(user->getResult(0), depth + 1);
    }
    if (!k)
      return std::nullopt;
    worst = std::max(worst, *k);
  }
  return worst;
}

/// A positive f32 constant in [2^-64, 2^64] (its log2 stays small).
std::optional<double> moderateConstant(Value v) {
  std::optional<double> c = positiveConstant(v);
  if (!c || *c < 0x1p-64 || *c > 0x1p64)
    return std::nullopt;
  return c;
}

/// `sum` as addf(erf(x * s), 1) (s > 0), the erf and the sum read once:
/// the erf's argument and s.
std::optional<std::pair<math::ErfOp, double>> erfPlusOneOf(Value sum, Value x) {
  auto add = sum.getDefiningOp<arith::AddFOp>();
  if (!add || !add.getType().isF32() || !add->hasOneUse())
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (!matchPattern(add.getOperand(1 - i), m_OneFloat()))
      continue;
    auto erf = add.getOperand(i).getDefiningOp<math::ErfOp>();
    if (!erf || !erf->hasOneUse() || !erf.getOperand().hasOneUse())
      return std::nullopt;
    std::optional<std::pair<Value, double>> xs = scaledValue(erf.getOperand());
    if (!xs || xs->first != x)
      return std::nullopt;
    return std::make_pair(erf, xs->second);
  }
  return std::nullopt;
}

/// GELU, c * x * (1 + erf(x * s)) with a constant c > 0, in any of the
/// exporters' groupings: (x * (1 + erf)) * c, (x * c) * (1 + erf), and x *
/// (1 + erf) (c = 1, when no product by a constant follows). With e =
/// erfc(|x| s),
///   c x (1 + erf(x s)) = 2c max(x, 0) - |x| (c e)
/// (x >= 0: c x (2 - e); x < 0: c x e), and c e = 2^(log2 c - g(|x| s)) is
/// the polynomial's exponential with log2 c in its last FMA. Past the bound
/// (|x| s > 3.9, e below f32's resolution of 2) the result is 2c max(x, 0).
/// Against ErfPlusOne with its products: no sign test and select, no
/// product by x or c, a max and an FMA instead (and x * (1 + erf) rounded
/// once instead of three times). -inf gives 0 where the product's form
/// gives NaN (-inf * 0); NaN stays NaN.
struct GeluProduct : OpRewritePattern<arith::MulFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::MulFOp mul,
                                PatternRewriter &rewriter) const override {
    if (!mul.getType().isF32())
      return failure();
    Value x;
    double c = 0, s = 0;
    // One operand a product read by `mul` alone, the other `other`.
    auto innerProduct = [&](int i) -> arith::MulFOp {
      auto inner = mul.getOperand(i).getDefiningOp<arith::MulFOp>();
      return inner && inner->hasOneUse() ? inner : arith::MulFOp();
    };
    for (int i = 0; i < 2 && !x; ++i) {
      Value other = mul.getOperand(1 - i);
      arith::MulFOp inner = innerProduct(i);
      if (!inner)
        continue;
      for (int j = 0; j < 2 && !x; ++j) {
        Value a = inner.getOperand(j), b = inner.getOperand(1 - j);
        // (x * (1 + erf)) * c
        if (std::optional<double> k = moderateConstant(other))
          if (auto e = erfPlusOneOf(b, a)) {
            x = a, c = *k, s = e->second;
            break;
          }
        // (x * c) * (1 + erf)
        if (std::optional<double> k = moderateConstant(b))
          if (auto e = erfPlusOneOf(other, a))
            x = a, c = *k, s = e->second;
      }
    }
    // x * (1 + erf), unless a product by a constant follows (that one is
    // the match).
    if (!x) {
      if (mul->hasOneUse())
        if (auto next = dyn_cast<arith::MulFOp>(*mul->user_begin()))
          if (moderateConstant(next.getOperand(0)) ||
              moderateConstant(next.getOperand(1)))
            return failure();
      for (int i = 0; i < 2 && !x; ++i)
        if (auto e = erfPlusOneOf(mul.getOperand(1 - i), mul.getOperand(i)))
          x = mul.getOperand(i), c = 1.0, s = e->second;
    }
    if (!x)
      return failure();
    Location loc = mul.getLoc();
    Type f32 = rewriter.getF32Type();
    auto cst = [&](double v) {
      return arith::ConstantOp::create(
                 rewriter, loc,
                 rewriter.getFloatAttr(f32, static_cast<float>(v)))
          .getResult();
    };
    // A result rounded to an integer (a quantized GELU) takes the short
    // polynomial where its error, at most c (3.9 / s) kShortError scaled
    // by the rounding's factor, stays below kRoundedTolerance of a unit.
    ArrayRef<double> coeffs = kLog2Erfc;
    if (std::optional<double> k = roundedFactor(mul.getResult()))
      if (c * *k * (kErfSaturation / s) * kShortError <= kRoundedTolerance)
        coeffs = kLog2ErfcShort;
    ScaledErfc e = scaledErfc(rewriter, loc, x, s, std::log2(c), coeffs);
    Value r = arith::MaximumFOp::create(rewriter, loc, x, cst(0.0));
    if (2.0 * c != 1.0)
      r = arith::MulFOp::create(rewriter, loc, r, cst(2.0 * c));
    Value v = math::FmaOp::create(
        rewriter, loc, arith::NegFOp::create(rewriter, loc, e.t), e.value, r);
    Value saturated = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGT, e.t, e.bound);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(mul, saturated, r, v);
    return success();
  }
};

struct ErfComplementPass
    : public kiln::impl::KilnErfComplementBase<ErfComplementPass> {
  void runOnOperation() override {
    // GELU's products first (a sum they take would otherwise become
    // ErfPlusOne's), then the other 1 + erf sums.
    RewritePatternSet gelu(&getContext()), sums(&getContext());
    gelu.add<GeluProduct>(&getContext());
    sums.add<ErfPlusOne>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(gelu))) ||
        failed(applyPatternsGreedily(getOperation(), std::move(sums))))
      return signalPassFailure();
  }
};

} // namespace
