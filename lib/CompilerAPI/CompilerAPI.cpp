//===- CompilerAPI.cpp - kiln-c/compiler.h --------------------------------===//
//
// A compile imports the ONNX bytes into its own MLIR context, runs the
// stages kilnc runs (compileToSharedLibrary) into a private file, and loads
// the result with the runtime (kiln_model_load); with a cache the file is
// <cache>/<key>.so, renamed into place once complete so concurrent compiles
// of one model never see half a file. Diagnostics are collected per compile
// into the status message.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "kiln/Runtime/ModelAPI.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

using namespace mlir;
using namespace mlir::kiln;

kiln_status_t *capi::makeStatus(kiln_status_code_t code,
                                const std::string &message) {
  // The runtime's layout: kiln_status_free frees it, or skips a static one.
  static struct {
    int32_t code;
    int32_t is_static;
    char message[16];
  } oom = {KILN_STATUS_RESOURCE_EXHAUSTED, 1, "out of memory"};
  auto *status = static_cast<kiln_status_t *>(
      std::malloc(sizeof(kiln_status_t) + message.size() + 1));
  if (!status)
    return reinterpret_cast<kiln_status_t *>(&oom);
  status->code = code == KILN_STATUS_OK ? KILN_STATUS_INTERNAL : code;
  status->is_static = 0;
  std::memcpy(status->message, message.c_str(), message.size() + 1);
  return status;
}

namespace {
/// The dialects every compile's context loads (one registry, shared).
const DialectRegistry &getRegistry() {
  static const DialectRegistry registry = [] {
    DialectRegistry r;
    registerKilnDialects(r);
    return r;
  }();
  return registry;
}

/// How a failed compile's messages map to a status code.
kiln_status_code_t classify(const std::string &messages) {
  llvm::StringRef m(messages);
  if (m.contains("is not supported") || m.contains("unsupported") ||
      m.contains("not implemented"))
    return KILN_STATUS_UNIMPLEMENTED;
  return KILN_STATUS_INVALID_ARGUMENT;
}

/// A stream that hands what is written to the options' output callback as
/// `kind` (buffered: flushed after each dump, pipeline and summary).
class OutputStream : public llvm::raw_ostream {
public:
  OutputStream(const kiln_compile_options &options,
               kiln_compile_output_kind_t kind)
      : options(options), kind(kind) {}
  ~OutputStream() override { flush(); }

private:
  void write_impl(const char *data, size_t size) override {
    pos += size;
    if (options.output)
      options.output(options.outputUserData, kind, data, size);
  }
  uint64_t current_pos() const override { return pos; }

  const kiln_compile_options &options;
  kiln_compile_output_kind_t kind;
  uint64_t pos = 0;
};

/// SourceMgrDiagnosticHandler's printing of one diagnostic (kilnc's
/// "LOCATION: error: MESSAGE" lines with their notes), callable directly.
struct DiagnosticPrinter : SourceMgrDiagnosticHandler {
  using SourceMgrDiagnosticHandler::emitDiagnostic;
  using SourceMgrDiagnosticHandler::SourceMgrDiagnosticHandler;
};

/// A compile's diagnostics: the errors' messages collected for the status,
/// and every diagnostic printed to the output callback when there is one.
class Diagnostics {
public:
  Diagnostics(MLIRContext &context, const kiln_compile_options &options)
      : options(options), printerOs(printed),
        printer(sourceMgr, &context, printerOs),
        handler(&context, [this](Diagnostic &d) {
          bool error = d.getSeverity() == DiagnosticSeverity::Error;
          if (error) {
            llvm::raw_string_ostream os(messages);
            if (!messages.empty())
              os << "\n";
            // The messages name the node (name, op type, opset); a location
            // adds only the model's name, which the status starts with.
            os << d.str();
          }
          if (this->options.output) {
            printer.emitDiagnostic(d);
            this->options.output(this->options.outputUserData,
                                 error ? KILN_COMPILE_OUTPUT_ERROR
                                       : KILN_COMPILE_OUTPUT_WARNING,
                                 printed.data(), printed.size());
            printed.clear();
          }
          return success();
        }) {}

