//===- Passes.td - Kiln kernel and host-program passes -----*- tablegen -*-===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_PASSES_TD
#define KILN_DIALECT_KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFormKernels : Pass<"kiln-form-kernels", "func::FuncOp"> {
  let summary = "Groups tensor computations into kiln.kernel regions";
  let description = [{
    Wraps every op that computes a new tensor (linalg ops, tensor.pad,
    tensor.concat, gathers, ...) into a `kiln.kernel` region together with
    the cheap producers only it uses (`tensor.empty`, a `linalg.fill` of its
    init, scalar and splat constants). Shape-only ops (reshapes, `tensor.dim`,
    index arithmetic) and large constants stay on the host. One compute op per
    kernel: fusion (a later pass) merges kernels.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnOutlineKernels : Pass<"kiln-outline-kernels", "ModuleOp"> {
  let summary = "Builds the host program and outlines kernels to functions";
  let description = [{
    Turns the model function (tensors in, tensors out) into the host program
    `kiln_model_main(ctx) -> i32` on memrefs: inputs come from `kiln.input`,
    outputs from `kiln.output`, each kernel result gets a `kiln.buffer`, and
    each `kiln.kernel` becomes a function on memrefs in destination-passing
    style, called through `kiln.launch`. Shape-only ops become views
    (`memref.reinterpret_cast`), large constants become `memref.global`s.
    The kernels are then bufferized on their own (One-Shot Bufferize inside
    each kernel only).
  }];
  let options = [
    Option<"entryName", "entry", "std::string", /*default=*/"\"main_graph\"",
           "Name of the model function">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "ModuleOp"> {
  let summary = "Assigns arena offsets to static intermediate buffers";
  let description = [{
    Gives every static-shaped `kiln.buffer` in the host program an offset in
    the instance's arena and records the arena size as the module attribute
    `kiln.arena_size`. This version gives each buffer its own slot (no reuse);
    buffers with dynamic sizes are left to the runtime's allocator.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of each slot in bytes">,
  ];
}

#endif // KILN_DIALECT_KILN_TRANSFORMS_PASSES_TD
