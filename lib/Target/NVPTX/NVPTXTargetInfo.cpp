//===- NVPTXTargetInfo.cpp - What GPU codegen asks of an NVIDIA chip ------===//
//
// A warp of 32 lanes, gpu.shuffle and gpu.barrier (shfl.sync.bfly and
// bar.sync after convert-gpu-to-nvvm), shared memory as the gpu dialect's
// workgroup space (NVVM's address space 3, kiln-finalize-device-memrefs),
// and on sm_80 and newer mma.sync m16n8k16 (row x col) for f16 and bf16
// operands accumulated in f32, and mma.sync m16n8k8 for f32 operands
// rounded to TF32 (contractions marked kiln.tf32), with cp.async copies
// into shared memory and ldmatrix fragment loads for the tiled
// contractions' ring of shared buffers (--gpu-async-copy); on sm_90a
// matmuls get a kernel of their own (warpgroup MMA fed by TMA,
// WarpgroupContraction.cpp).
//
//===----------------------------------------------------------------------===//

#include "WarpgroupContraction.h"

#include "kiln/Target/GPU/TargetInfo.h"
#include "kiln/Target/NVPTX/NVPTXTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The address of memref[indices] as an index: the aligned pointer plus
/// the offset and strides (of the memref's descriptor) times the indices.
Value elementAddress(OpBuilder &b, Location loc, Value memref,
                     ValueRange indices) {
  auto type = cast<MemRefType>(memref.getType());
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value off = md.getOffset();
  for (auto [i, stride] : llvm::zip(indices, md.getStrides()))
    off = arith::AddIOp::create(b, loc, off,
                                arith::MulIOp::create(b, loc, i, stride));
  Value bytes =
      arith::ConstantIndexOp::create(b, loc, type.getElementTypeBitWidth() / 8);
  return arith::AddIOp::create(
      b, loc, memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref),
      arith::MulIOp::create(b, loc, off, bytes));
}

