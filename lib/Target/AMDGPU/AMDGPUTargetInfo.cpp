//===- AMDGPUTargetInfo.cpp - What GPU codegen asks of an AMD chip --------===//
//
// Waves of 64 lanes on gfx9 (CDNA: gfx90a, gfx942) and of 32 on gfx11
// (RDNA3), butterfly shuffles through ds_bpermute, and
// gpu.barrier (s_barrier), shared memory as the gpu dialect's workgroup
// space (the local data share, AMDGPU's address space 3). Half contractions
// accumulated in f32 run on the chip's matrix instruction through the
// amdgpu dialect (convert-amdgpu-to-rocdl picks the intrinsic):
//
// - gfx9: MFMA 16x16x16 (v_mfma_f32_16x16x16_f16, and
//   v_mfma_f32_16x16x16_bf16 / _bf16_1k for bf16). Lanes in 4 groups of 16,
//   lane = 16 * g + t. A (16 x 16, row): one register of 4 K elements, row
//   t, K 4g..4g+3. B (16 x 16, col): column t, K 4g..4g+3. C: 4
//   accumulators, rows 4g..4g+3, column t. (AMD's CDNA3 ISA, "Matrix
//   fused-multiply-add", and its matrix instruction calculator.)
// - gfx9, f32 operands: MFMA 16x16x4 (v_mfma_f32_16x16x4f32), full f32
//   precision: A row t, K g (one element); B column t, K g; C as above.
// - gfx11: WMMA 16x16x16 (v_wmma_f32_16x16x16_f16 / _bf16), wave32: lane =
//   16 * g + t. A: one register of all 16 K elements of row t (lanes 16-31
//   repeat lanes 0-15's rows, as the instruction requires). B: column t, K
//   0..15. C: 8 accumulators, rows 2i + g (i = 0..7), column t. (AMD's RDNA3
//   ISA, "Wave Matrix Multiply Accumulate".)
//
// test/Target/AMDGPU/MMALayoutTest.cpp multiplies fragments on the CPU with
// these layouts and the tables' lane maps.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
class AMDGPUTargetInfo : public GPUTargetInfo {
public:
  explicit AMDGPUTargetInfo(const RocmChip &chip) : chip(chip) {}

  int64_t getWarpSize() const override { return chip.waveSize; }
  int64_t getFillBlocks() const override { return 2 * chip.computeUnits; }
  /// Global memory takes unaligned dwordx4 loads (the HSA runtime runs
  /// kernels in unaligned access mode).
  bool hasUnalignedWideLoads() const override { return true; }

