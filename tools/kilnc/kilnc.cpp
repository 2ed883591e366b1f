//===- kilnc.cpp - Kiln's ahead-of-time compiler --------------------------===//
//
//   kilnc model.onnx -o model.so [--target=cpu|cuda[:sm_90]] [--dump-after=STAGE] [-O N]
//         [--external-weights[=FILE]] [--external-weights-min-bytes=N]
//   kilnc --check model.onnx
//   kilnc --print-pipeline=STAGE [flags]
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Import/Onnx/Importer.h"
#include "kiln/Target/Target.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::init(""));
static cl::opt<bool> emitAssembly(
    "S",
    cl::desc("Write the host code's assembly to -o instead of linking "
             "the shared library (CPU kernels' instructions)"),
    cl::init(false));
static cl::opt<std::string> outputFile("o", cl::desc("Output shared library"),
                                       cl::value_desc("model.so"));
static cl::opt<std::string> target("target",
                                   cl::desc("Target: cpu, cuda, cuda:<chip> "
                                            "(default chip sm_90)"),
                                   cl::init("cpu"));
static cl::opt<bool> gpuTiledContractions(
    "gpu-tiled-contractions",
    cl::desc("GPU targets: two-operand contractions as shared-memory tiled "
             "products (default on)"),
    cl::init(true));
static cl::opt<bool> gpuWarpReductions(
    "gpu-warp-reductions",
    cl::desc("GPU targets: one warp per output for row reductions (default "
             "on; =false: one thread per output)"),
    cl::init(true));
static cl::opt<bool> gpuTensorCores(
    "gpu-tensor-cores",
    cl::desc("GPU targets: f16/bf16 contractions (--precision=fp16|bf16) on "
             "tensor cores, mma.sync (default on; sm_80 and newer)"),
    cl::init(true));
static cl::opt<int64_t> gpuBlockSize(
    "gpu-block-size",
    cl::desc("GPU targets: threads per block of a parallel loop nest (a "
             "multiple of the warp size, at most 1024; default 256)"),
    cl::init(kiln::GPUCodegenOptions().blockSize));
static cl::opt<int64_t> gpuFillBlocks(
    "gpu-fill-blocks",
    cl::desc("GPU targets: blocks that fill the GPU; tiled contractions with "
             "fewer split their K (default 0: the chip's, two per "
             "multiprocessor or compute unit, e.g. 264 for cuda, 608 for "
             "rocm:gfx942)"),
    cl::init(kiln::GPUCodegenOptions().fillBlocks));
static cl::opt<int64_t> gpuMinThreads(
    "gpu-min-threads",
    cl::desc("GPU targets: unroll a reduction's outputs per thread only "
             "while at least this many threads remain (default 32768)"),
    cl::init(kiln::GPUCodegenOptions().minThreads));
static cl::opt<std::string>
    dumpAfter("dump-after",
              cl::desc("Print the IR after a stage (import, graph, lower, "
                       "kernels, host, bufferize, codegen, llvm) to stdout"),
              cl::init(""));
static cl::opt<std::string> printPipeline(
    "print-pipeline",
    cl::desc("Print the pass pipeline of a stage (graph, lower, kernels, host, "
             "bufferize, codegen, llvm) as the other flags build it, in "
             "kiln-opt's --dump-pass-pipeline form, to stdout; without a "
             "model, only that"),
    cl::value_desc("STAGE"), cl::init(""));
static cl::opt<std::string>
    reportFile("report",
               cl::desc("Write the compile report (kernels, ONNX nodes, "
                        "FLOPs, bytes, arena) as JSON to this file and print "
                        "a summary"),
               cl::value_desc("FILE.json"), cl::init(""));
static cl::opt<std::string> deviceImageFile(
    "save-device-image",
    cl::desc("Also write the device code the model embeds (cuda: a fatbin, "
             "rocm: an AMDGPU code object) to this file, e.g. for a "
             "disassembler"),
    cl::value_desc("FILE"), cl::init(""));
