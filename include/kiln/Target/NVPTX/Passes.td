//===- Passes.td - NVIDIA codegen passes -------------------*- tablegen -*-===//
#ifndef KILN_TARGET_NVPTX_PASSES_TD
#define KILN_TARGET_NVPTX_PASSES_TD

include "mlir/Pass/PassBase.td"

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