  /// Every butterfly step reads the other lane through ds_bpermute (byte
  /// address = lane * 4) on the value's 32 bits: convert-gpu-to-rocdl lowers
  /// neither gpu.lane_id nor every gpu.shuffle xor (not the step between
  /// the halves of a wave of 64, nor steps in waves of 32). The lane is
  /// mbcnt's count of the lanes below it in a full mask.
  Value buildShuffleXor(OpBuilder &b, Location loc, Value value, int32_t offset,
                        int32_t width) const override {
    Type type = value.getType();
    if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() > 32)
      return GPUTargetInfo::buildShuffleXor(b, loc, value, offset, width);
    Type i32 = b.getI32Type();
    auto constant = [&](int32_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i32, v);
    };
    Value lane = ROCDL::MbcntLoOp::create(b, loc, i32, constant(-1),
                                          constant(0), /*argAttrs=*/nullptr,
                                          /*resAttrs=*/nullptr);
    if (chip.waveSize == 64)
      lane = ROCDL::MbcntHiOp::create(b, loc, i32, constant(-1), lane,
                                      /*argAttrs=*/nullptr,
                                      /*resAttrs=*/nullptr);
    Value other = arith::XOrIOp::create(b, loc, lane, constant(offset));
    Value address = arith::ShLIOp::create(b, loc, other, constant(2));
    unsigned bitsWide = type.getIntOrFloatBitWidth();
    Value bits = value;
    if (!type.isInteger())
      bits = arith::BitcastOp::create(
          b, loc, IntegerType::get(b.getContext(), bitsWide), value);
    if (bitsWide < 32)
      bits = arith::ExtUIOp::create(b, loc, i32, bits);
    Value read = ROCDL::DsBpermuteOp::create(b, loc, i32, address, bits);
    if (bitsWide < 32)
      read = arith::TruncIOp::create(
          b, loc, IntegerType::get(b.getContext(), bitsWide), read);
    if (!type.isInteger())
      read = arith::BitcastOp::create(b, loc, type, read);
    return read;
  }

  std::optional<MMALayout> getMMA(Type operand, Type acc) const override {
    bool wmma = chip.matrix == RocmChip::Matrix::WMMA;
    // gfx11's WMMA has no f32 form.
    if (!acc.isF32() ||
        !(operand.isF16() || operand.isBF16() || (operand.isF32() && !wmma)))
      return std::nullopt;
    return getAMDGPUMMALayout(wmma, operand, acc);
  }

  /// MFMA f32 takes one element per lane as a scalar.
  Value buildMMAOperand(OpBuilder &b, Location loc, const MMALayout &layout,
                        Value loaded) const override {
    if (layout.kPack != 1)
      return loaded;
    return vector::ExtractOp::create(b, loc, loaded, 0);
  }

  SmallVector<Value> buildMMA(OpBuilder &b, Location loc,
                              const MMALayout &layout, ValueRange a,
                              ValueRange bRegs, ValueRange c) const override {
    auto accType = VectorType::get({(int64_t)c.size()}, layout.acc);
    Value acc = vector::FromElementsOp::create(b, loc, accType, c);
    Value d;
    if (chip.matrix == RocmChip::Matrix::WMMA)
      d = amdgpu::WMMAOp::create(b, loc, accType, layout.m, layout.n, layout.k,
                                 a.front(), bRegs.front(), acc);
    else
      d = amdgpu::MFMAOp::create(b, loc, accType, layout.m, layout.n, layout.k,
                                 /*blocks=*/1, a.front(), bRegs.front(), acc);
    SmallVector<Value> out;
    for (int64_t e = 0, n = c.size(); e < n; ++e)
      out.push_back(vector::ExtractOp::create(b, loc, d, e));
    return out;
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<amdgpu::AMDGPUDialect, ROCDL::ROCDLDialect,
                    vector::VectorDialect>();
  }

private:
  RocmChip chip;
};
} // namespace

MMALayout mlir::kiln::getAMDGPUMMALayout(bool wmma, Type operand, Type acc) {
  MMALayout l;
  l.m = 16, l.n = 16, l.k = 16;
  l.operand = operand, l.acc = acc;
  l.groupSize = 16;
  if (operand.isF32()) {
    // MFMA 16x16x4 f32: A row t, K g; B column t, K g; C as for f16.
    l.k = 4;
    l.kPack = 1;
    l.aRow = {0, 1}, l.aK = {1, 0};
    l.bCol = {0, 1}, l.bK = {1, 0};
    l.cRow = {4, 0}, l.cCol = {0, 1};
    for (int64_t i = 0; i < 4; ++i)
      l.cElems.push_back({i, 0});
  } else if (wmma) {
    l.kPack = 16;
    l.aRow = {0, 1}, l.aK = {0, 0};
    l.bCol = {0, 1}, l.bK = {0, 0};
    l.cRow = {1, 0}, l.cCol = {0, 1};
    for (int64_t i = 0; i < 8; ++i)
      l.cElems.push_back({2 * i, 0});
  } else {
    l.kPack = 4;
    l.aRow = {0, 1}, l.aK = {4, 0};
    l.bCol = {0, 1}, l.bK = {4, 0};
    l.cRow = {4, 0}, l.cCol = {0, 1};
    for (int64_t i = 0; i < 4; ++i)
      l.cElems.push_back({i, 0});
  }
  l.aRegs = {{0, 0}};
  l.bRegs = {{0, 0}};
  return l;
}

std::shared_ptr<const GPUTargetInfo>
mlir::kiln::createAMDGPUTargetInfo(StringRef chip) {
  const RocmChip *c = lookupRocmChip(chip);
  if (!c)
    return nullptr;
  return std::make_shared<AMDGPUTargetInfo>(*c);
}
