//===- QuantizeRounding.cpp - Round, zero point and clamp as one cvt.rni --===//
//
// kiln-nvptx-quantize-rounding (Passes.td): fptosi(clamp(roundeven(v) + zp))
// to 8 bits becomes a float clamp and one addition of 1.5 * 2^23 whose sum's
// bit pattern holds the rounded integer (no conversion: cvt.rni is a
// quarter-rate instruction on the unit that ex2 and the accumulators'
// conversions use); to wider types, llvm.nvvm.f2i.rn (cvt.rni.s32.f32) with
// the zero point and the clamp in integers, one conversion instead of two.
// sitofp(acc) * s + b becomes one fma.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVPTX/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVPTXQUANTIZEROUNDING
#include "kiln/Target/NVPTX/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// An integral f32 constant below 2^24 in magnitude.
std::optional<int64_t> integralConstant(Value v) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.getType().isF32())
    return std::nullopt;
  double d = attr.getValueAsDouble();
  if (!std::isfinite(d) || std::fabs(d) >= 16777216.0 || d != std::floor(d))
    return std::nullopt;
  return static_cast<int64_t>(d);
}

/// `op` as one side of a clamp: its non-constant operand and its integral
/// bound, for max (`upper` false) or min (`upper` true).
std::optional<std::pair<Value, int64_t>> clampSide(Operation *op, bool upper) {
  if (!op)
    return std::nullopt;
  bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
  bool isMin = isa<arith::MinimumFOp, arith::MinNumFOp>(op);
  if ((upper && !isMin) || (!upper && !isMax))
    return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (std::optional<int64_t> c = integralConstant(op->getOperand(1 - i)))
      return std::make_pair(op->getOperand(i), *c);
  return std::nullopt;
}

/// 1.5 * 2^23: f32's integers from 2^23 to 2^24 have consecutive bit
/// patterns, so adding it rounds a value of magnitude below 2^22 to an
/// integer (to nearest even, f32's rounding) and leaves that integer in the
/// low bits of the sum's pattern.
constexpr int64_t kMagic = 12582912;
/// The largest |bound| the addition keeps in that binade.
constexpr int64_t kMagicRange = 1 << 21;