/// A shared-memory pointer (address space 3, 32-bit addresses) to
/// memref[indices] of a shared buffer.
Value sharedPointer(OpBuilder &b, Location loc, Value memref,
                    ValueRange indices) {
  Value addr = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(), elementAddress(b, loc, memref, indices));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
}

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

  /// cp.async.cg.shared.global of 16 bytes (sm_80 and newer), its
  /// src-size 0 where the copy is not valid (the 16 bytes zero-filled).
  bool hasAsyncCopy() const override { return hasMMA; }
  void buildAsyncCopy(OpBuilder &b, Location loc, Value dst,
                      ValueRange dstIndices, Value src, ValueRange srcIndices,
                      Value valid) const override {
    Value to = sharedPointer(b, loc, dst, dstIndices);
    auto generic = LLVM::LLVMPointerType::get(b.getContext());
    auto global = LLVM::LLVMPointerType::get(b.getContext(), 1);
    Value addr = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(), elementAddress(b, loc, src, srcIndices));
    Value ptr = LLVM::IntToPtrOp::create(b, loc, generic, addr);
    Value from = LLVM::AddrSpaceCastOp::create(b, loc, global, ptr);
    Value bytes = arith::SelectOp::create(
        b, loc, valid, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16),
        arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    NVVM::CpAsyncOp::create(b, loc, to, from, 16,
                            NVVM::LoadCacheModifierKind::CG, bytes);
  }
  void buildAsyncCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  void buildAsyncWait(OpBuilder &b, Location loc,
                      int64_t pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
  }

  /// ldmatrix .m8n8 .b16: each 8 x 8 matrix it loads is one m16n8k16
  /// register of every lane (lane (g, t) gets row g, elements 2t and
  /// 2t + 1), so the f16 and bf16 layout qualifies, one matrix per A or B
  /// register at its (outer, inner) offset.
  bool hasMatrixLoad(const MMALayout &layout) const override {
    auto eightAligned = [](ArrayRef<FragmentOffset> regs) {
      return llvm::all_of(regs, [](const FragmentOffset &r) {
        return r.outer % 8 == 0 && r.inner % 8 == 0;
      });
    };
    LaneCoord g = {1, 0}, t = {0, 2};
    return hasMMA && !layout.tf32 &&
           (layout.operand.isF16() || layout.operand.isBF16()) &&
           layout.groupSize == 4 && layout.kPack == 2 && layout.aRow == g &&
           layout.aK == t && layout.bCol == g && layout.bK == t &&
           eightAligned(layout.aRegs) && eightAligned(layout.bRegs);
  }
  /// x4 (x2, x1 for the rest) ldmatrix per four registers: lane l gives
  /// the address of row l % 8 of matrix l / 8, a run of 8 elements along K
  /// (the matrix as it is) or along the rows of A / columns of B (.trans:
  /// the run is a K row of the matrix, which the lanes get transposed).
  SmallVector<Value>
  buildMatrixLoad(OpBuilder &b, Location loc, const MMALayout &layout, bool isB,
                  int64_t tiles, bool kContiguous, Value lane, Value smem,
                  function_ref<SmallVector<Value>(Value outer, Value inner)>
                      indices) const override {
    ArrayRef<FragmentOffset> regs = isB ? layout.bRegs : layout.aRegs;
    int64_t step = isB ? layout.n : layout.m;
    SmallVector<FragmentOffset> mats;
    for (int64_t t = 0; t < tiles; ++t)
      for (const FragmentOffset &r : regs)
        mats.push_back({t * step + r.outer, r.inner});
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value row = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value which = arith::DivUIOp::create(b, loc, lane, idx(8));
    auto i32 = b.getI32Type();
    SmallVector<Value> out;
    for (size_t first = 0; first < mats.size();) {
      int64_t num = mats.size() - first >= 4   ? 4
                    : mats.size() - first >= 2 ? 2
                                               : 1;
      ArrayRef<FragmentOffset> group =
          ArrayRef<FragmentOffset>(mats).slice(first, num);
      // This lane's matrix (lanes past the last matrix repeat addresses the
      // instruction ignores).
      Value q = arith::RemUIOp::create(b, loc, which, idx(num));
      Value outer = idx(group[0].outer), inner = idx(group[0].inner);
      for (int64_t i = 1; i < num; ++i) {
        Value is =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, q, idx(i));
        outer = arith::SelectOp::create(b, loc, is, idx(group[i].outer), outer);
        inner = arith::SelectOp::create(b, loc, is, idx(group[i].inner), inner);
      }
      if (kContiguous)
        outer = arith::AddIOp::create(b, loc, outer, row);
      else
        inner = arith::AddIOp::create(b, loc, inner, row);
      Value ptr = sharedPointer(b, loc, smem, indices(outer, inner));
      Type res = i32;
      if (num > 1)
        res = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                               SmallVector<Type>(num, i32));
      Value ld = NVVM::LdMatrixOp::create(
          b, loc, res, ptr, num,
          kContiguous ? NVVM::MMALayout::row : NVVM::MMALayout::col,
          NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
          NVVM::LdStMatrixEltType::B16);
      for (int64_t i = 0; i < num; ++i) {
        Value r = num == 1 ? ld
                           : LLVM::ExtractValueOp::create(b, loc, ld,
                                                          ArrayRef<int64_t>{i})
                                 .getResult();
        // f16 pairs as vectors, bf16 ones as i32 (buildMMAOperand).
        if (layout.operand.isF16())
          r = LLVM::BitcastOp::create(b, loc,
                                      VectorType::get({2}, layout.operand), r);
        out.push_back(r);
      }
      first += num;
    }
    return out;
  }

  LogicalResult
  lowerContraction(RewriterBase &rewriter, Operation *op, Value ctx,
                   const ContractionChoices &choices) const override {
    if (!hasWarpgroupMMA)
      return failure();
    return lowerWarpgroupContraction(rewriter, op, ctx, choices);
  }

  std::optional<NamedAttribute>
  getMinBlocksPerSMAttr(MLIRContext *context, int64_t blocks) const override {
    Builder b(context);
    return b.getNamedAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                          b.getI32IntegerAttr(blocks));
  }

  ContractionTiles getContractionTiles() const override {
    return hasWarpgroupMMA ? warpgroupTiles() : ContractionTiles();
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<NVVM::NVVMDialect, LLVM::LLVMDialect, vector::VectorDialect,
                    memref::MemRefDialect, arith::ArithDialect>();
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
