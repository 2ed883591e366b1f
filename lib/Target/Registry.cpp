//===- Registry.cpp - The target table ------------------------------------===//
//
// One row per target kind (Target.h's TargetEntry). A new target is a row
// here and a folder lib/Target/<T> (its chips, a Target whose codegen
// pipeline runs kiln-map-kernels-to-gpu with the vendor's GPUTargetInfo, and
// a runtime driver of the same kind under lib/Runtime/Drivers); a new chip is
// a row of its target's chip table (NVPTXTarget.cpp's kCudaChips,
// AMDGPUTarget.cpp's kRocmChips).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"
#include "kiln/Target/CPU/CPUTarget.h"
#include "kiln/Target/NVPTX/NVPTXTarget.h"
#include "kiln/Target/Target.h"

using namespace mlir;
using namespace mlir::kiln;

/// `--target=cuda`: Hopper's warpgroup-MMA kernels where they run
/// (compute capability 9.0 exactly), else the portable image (mma.sync,
/// with PTX the driver compiles for newer GPUs).
static const StringRef kCudaImages[] = {"sm_90a", "sm_80"};

static const TargetEntry kTargets[] = {
    {/*kind=*/"cpu", /*chipFamily=*/"CPU", getCPUChips, /*defaultChip=*/"host",
     createCPUTarget, registerCPUDialects, registerCPUPasses,
     /*createGPUTargetInfo=*/nullptr, /*initializeLLVM=*/nullptr},
    {"cuda", "CUDA", getCudaChips, "sm_90a", createNVPTXTarget,
     registerNVPTXDialects, registerNVPTXPasses, createNVPTXTargetInfo,
     initializeNVPTXLLVM, kCudaImages},
    {"rocm", "ROCm", getRocmChips, "gfx942", createAMDGPUTarget,
     registerAMDGPUDialects, registerAMDGPUPasses, createAMDGPUTargetInfo,
     initializeAMDGPULLVM},
};

ArrayRef<TargetEntry> mlir::kiln::getTargetTable() { return kTargets; }
