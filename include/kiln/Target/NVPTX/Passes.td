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

def KilnNVPTXQuantizeRounding
    : Pass<"kiln-nvptx-quantize-rounding", "gpu::GPUModuleOp"> {
  let summary = "A quantization's round, zero point and clamp in one "
                "rounding conversion and integer ops; a dequantization's "
                "scale and offset in one fma";
  let description = [{
    A QuantizeLinear (or any round-then-clamp to integers) lowers to
    `fptosi(min(max(roundeven(v) + zp, lo), hi))`: on NVIDIA GPUs a float
    rounding (FRND) and a conversion (F2I), both on the quarter-rate
    conversion pipe, with float adds and clamps. This pass rewrites it as
    `cvt.rni.s32.f32` (llvm.nvvm.f2i.rn: round to nearest even, saturating)
    and the clamp and zero point in integers: `min(max(r, lo - zp),
    hi - zp) + zp`. The same integer for every finite or infinite v (the
    float sum is exact below 2^24, both saturate beyond); a NaN gives the
    zero point where the float form's conversion was undefined. zp, lo and
    hi must be integral constants below 2^24 in magnitude; the clamp may be
    the NaN-propagating (minimumf) or the NaN-ignoring (minnumf) forms, in
    either order.

    A dequantization's scale and offset, `sitofp(acc) * s + b` (an integer
    product's epilogue: s and b per channel), becomes one `math.fma`: one
    rounding instead of two (at most an ulp of the f32 result apart, far
    inside the 8-bit quantization the product comes from), one instruction
    per element of the epilogue instead of two.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def KilnNVPTXFastExp2 : Pass<"kiln-nvptx-fast-exp2", "gpu::GPUModuleOp"> {
  let summary = "A marked math.exp2 as ex2.approx.ftz.f32";
  let description = [{
    libdevice's exp2f is `ex2.approx.f32`, for which ptxas adds a
    subnormal guard (a compare and two predicated products around the
    MUFU instruction). A `math.exp2` whose producer knows its argument stays
    above -126 (no subnormal result to keep) carries the unit attribute
    `kiln.exp2_normal` (kiln-erf-complement's, whose argument is at least
    -26): this pass makes it `llvm.nvvm.ex2.approx.ftz.f`, the instruction
    alone, with the same approximation.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def KilnNVPTXDependentLaunch
    : Pass<"kiln-nvptx-dependent-launch", "ModuleOp"> {
  let summary = "Kernels that wait for the previous kernel themselves, so "
                "that the runtime may launch them early";
  let description = [{
    Puts `griddepcontrol.wait` and then `griddepcontrol.launch_dependents`
    (sm_90 and newer) at the entry of every `nvvm.kernel` function of the
    module's `gpu.module`s, and marks the module `kiln.dependent_launch`,
    which the host lowering writes into the signature as the
    `dependent-launch` record. The runtime then launches each kernel with
    programmatic stream serialization (a programmatic edge in a captured
    graph): the kernel is launched, and its blocks placed on the
    multiprocessors the previous kernel's last blocks leave, while that
    kernel still runs; each block waits at its first instruction until the
    previous kernel has finished and its writes are visible, so no kernel
    reads or overwrites memory before then. `launch_dependents` at the
    entry lets the next kernel be launched once every block of this one has
    started (all of them are then placed: the next one's blocks never take
    a place this kernel's blocks wait for). Kernels without the wait must
    not be launched that way: the mark is set only when every kernel has
    it.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

#endif // KILN_TARGET_NVPTX_PASSES_TD