  /// A status for a failed compile: "NAME: WHAT" and the messages.
  kiln_status_t *failed(llvm::StringRef name, llvm::StringRef what,
                        std::optional<kiln_status_code_t> code = {}) const {
    std::string text = (name + ": " + what).str();
    if (!messages.empty())
      text += ":\n" + messages;
    return capi::makeStatus(code ? *code : classify(messages), text);
  }

private:
  const kiln_compile_options &options;
  std::string messages, printed;
  llvm::raw_string_ostream printerOs;
  llvm::SourceMgr sourceMgr;
  DiagnosticPrinter printer;
  ScopedDiagnosticHandler handler;
};

/// A compile that fails before it has a module (the model file cannot be
/// read, the target's tools are missing): the status, and the same error
/// printed at the model's location to the output callback.
kiln_status_t *earlyError(const kiln_compile_options &options,
                          llvm::StringRef name, kiln_status_code_t code,
                          const std::string &message) {
  if (options.output) {
    MLIRContext context(MLIRContext::Threading::DISABLED);
    Diagnostics diagnostics(context, options);
    emitError(FileLineColLoc::get(&context, name, 0, 0)) << message;
  }
  return capi::makeStatus(code, message);
}

/// Where a compile writes: the library (or assembly) `soPath` ("": nothing,
/// the stages only), and with external weights the weights file
/// `weightsPath` ("": not written), which the library finds next to it as
/// `weightsName`.
struct OutputFiles {
  std::string soPath, weightsPath, weightsName;
};

/// The --report and --save-device-image hooks after codegen; their errors
/// do not stop the compile (the library is still written) but fail it at
/// the end with `late`.
void addReportHooks(const kiln_compile_options &opts, CompileOptions &compile,
                    llvm::raw_ostream &listing, std::string &late) {
  auto addLate = [&late](const std::string &message) {
    late += (late.empty() ? "" : "\n") + message;
  };
  if (!opts.reportFile.empty()) {
    auto report = std::make_shared<llvm::json::Value>(nullptr);
    compile.afterHost = [report](ModuleOp m) {
      *report = buildCompileReport(m);
    };
    // A library of several images reports its first (the one the other
    // outputs show; compileToSharedLibrary runs the hooks for it alone).
    std::string targetError;
    CompileOptions first = compile;
    first.target = getTargetImages(compile.target).front();
    std::shared_ptr<Target> target = createTarget(first, targetError);
    std::string path = opts.reportFile;
    compile.afterCodegen = [report, target, path, addLate,
                            &listing](ModuleOp m) {
      std::string error;
      if (!addCodegenToReport(*report, m, target.get(), error))
        return addLate("cannot report the device code: " + error);
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec)
        return addLate("cannot write '" + path + "': " + ec.message());
      os << llvm::formatv("{0:2}", *report) << "\n";
      printReportSummary(*report, listing);
      listing.flush();
    };
  }
  if (!opts.deviceImageFile.empty()) {
    std::function<void(ModuleOp)> before = compile.afterCodegen;
    std::string path = opts.deviceImageFile;
    compile.afterCodegen = [before, path, addLate](ModuleOp m) {
      if (before)
        before(m);
      SmallVector<gpu::BinaryOp> binaries(m.getOps<gpu::BinaryOp>());
      if (binaries.size() != 1 || binaries.front().getObjects().size() != 1)
        return addLate("--save-device-image: the model has no device code (a "
                       "device --target with kernels has one image)");
      auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec)
        return addLate("cannot write '" + path + "': " + ec.message());
      os << object.getObject().getValue();
    };
  }
}

