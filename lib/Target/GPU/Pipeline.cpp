//===- Pipeline.cpp - The vendor-neutral parts of a GPU codegen pipeline --===//
//
// Every GPU target's codegen stage starts and ends its device lowering the
// same way; the vendor's passes go between (each target's
// buildCodegenPipeline).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void mlir::kiln::addGPUMappingPasses(
    OpPassManager &pm, const GPUCodegenOptions &gpu, StringRef device,
    std::shared_ptr<const GPUTargetInfo> info) {
  pm.addPass(createKilnMapKernelsToGPU(gpu, device, std::move(info)));
  pm.addPass(createCanonicalizerPass());
  // Constants move into the launches: a divisor passed as a kernel argument
  // costs a real (64-bit) division per use.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createKilnOutlineGPUKernels());
  pm.addPass(createKilnMergeGPUModules());
}

void mlir::kiln::addDeviceLoweringPrologue(OpPassManager &dev) {
  dev.addPass(createLowerAffinePass());
  dev.addPass(arith::createArithExpandOpsPass());
  dev.addPass(memref::createExpandStridedMetadataPass());
  // Expanding a view whose offset depends on a loop (a scan output's row
  // written in a serial loop) leaves affine.apply ops.
  dev.addPass(createLowerAffinePass());
  dev.addPass(createSCFToControlFlowPass());
  KilnFinalizeDeviceMemRefsOptions before;
  before.stage = "before";
  dev.addPass(createKilnFinalizeDeviceMemRefs(before));
}