static cl::list<std::string>
    boundDims("dim",
              cl::desc("Fix a symbolic dimension (ONNX dim_param, or "
                       "<input>:<axis> for an unnamed one) at compile time, "
                       "e.g. --dim seq=128 (repeatable)"),
              cl::value_desc("NAME=VALUE"));
static cl::list<std::string> inputShapes(
    "shapes",
    cl::desc("Fix the shapes of inputs at compile time, e.g. --shapes "
             "x:1x3x48x320,mask:1x48 (repeatable; an input name may contain "
             "':', the shape follows the last one)"),
    cl::value_desc("NAME:DxDx..[,NAME:...]"));
static cl::opt<int> optLevel("O", cl::desc("Optimization level (0-3)"),
                             cl::init(2), cl::Prefix);
static cl::opt<bool>
    checkOnly("check",
              cl::desc("List the model's operators (type, opset, count) and "
                       "whether Kiln supports each, without compiling; exit "
                       "1 if any is unsupported"),
              cl::init(false));
static cl::opt<std::string>
    precision("precision",
              cl::desc("Compute precision: fp32 (default), tf32 (fp32 "
                       "storage; contractions marked TF32-tolerant, which no "
                       "target uses yet), fp16 or bf16 "
                       "(mixed: half with fp32 accumulation and fp32 islands; "
                       "docs/mixed-precision.md)"),
              cl::init("fp32"));
static cl::opt<std::string>
    layout("layout",
           cl::desc("Layout of convolutions and pools: target (default: the "
                    "target's choice), nchw or nhwc (channels-last; the "
                    "model's inputs and outputs keep ONNX's layout; "
                    "docs/layout.md)"),
           cl::init("target"));
static cl::list<std::string>
    keepFp32("keep-fp32",
             cl::desc("Keep these ONNX node names or op types in fp32 "
                      "(comma-separated, repeatable)"),
             cl::CommaSeparated, cl::value_desc("NODE|OPTYPE,..."));
static cl::opt<std::string>
    calibrateDir("calibrate",
                 cl::desc("Run the fp32 model on the samples in DIR "
                          "(input_N.pb, or test_data_set_*/input_N.pb) and "
                          "keep in fp32 the ops whose values would overflow "
                          "the half type"),
                 cl::value_desc("DIR"), cl::init(""));
static cl::opt<std::string> calibrationRanges(
    "calibration-ranges",
    cl::desc("With --calibrate: write the recorded ranges to FILE.json; "
             "without it: use the ranges in FILE.json"),
    cl::value_desc("FILE.json"), cl::init(""));
static cl::list<std::string> exposeIntermediates(
    "expose-intermediates",
    cl::desc("Also return intermediate float values as outputs: all of them "
             "(=all), or the values of these nodes"),
    cl::CommaSeparated, cl::value_desc("all|NODE,..."));

static cl::opt<std::string> maxMemory(
    "max-memory",
    cl::desc("Recompute intermediate tensors instead of keeping them until "
             "the arena fits SIZE: bytes with an optional K, M or G suffix "
             "(powers of 1024), or a fraction of the unconstrained peak such "
             "as 0.6x; needs static shapes (--dim, --shapes); "
             "docs/remat.md"),
    cl::value_desc("SIZE"), cl::init(""));

static cl::opt<bool>
    timing("timing",
           cl::desc("Print to stderr where the compile's time went: import, "
                    "each stage's passes, LLVM's translation, optimizer and "
                    "code generator, the link"),
           cl::init(false));

static cl::opt<std::string> externalWeights(
    "external-weights",
    cl::desc("Keep the initializers of at least --external-weights-min-bytes "
             "bytes in FILE (default: the output's path with .weights for "
             ".so), memory-mapped at model load, plus a manifest FILE.json; "
             "new weights of the same shapes drop in without recompiling "
             "(utils/models/fill_weights.py writes such files)"),
    cl::value_desc("FILE"), cl::ValueOptional, cl::init(""));
static cl::opt<long> externalWeightsMinBytes(
    "external-weights-min-bytes",
    cl::desc("With --external-weights: smaller initializers stay embedded "
             "(and may be folded), default 1024"),
    cl::value_desc("N"), cl::init(1024));