/// The stages of one compile in `context`: import, the external weights,
/// the dumps and hooks, calibration, then the library, the assembly, or
/// (without `files.soPath`) the stages alone. `written` says whether the
/// outputs are complete (a late report error fails a compile that wrote
/// them).
kiln_status_t *runStages(MLIRContext &context, const Diagnostics &diags,
                         llvm::StringRef bytes, llvm::StringRef baseDir,
                         llvm::StringRef name, const kiln_compile_options &opts,
                         const OutputFiles &files, TimingScope *timing,
                         bool &written) {
  written = false;
  TimingScope untimed;
  TimingScope importTiming = (timing ? *timing : untimed).nest("import");
  OnnxImportOptions import = opts.import;
  ExternalWeights weights;
  if (opts.externalWeights) {
    weights.minBytes = opts.externalWeightsMinBytes;
    weights.fileName = files.weightsName;
    import.externalWeights = &weights;
  }
  OwningOpRef<ModuleOp> module =
      importOnnxBuffer(&context, bytes, baseDir, name, import);
  if (!module)
    return diags.failed(name, "cannot import the model");
  importTiming.stop();

  CompileOptions compile = opts.compile;
  // Written before compiling: the calibration build loads them.
  if (opts.externalWeights && !files.weightsPath.empty()) {
    std::string error;
    if (!writeExternalWeights(weights, files.weightsPath,
                              files.weightsPath + ".json", name, error))
      return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION, error);
    for (ExternalWeight &w : weights.weights)
      std::string().swap(w.data);
    if (!opts.calibrateDir.empty() && !weights.weights.empty())
      compile.externalWeightsPath = files.weightsPath;
  }
  OutputStream listing(opts, KILN_COMPILE_OUTPUT_LISTING);
  if (compile.dumpAfter == "import") {
    module->print(listing);
    listing << "\n";
    listing.flush();
    if (files.soPath.empty())
      return written = true, nullptr;
  }
  compile.dump = [&listing](llvm::StringRef, ModuleOp m) {
    m.print(listing);
    listing << "\n";
    listing.flush();
  };
  compile.printPipelineTo = &listing;
  compile.timing = timing;
  compile.runtimeLibrary = opts.modelRuntime.empty()
                               ? capi::libraryDir() + "/libKilnModelRuntime.a"
                               : opts.modelRuntime;
  // Only a shared library holds several images (a kind alone): the
  // stages alone and the assembly are those of the first.
  if (files.soPath.empty() || opts.emitAssembly)
    compile.target = getTargetImages(compile.target).front();
  std::string late;
  addReportHooks(opts, compile, listing, late);

  // --calibrate: the ranges go to calibration-ranges, or a temporary file.
  llvm::SmallString<128> tmpRanges;
  auto removeTmp = llvm::scope_exit([&] {
    if (!tmpRanges.empty())
      llvm::sys::fs::remove(tmpRanges);
  });
  if (!opts.calibrateDir.empty()) {
    if (compile.calibrationRanges.empty()) {
      if (llvm::sys::fs::createTemporaryFile("kiln-ranges", "json", tmpRanges))
        return capi::makeStatus(KILN_STATUS_INTERNAL,
                                "cannot create a temporary file");
      compile.calibrationRanges = tmpRanges.str().str();
    }
    if (failed(calibrateRanges(*module, opts.calibrateDir,
                               compile.calibrationRanges, compile)))
      return diags.failed(name, "cannot calibrate the model");
  }

  if (files.soPath.empty()) {
    if (failed(lowerToLLVMDialect(*module, compile)))
      return diags.failed(name, "cannot compile the model");
  } else if (opts.emitAssembly) {
    if (failed(lowerToLLVMDialect(*module, compile)) ||
        failed(emitObjectFile(*module, files.soPath, /*optLevel=*/2,
                              /*assembly=*/true, compile.timing)))
      return diags.failed(name, "cannot compile the model");
  } else if (failed(compileToSharedLibrary(*module, files.soPath, compile))) {
    return diags.failed(name, "cannot compile the model");
  }
  written = true;
  if (!late.empty())
    return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION, late);
  return nullptr;
}

