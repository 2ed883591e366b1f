//===- NVPTXTargetInfo.cpp - What GPU codegen asks of an NVIDIA chip ------===//
//
// A warp of 32 lanes, gpu.shuffle and gpu.barrier (shfl.sync.bfly and
// bar.sync after convert-gpu-to-nvvm), shared memory as the gpu dialect's
// workgroup space (NVVM's address space 3, kiln-finalize-device-memrefs),
// and on sm_80 and newer mma.sync m16n8k16 (row x col) for f16 and bf16
// operands accumulated in f32, and mma.sync m16n8k8 for f32 operands
// rounded to TF32 (contractions marked kiln.tf32); on sm_90a matmuls get a
// kernel of their own (warpgroup MMA fed by TMA, WarpgroupContraction.cpp).
//
//===----------------------------------------------------------------------===//

#include "WarpgroupContraction.h"

#include "kiln/Target/GPU/TargetInfo.h"
#include "kiln/Target/NVPTX/NVPTXTarget.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
class NVPTXTargetInfo : public GPUTargetInfo {
public:
  NVPTXTargetInfo(bool hasMMA, bool hasWarpgroupMMA)
      : hasMMA(hasMMA), hasWarpgroupMMA(hasWarpgroupMMA) {}

  int64_t getWarpSize() const override { return 32; }
  /// Two blocks per multiprocessor of an H100/H200 (132).
  int64_t getFillBlocks() const override { return 264; }

  /// mma.sync m16n8k16: lanes in 8 groups of 4, lane = (g, t). A (16 x 16,
  /// row): 4 registers of a K pair each, rows g and g + 8, K 2t and
  /// 2t + 8. B (16 x 8, col): 2 registers, column g, K 2t and 2t + 8.
  /// C (16 x 8): 4 accumulators, rows g and g + 8, columns 2t and 2t + 1.
  std::optional<MMALayout> getMMA(Type operand, Type acc) const override {
    if (!hasMMA || !acc.isF32() || !(operand.isF16() || operand.isBF16()))
      return std::nullopt;
    MMALayout l;
    l.m = 16, l.n = 8, l.k = 16;
    l.operand = operand, l.acc = acc;
    l.groupSize = 4;
    l.kPack = 2;
    l.aRow = {1, 0}, l.aK = {0, 2};
    l.aRegs = {{0, 0}, {8, 0}, {0, 8}, {8, 8}};
    l.bCol = {1, 0}, l.bK = {0, 2};
    l.bRegs = {{0, 0}, {0, 8}};
    l.cRow = {1, 0}, l.cCol = {0, 2};
    l.cElems = {{0, 0}, {0, 1}, {8, 0}, {8, 1}};
    return l;
  }

  /// mma.sync m16n8k8 .tf32 (PTX ISA, "Matrix Fragments for mma.m16n8k8",
  /// .tf32): lane = (g, t) as above, one element per register. A (16 x 8,
  /// row): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
  /// B (8 x 8, col): b0 K t, b1 K t + 4, column g. C (16 x 8) as for
  /// m16n8k16: c0, c1 row g, columns 2t, 2t + 1; c2, c3 row g + 8.
  std::optional<MMALayout> getTF32MMA(Type acc) const override {
    if (!hasMMA || !acc.isF32())
      return std::nullopt;
    MMALayout l;
    l.m = 16, l.n = 8, l.k = 8;
    l.operand = acc, l.acc = acc;
    l.tf32 = true;
    l.groupSize = 4;
    l.kPack = 1;
    l.aRow = {1, 0}, l.aK = {0, 1};
    l.aRegs = {{0, 0}, {8, 0}, {0, 4}, {8, 4}};
    l.bCol = {1, 0}, l.bK = {0, 1};
    l.bRegs = {{0, 0}, {0, 4}};
    l.cRow = {1, 0}, l.cCol = {0, 2};
    l.cElems = {{0, 0}, {0, 1}, {8, 0}, {8, 1}};
    return l;
  }

  /// mma.sync m16n8k32 on 8-bit integers (PTX ISA, "Matrix Fragments for
  /// mma.m16n8k32", .s8/.u8): lane = (g, t) = (lane / 4, lane % 4), four
  /// K-consecutive bytes per register. A (16 x 32, row): a0 row g, K 4t;
  /// a1 row g + 8; a2 row g, K 4t + 16; a3 row g + 8, K 4t + 16. B (32 x 8,
  /// col): b0 K 4t, b1 K 4t + 16, column g. C (16 x 8, s32) as for
  /// m16n8k16. The sums wrap as the CPU's i32 ones do (no .satfinite).
  std::optional<MMALayout> getIntegerMMA(bool aSigned, bool bSigned,
                                         Type acc) const override {
    if (!hasMMA || !acc.isInteger(32))
      return std::nullopt;
    MMALayout l;
    l.m = 16, l.n = 8, l.k = 32;
    l.operand = IntegerType::get(acc.getContext(), 8), l.acc = acc;
    l.aSigned = aSigned, l.bSigned = bSigned;
    l.groupSize = 4;
    l.kPack = 4;
    l.aRow = {1, 0}, l.aK = {0, 4};
    l.aRegs = {{0, 0}, {8, 0}, {0, 16}, {8, 16}};
    l.bCol = {1, 0}, l.bK = {0, 4};
    l.bRegs = {{0, 0}, {0, 16}};
    l.cRow = {1, 0}, l.cCol = {0, 2};
    l.cElems = {{0, 0}, {0, 1}, {8, 0}, {8, 1}};
    return l;
  }

