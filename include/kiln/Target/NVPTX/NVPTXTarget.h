//===- NVPTXTarget.h - NVIDIA GPUs through NVVM and ptxas -------*- C++ -*-===//
//
// The pieces of the `cuda` row of the target table (lib/Target/Registry.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_NVPTX_NVPTXTARGET_H
#define KILN_TARGET_NVPTX_NVPTXTARGET_H

#include "kiln/Target/Target.h"

namespace mlir::kiln {

/// The chips of --target=cuda:<chip> (NVPTXTarget.cpp's kCudaChips).
ArrayRef<StringRef> getCudaChips();
/// `chip` must be one of getCudaChips().
std::unique_ptr<Target> createNVPTXTarget(StringRef chip,
                                          const GPUCodegenOptions &gpu);
/// The target-info of an NVIDIA chip (warp of 32, shfl.sync, mma.sync on
/// sm_80 and newer); null for a chip not in getCudaChips().
std::shared_ptr<const GPUTargetInfo> createNVPTXTargetInfo(StringRef chip);
/// The GPU and NVVM dialects, translations and target attributes.
void registerNVPTXDialects(DialectRegistry &registry);
/// Registers LLVM's NVPTX backend (through initializeLLVMTargets only;
/// MLIR's NVVM serializer registers it lazily, which is then a no-op).
void initializeNVPTXLLVM();
/// kiln-finalize-device-memrefs.
void registerNVPTXPasses();

} // namespace mlir::kiln

#endif // KILN_TARGET_NVPTX_NVPTXTARGET_H
