//===- FastExp2.cpp - A marked exp2 as ex2.approx.ftz ---------------------===//
//
// kiln-nvptx-fast-exp2 (Passes.td): a math.exp2 with `kiln.exp2_normal`
// (its argument stays above -126) becomes llvm.nvvm.ex2.approx.ftz.f.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVPTX/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVPTXFASTEXP2
#include "kiln/Target/NVPTX/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct FastExp2Pass : public kiln::impl::KilnNVPTXFastExp2Base<FastExp2Pass> {
  void runOnOperation() override {
    getOperation().walk([](math::Exp2Op exp2) {
      if (!exp2->hasAttr("kiln.exp2_normal") || !exp2.getType().isF32())
        return;
      OpBuilder b(exp2);
      auto call = LLVM::CallIntrinsicOp::create(
          b, exp2.getLoc(), exp2.getType(),
          b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
          ValueRange{exp2.getOperand()});
      exp2.replaceAllUsesWith(call.getResult(0));
      exp2.erase();
    });
  }
};
} // namespace