static cl::opt<std::string> modelRuntime(
    "model-runtime",
    cl::desc("The model runtime archive linked into model.so (default: "
             "../lib/libKilnModelRuntime.a next to kilnc); a sanitized "
             "build's, for testing (utils/sanitize.sh)"),
    cl::value_desc("FILE"), cl::Hidden, cl::init(""));

/// `kilnc --check`: reads the ModelProto (subgraphs included) and prints one
/// row per operator. Supported means the onnx → linalg lowering has the op
/// (Constant nodes are imported as constants).
static int checkModel(llvm::StringRef path) {
  std::string bytes, error, report;
  int64_t unsupported = 0;
  if (!mlir::kiln::readModelFile(path, bytes, error) ||
      !kiln::checkOnnxModel(bytes, path, report, unsupported, error)) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  llvm::outs() << report;
  return unsupported ? 1 : 0;
}

/// One error line, kilnc's way; returns failure for `return fail(...)`.
static LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << "kilnc: " << message << "\n";
  return failure();
}

/// The flags as CompileOptions and import options, checked.
static LogicalResult readFlags(kiln::CompileOptions &options,
                               kiln::OnnxImportOptions &importOptions,
                               const char *argv0) {
  options.target = target;
  options.gpu.tiledContractions = gpuTiledContractions;
  options.gpu.warpReductions = gpuWarpReductions;
  options.gpu.tensorCores = gpuTensorCores;
  options.gpu.blockSize = gpuBlockSize;
  options.gpu.fillBlocks = gpuFillBlocks;
  options.gpu.minThreads = gpuMinThreads;
  options.optLevel = optLevel;
  options.dumpAfter = dumpAfter;
  options.printPipeline = printPipeline;
  options.printPipelineTo = &llvm::outs();
  options.precision = precision;
  options.layout = layout;
  options.keepFp32.assign(keepFp32.begin(), keepFp32.end());
  kiln::setExposeIntermediates(
      options, SmallVector<std::string>(exposeIntermediates.begin(),
                                        exposeIntermediates.end()));
  options.calibrationRanges = calibrationRanges;
  options.maxMemory = maxMemory;
  options.dump = [](llvm::StringRef, ModuleOp m) {
    m.print(llvm::outs());
    llvm::outs() << "\n";
  };
  // The runtime archive sits in ../lib next to bin/kilnc.
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, (void *)&readFlags);
  llvm::SmallString<256> lib(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(lib, "lib", "libKilnModelRuntime.a");
  options.runtimeLibrary =
      modelRuntime.empty() ? lib.str().str() : modelRuntime.getValue();

  auto stages = kiln::getStageNames();
  for (const std::string *stage :
       {&dumpAfter.getValue(), &printPipeline.getValue()}) {
    if (stage->empty() || llvm::is_contained(stages, *stage))
      continue;
    bool dump = stage == &dumpAfter.getValue();
    return fail("unknown stage '" + *stage + "' for " +
                (dump ? "--dump-after" : "--print-pipeline") + " (stages: " +
                llvm::join(dump ? stages : stages.drop_front(), " ") + ")");
  }
  if (printPipeline == "import")
    return fail("--print-pipeline: 'import' is not a pass pipeline "
                "(kiln-translate --import-onnx)");
  if (precision == "fp32" && !calibrateDir.empty())
    return fail("--keep-fp32, --calibrate and --calibration-ranges need "
                "--precision=tf32, fp16 or bf16");
  std::string error;
  if (failed(options.verify(error)))
    return fail(error);
  if (printPipeline.empty() && inputFile.empty())
    return fail("no input model (kilnc model.onnx -o model.so)");
  if (outputFile.empty() && dumpAfter.empty() && printPipeline.empty())
    return fail("no output file (-o model.so)");

  for (const std::string &b : boundDims)
    if (!kiln::addBoundDim(importOptions, b, error))
      return fail(error);
  for (const std::string &list : inputShapes)
    if (!kiln::addInputShapes(importOptions, list, error))
      return fail(error);
  if (externalWeightsMinBytes.getNumOccurrences() &&
      !externalWeights.getNumOccurrences())
    return fail("--external-weights-min-bytes needs --external-weights");
  if (externalWeightsMinBytes < 0)
    return fail("--external-weights-min-bytes must be non-negative");
  return success();
}

