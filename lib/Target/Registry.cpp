//===- Registry.cpp - The target table ------------------------------------===//
//
// One row per target kind (Target.h's TargetEntry). A new target is a row
// here and a folder lib/Target/<T> (AMDGPU: its chips, a Target whose
// codegen pipeline runs kiln-map-kernels-to-gpu with a GPUTargetInfo of
// waves of 64 and MFMA, then ROCDL); a new chip is a row of its target's
// chip table (e.g. NVPTXTarget.cpp's kCudaChips).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CPUTarget.h"
#include "kiln/Target/NVPTX/NVPTXTarget.h"
#include "kiln/Target/Target.h"

using namespace mlir;
using namespace mlir::kiln;

static const TargetEntry kTargets[] = {
    {/*kind=*/"cpu", /*chipFamily=*/"CPU", getCPUChips, /*defaultChip=*/"host",
     createCPUTarget, registerCPUDialects, registerCPUPasses,
     /*createGPUTargetInfo=*/nullptr},
    {"cuda", "CUDA", getCudaChips, "sm_90", createNVPTXTarget,
     registerNVPTXDialects, registerNVPTXPasses, createNVPTXTargetInfo},
};

ArrayRef<TargetEntry> mlir::kiln::getTargetTable() { return kTargets; }
