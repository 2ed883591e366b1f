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
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHALFDIVISION
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct HalfDivisionPass
    : public kiln::impl::KilnHalfDivisionBase<HalfDivisionPass> {
  void runOnOperation() override {
    SmallVector<arith::DivFOp> divisions;
    getOperation().walk([&](arith::DivFOp op) {
      Type t = op.getType();
      if (t.isF16() || t.isBF16())
        divisions.push_back(op);
    });
    for (arith::DivFOp op : divisions) {
      FloatAttr c;
      if (!matchPattern(op.getRhs(), m_Constant(&c)))
        continue;
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
