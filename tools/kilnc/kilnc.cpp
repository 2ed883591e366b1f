//===- kilnc.cpp - Kiln's ahead-of-time compiler --------------------------===//
//
//   kilnc model.onnx -o model.so [--target=cpu|cuda[:sm_90]] [--dump-after=STAGE] [-O N]
//         [--external-weights[=FILE]] [--external-weights-min-bytes=N]
//   kilnc --check model.onnx
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Import/Onnx/Importer.h"
#include "kiln/Target/Target.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <map>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required);
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
             "fewer split their K (default 264: two per multiprocessor of "
             "the H200)"),
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
static cl::opt<std::string>
    reportFile("report",
               cl::desc("Write the compile report (kernels, ONNX nodes, "
                        "FLOPs, bytes, arena) as JSON to this file and print "
                        "a summary"),
               cl::value_desc("FILE.json"), cl::init(""));
static cl::list<std::string>
    boundDims("dim",
              cl::desc("Fix a symbolic dimension (ONNX dim_param) at compile "
                       "time, e.g. --dim seq=128 (repeatable)"),
              cl::value_desc("NAME=VALUE"));
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

/// `kilnc --check`: reads the ModelProto (subgraphs included) and prints one
/// row per operator. Supported means the onnx → linalg lowering has the op
/// (Constant nodes are imported as constants).
static int checkModel(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    llvm::errs() << "kilnc: cannot read '" << path
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  ::onnx::ModelProto model;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    llvm::errs() << "kilnc: '" << path << "' is not an ONNX model\n";
    return 1;
  }
  std::map<std::string, int64_t> opsets;
  for (const auto &o : model.opset_import())
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  // (domain, op type) -> count, in name order.
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  std::function<void(const ::onnx::GraphProto &)> visit =
      [&](const ::onnx::GraphProto &g) {
        for (const auto &n : g.node()) {
          std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
          ++counts[{domain, n.op_type()}];
          for (const auto &a : n.attribute()) {
            if (a.has_g())
              visit(a.g());
            for (const auto &sub : a.graphs())
              visit(sub);
          }
        }
      };
  visit(model.graph());

  auto isSupported = [](const std::string &domain, const std::string &type) {
    return domain.empty() &&
           (type == "Constant" || kiln::isOnnxOpLowered(type));
  };
  size_t width = 8;
  for (const auto &[key, n] : counts)
    width = std::max(width, key.second.size() +
                                (key.first.empty() ? 0 : key.first.size() + 1));
  llvm::outs() << llvm::left_justify("operator", width)
               << llvm::formatv("  {0,5}  {1,5}  {2}\n", "opset", "count",
                                "supported");
  int64_t nodes = 0;
  SmallVector<std::string> unsupported;
  for (const auto &[key, n] : counts) {
    const auto &[domain, type] = key;
    std::string name = domain.empty() ? type : domain + "." + type;
    auto it = opsets.find(domain);
    std::string opset = it == opsets.end() ? "?" : std::to_string(it->second);
    bool ok = isSupported(domain, type);
    if (!ok)
      unsupported.push_back(name);
    nodes += n;
    llvm::outs() << llvm::left_justify(name, width)
                 << llvm::formatv("  {0,5}  {1,5}  {2}\n", opset, n,
                                  ok ? "yes" : "NO");
  }
  llvm::outs() << counts.size() << " operators, " << nodes << " nodes: ";
  if (unsupported.empty()) {
    llvm::outs() << "all supported\n";
    return 0;
  }
  llvm::outs() << unsupported.size() << " unsupported (";
  llvm::interleaveComma(unsupported, llvm::outs());
  llvm::outs() << ")\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Kiln: ONNX to shared library\n");

  if (checkOnly)
    return checkModel(inputFile);

  auto stages = kiln::getStageNames();
  if (!dumpAfter.empty() && !llvm::is_contained(stages, dumpAfter)) {
    llvm::errs() << "kilnc: unknown stage '" << dumpAfter
                 << "' for --dump-after (stages:";
    for (auto s : stages)
      llvm::errs() << " " << s;
    llvm::errs() << ")\n";
    return 1;
  }
  {
    std::string error;
    if (!kiln::parseTarget(target, error)) {
      llvm::errs() << "kilnc: " << error << "\n";
      return 1;
    }
  }
  if (optLevel < 0 || optLevel > 3) {
    llvm::errs() << "kilnc: -O must be 0, 1, 2 or 3\n";
    return 1;
  }
  if (precision != "fp32" && precision != "tf32" && precision != "fp16" &&
      precision != "bf16") {
    llvm::errs() << "kilnc: unknown precision '" << precision
                 << "' (expected fp32, tf32, fp16 or bf16)\n";
    return 1;
  }
  if (precision == "fp32" && (!keepFp32.empty() || !calibrateDir.empty() ||
                              !calibrationRanges.empty())) {
    llvm::errs() << "kilnc: --keep-fp32, --calibrate and --calibration-ranges "
                    "need --precision=tf32, fp16 or bf16\n";
    return 1;
  }
  if (outputFile.empty() && dumpAfter.empty()) {
    llvm::errs() << "kilnc: no output file (-o model.so)\n";
    return 1;
  }

  DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  MLIRContext context(registry);
  // A user gets one line per error, not the IR of the failing op.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  // Diagnostics go to stderr as "location: error: message".
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());

  kiln::OnnxImportOptions importOptions;
  for (const std::string &b : boundDims) {
    size_t eq = b.find('=');
    long long v = 0;
    if (eq == std::string::npos || eq == 0 ||
        llvm::StringRef(b).substr(eq + 1).getAsInteger(10, v) || v < 0) {
      llvm::errs() << "kilnc: --dim expects NAME=VALUE with a non-negative "
                      "integer, got '"
                   << b << "'\n";
      return 1;
    }
    importOptions.boundDims[b.substr(0, eq)] = v;
  }
  // --external-weights: the importer collects the large initializers; they
  // are written here, before compiling (--calibrate runs the model).
  kiln::ExternalWeights weights;
  std::string weightsPath;
  bool useExternalWeights = externalWeights.getNumOccurrences() > 0;
  if (externalWeightsMinBytes.getNumOccurrences() && !useExternalWeights) {
    llvm::errs() << "kilnc: --external-weights-min-bytes needs "
                    "--external-weights\n";
    return 1;
  }
  if (useExternalWeights) {
    if (externalWeightsMinBytes < 0) {
      llvm::errs() << "kilnc: --external-weights-min-bytes must be "
                      "non-negative\n";
      return 1;
    }
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
  OwningOpRef<ModuleOp> module =
      kiln::importOnnxFile(&context, inputFile, importOptions);
  if (!module)
    return 1;
  bool wroteWeights = false;
  auto removeWeights = llvm::scope_exit([&] {
    if (wroteWeights) {
      llvm::sys::fs::remove(weightsPath);
      llvm::sys::fs::remove(weightsPath + ".json");
    }
  });
  if (useExternalWeights && !outputFile.empty()) {
    std::string error;
    if (!kiln::writeExternalWeights(weights, weightsPath, weightsPath + ".json",
                                    inputFile, error)) {
      llvm::errs() << "kilnc: " << error << "\n";
      return 1;
    }
    wroteWeights = true;
    for (kiln::ExternalWeight &w : weights.weights)
      std::string().swap(w.data);
    // The calibration build loads its weights from here.
    if (!calibrateDir.empty() && !weights.weights.empty())
      setenv("KILN_WEIGHTS", weightsPath.c_str(), 1);
  }
  if (dumpAfter == "import") {
    module->print(llvm::outs());
    llvm::outs() << "\n";
    if (outputFile.empty())
      return 0;
  }

  kiln::CompileOptions options;
  options.target = target;
  options.gpu.tiledContractions = gpuTiledContractions;
  options.gpu.warpReductions = gpuWarpReductions;
  options.gpu.tensorCores = gpuTensorCores;
  options.gpu.blockSize = gpuBlockSize;
  options.gpu.fillBlocks = gpuFillBlocks;
  options.gpu.minThreads = gpuMinThreads;
  options.optLevel = optLevel;
  options.dumpAfter = dumpAfter;
  options.dump = [](llvm::StringRef, ModuleOp m) {
    m.print(llvm::outs());
    llvm::outs() << "\n";
  };
  bool reportFailed = false;
  if (!reportFile.empty()) {
    options.afterHost = [&](ModuleOp m) {
      llvm::json::Value report = kiln::buildCompileReport(m);
      std::error_code ec;
      llvm::raw_fd_ostream os(reportFile, ec);
      if (ec) {
        llvm::errs() << "kilnc: cannot write '" << reportFile
                     << "': " << ec.message() << "\n";
        reportFailed = true;
        return;
      }
      os << llvm::formatv("{0:2}", report) << "\n";
      kiln::printReportSummary(report, llvm::outs());
    };
  }
  std::string exe = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
  llvm::SmallString<256> lib(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(lib, "lib", "libKilnModelRuntime.a");
  options.runtimeLibrary = lib.str().str();

  options.precision = precision;
  options.keepFp32.assign(keepFp32.begin(), keepFp32.end());
  for (const std::string &n : exposeIntermediates) {
    options.exposeIntermediates = true;
    if (n != "all" && !n.empty())
      options.exposeNodes.push_back(n);
  }
  options.calibrationRanges = calibrationRanges;
  llvm::SmallString<128> tmpRanges;
  auto removeTmp = llvm::scope_exit([&] {
    if (!tmpRanges.empty())
      llvm::sys::fs::remove(tmpRanges);
  });
  if (!calibrateDir.empty()) {
    if (calibrationRanges.empty()) {
      if (llvm::sys::fs::createTemporaryFile("kiln-ranges", "json",
                                             tmpRanges)) {
        llvm::errs() << "kilnc: cannot create a temporary file\n";
        return 1;
      }
      options.calibrationRanges = tmpRanges.str().str();
    }
    if (failed(kiln::calibrateRanges(*module, calibrateDir,
                                     options.calibrationRanges, options)))
      return 1;
  }

  if (outputFile.empty()) {
    // Dump only: run the stages without emitting code.
    return failed(kiln::lowerToLLVMDialect(*module, options)) || reportFailed
               ? 1
               : 0;
  }
  if (failed(kiln::compileToSharedLibrary(*module, outputFile, options)))
    return 1;
  wroteWeights = false; // keep them: the model needs them
  return reportFailed ? 1 : 0;
}
