//===- Passes.td - Kiln's target codegen passes ------------*- tablegen -*-===//
#ifndef KILN_TARGET_PASSES_TD
#define KILN_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnMapKernelsToGPU : Pass<"kiln-map-kernels-to-gpu", "ModuleOp"> {
  let summary = "Maps bufferized kernels and the host program onto a GPU";
  let description = [{
    Runs after bufferization on a device target. Each kernel function becomes
    a host-side launcher that takes the runtime context first: contractions
    become shared-memory tiled launches (K split when the tiles are few; f16
    and bf16 operands on tensor cores), row reductions one warp per output,
    other reductions one thread per output tile, the remaining linalg ops
    parallel loops whose top-level nests become one `gpu.launch` each (one
    thread per iteration), and the remaining memory accesses run in
    single-thread launches. Kernel-internal allocations become run-scoped `kiln.buffer`s
    (device scratch). `kiln.launch` becomes a call of the launcher; in host
    code `memref.get_global` becomes `kiln.weight` and `memref.load` becomes
    `kiln.read` (a device-to-host copy). Sets `gpu.container_module` and the
    module's `kiln.device`.
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"cuda sm_90\"",
           "Device kind and chip written into the signature">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of a parallel loop nest">,
    Option<"tiledContractions", "tiled-contractions", "bool",
           /*default=*/"true",
           "Lower two-operand contractions as shared-memory tiled products">,
    Option<"warpReductions", "warp-reductions", "bool", /*default=*/"true",
           "Reduce along a contiguous dim with one warp per output and "
           "shuffles">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"true",
           "Contractions of f16 or bf16 operands accumulated in f32 on "
           "tensor cores (mma.sync, sm_80 and newer)">,
    Option<"fillBlocks", "fill-blocks", "int64_t", /*default=*/"264",
           "Blocks that fill the GPU (two per multiprocessor; the H200 has "
           "132): tiled contractions with fewer split their K">,
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"32768",
           "Unroll a reduction's outputs per thread only while at least this "
           "many threads remain">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::ub::UBDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::kiln::KilnDialect"];
}

def KilnMergeGPUModules : Pass<"kiln-merge-gpu-modules", "ModuleOp"> {
  let summary = "Moves every outlined kernel into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per kernel; a model needs
    one device image loaded once. Moves all `gpu.func`s into
    `@kiln_kernels` and retargets the `gpu.launch_func`s.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def KilnFinalizeDeviceMemRefs
    : Pass<"kiln-finalize-device-memrefs", "gpu::GPUModuleOp"> {
  let summary = "Lowers a gpu.module's cf/arith/index or memref ops to LLVM";
  let description = [{
    `convert-gpu-to-nvvm` expects branches and arithmetic already lowered
    (`stage=before-nvvm`, `arith.remf` left for its libdevice lowering) and leaves memref loads, stores and views to
    `finalize-memref-to-llvm` (`stage=after-nvvm`); the upstream passes run
    on whole modules (host code too), this one on one device module.
  }];
  let options = [
    Option<"stage", "stage", "std::string", /*default=*/"\"after-nvvm\"",
           "before-nvvm (cf, arith, index) or after-nvvm (memref)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KILN_TARGET_PASSES_TD
