//===- Passes.td - CPU codegen passes ----------------------*- tablegen -*-===//
#ifndef KILN_TARGET_CPU_PASSES_TD
#define KILN_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCPUCodegen : Pass<"kiln-cpu-codegen", "ModuleOp"> {
  let summary = "Splits CPU kernels across threads and vectorizes them";
  let description = [{
    First, constant weights that a contraction reads as its vector operand
    (a matmul's `B`, `k x n`, every launch passing a constant global) are
    packed at compile time into panels of the register tile's columns
    (`n/NR x k x NR`, zero-padded): the global's bytes are rewritten and the
    kernel reads them at `(n floordiv NR, k, n mod NR)`.

    Then, for each linalg op of each kernel (`kiln.kernel`, on memrefs):

    - stencils (convolutions, pooling: an input indexed `a * d_p + b * d_r`
      with `d_r` a reduction) become a loop over their window whose body is
      a contraction or elementwise op on shifted, strided views;
    - an op with enough work and a static parallel dim of two or more
      iterations is tiled along that dim into tasks; the loop over tasks is
      outlined into a function (`kiln.parallel_body`) that
      `kiln.parallel_for` runs on the runtime's thread pool (static
      partitioning);
    - contractions (`out + a * b`, inputs maybe extended) become register
      tiles of FMAs on `vector-bits`-wide vectors (an accumulator tile of
      rows × vectors kept in registers across the reduction; integer ones,
      int8/int16 into int32, of integer multiply-adds, or with `int8-dot`
      of VNNI dot products of four bytes when the int8 operand is a
      constant, packed in quads at compile time, or with `int8-tiles` of
      AMX tile products where k is a multiple of 64), other ops are
      tiled and vectorized along their innermost dim (rows of reductions
      whole); a contraction's fill and its elementwise consumer (bias,
      activation, residual) are taken into its tiles: the accumulators
      start at the fill's value and go through the consumer before they
      are stored;
    - what cannot be vectorized stays a linalg op (lowered to loops after).

    Each kernel records what it got: `kiln.cpu_vector_bits` (the widest
    vector of its ops, 0 when all are scalar) and `kiln.cpu_parallel` (how
    many of its ops run on threads). The module records the machine:
    `kiln.cpu` (LLVM's CPU name), `kiln.cpu_features` (LLVM's feature
    string) and `kiln.cpu_requires` (the features the runtime checks).
  }];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"x86-64-v2\"",
           "LLVM's CPU name">,
    Option<"features", "features", "std::string", /*default=*/"\"\"",
           "LLVM's feature string (+avx2,+fma,...)">,
    Option<"requires", "requires", "std::string", /*default=*/"\"\"",
           "Space-separated CPU features the runtime checks">,
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"128",
           "Widest vector register in bits (128, 256, 512)">,
    Option<"parallel", "parallel", "bool", /*default=*/"true",
           "Split ops across the thread pool">,
    Option<"vectorize", "vectorize", "bool", /*default=*/"true",
           "Vectorize ops">,
    Option<"minParallelWork", "min-parallel-work", "int64_t",
           /*default=*/"32768",
           "Iterations an op needs before it is split across threads">,
    Option<"tasks", "tasks", "int64_t", /*default=*/"16",
           "Tasks an op is split into (at most; a divisor of its dim)">,
    Option<"pack", "pack", "bool", /*default=*/"true",
           "Pack constant weights read as vectors into panels">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "bf16 matmuls as AVX512-BF16 dot products of pairs">,
    Option<"int8Dot", "int8-dot", "bool", /*default=*/"false",
           "uint8 x int8 contractions as VNNI dot products of quads "
           "(vpdpbusd at vector-bits: AVX512-VNNI for 512, AVX-VNNI for 256)">,
    Option<"int8Tiles", "int8-tiles", "bool", /*default=*/"false",
           "with int8-dot: uint8 x int8 contractions as AMX tile products "
           "(tdpbusd) where their shapes allow">,
    Option<"l1Bytes", "l1-bytes", "int64_t", /*default=*/"32768",
           "L1 data cache per core (sizes contraction reduction blocks)">,
    Option<"l2Bytes", "l2-bytes", "int64_t", /*default=*/"1048576",
           "L2 cache per core (what a task may re-read from cache)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect", "::mlir::kiln::KilnDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::amx::AMXDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect"];
}

#endif // KILN_TARGET_CPU_PASSES_TD
