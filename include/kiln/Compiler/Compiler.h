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
#include "llvm/Support/JSON.h"

#include <functional>
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
/// memrefs), codegen (the target's: loops on the CPU; gpu.launch, NVVM and
/// the device image for cuda), llvm (LLVM dialect).
llvm::ArrayRef<llvm::StringLiteral> getStageNames();

struct CompileOptions {
  /// `--target=`: cpu, cuda, cuda:<chip> (see Target.h).
  std::string target = "cpu";
  /// GPU codegen choices (kilnc's --gpu-* flags), handed to the target.
  GPUCodegenOptions gpu;
  /// Stage after which to call `dump` with the module ("" for none).
  std::string dumpAfter;
  std::function<void(llvm::StringRef stage, ModuleOp module)> dump;
  /// Called with the module after the host stage (kernels formed, memory
  /// planned): where the compile report is taken.
  std::function<void(ModuleOp module)> afterHost;
  /// Linker for the final .so.
  std::string linker = "/usr/lib/llvm-22/bin/ld.lld";
  /// The runtime archive linked into every model (libKilnModelRuntime.a).
  std::string runtimeLibrary;
  int optLevel = 2;
  /// Mixed precision (kiln-mixed-precision, docs/mixed-precision.md): fp32,
  /// tf32, fp16 or bf16; node names or op types kept fp32; calibration
  /// ranges (JSON from calibrateRanges) or "".
  std::string precision = "fp32";
  std::vector<std::string> keepFp32;
  std::string calibrationRanges;
  /// Return intermediate float values as extra outputs
  /// (kiln-expose-intermediates): all, or only `exposeNodes` when not empty.
  bool exposeIntermediates = false;
  std::vector<std::string> exposeNodes;
};

/// The graph-stage passes `options` asks for after the graph optimizer:
/// kiln-expose-intermediates, kiln-mixed-precision (Precision.cpp).
void buildPrecisionPasses(OpPassManager &pm, const CompileOptions &options);

/// `kilnc --calibrate=DIR`: compiles `module` (imported, not yet lowered;
/// left unchanged) in fp32 with every intermediate exposed, runs it through
/// the runtime on the samples of `dir` (input_N.pb files, or
/// test_data_set_*/input_N.pb) and writes each tensor's range (absmax, min,
/// max) as JSON to `rangesPath`.
LogicalResult calibrateRanges(ModuleOp module, llvm::StringRef dir,
                              llvm::StringRef rangesPath,
                              const CompileOptions &options);

/// The compile report of a module after the host stage: each kernel with its
/// ONNX nodes, estimated FLOPs and bytes moved; the arena against the sum of
/// all intermediates and the largest set of buffers live at once.
llvm::json::Value buildCompileReport(ModuleOp module);
/// A readable summary of a report.
void printReportSummary(const llvm::json::Value &report, llvm::raw_ostream &os);

/// Adds the passes of `stage` to `pm`; `optLevel` 0 leaves out the graph
/// optimizer (simplification, fusion). `target` null means the CPU.
LogicalResult buildStagePipeline(OpPassManager &pm, llvm::StringRef stage,
                                 int optLevel = 2,
                                 const Target *target = nullptr);

/// Runs the stages after import on `module`, ending in the LLVM dialect.
LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 const CompileOptions &options);

/// Translates an LLVM-dialect module to a host object file at `objPath`.
LogicalResult emitObjectFile(ModuleOp module, llvm::StringRef objPath,
                             int optLevel);

/// Links `objPath` with the runtime into the shared library `soPath`.
LogicalResult linkSharedLibrary(MLIRContext *ctx, llvm::StringRef objPath,
                                llvm::StringRef soPath,
                                const CompileOptions &options);

/// The whole flow from an imported module to `soPath`.
LogicalResult compileToSharedLibrary(ModuleOp module, llvm::StringRef soPath,
                                     const CompileOptions &options);

} // namespace mlir::kiln

#endif // KILN_COMPILER_COMPILER_H
