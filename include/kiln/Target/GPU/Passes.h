//===- Passes.h - Vendor-neutral GPU mapping passes -------------*- C++ -*-===//
#ifndef KILN_TARGET_GPU_PASSES_H
#define KILN_TARGET_GPU_PASSES_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/Target.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::kiln {

class GPUTargetInfo;

#define GEN_PASS_DECL
#include "kiln/Target/GPU/Passes.h.inc"

/// kiln-map-kernels-to-gpu as a target's codegen pipeline builds it: the
/// options from `gpu` (the one carrier of kilnc's --gpu-* flags), `device`
/// written into the signature, `info` the vendor.
std::unique_ptr<Pass>
createKilnMapKernelsToGPU(const GPUCodegenOptions &gpu, StringRef device,
                          std::shared_ptr<const GPUTargetInfo> info);

/// The vendor-neutral front of a GPU target's codegen pipeline:
/// kiln-map-kernels-to-gpu (createKilnMapKernelsToGPU's arguments),
/// canonicalize, index computations sunk into the launches, the kernels
/// outlined into one gpu.module (kiln-merge-gpu-modules).
void addGPUMappingPasses(OpPassManager &pm, const GPUCodegenOptions &gpu,
                         StringRef device,
                         std::shared_ptr<const GPUTargetInfo> info);
/// In the device module (`dev`, nested on gpu.module), what precedes the
/// vendor's GPU-to-LLVM conversion: affine, arith-expand,
/// expand-strided-metadata, scf to cf, kiln-finalize-device-memrefs
/// {stage=before}. (kiln-erf-complement comes before it and before a
/// target's own rewrites of the quantizations, whose rounding it reads.)
void addDeviceLoweringPrologue(OpPassManager &dev);

#define GEN_PASS_REGISTRATION
#include "kiln/Target/GPU/Passes.h.inc"

} // namespace mlir::kiln

#endif // KILN_TARGET_GPU_PASSES_H
