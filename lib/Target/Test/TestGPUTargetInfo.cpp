//===- TestGPUTargetInfo.cpp - A made-up GPU for testing the strategies ---===//
//
// Test-only (kiln-opt): a GPU with waves of 64 lanes and a 32x32x8 matrix
// instruction whose fragments are laid out like AMD's MFMA 32x32x8 (not
// NVIDIA's), emitted as the unregistered op "kiln_test.mma" so lit tests
// can see which instruction, shape and registers the vendor-neutral
// strategies asked for (test/Target/GPU/test-target-info.mlir; run with
// --allow-unregistered-dialect). Device kind "kiln-test-wave64".
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
class TestWave64TargetInfo : public GPUTargetInfo {
public:
  int64_t getWarpSize() const override { return 64; }

  /// 32x32x8: lanes in 2 groups of 32, lane = (g, t). A (32 x 8): one
  /// register of 4 K elements, row t, K 4g. B (8 x 32): column t, K 4g.
  /// C (32 x 32): 16 accumulators, column t, rows 4g + 8 (e / 4) + e % 4.
  std::optional<MMALayout> getMMA(Type operand, Type acc) const override {
    if (!acc.isF32() || !(operand.isF16() || operand.isBF16()))
      return std::nullopt;
    MMALayout l;
    l.m = 32, l.n = 32, l.k = 8;
    l.operand = operand, l.acc = acc;
    l.groupSize = 32;
    l.kPack = 4;
    l.aRow = {0, 1}, l.aK = {4, 0};
    l.aRegs = {{0, 0}};
    l.bCol = {0, 1}, l.bK = {4, 0};
    l.bRegs = {{0, 0}};
    l.cRow = {4, 0}, l.cCol = {0, 1};
    for (int64_t e = 0; e < 16; ++e)
      l.cElems.push_back({8 * (e / 4) + e % 4, 0});
    return l;
  }

  SmallVector<Value> buildMMA(OpBuilder &b, Location loc,
                              const MMALayout &layout, ValueRange a,
                              ValueRange bRegs, ValueRange c) const override {
    OperationState state(loc, "kiln_test.mma");
    state.addOperands(a);
    state.addOperands(bRegs);
    state.addOperands(c);
    state.addTypes(SmallVector<Type>(c.size(), layout.acc));
    state.addAttribute("shape",
                       b.getDenseI64ArrayAttr({layout.m, layout.n, layout.k}));
    Operation *op = b.create(state);
    return SmallVector<Value>(op->getResults());
  }
};
} // namespace

namespace mlir::kiln::test {
void registerTestGPUTargetInfo() {
  registerGPUTargetInfo("kiln-test-wave64", "w64", [](StringRef chip) {
    return chip == "w64" ? std::make_shared<TestWave64TargetInfo>()
                         : std::shared_ptr<TestWave64TargetInfo>();
  });
}
} // namespace mlir::kiln::test