/// `--external-weights`: where the weights file goes (next to the output,
/// .weights for .so, unless named), and the importer's collector for it.
static void planExternalWeights(kiln::ExternalWeights &weights,
                                std::string &weightsPath,
                                kiln::OnnxImportOptions &importOptions) {
  weightsPath = externalWeights;
  if (weightsPath.empty() && !outputFile.empty()) {
    llvm::SmallString<256> p(outputFile.getValue());
    if (llvm::sys::path::extension(p) == ".so")
      llvm::sys::path::replace_extension(p, ".weights");
    else
      p += ".weights";
    weightsPath = p.str().str();
  }
  weights.minBytes = externalWeightsMinBytes;
  weights.fileName = weightsPath.empty()
                         ? std::string("model.weights")
                         : llvm::sys::path::filename(weightsPath).str();
  importOptions.externalWeights = &weights;
}

/// `--report=FILE`: taken after the host stage, completed after codegen
/// (vector widths, threads), then written as JSON with a summary.
static void addReport(kiln::CompileOptions &options, bool &reportFailed) {
  auto report = std::make_shared<llvm::json::Value>(nullptr);
  options.afterHost = [report](ModuleOp m) {
    *report = kiln::buildCompileReport(m);
  };
  std::string targetError;
  std::shared_ptr<kiln::Target> target =
      kiln::createTarget(options, targetError);
  options.afterCodegen = [report, target, &reportFailed](ModuleOp m) {
    std::string error;
    if (!kiln::addCodegenToReport(*report, m, target.get(), error)) {
      (void)fail("cannot report the device code: " + error);
      reportFailed = true;
      return;
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(reportFile, ec);
    if (ec) {
      (void)fail("cannot write '" + reportFile + "': " + ec.message());
      reportFailed = true;
      return;
    }
    os << llvm::formatv("{0:2}", *report) << "\n";
    kiln::printReportSummary(*report, llvm::outs());
  };
}

/// `--save-device-image=FILE`: after codegen (and after the report's hook),
/// the object of the module's gpu.binary.
static void addSaveDeviceImage(kiln::CompileOptions &options, bool &failed) {
  std::function<void(ModuleOp)> before = options.afterCodegen;
  options.afterCodegen = [before, &failed](ModuleOp m) {
    if (before)
      before(m);
    SmallVector<gpu::BinaryOp> binaries(m.getOps<gpu::BinaryOp>());
    if (binaries.size() != 1 || binaries.front().getObjects().size() != 1) {
      (void)fail("--save-device-image: the model has no device code (a "
                 "device --target with kernels has one image)");
      failed = true;
      return;
    }
    auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
    std::error_code ec;
    llvm::raw_fd_ostream os(deviceImageFile, ec);
    if (ec) {
      (void)fail("cannot write '" + deviceImageFile + "': " + ec.message());
      failed = true;
      return;
    }
    os << object.getObject().getValue();
  };
}

/// `--calibrate=DIR`: records the ranges into --calibration-ranges (or a
/// temporary file removed by the caller through `tmpRanges`).
static LogicalResult calibrate(ModuleOp module, kiln::CompileOptions &options,
                               llvm::SmallString<128> &tmpRanges) {
  if (options.calibrationRanges.empty()) {
    if (llvm::sys::fs::createTemporaryFile("kiln-ranges", "json", tmpRanges))
      return fail("cannot create a temporary file");
    options.calibrationRanges = tmpRanges.str().str();
  }
  return kiln::calibrateRanges(module, calibrateDir, options.calibrationRanges,
                               options);
}

/// `--print-pipeline=STAGE` without a model: the stage's passes as kilnc
/// would build them, in the form of kiln-opt's --dump-pass-pipeline.
static int printStagePipeline(MLIRContext &context,
                              const kiln::CompileOptions &options) {
  std::string error;
  std::unique_ptr<kiln::Target> t = kiln::createTarget(options, error);
  PassManager pm(&context, ModuleOp::getOperationName());
  if (!t || failed(kiln::buildStagePipeline(pm, printPipeline, options, *t)))
    return (void)fail(t ? "cannot build stage '" + printPipeline + "'" : error),
           1;
  pm.printAsTextualPipeline(llvm::outs(), /*pretty=*/true);
  llvm::outs() << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Kiln: ONNX to shared library\n");
  if (checkOnly)
    return checkModel(inputFile);

  kiln::CompileOptions options;
  kiln::OnnxImportOptions importOptions;
  if (failed(readFlags(options, importOptions, argv[0])))
    return 1;

  DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  MLIRContext context(registry);
  // A user gets one line per error, not the IR of the failing op.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  // Diagnostics go to stderr as "location: error: message".
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
  if (inputFile.empty())
    return printStagePipeline(context, options);

  // --timing: printed (as a tree, wall and user time) when `timer` goes.
  DefaultTimingManager timer;
  timer.setEnabled(timing);
  timer.setDisplayMode(DefaultTimingManager::DisplayMode::Tree);
  TimingScope rootTiming = timer.getRootScope();
  if (timing)
    options.timing = &rootTiming;
  TimingScope importTiming = rootTiming.nest("import");

  // --external-weights: the importer collects the large initializers; they
  // are written before compiling (--calibrate runs the model).
  kiln::ExternalWeights weights;
  std::string weightsPath;
  bool useExternalWeights = externalWeights.getNumOccurrences() > 0;
  if (useExternalWeights)
    planExternalWeights(weights, weightsPath, importOptions);
  OwningOpRef<ModuleOp> module =
      kiln::importOnnxFile(&context, inputFile, importOptions);
  if (!module)
    return 1;
  importTiming.stop();
  bool keepWeights = false;
  auto removeWeights = llvm::scope_exit([&] {
    if (useExternalWeights && !outputFile.empty() && !keepWeights) {
      llvm::sys::fs::remove(weightsPath);
      llvm::sys::fs::remove(weightsPath + ".json");
    }
  });
  if (useExternalWeights && !outputFile.empty()) {
    std::string error;
    if (!kiln::writeExternalWeights(weights, weightsPath, weightsPath + ".json",
                                    inputFile, error))
      return (void)fail(error), 1;
    for (kiln::ExternalWeight &w : weights.weights)
      std::string().swap(w.data);
    // The calibration build loads its weights from here.
    if (!calibrateDir.empty() && !weights.weights.empty())
      options.externalWeightsPath = weightsPath;
  }
  if (dumpAfter == "import") {
    module->print(llvm::outs());
    llvm::outs() << "\n";
    if (outputFile.empty())
      return 0;
  }

  bool reportFailed = false;
  if (!reportFile.empty())
    addReport(options, reportFailed);
  if (!deviceImageFile.empty())
    addSaveDeviceImage(options, reportFailed);
  llvm::SmallString<128> tmpRanges;
  auto removeTmp = llvm::scope_exit([&] {
    if (!tmpRanges.empty())
      llvm::sys::fs::remove(tmpRanges);
  });
  if (!calibrateDir.empty() && failed(calibrate(*module, options, tmpRanges)))
    return 1;

  // Without -o: run the stages (dumps, pipelines) without emitting code.
  if (outputFile.empty())
    return failed(kiln::lowerToLLVMDialect(*module, options)) || reportFailed;
  if (emitAssembly) {
    if (failed(kiln::lowerToLLVMDialect(*module, options)) ||
        failed(kiln::emitObjectFile(*module, outputFile, /*optLevel=*/2,
                                    /*assembly=*/true, options.timing)))
      return 1;
    keepWeights = true;
    return reportFailed ? 1 : 0;
  }
  if (failed(kiln::compileToSharedLibrary(*module, outputFile, options)))
    return 1;
  keepWeights = true; // the model needs them
  return reportFailed ? 1 : 0;
}
