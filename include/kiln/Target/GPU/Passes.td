//===- Passes.td - Vendor-neutral GPU mapping passes -------*- tablegen -*-===//
#ifndef KILN_TARGET_GPU_PASSES_TD
#define KILN_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnMapKernelsToGPU : Pass<"kiln-map-kernels-to-gpu", "ModuleOp"> {
  let summary = "Maps bufferized kernels and the host program onto a GPU";
  let description = [{
    Runs after bufferization on a device target. Each kernel function becomes
    a host-side launcher that takes the runtime context first: contractions
    become shared-memory tiled launches (K split when the tiles are few; f16
    and bf16 operands on the target's matrix instruction), row reductions
    one warp per output, other reductions one thread per output tile, the
    remaining linalg ops parallel loops whose top-level nests become one
    `gpu.launch` each (one thread per iteration), and the remaining memory
    accesses run in single-thread launches. Kernel-internal allocations
    become run-scoped `kiln.buffer`s (device scratch). `kiln.launch` becomes
    a call of the launcher; in host code `memref.get_global` becomes
    `kiln.weight` and `memref.load` becomes `kiln.read` (a device-to-host
    copy). Sets `gpu.container_module` and the module's `kiln.device`.

    The vendor (warp size, shuffles, barriers, shared memory, the matrix
    instruction) comes from a GPUTargetInfo (include/kiln/Target/GPU/
    TargetInfo.h): the one the target's pipeline passes in, else the one
    registered for the `device` option's kind. One strategy per file in
    lib/Target/GPU: MapKernelsToGPU.cpp (the pass), LaunchMapping.cpp
    (launch mapping, parallel loops, device checks), Reductions.cpp (one thread per output tile, one warp per
    output), TiledContraction.cpp (shared-memory tiles, the matrix
    instruction, split K); MergeModules.cpp holds kiln-merge-gpu-modules.
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "Device kind and chip (\"<kind> <chip>\"): selects the "
           "target-info (GPU/TargetInfo.h) and is written into the "
           "signature; empty: the first GPU target at its default chip">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of a parallel loop nest (a multiple of the "
           "warp size)">,
    Option<"tiledContractions", "tiled-contractions", "bool",
           /*default=*/"true",
           "Lower two-operand contractions as shared-memory tiled products">,
    Option<"warpReductions", "warp-reductions", "bool", /*default=*/"true",
           "Reduce along a contiguous dim with one warp (wave) per output "
           "and shuffles">,
    Option<"rowFusion", "row-fusion", "bool", /*default=*/"true",
           "Chains of row-local ops around row reductions (normalizations, "
           "softmax) as one launch of a block per row">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"true",
           "Contractions of f16 or bf16 operands accumulated in f32, and "
           "f32 ones marked kiln.tf32, on the target's matrix instruction, "
           "where it has one">,
    Option<"asyncCopy", "async-copy", "bool", /*default=*/"false",
           "Tiled contractions on the matrix instruction stage operands "
           "that read 16 bytes at a time through a ring of shared buffers "
           "filled by the target's asynchronous copies and read with its "
           "matrix fragment loads, where it has both">,
    Option<"fillBlocks", "fill-blocks", "int64_t", /*default=*/"0",
           "Blocks that fill the GPU: tiled contractions with fewer split "
           "their K (0: the target-info's, two per multiprocessor or "
           "compute unit of the chip)">,
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"32768",
           "Unroll a reduction's outputs per thread only while at least this "
           "many threads remain">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"auto\"",
           "Contraction kernels that have a persistent variant (blocks "
           "that loop over output tiles) use it: off, on, or auto (where "
           "the target's rule says it pays)">,
    Option<"splitK", "split-k", "bool", /*default=*/"true",
           "The target's own contraction kernels split K over more blocks "
           "for problems of few tiles, where its rule says it pays">,
    Option<"tiles", "tiles", "std::string", /*default=*/"\"\"",
           "Output tiles (BMxBN, comma-separated) the target's own "
           "contraction kernels may choose from; empty: all of them, by the "
           "target's cost model">,
    Option<"attentionBlock", "attention-block", "std::string",
           /*default=*/"\"\"",
           "The fused attention kernel's block, WARPSxKEYS[/BLOCKS] (warps, "
           "keys a step, blocks a multiprocessor); empty: the kernel's own "
           "choice">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::ub::UBDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::kiln::KilnDialect"];
}

def KilnOutlineGPUKernels : Pass<"kiln-outline-gpu-kernels", "ModuleOp"> {
  let summary = "gpu-kernel-outlining that keeps each launch's kernel "
                "attributes";
  let description = [{
    Runs upstream `gpu-kernel-outlining` and gives each outlined `gpu.func`
    the entries of its `gpu.launch`'s `kiln.kernel_attrs` dictionary (which
    outlining would drop): attributes of the vendor's kernel functions that
    a lowering asks for, e.g. the fused attention kernel's blocks per
    multiprocessor (GPUTargetInfo::getMinBlocksPerSMAttr). The
    launches are matched to their `gpu.launch_func`s by position. A launch
    of clusters with constant sizes gives its kernel `known_cluster_size`
    (the cluster shape fixed at compile time, so a plain launch makes the
    clusters).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::DLTIDialect"];
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
    The vendors' upstream GPU-to-LLVM conversions (which each target's
    codegen pipeline runs between the two stages) expect branches and
    arithmetic already lowered (`stage=before`, `arith.remf` left for the
    vendor's math library) and leave memref loads, stores and views to
    `finalize-memref-to-llvm` (`stage=after`); the upstream passes run on
    whole modules (host code too), this one on one device module. Shared
    memory (the gpu dialect's workgroup space) is address space 3 and global
    memory 1 on every GPU Kiln targets.
  }];
  let options = [
    Option<"stage", "stage", "std::string", /*default=*/"\"after\"",
           "before (cf, arith, index) or after (memref, vector) the vendor's "
           "conversion">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def KilnErfComplement : Pass<"kiln-erf-complement", "gpu::GPUModuleOp"> {
  let summary = "1 + erf(y) in device code as erfc(-y), without branches";
  let description = [{
    GELU's `x * (1 + erf(x / sqrt(2))) / 2` (every BERT-like FFN) calls the
    vendor's math library's erf: two ranges, each element selecting the
    coefficients of its range's polynomial (nine selects an element) and
    branching to the exponential of the outer range, a third of the
    instructions of an int8 FFN's epilogue.
    This pass rewrites an f32 `arith.addf` of `math.erf(y)` and the
    constant 1 as erfc(-y) computed in one range: u = 2^-g(min(|y|, 3.9))
    with g(t) = t * P(t) (degree 8, fitted to -log2(erfc(t)) on [0, 3.9]
    with weight erfc(t)), 0 past 3.9 (where f32's erf rounds to +-1), and
    2 - u for y >= 0. In f32 (before the exp2 instruction's own error) u
    is within 5.1e-8 of erfc(|y|) and the result within 1.3e-7 of
    1 + erf(y), about an ulp of a result in [1, 2), where 1 + erff(y)
    rounds too. NaN stays NaN; +-inf give 2 and 0.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // KILN_TARGET_GPU_PASSES_TD
