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

def KilnNVPTXGridConstants
    : Pass<"kiln-nvptx-grid-constants", "gpu::GPUModuleOp"> {
  let summary = "Passes a kernel's tile maps as grid-constant parameters";
  let description = [{
    A tile map (`kiln.tile_map`, 128 bytes) reaches a kernel by value as a
    `vector<16xi64>` argument, and the bulk tensor copies that read it take
    its address (an `unrealized_conversion_cast` to `!llvm.ptr` in the
    kernel). After `convert-gpu-to-nvvm` this pass makes each such argument
    of an `nvvm.kernel` function an `!llvm.ptr` with `llvm.byval`
    (128 bytes, aligned to 64) and `nvvm.grid_constant`: PTX's
    `.param .align 64 .b8 [128]` whose address the copies read, while the
    host still passes the 128 bytes (cuLaunchKernel copies them).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // KILN_TARGET_NVPTX_PASSES_TD