/// The 8-bit clamp(roundeven(v) + zp, lo, hi) without a conversion: v
/// clamped to [lo - zp, hi - zp] in f32 (the bounds are integers, so before
/// the rounding is the same as after; max first, so NaN takes lo), plus
/// kMagic + zp, the sum's pattern truncated to 8 bits. An even zero point
/// goes into the addition (roundeven(v + zp) = roundeven(v) + zp when zp
/// is even); an odd one is added to the integer, so that ties still round
/// v and not v + zp to even. Two float clamps and an addition at full
/// rate, against a quarter-rate conversion (cvt.rni, whose unit GELU's
/// ex2 and the accumulators' cvt.rn.f32.s32 share) and integer clamps.
Value roundedByAddition(PatternRewriter &rewriter, Location loc, Value v,
                        int64_t lo, int64_t hi, int64_t zp, Type byteType) {
  Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
  auto fcst = [&](int64_t c) {
    return arith::ConstantFloatOp::create(rewriter, loc, cast<FloatType>(f32),
                                          APFloat(static_cast<float>(c)))
        .getResult();
  };
  // (LLVM's maxnum and minnum, max.f32 and min.f32: arith-expand, later in
  // the pipeline, would turn arith's into compares and selects)
  Value c = LLVM::MaxNumOp::create(rewriter, loc, v, fcst(lo - zp));
  c = LLVM::MinNumOp::create(rewriter, loc, c, fcst(hi - zp));
  const bool evenZp = zp % 2 == 0;
  Value sum =
      arith::AddFOp::create(rewriter, loc, c, fcst(kMagic + (evenZp ? zp : 0)));
  // The pattern through an inline mov.b32, not a bitcast: LLVM drops a
  // bitcast (one .b32 register for both), and ptxas (CUDA 13) stores a
  // register that an f32 instruction wrote with st.b8 as a conversion
  // (cvt.rzi.u8.f32 of 1.5 * 2^23 + q: 255), where a mov.b32 between them
  // makes it a plain byte store and costs nothing in SASS.
  Value bits =
      LLVM::InlineAsmOp::create(
          rewriter, loc, i32, ValueRange{sum}, "mov.b32 $0, $1;", "=r,f",
          /*has_side_effects=*/false, /*is_align_stack=*/false,
          LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
          .getResult(0);
  if (!evenZp)
    bits = arith::AddIOp::create(
        rewriter, loc, bits,
        arith::ConstantIntOp::create(rewriter, loc, i32, zp).getResult());
  return arith::TruncIOp::create(rewriter, loc, byteType, bits);
}

template <typename ConvOp> struct RoundedConversion : OpRewritePattern<ConvOp> {
  using OpRewritePattern<ConvOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    auto resultType = dyn_cast<IntegerType>(conv.getType());
    if (!resultType || resultType.getWidth() > 32 ||
        !conv.getIn().getType().isF32())
      return failure();
    // min(max(a, lo), hi) or max(min(a, hi), lo).
    Value a;
    int64_t lo, hi;
    Operation *outer = conv.getIn().getDefiningOp();
    if (auto o = clampSide(outer, /*upper=*/true)) {
      auto i = clampSide(o->first.getDefiningOp(), /*upper=*/false);
      if (!i)
        return failure();
      a = i->first, lo = i->second, hi = o->second;
    } else if (auto o = clampSide(outer, /*upper=*/false)) {
      auto i = clampSide(o->first.getDefiningOp(), /*upper=*/true);
      if (!i)
        return failure();
      a = i->first, lo = o->second, hi = i->second;
    } else {
      return failure();
    }
    if (lo > hi || (std::is_same_v<ConvOp, arith::FPToUIOp> && lo < 0))
      return failure();
    // a = roundeven(v) + zp, or roundeven(v).
    int64_t zp = 0;
    Value rounded = a;
    if (auto add = a.getDefiningOp<arith::AddFOp>()) {
      rounded = Value();
      for (int i = 0; i < 2 && !rounded; ++i)
        if (std::optional<int64_t> c = integralConstant(add.getOperand(1 - i)))
          rounded = add.getOperand(i), zp = *c;
      if (!rounded)
        return failure();
    }
    auto round = rounded.getDefiningOp<math::RoundEvenOp>();
    if (!round)
      return failure();
    Location loc = conv.getLoc();
    Type i32 = rewriter.getI32Type();
    // (a wider conversion that only a truncation to 8 bits reads, too: the
    // lowering's fptosi to i32 and trunci)
    arith::TruncIOp narrowed;
    if (resultType.getWidth() > 8 && conv->hasOneUse())
      if (auto t = dyn_cast<arith::TruncIOp>(*conv->user_begin()))
        if (t.getType().getIntOrFloatBitWidth() == 8)
          narrowed = t;
    Type byteType = narrowed ? narrowed.getType() : resultType;
    if (byteType.getIntOrFloatBitWidth() == 8 &&
        std::max(std::abs(lo - zp), std::abs(hi - zp)) <= kMagicRange) {
      Value r = roundedByAddition(rewriter, loc, round.getOperand(), lo, hi, zp,
                                  byteType);
      if (narrowed) {
        rewriter.replaceOp(narrowed, r);
        rewriter.eraseOp(conv);
      } else {
        rewriter.replaceOp(conv, r);
      }
      return success();
    }
    auto intrinsic = LLVM::CallIntrinsicOp::create(
        rewriter, loc, i32, rewriter.getStringAttr("llvm.nvvm.f2i.rn"),
        ValueRange{round.getOperand()});
    auto cst = [&](int64_t v) {
      return arith::ConstantIntOp::create(rewriter, loc, i32, v).getResult();
    };
    Value r = intrinsic.getResult(0);
    r = arith::MaxSIOp::create(rewriter, loc, r, cst(lo - zp));
    r = arith::MinSIOp::create(rewriter, loc, r, cst(hi - zp));
    if (zp)
      r = arith::AddIOp::create(rewriter, loc, r, cst(zp));
    if (resultType.getWidth() < 32)
      r = arith::TruncIOp::create(rewriter, loc, resultType, r);
    rewriter.replaceOp(conv, r);
    return success();
  }
};

/// addf(mulf(itofp(acc), s), b), either operand order, the product read
/// by the sum alone: math.fma(itofp(acc), s, b).
struct DequantizeFma : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!add.getType().isF32())
      return failure();
    for (int i = 0; i < 2; ++i) {
      auto mul = add.getOperand(i).getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse())
        continue;
      for (int j = 0; j < 2; ++j) {
        Value x = mul.getOperand(j);
        if (!x.getDefiningOp<arith::SIToFPOp>() &&
            !x.getDefiningOp<arith::UIToFPOp>())
          continue;
        rewriter.replaceOpWithNewOp<math::FmaOp>(add, x, mul.getOperand(1 - j),
                                                 add.getOperand(1 - i));
        return success();
      }
    }
    return failure();
  }
};

struct QuantizeRoundingPass
    : public kiln::impl::KilnNVPTXQuantizeRoundingBase<QuantizeRoundingPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RoundedConversion<arith::FPToSIOp>,
                 RoundedConversion<arith::FPToUIOp>, DequantizeFma>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
