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

def KilnFuseKernels : Pass<"kiln-fuse-kernels", "func::FuncOp"> {
  let summary = "Merges kernels by a cost model (fusion)";
  let description = [{
    Merges `kiln.kernel`s so intermediates stay inside one launch: a cheap
    producer (elementwise, padding, transpose) all of whose results one
    kernel consumes moves into it (prologue); an elementwise kernel joins the
    contraction or elementwise kernel producing its input when it does not
    broadcast it to a larger shape (epilogue: bias, activation, residual add);
    reductions over innermost dims merge with the elementwise ops on the same
    rows (softmax and layer normalization become one kernel), while a
    reduction feeding a broadcast along other dims does not; contractions of
    one shape that read a common input merge horizontally (Q, K, V). Nothing
    is duplicated, and contractions never merge vertically, so no expensive
    producer is recomputed. Merges keep the program convex (no path leaves a
    kernel and comes back).
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::arith::ArithDialect"];
}

def KilnViewWindows : Pass<"kiln-view-windows", "func::FuncOp"> {
  let summary = "Kernels that read operands in place take a window copy's "
                "source as a view";
  let description = [{
    A copy kernel that takes a window of its input (a Split's or unit-step
    Slice's `out[i] = x[i + offset]`) and feeds, through host reshapes, an
    operand that its kernel reads in place (kiln.attention's query, key and
    value) is replaced there by its source: the window becomes a
    `tensor.extract_slice` (and the reshapes expand/collapse_shape) inside
    the consuming kernel, which bufferization makes a strided view. The copy
    kernel goes when nothing else reads it.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnHalfDivision : Pass<"kiln-half-division", "func::FuncOp"> {
  let summary = "Half divisions by a constant become products by the f32 "
                "reciprocal";
  let description = [{
    `arith.divf %x, %c : f16` (or bf16) with a finite, nonzero constant `c`
    becomes `truncf(extf(%x) * (1 / c as f32))`: the same half value except
    where x / c lies within 2^-23 of a tie between two half values, then one
    unit of the half type away. Targets without a half division run the
    quotient as a correctly rounded f32 division (on a GPU about
    ten instructions); GELU's `x / sqrt(2)` in a transformer's FFN epilogue
    is one per element. Divisions of other types, by a variable, by 0 or a
    non-finite constant are left as they are.

    With `f32`, f32 divisions by such a constant become Markstein's
    correction: `q0 = x * r` with `r` the correctly rounded `1 / c`,
    `q1 = fma(fma(-q0, c, x), r, q0)`, and `q0` where it is infinite (x
    infinite, or the quotient overflows). `q1` is the IEEE quotient for
    every |x| >= 2^-104 (checked on every float for seven divisors,
    utils/constant_division_check.c); below, the residual underflows and
    it may be an ulp away.
  }];
  let options = [
    Option<"f32", "f32", "bool", /*default=*/"false",
           "Also f32 divisions by a constant, as a product with one FMA "
           "correction">,
    Option<"rounded", "rounded", "bool", /*default=*/"true",
           "f32 divisions by a constant whose every use rounds them to an "
           "integer (a QuantizeLinear's) take the correction even without "
           "`f32` (the pipeline turns this off for the host CPU, whose "
           "vector division is cheaper there)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
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

def KilnHoistWeightKernels : Pass<"kiln-hoist-weight-kernels", "ModuleOp"> {
  let summary = "Runs kernels that depend only on weights once per instance";
  let description = [{
    A kernel launch of the host program whose inputs are all weights
    (`kiln.external_weight`, constant globals, scalar constants) or results
    of such launches, at least one of them derived from an external weight
    (embedded constants alone are for the graph optimizer to fold), and
    whose outputs are static intermediate buffers,
    computes the same values on every run: what the compiler does to weights
    it cannot fold at compile time (casts to half precision, layout changes,
    arithmetic on external weights). Such launches move to
    `kiln_model_init(ctx)`, which the runtime calls once per instance before
    the first run; their outputs become persistent buffers
    (`kiln.persistent`, placed after the planned arena by
    `kiln-plan-memory`), which the host program then reads.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::func::FuncDialect"];
}

def KilnRemat : Pass<"kiln-remat", "ModuleOp"> {
  let summary = "Recomputes tensors instead of keeping them, under a memory budget";
  let description = [{
    Lowers the largest set of intermediate buffers live at once until the
    arena that `kiln-plan-memory` will plan fits a budget: a buffer live
    across the peak but not used there is dropped after its early uses and
    recomputed (another `kiln.launch` of its producer kernel into a new
    `kiln.buffer`) right before its first use after the peak, which, with
    the later uses, reads the new buffer. The producer's inputs then live
    until the recomputation, or are recomputed with it (a chain) when they
    would otherwise be live at the peak. Greedy: each step takes the
    recomputation that saves the most bytes at the peak per FLOP added among
    those that lower the peak, until the arena fits or none does (an error
    naming the smallest peak reached and the tensors live there). The
    recomputing launches carry `kiln.remat = "recompute"` (or "move" when
    the original became dead); the module gets `kiln.remat` (budget, peak
    and arena before, the timeline before). Runs before kiln-plan-memory;
    needs static shapes.

    When recomputation alone cannot reach the budget, the pass starts again
    from the original program and splits the batch first: a run of
    consecutive launches around the peak whose kernels compute each batch
    element on its own is launched c times on B/c rows (c the fewest chunks
    that fit, a divisor of B), its intermediates in buffers of B/c rows, the
    tensors it reads from before or writes for later read and written in
    slices (`kiln.chunk = array<i64: k, c>` on the launches, kernels cloned
    for B/c with `kiln.chunk_of`); recomputation then handles the peaks left,
    and, where neither lowers the peak, a run is launched once per band of
    rows, each kernel cloned for the rows its band needs (with the halo its
    convolutions read; `kiln.chunk_rows = array<i64: dim, lo, hi>`).

    With `weights`, the budget covers the weights too (kilnc
    `--max-memory-weights`): the constant `memref.global`s the module reads
    and its `kiln.external_weight`s, each rounded up to `weight-alignment`
    (64 as the .so and the weights file lay them out, 256 for a device's
    allocations). The arena's budget is the budget less their bytes (a
    fraction is then of the unconstrained peak plus the weights), and a
    budget the weights alone reach is an error naming the largest of them.
  }];
  let options = [
    Option<"budgetBytes", "budget-bytes", "int64_t", /*default=*/"0",
           "Budget of the arena in bytes, or with weights of the weights "
           "and the arena (0: none)">,
    Option<"budgetFraction", "budget-fraction", "double", /*default=*/"0.0",
           "Budget as a fraction of the unconstrained peak (with weights: "
           "plus the weights) (0: none)">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of each arena slot in bytes (as kiln-plan-memory)">,
    Option<"inPlace", "in-place", "bool", /*default=*/"true",
           "Plan in-place reuse as kiln-plan-memory does">,
    Option<"chunk", "chunk", "bool", /*default=*/"true",
           "Split runs of launches into batch chunks or bands of rows when "
           "recomputation alone cannot reach the budget">,
    Option<"weights", "weights", "bool", /*default=*/"false",
           "The budget covers the weights too (embedded constants and "
           "external weights): the arena gets the budget less their bytes">,
    Option<"weightAlignment", "weight-alignment", "int64_t",
           /*default=*/"64",
           "With weights: each weight's bytes are rounded up to this (the "
           "runtime's device allocations: 256)">,
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "ModuleOp"> {
  let summary = "Assigns arena offsets to static intermediate buffers";
  let description = [{
    Plans the instance's arena for the static `kiln.buffer`s of the host
    program: each buffer is live from its first to its last use (through
    views); an elementwise kernel writes in place over an input that dies at
    its launch (same size, identity indexing); offsets come from a greedy
    best fit, largest buffers first (or in program order when that packs
    tighter), so buffers whose live ranges don't intersect share memory. Records `kiln.arena_size`,
    `kiln.intermediate_bytes` (sum of all buffers) and `kiln.peak_live_bytes`
    (the largest set live at once) on the module. Buffers with dynamic sizes
    are left to the runtime's allocator; model inputs and outputs are never
    in the arena.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of each slot in bytes">,
    Option<"inPlace", "in-place", "bool", /*default=*/"true",
           "Let elementwise kernels write over an input that dies">,
  ];
}

def KilnDedupKernels : Pass<"kiln-dedup-kernels", "ModuleOp"> {
  let summary = "Keeps one kernel function of each set of identical ones";
  let description = [{
    Kernel functions (`kiln.kernel`) with the same type, the same attributes
    (other than their name) and the same body, op for op (locations aside),
    compute the same thing on their arguments: a network's repeated layers
    (BERT-base: 12 identical encoder layers; ResNet-50: the blocks of a
    stage) have one kernel per layer and layer, differing only in the
    weights passed to them. The first of each set stays; every
    `kiln.launch` of the others calls it instead, and they are erased. The
    kept kernel lists the names it stands for in `kiln.kernel_aliases` (the
    compile report maps them back). Target codegen and LLVM then see each
    distinct kernel once.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

#endif // KILN_DIALECT_KILN_TRANSFORMS_PASSES_TD
