//===- AMDGPUTarget.h - AMD GPUs through ROCDL and ld.lld -------*- C++ -*-===//
//
// The pieces of the `rocm` row of the target table (lib/Target/Registry.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_AMDGPU_AMDGPUTARGET_H
#define KILN_TARGET_AMDGPU_AMDGPUTARGET_H

#include "kiln/Target/GPU/TargetInfo.h"
#include "kiln/Target/Target.h"

namespace mlir::kiln {

/// The chips of --target=rocm:<chip> (AMDGPUTarget.cpp's kRocmChips).
ArrayRef<StringRef> getRocmChips();
/// `chip` must be one of getRocmChips().
std::unique_ptr<Target> createAMDGPUTarget(StringRef chip,
                                           const GPUCodegenOptions &gpu);
/// The target-info of an AMD chip (waves of 64 on gfx9 with MFMA, of 32 on
/// gfx11 with WMMA); null for a chip not in getRocmChips().
std::shared_ptr<const GPUTargetInfo> createAMDGPUTargetInfo(StringRef chip);
/// The GPU, ROCDL and AMDGPU dialects, translations and target attributes.
void registerAMDGPUDialects(DialectRegistry &registry);
/// Registers LLVM's AMDGPU backend (through initializeLLVMTargets only).
void initializeAMDGPULLVM();
/// The upstream passes of the rocm codegen pipeline, for kiln-opt.
void registerAMDGPUPasses();

/// What the codegen of one AMD chip needs to know about it.
struct RocmChip {
  StringRef chip;
  /// Lanes of a wave: 64 on gfx9 (CDNA), 32 on gfx11 (RDNA3).
  int64_t waveSize;
  /// The matrix instruction: MFMA (gfx9) or WMMA (gfx11).
  enum class Matrix { MFMA, WMMA } matrix;
  /// The device libraries' __oclc_ISA_version (major * 1000 + minor * 100 +
  /// stepping).
  int isaVersion;
  /// Compute units (gfx11: work-group processors), for filling the GPU.
  int64_t computeUnits;
  /// Registers of one SIMD for one lane (VGPRs, with gfx90a/gfx942's
  /// AGPRs in the same file), and the most waves a SIMD holds.
  int64_t vgprsPerSimd, maxWavesPerSimd;
  /// Local data share (shared memory) of one compute unit (gfx11: one
  /// work-group processor, 4 SIMDs like a gfx9 compute unit), bytes.
  int64_t ldsBytes;
};
/// The row of `chip`, or null.
const RocmChip *lookupRocmChip(StringRef chip);

/// The fragment layout of MFMA 16x16x16 (`wmma` false: gfx9, wave64) or
/// WMMA 16x16x16 (gfx11, wave32) for `operand` f16 or bf16, or of MFMA
/// 16x16x4 for f32 (gfx9 only), accumulated in `acc` (f32);
/// AMDGPUTargetInfo.cpp says where it comes from.
MMALayout getAMDGPUMMALayout(bool wmma, Type operand, Type acc);

} // namespace mlir::kiln

#endif // KILN_TARGET_AMDGPU_AMDGPUTARGET_H
