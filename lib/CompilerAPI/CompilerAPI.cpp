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

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <new>

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

/// Compiles `bytes` into `soPath` (and, with external weights, the weights
/// file `weightsPath`, which the library finds next to it as
/// `weightsName`); nullptr or a status saying why not.
kiln_status_t *compileInto(llvm::StringRef bytes, llvm::StringRef baseDir,
                           llvm::StringRef name,
                           const kiln_compile_options &opts,
                           llvm::StringRef soPath, llvm::StringRef weightsPath,
                           llvm::StringRef weightsName) {
  MLIRContext context(getRegistry());
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  std::string messages;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    llvm::raw_string_ostream os(messages);
    if (!messages.empty())
      os << "\n";
    // The messages name the node (name, op type, opset); a location adds
    // only the model's name, which the status starts with.
    os << d.str();
    return success();
  });
  auto failedWith = [&](llvm::StringRef what) {
    std::string text = (name + ": " + what).str();
    if (!messages.empty())
      text += ":\n" + messages;
    return capi::makeStatus(classify(messages), text);
  };

  OnnxImportOptions import = opts.import;
  ExternalWeights weights;
  if (opts.externalWeights) {
    weights.fileName = weightsName.str();
    import.externalWeights = &weights;
  }
  OwningOpRef<ModuleOp> module =
      importOnnxBuffer(&context, bytes, baseDir, name, import);
  if (!module)
    return failedWith("cannot import the model");
  if (opts.externalWeights) {
    std::string error;
    if (!writeExternalWeights(weights, weightsPath, weightsPath.str() + ".json",
                              name, error))
      return capi::makeStatus(KILN_STATUS_INTERNAL, error);
  }
  CompileOptions compile = opts.compile;
  compile.runtimeLibrary = capi::libraryDir() + "/libKilnModelRuntime.a";
  if (failed(compileToSharedLibrary(*module, soPath, compile)))
    return failedWith("cannot compile the model");
  return nullptr;
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

/// The whole compile: through the cache when there is one, into `soPath`
/// when given, and loaded into `outModel` when given.
kiln_status_t *compileModel(kiln_compiler_t *compiler, llvm::StringRef bytes,
                            llvm::StringRef baseDir, llvm::StringRef name,
                            const kiln_compile_options_t *options,
                            const char *soPath, kiln_model_t **outModel) {
  static const kiln_compile_options defaults;
  const kiln_compile_options &opts = options ? *options : defaults;
  std::string error;
  if (failed(opts.compile.verify(error)))
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  // A device target's vendor tools (checked before any work).
  std::unique_ptr<Target> target = createTarget(opts.compile, error);
  if (!target)
    return capi::makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  if (!target->checkToolchain(error))
    return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION, error);
  bool cached = !compiler->cacheDir.empty();
  if (opts.externalWeights && !cached && !soPath)
    return capi::makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "external-weights needs a cache folder or "
        "kiln_compiler_compile_to_file (the weights file lives next to the "
        "model)");
  // With external weights the library records its weights file's name:
  // a file of its own for kiln_compiler_compile_to_file, never a copy.
  bool useCache = cached && !(opts.externalWeights && soPath);

  std::string dir, stem;
  if (useCache) {
    dir = compiler->cacheDir;
    stem = capi::cacheKey(bytes, baseDir, opts);
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                              "cannot create the compile cache folder '" + dir +
                                  "': " + ec.message());
  } else if (soPath) {
    dir = llvm::sys::path::parent_path(soPath).str();
    if (dir.empty())
      dir = ".";
    stem = llvm::sys::path::stem(soPath).str();
  } else {
    llvm::SmallString<128> tmp;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
    dir = tmp.str().str();
    stem = "kiln-jit";
  }
  std::string finalSo = useCache ? dir + "/" + stem + ".so"
                        : soPath ? std::string(soPath)
                                 : privateName(dir, stem, ".so");
  std::string finalWeights = (llvm::sys::path::parent_path(finalSo) + "/" +
                              llvm::sys::path::stem(finalSo) + ".weights")
                                 .str();
  if (!useCache && soPath == nullptr)
    finalWeights.clear(); // JIT without a cache: weights stay embedded

  bool hit = useCache && llvm::sys::fs::exists(finalSo) &&
             (!opts.externalWeights || llvm::sys::fs::exists(finalWeights));
  if (hit) {
    compiler->hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    compiler->misses.fetch_add(1, std::memory_order_relaxed);
    // Written under private names, renamed into place when complete.
    std::string tmpSo = privateName(dir, stem, ".so");
    std::string tmpWeights =
        opts.externalWeights ? privateName(dir, stem, ".weights") : "";
    auto cleanup = llvm::scope_exit([&] {
      llvm::sys::fs::remove(tmpSo);
      if (!tmpWeights.empty()) {
        llvm::sys::fs::remove(tmpWeights);
        llvm::sys::fs::remove(tmpWeights + ".json");
      }
    });
    if (kiln_status_t *s =
            compileInto(bytes, baseDir, name, opts, tmpSo, tmpWeights,
                        llvm::sys::path::filename(finalWeights)))
      return s;
    if (!tmpWeights.empty()) {
      (void)llvm::sys::fs::rename(tmpWeights + ".json", finalWeights + ".json");
      if (std::error_code ec = llvm::sys::fs::rename(tmpWeights, finalWeights))
        return capi::makeStatus(KILN_STATUS_INTERNAL, "cannot write '" +
                                                          finalWeights +
                                                          "': " + ec.message());
    }
    if (std::error_code ec = llvm::sys::fs::rename(tmpSo, finalSo))
      return capi::makeStatus(KILN_STATUS_INTERNAL, "cannot write '" + finalSo +
                                                        "': " + ec.message());
  }
  if (soPath && useCache) {
    if (std::error_code ec = llvm::sys::fs::copy_file(finalSo, soPath))
      return capi::makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                              std::string("cannot write '") + soPath +
                                  "': " + ec.message());
  }
  if (!outModel)
    return nullptr;
  kiln_status_t *status = kiln_model_load(finalSo.c_str(), outModel);
  // A private JIT file is not needed once loaded.
  if (!useCache && !soPath)
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

void kiln_compiler_string_free(char *string) { std::free(string); }

} // extern "C"