/// One compile in its own MLIR context (see runStages), timed when the
/// options ask (the tree goes to the output callback as TIMING).
kiln_status_t *compileInto(llvm::StringRef bytes, llvm::StringRef baseDir,
                           llvm::StringRef name,
                           const kiln_compile_options &opts,
                           const OutputFiles &files, bool &written) {
  MLIRContext context(getRegistry());
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  Diagnostics diags(context, opts);
  DefaultTimingManager timer;
  std::string timingText;
  llvm::raw_string_ostream timingOs(timingText);
  if (opts.timing) {
    timer.setEnabled(true);
    timer.setDisplayMode(DefaultTimingManager::DisplayMode::Tree);
    timer.setOutput(createOutputStrategy(
        DefaultTimingManager::OutputFormat::Text, timingOs));
  }
  kiln_status_t *status;
  {
    TimingScope root = timer.getRootScope();
    status = runStages(context, diags, bytes, baseDir, name, opts, files,
                       opts.timing ? &root : nullptr, written);
  }
  if (opts.timing) {
    timer.print();
    timer.setEnabled(false);
    if (opts.output)
      opts.output(opts.outputUserData, KILN_COMPILE_OUTPUT_TIMING,
                  timingText.data(), timingText.size());
  }
  return status;
}

/// A private file name in `dir` for `final` (renamed to it when complete).
std::string privateName(llvm::StringRef dir, llvm::StringRef stem,
                        llvm::StringRef ext) {
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, (stem + ".%%%%%%%%" + ext).str());
  llvm::SmallString<256> out;
  llvm::sys::fs::createUniquePath(model, out, /*MakeAbsolute=*/false);
  return out.str().str();
}

/// What the checks that involve two options say (kilnc's messages).
kiln_status_t *verifyOptions(const kiln_compile_options &opts) {
  std::string error;
  if (failed(opts.compile.verify(error)))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  if (opts.compile.precision == "fp32" && !opts.calibrateDir.empty())
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "--keep-fp32, --calibrate and --calibration-ranges "
                            "need --precision=tf32, fp16, bf16 or int8");
  if (opts.compile.precision == "int8" && opts.calibrateDir.empty() &&
      opts.compile.calibrationRanges.empty())
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "--precision=int8 needs --calibrate=DIR (sample inputs to measure "
        "the activations' ranges on) or --calibration-ranges=FILE.json (the "
        "ranges an earlier --calibrate saved)");
  if (opts.externalWeightsMinBytesSet && !opts.externalWeights)
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "--external-weights-min-bytes needs --external-weights");
  return nullptr;
}

/// A compile into a file the caller named (`soPath`; "" for the stages
/// alone), written in place as kilnc writes it; the weights file (the named
/// one, else beside the library) is removed when the compile fails.
kiln_status_t *compileToNamedFile(llvm::StringRef bytes,
                                  llvm::StringRef baseDir, llvm::StringRef name,
                                  const kiln_compile_options &opts,
                                  llvm::StringRef soPath) {
  OutputFiles files;
  files.soPath = soPath.str();
  if (opts.externalWeights) {
    files.weightsPath = opts.externalWeightsFile;
    if (files.weightsPath.empty() && !soPath.empty()) {
      llvm::SmallString<256> p(soPath);
      if (llvm::sys::path::extension(p) == ".so")
        llvm::sys::path::replace_extension(p, ".weights");
      else
        p += ".weights";
      files.weightsPath = p.str().str();
    }
    files.weightsName =
        files.weightsPath.empty()
            ? std::string("model.weights")
            : llvm::sys::path::filename(files.weightsPath).str();
    // Only a compile that writes the library writes its weights.
    if (soPath.empty())
      files.weightsPath.clear();
  }
  bool written = false;
  kiln_status_t *status =
      compileInto(bytes, baseDir, name, opts, files, written);
  if (status && !written && !files.weightsPath.empty()) {
    llvm::sys::fs::remove(files.weightsPath);
    llvm::sys::fs::remove(files.weightsPath + ".json");
  }
  return status;
}

