//===- Compiler.h - Kiln's compiler driver API ------------------*- C++ -*-===//
//
// The pipelines from the onnx dialect to a model shared library, callable
// in-process (what kilnc and embedding applications use). Errors are
// reported as diagnostics on the context; nothing here exits or aborts.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_COMPILER_H
#define KILN_COMPILER_COMPILER_H

#include "kiln/Target/Target.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kiln {

/// Registers every dialect Kiln's pipelines use.
void registerKilnDialects(DialectRegistry &registry);
/// Registers Kiln's passes and named pipelines (for kiln-opt).
void registerAllKilnPasses();

/// The stages of the flow, in order; `--dump-after` takes these names.
/// import, graph (shape inference), lower (onnx → linalg), kernels (kernel
/// formation), host (host program + memory plan), bufferize (kernels on
/// memrefs), codegen (the target's: loops on the CPU; gpu.launch, the
/// vendor dialect and the device image for a GPU), llvm (LLVM dialect).
llvm::ArrayRef<llvm::StringLiteral> getStageNames();

/// Everything that decides what the compiler produces: kilnc's flags, the
/// options of kiln-opt's `kiln-<stage>-pipeline`s (the same names without the
/// leading dashes, e.g. `--kiln-graph-pipeline=precision=fp16 opt-level=2`)
/// and the embedding API all fill this one struct, and buildStagePipeline
/// builds every stage from it.
struct CompileOptions {
  /// `--target=`: a kind of the target table, optionally `:<chip>` (see
  /// Target.h).
  std::string target = "cpu";
  /// GPU codegen choices (kilnc's --gpu-* flags), handed to the target.
  GPUCodegenOptions gpu;
  /// Stage after which to call `dump` with the module ("" for none).
  std::string dumpAfter;
  std::function<void(llvm::StringRef stage, ModuleOp module)> dump;
  /// Stage whose pass pipeline to print (textual form, one line) to
  /// `printPipelineTo` before it runs ("" for none): kilnc --print-pipeline.
  std::string printPipeline;
  llvm::raw_ostream *printPipelineTo = nullptr;
  /// Called with the module after the host stage (kernels formed, memory
  /// planned): where the compile report is taken.
  std::function<void(ModuleOp module)> afterHost;
  /// Called with the module after the codegen stage (what each kernel's
  /// code got: vector width, threads).
  std::function<void(ModuleOp module)> afterCodegen;
  /// kilnc --timing: each stage's passes, LLVM's phases and the link are
  /// timed under this scope (null: untimed).
  TimingScope *timing = nullptr;
  /// Linker for the final .so.
  std::string linker = "/usr/lib/llvm-22/bin/ld.lld";
  /// The runtime archive linked into every model (libKilnModelRuntime.a).
  std::string runtimeLibrary;
  int optLevel = 2;
  /// Mixed precision (kiln-mixed-precision, docs/mixed-precision.md): fp32,
  /// tf32, fp16, bf16 or int8 (kiln-onnx-insert-qdq, docs/int8.md); node
  /// names or op types kept fp32; calibration ranges (JSON from
  /// calibrateRanges) or "".
  std::string precision = "fp32";
  /// Layout of convolutions and pools (kiln-onnx-convert-layout): "target"
  /// (the target's choice, Target::getConvLayout), "nchw" or "nhwc".
  std::string layout = "target";
  /// Exported attention chains as one onnx.Attention each
  /// (kiln-onnx-fuse-attention). Unset: on where the target runs attention
  /// as one kernel (Target::hasFusedAttention) and the build is fp16 or
  /// bf16 (the kernel's types; measured on the H100, docs/gpu.md), else off.
  std::optional<bool> fuseAttention;
  std::vector<std::string> keepFp32;
  std::string calibrationRanges;
  /// --precision=int8 (kiln-onnx-insert-qdq, docs/int8.md): how activation
  /// ranges are taken from the calibration (minmax, percentile[:P],
  /// entropy; "" for the default) and the nodes or op types kept fp32.
  std::string calibrationMethod;
  std::vector<std::string> int8Exclude;
  /// --int8-keep-fp32=N: keep the N most sensitive contractions in fp32.
  int64_t int8KeepFp32 = 0;
  /// --int8-float: with --precision=int8, what the ops left in float
  /// (kiln-mixed-precision over them) compute in: "fp32", "fp16", "bf16",
  /// or "auto" (fp16 on device targets, whose half contractions run on
  /// tensor cores; fp32 on the CPU).
  std::string int8Float = "auto";
  /// --int8-residuals: with --precision=int8, residual Adds read the
  /// quantized value of an activation the contractions read quantized
  /// (kiln-onnx-insert-qdq's quantize-residuals).
  bool int8Residuals = true;
  /// --int8-attention: with --precision=int8 on a target whose attention
  /// becomes the fused kernel, attention's Q, K and V are quantized too
  /// (kiln-onnx-insert-qdq's attention-inputs; the kernel reads 8 bits).
  /// Off by default until it is measured faster (docs/int8.md).
  bool int8Attention = false;
  /// --f32-constant-division: f32 divisions by a constant as the product by
  /// the reciprocal with one FMA correction (kiln-half-division's f32).
  /// Off: divisions that are only rounded to an integer (QuantizeLinear's)
  /// take it anyway, where it is exact (docs/int8.md). Unset: on with
  /// --precision=int8 (whose float values between the 8-bit layers are
  /// rounded to those: an ulp for quotients below 2^-100 is far below a
  /// step; a u8 x s8 product with an f32 GELU and quantization, BERT's
  /// FFN1 shape, 0.91x the kernel time on an H100), off otherwise.
  std::optional<bool> f32ConstantDivision;
  /// Return intermediate float values as extra outputs
  /// (kiln-expose-intermediates): all, or only `exposeNodes` when not empty.
  bool exposeIntermediates = false;
  std::vector<std::string> exposeNodes;
  /// `--max-memory`: a budget for the arena (kiln-remat recomputes tensors
  /// until the planned arena fits it): bytes with an optional K, M or G
  /// suffix (powers of 1024), or a fraction of the unconstrained peak such
  /// as `0.6x` (parseMaxMemory); "" for none.
  std::string maxMemory;
  /// `--max-memory-weights`: the budget covers the weights too (the arena
  /// gets the budget less their bytes; kiln-remat's `weights`).
  bool maxMemoryWeights = false;
  /// Where the external weights file was written (kilnc --external-weights):
  /// the calibration build loads its weights from there.
  std::string externalWeightsPath;

