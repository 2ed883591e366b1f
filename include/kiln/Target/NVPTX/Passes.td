//===- Passes.td - NVIDIA codegen passes -------------------*- tablegen -*-===//
#ifndef KILN_TARGET_NVPTX_PASSES_TD
#define KILN_TARGET_NVPTX_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFinalizeDeviceMemRefs
    : Pass<"kiln-finalize-device-memrefs", "gpu::GPUModuleOp"> {
  let summary = "Lowers a gpu.module's cf/arith/index or memref ops to LLVM";
  let description = [{
    `convert-gpu-to-nvvm` expects branches and arithmetic already lowered
    (`stage=before-nvvm`, `arith.remf` left for its libdevice lowering) and
    leaves memref loads, stores and views to `finalize-memref-to-llvm`
    (`stage=after-nvvm`); the upstream passes run on whole modules (host
    code too), this one on one device module. Shared memory (the gpu
    dialect's workgroup space) is NVVM's address space 3.
  }];
  let options = [
    Option<"stage", "stage", "std::string", /*default=*/"\"after-nvvm\"",
           "before-nvvm (cf, arith, index) or after-nvvm (memref)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KILN_TARGET_NVPTX_PASSES_TD