/// The whole compile: through the cache when there is one (and no option
/// bypasses it), into `soPath` when given, and loaded into `outModel` when
/// given; `stagesOnly` (no soPath, no outModel) runs the stages alone.
kiln_status_t *compileModel(kiln_compiler_t *compiler, llvm::StringRef bytes,
                            llvm::StringRef baseDir, llvm::StringRef name,
                            const kiln_compile_options_t *options,
                            const char *soPath, kiln_model_t **outModel) {
  static const kiln_compile_options defaults;
  const kiln_compile_options &opts = options ? *options : defaults;
  if (kiln_status_t *s = verifyOptions(opts))
    return s;
  std::string error;
  // A device target's vendor tools (checked before any work).
  std::unique_ptr<Target> target = createTarget(opts.compile, error);
  if (!target)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  if (!target->checkToolchain(error))
    return earlyError(opts, name, KILN_STATUS_FAILED_PRECONDITION, error);
  if (opts.emitAssembly && outModel)
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "S writes the host assembly, not a model to load: compile with "
        "kiln_compiler_compile_to_file or kiln_compiler_compile_file_to_file");
  bool cached = !compiler->cacheDir.empty() && !opts.bypassesCache();
  // A compile into a file the caller named, without the cache: written in
  // place (with external weights the library records its weights file's
  // name, so such a compile never goes through the cache either).
  if (!outModel && (!cached || opts.externalWeights || !soPath)) {
    compiler->misses.fetch_add(1, std::memory_order_relaxed);
    return compileToNamedFile(bytes, baseDir, name, opts, soPath ? soPath : "");
  }
  if (opts.externalWeights && !cached)
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "external-weights needs a cache folder (and no option that bypasses "
        "it) or a *_to_file compile (the weights file lives next to the "
        "model)");
  bool useCache = cached;

  std::string dir, stem;
  if (useCache) {
    dir = compiler->cacheDir;
    stem = capi::cacheKey(bytes, baseDir, opts);
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                              "cannot create the compile cache folder '" + dir +
                                  "': " + ec.message());
  } else {
    llvm::SmallString<128> tmp;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
    dir = tmp.str().str();
    stem = "kiln-jit";
  }
  std::string finalSo =
      useCache ? dir + "/" + stem + ".so" : privateName(dir, stem, ".so");
  // JIT without a cache: weights stay embedded.
  std::string finalWeights =
      useCache ? dir + "/" + stem + ".weights" : std::string();

  bool hit = useCache && llvm::sys::fs::exists(finalSo) &&
             (!opts.externalWeights || llvm::sys::fs::exists(finalWeights));
  if (hit) {
    compiler->hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    compiler->misses.fetch_add(1, std::memory_order_relaxed);
    // Written under private names, renamed into place when complete.
    OutputFiles files;
    files.soPath = privateName(dir, stem, ".so");
    if (opts.externalWeights) {
      files.weightsPath = privateName(dir, stem, ".weights");
      files.weightsName = llvm::sys::path::filename(finalWeights).str();
    }
    auto cleanup = llvm::scope_exit([&] {
      llvm::sys::fs::remove(files.soPath);
      if (!files.weightsPath.empty()) {
        llvm::sys::fs::remove(files.weightsPath);
        llvm::sys::fs::remove(files.weightsPath + ".json");
      }
    });
    bool written = false;
    if (kiln_status_t *s =
            compileInto(bytes, baseDir, name, opts, files, written))
      return s;
    if (!files.weightsPath.empty()) {
      (void)llvm::sys::fs::rename(files.weightsPath + ".json",
                                  finalWeights + ".json");
      if (std::error_code ec =
              llvm::sys::fs::rename(files.weightsPath, finalWeights))
        return capi::makeStatus(KILN_STATUS_INTERNAL, "cannot write '" +
                                                          finalWeights +
                                                          "': " + ec.message());
    }
    if (std::error_code ec = llvm::sys::fs::rename(files.soPath, finalSo))
      return capi::makeStatus(KILN_STATUS_INTERNAL, "cannot write '" + finalSo +
                                                        "': " + ec.message());
  }
  if (soPath) {
    if (std::error_code ec = llvm::sys::fs::copy_file(finalSo, soPath))
      return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                              std::string("cannot write '") + soPath +
                                  "': " + ec.message());
  }
  if (!outModel)
    return nullptr;
  kiln_status_t *status = kiln_model_load(finalSo.c_str(), outModel);
  // A private JIT file is not needed once loaded.
  if (!useCache)
    llvm::sys::fs::remove(finalSo);
  return status;
}

} // namespace

