//===- Internal.h - Pieces of the compiler C API ----------------*- C++ -*-===//
//
// What kiln-c/compiler.h's handles hold, and the helpers its files share:
// statuses in the runtime's layout, the option table (Options.cpp), and
// the compile cache (Cache.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_COMPILERAPI_INTERNAL_H
#define KILN_LIB_COMPILERAPI_INTERNAL_H

#include "kiln-c/compiler.h"
#include "kiln/Compiler/Compiler.h"
#include "kiln/Import/Onnx/Importer.h"

#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <map>
#include <string>
#include <vector>

struct kiln_compile_options {
  mlir::kiln::CompileOptions compile;
  mlir::kiln::OnnxImportOptions import;
  bool externalWeights = false;
  /// external-weights=FILE: where the weights go ("": beside the model).
  std::string externalWeightsFile;
  /// external-weights-min-bytes, and whether it was set (it needs
  /// external-weights).
  int64_t externalWeightsMinBytes = 1024;
  bool externalWeightsMinBytesSet = false;
  /// calibrate=DIR, report=FILE, save-device-image=FILE, model-runtime=FILE.
  std::string calibrateDir, reportFile, deviceImageFile, modelRuntime;
  bool timing = false;
  /// expose-intermediates, every value given (split at commas).
  std::vector<std::string> exposeIntermediates;
  /// S: the *_to_file compiles write the host assembly.
  bool emitAssembly = false;
  /// Where the compile's text goes (kiln_compile_options_set_output).
  kiln_compile_output_fn output = nullptr;
  void *outputUserData = nullptr;
  /// Every option set, as "name=value" in the order set (repeatable ones
  /// accumulate; a single-valued one set again replaces its entry): the
  /// options' part of the cache key.
  std::vector<std::pair<std::string, std::string>> settings;

  /// Options whose compile writes files or text, or reads files the cache
  /// key does not hash: such compiles bypass the cache.
  bool bypassesCache() const {
    return !compile.dumpAfter.empty() || !compile.printPipeline.empty() ||
           !reportFile.empty() || !deviceImageFile.empty() || timing ||
           !calibrateDir.empty() || !compile.calibrationRanges.empty() ||
           emitAssembly || !modelRuntime.empty() ||
           !externalWeightsFile.empty();
  }
};

struct kiln_compiler {
  std::string cacheDir; // "" without a cache
  std::atomic<uint64_t> hits{0}, misses{0};
};

namespace mlir::kiln::capi {

/// A status in the runtime's layout (kiln_status_free frees it).
kiln_status_t *makeStatus(kiln_status_code_t code, const std::string &message);

/// Applies option `name` = `value` to `options` (kilnc's flag names);
/// false with the message in `error`.
bool setOption(kiln_compile_options &options, llvm::StringRef name,
               llvm::StringRef value, std::string &error);

/// The cache folder a compiler without an explicit one uses: $KILN_CACHE_DIR,
/// else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln ("" when none is set).
std::string defaultCacheDir();

/// This library's build id (the GNU build-id note of the loaded
/// libkiln_compiler.so, as hex), else a hash of its file.
const std::string &buildId();

/// The folder holding libkiln_compiler.so (its runtime archive sits there).
const std::string &libraryDir();

/// The cache key of a compile: SHA-256 (hex) of the build id, the options'
/// settings, the model bytes and the external-data files it names under
/// `baseDir`.
std::string cacheKey(llvm::StringRef bytes, llvm::StringRef baseDir,
                     const kiln_compile_options &options);

} // namespace mlir::kiln::capi

#endif // KILN_LIB_COMPILERAPI_INTERNAL_H