  /// TF32: each f32 rounded to nearest (ties away: cvt.rna.tf32.f32, the
  /// rounding PTX defines for .tf32 operands), kept as the f32 whose low 13
  /// mantissa bits are zero. Once per staged element; the fragments then
  /// read the bits as they are.
  Value buildMMAStaged(OpBuilder &b, Location loc, const MMALayout &layout,
                       Value value) const override {
    if (!layout.tf32)
      return value;
    auto round = [&](Value f) -> Value {
      Value bits = NVVM::ConvertFloatToTF32Op::create(
          b, loc, b.getI32Type(), f, NVVM::FPRoundingMode::RNA,
          NVVM::SaturationMode::NONE, /*relu=*/false);
      return LLVM::BitcastOp::create(b, loc, b.getF32Type(), bits);
    };
    auto vec = dyn_cast<VectorType>(value.getType());
    if (!vec)
      return round(value);
    Value out = value;
    for (int64_t i = 0, n = vec.getNumElements(); i < n; ++i)
      out = vector::InsertOp::create(
          b, loc, round(vector::ExtractOp::create(b, loc, value, i)), out, i);
    return out;
  }

  /// f16 pairs as they are, bf16 ones and 8-bit quadruples as i32, TF32
  /// (vector<1xf32>) as the i32 of its bits.
  Value buildMMAOperand(OpBuilder &b, Location loc, const MMALayout &layout,
                        Value loaded) const override {
    if (layout.operand.isInteger(8))
      return LLVM::BitcastOp::create(b, loc, b.getI32Type(), loaded);
    if (layout.tf32)
      return LLVM::BitcastOp::create(
          b, loc, b.getI32Type(), vector::ExtractOp::create(b, loc, loaded, 0));
    if (!layout.operand.isBF16())
      return loaded;
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), loaded);
  }

  SmallVector<Value> buildMMA(OpBuilder &b, Location loc,
                              const MMALayout &layout, ValueRange a,
                              ValueRange bRegs, ValueRange c) const override {
    Type accType = layout.acc;
    auto resType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), {accType, accType, accType, accType});
    bool bytes = layout.operand.isInteger(8);
    auto byteType = [](bool isSigned) {
      return isSigned ? NVVM::MMATypes::s8 : NVVM::MMATypes::u8;
    };
    NVVM::MMATypes ptx = layout.tf32               ? NVVM::MMATypes::tf32
                         : layout.operand.isBF16() ? NVVM::MMATypes::bf16
                                                   : NVVM::MMATypes::f16;
    NVVM::MMATypes ptxA = bytes ? byteType(layout.aSigned) : ptx;
    NVVM::MMATypes ptxB = bytes ? byteType(layout.bSigned) : ptx;
    std::optional<NVVM::MMAIntOverflow> overflow;
    if (bytes)
      overflow = NVVM::MMAIntOverflow::wrapped;
    auto mma = NVVM::MmaOp::create(
        b, loc, resType, a, bRegs, c,
        ArrayRef<int64_t>{layout.m, layout.n, layout.k}, std::nullopt, overflow,
        std::array<NVVM::MMATypes, 2>{ptxA, ptxB},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> acc;
    for (int64_t e = 0; e < 4; ++e)
      acc.push_back(
          LLVM::ExtractValueOp::create(b, loc, mma, ArrayRef<int64_t>{e}));
    return acc;
  }

  LogicalResult lowerContraction(RewriterBase &rewriter, Operation *op,
                                 Value ctx,
                                 PersistentKernels persistent) const override {
    if (!hasWarpgroupMMA)
      return failure();
    return lowerWarpgroupContraction(rewriter, op, ctx, persistent);
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<NVVM::NVVMDialect, LLVM::LLVMDialect, vector::VectorDialect>();
  }

private:
  bool hasMMA, hasWarpgroupMMA;
};
} // namespace

std::shared_ptr<const GPUTargetInfo>
mlir::kiln::createNVPTXTargetInfo(StringRef chip) {
  if (!llvm::is_contained(getCudaChips(), chip))
    return nullptr;
  // mma.sync m16n8k16 on f16/bf16 and m16n8k8 on tf32 need sm_80; wgmma and
  // its kernels the
  // architecture-specific sm_90a (ptxas rejects them for sm_90).
  unsigned sm = 0;
  (void)chip.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, sm);
  return std::make_shared<NVPTXTargetInfo>(/*hasMMA=*/sm >= 80,
                                           /*hasWarpgroupMMA=*/chip ==
                                               "sm_90a");
}