extern "C" {

const char *kiln_compiler_version(void) {
  static const std::string version = "kiln-compiler " KILN_COMPILER_VERSION
                                     " (build " +
                                     capi::buildId().substr(0, 16) + ")";
  return version.c_str();
}

kiln_status_t *kiln_compile_options_create(kiln_compile_options_t **out) {
  if (!out)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compile_options_create: out_options is NULL");
  *out = new (std::nothrow) kiln_compile_options();
  return *out ? nullptr
              : capi::makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                                 "out of memory");
}

void kiln_compile_options_free(kiln_compile_options_t *options) {
  delete options;
}

kiln_status_t *kiln_compile_options_set(kiln_compile_options_t *options,
                                        const char *name, const char *value) {
  if (!options || !name || !value)
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "kiln_compile_options_set: options, name and value must be non-NULL");
  std::string error;
  if (!capi::setOption(*options, name, value, error))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  return nullptr;
}

kiln_status_t *kiln_compile_options_set_output(kiln_compile_options_t *options,
                                               kiln_compile_output_fn fn,
                                               void *userData) {
  if (!options)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compile_options_set_output: options is NULL");
  options->output = fn;
  options->outputUserData = userData;
  return nullptr;
}

kiln_status_t *
kiln_compile_options_pipeline(const kiln_compile_options_t *options,
                              const char *stage, char **outText) {
  if (!stage || !outText)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compile_options_pipeline: stage and "
                            "out_text must be non-NULL");
  // The stage is checked as the print-pipeline option checks it.
  kiln_compile_options opts = options ? *options : kiln_compile_options();
  std::string error;
  if (!capi::setOption(opts, "print-pipeline", stage, error) ||
      failed(opts.compile.verify(error)))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  std::unique_ptr<Target> target = createTarget(opts.compile, error);
  if (!target)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  MLIRContext context(getRegistry());
  PassManager pm(&context, ModuleOp::getOperationName());
  if (failed(buildStagePipeline(pm, stage, opts.compile, *target)))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            std::string("cannot build stage '") + stage + "'");
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os, /*pretty=*/true);
  os << "\n";
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (!copy)
    return capi::makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  std::memcpy(copy, text.c_str(), text.size() + 1);
  *outText = copy;
  return nullptr;
}

kiln_status_t *kiln_compiler_create(const char *cacheDir,
                                    kiln_compiler_t **out) {
  if (!out)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_create: out_compiler is NULL");
  auto *c = new (std::nothrow) kiln_compiler();
  if (!c)
    return capi::makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  c->cacheDir = cacheDir ? cacheDir : capi::defaultCacheDir();
  *out = c;
  return nullptr;
}

void kiln_compiler_free(kiln_compiler_t *compiler) { delete compiler; }

const char *kiln_compiler_cache_dir(const kiln_compiler_t *compiler) {
  return compiler ? compiler->cacheDir.c_str() : "";
}

void kiln_compiler_cache_counters(const kiln_compiler_t *compiler,
                                  uint64_t *hits, uint64_t *misses) {
  if (hits)
    *hits = compiler ? compiler->hits.load() : 0;
  if (misses)
    *misses = compiler ? compiler->misses.load() : 0;
}