  /// Checks what a user can get wrong: the target's spelling, the -O range,
  /// the precision's name, and options that need another (--keep-fp32 and
  /// calibration ranges need a precision other than fp32,
  /// --max-memory-weights needs --max-memory). On failure
  /// `error` holds one message.
  LogicalResult verify(std::string &error) const;
};

/// Reads kilnc's `--max-memory` spelling: `bytes` (> 0) or `fraction` (> 0,
/// a fraction of the unconstrained peak, `0.6x`), the other 0. False with a
/// message in `error` for anything else.
bool parseMaxMemory(llvm::StringRef spec, int64_t &bytes, double &fraction,
                    std::string &error);

/// Sets exposeIntermediates/exposeNodes from kilnc's spelling: "all", or
/// node names (empty: expose nothing).
void setExposeIntermediates(CompileOptions &options,
                            llvm::ArrayRef<std::string> nodes);

/// `kilnc --check` on the serialized ModelProto `bytes` (named `name` in
/// messages): one row per operator (subgraphs included) with its opset,
/// count and whether Kiln lowers it, then a summary line, into `report`;
/// `unsupported` the operator types it does not. False with `error` when
/// the bytes are not a ModelProto.
bool checkOnnxModel(llvm::StringRef bytes, llvm::StringRef name,
                    std::string &report, int64_t &unsupported,
                    std::string &error);

/// The target `options.target` names, with the GPU codegen choices of
/// `options`; null with a message in `error` when the spelling is unknown.
std::unique_ptr<Target> createTarget(const CompileOptions &options,
                                     std::string &error);

/// `kilnc --calibrate=DIR`: compiles `module` (imported, not yet lowered;
/// left unchanged) in fp32 with every intermediate exposed, runs it through
/// the runtime on the samples of `dir` (input_N.pb files, or
/// test_data_set_*/input_N.pb) and writes each tensor's range (absmax, min,
/// max) as JSON to `rangesPath`.
/// The calibration build loads the external weights (kilnc
/// --external-weights) from `options.externalWeightsPath` through the
/// runtime's weights_path load option.
LogicalResult calibrateRanges(ModuleOp module, llvm::StringRef dir,
                              llvm::StringRef rangesPath,
                              const CompileOptions &options);

/// The compile report of a module after the host stage: each kernel with its
/// ONNX nodes, estimated FLOPs and bytes moved; the arena against the sum of
/// all intermediates and the largest set of buffers live at once.
llvm::json::Value buildCompileReport(ModuleOp module);
/// Adds to a report what codegen gave each kernel (CPU targets: the widest
/// vector, `vector_bits`, 0 for scalar code; `parallel_ops`, the ops split
/// across threads; from the kernels' kiln.cpu_* attributes) and, on device
/// targets, what `target` reads from the device code
/// (Target::describeDeviceKernels): each kernel's `device_kernels` (those
/// named `<kernel>_kernel...`), all of them under the report's own
/// `device_kernels`. False with `error` set when the device code could not
/// be read.
bool addCodegenToReport(llvm::json::Value &report, ModuleOp module,
                        const Target *target, std::string &error);
/// A readable summary of a report.
void printReportSummary(const llvm::json::Value &report, llvm::raw_ostream &os);

/// Adds the passes of `stage` (one of getStageNames() after "import") to
/// `pm`, as `options` asks: -O0 leaves out the graph optimizer
/// (simplification, fusion); the graph stage ends with the precision passes
/// (kiln-expose-intermediates, kiln-mixed-precision); bufferize and codegen
/// are the target's. kilnc, kiln-opt's `kiln-<stage>-pipeline`s and the
/// embedding API all build their stages here. Fails for an unknown stage.
LogicalResult buildStagePipeline(OpPassManager &pm, llvm::StringRef stage,
                                 const CompileOptions &options,
                                 const Target &target);

/// Runs the stages after import on `module`, ending in the LLVM dialect.
LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 const CompileOptions &options);

/// Translates an LLVM-dialect module to a host object file at `objPath`
/// (its assembly with `assembly`); translation, LLVM's optimizer and its
/// code generator are timed under `timing` when given.
LogicalResult emitObjectFile(ModuleOp module, llvm::StringRef objPath,
                             int optLevel, bool assembly = false,
                             TimingScope *timing = nullptr);

/// Links `objPath` with the runtime into the shared library `soPath`.
LogicalResult linkSharedLibrary(MLIRContext *ctx, llvm::StringRef objPath,
                                llvm::StringRef soPath,
                                const CompileOptions &options);

/// The whole flow from an imported module to `soPath`.
LogicalResult compileToSharedLibrary(ModuleOp module, llvm::StringRef soPath,
                                     const CompileOptions &options);

} // namespace mlir::kiln

#endif // KILN_COMPILER_COMPILER_H