kiln_status_t *kiln_compiler_compile_file(kiln_compiler_t *compiler,
                                          const char *path,
                                          const kiln_compile_options_t *options,
                                          kiln_model_t **out) {
  if (!compiler || !path || !out)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_compile_file: compiler, "
                            "model_path and out_model must be non-NULL");
  std::string bytes, error;
  if (!readModelFile(path, bytes, error))
    return capi::makeStatus(llvm::sys::fs::exists(path)
                                ? KILN_STATUS_INVALID_ARGUMENT
                                : KILN_STATUS_NOT_FOUND,
                            error);
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  return compileModel(compiler, bytes, dir, path, options, nullptr, out);
}

kiln_status_t *
kiln_compiler_compile_file_to_file(kiln_compiler_t *compiler, const char *path,
                                   const kiln_compile_options_t *options,
                                   const char *outputPath) {
  if (!compiler || !path)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_compile_file_to_file: compiler and "
                            "model_path must be non-NULL");
  static const kiln_compile_options defaults;
  const kiln_compile_options &opts = options ? *options : defaults;
  std::string bytes, error;
  if (!readModelFile(path, bytes, error))
    return earlyError(opts, path,
                      llvm::sys::fs::exists(path) ? KILN_STATUS_INVALID_ARGUMENT
                                                  : KILN_STATUS_NOT_FOUND,
                      error);
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  return compileModel(compiler, bytes, dir, path, options,
                      outputPath && *outputPath ? outputPath : nullptr,
                      nullptr);
}

kiln_status_t *
kiln_compiler_compile_buffer(kiln_compiler_t *compiler, const void *data,
                             size_t size, const char *baseDir, const char *name,
                             const kiln_compile_options_t *options,
                             kiln_model_t **out) {
  if (!compiler || (!data && size) || !out)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_compile_buffer: compiler, data "
                            "and out_model must be non-NULL");
  return compileModel(
      compiler, llvm::StringRef(static_cast<const char *>(data), size),
      baseDir ? baseDir : "", name ? name : "<buffer>", options, nullptr, out);
}

kiln_status_t *kiln_compiler_compile_to_file(
    kiln_compiler_t *compiler, const void *data, size_t size,
    const char *baseDir, const char *name,
    const kiln_compile_options_t *options, const char *soPath) {
  if (!compiler || (!data && size) || !soPath || !*soPath)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_compile_to_file: compiler, data "
                            "and so_path must be non-NULL");
  return compileModel(compiler,
                      llvm::StringRef(static_cast<const char *>(data), size),
                      baseDir ? baseDir : "", name ? name : "<buffer>", options,
                      soPath, nullptr);
}

kiln_status_t *kiln_compiler_check(const void *data, size_t size,
                                   const char *name, char **outReport,
                                   size_t *outUnsupported) {
  if ((!data && size) || !outReport || !outUnsupported)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_check: data, out_report and "
                            "out_unsupported must be non-NULL");
  std::string report, error;
  int64_t unsupported = 0;
  if (!checkOnnxModel(llvm::StringRef(static_cast<const char *>(data), size),
                      name ? name : "<buffer>", report, unsupported, error))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  char *copy = static_cast<char *>(std::malloc(report.size() + 1));
  if (!copy)
    return capi::makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  std::memcpy(copy, report.c_str(), report.size() + 1);
  *outReport = copy;
  *outUnsupported = unsupported;
  return nullptr;
}

kiln_status_t *kiln_compiler_check_file(const char *path, char **outReport,
                                        size_t *outUnsupported) {
  if (!path)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_compiler_check_file: model_path is NULL");
  std::string bytes, error;
  if (!readModelFile(path, bytes, error))
    return capi::makeStatus(llvm::sys::fs::exists(path)
                                ? KILN_STATUS_INVALID_ARGUMENT
                                : KILN_STATUS_NOT_FOUND,
                            error);
  return kiln_compiler_check(bytes.data(), bytes.size(), path, outReport,
                             outUnsupported);
}

void kiln_compiler_string_free(char *string) { std::free(string); }

} // extern "C"
