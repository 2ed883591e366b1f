//===- kiln-c/compiler.hpp - C++ wrapper of kiln-c/compiler.h ---*- C++ -*-===//
//
// Header-only RAII over the compiler's C API (errors throw kiln::Error):
//
//   kiln::Compiler compiler;                       // the default cache
//   kiln::CompileOptions options{{"precision", "fp16"}, {"target", "cuda"}};
//   kiln::Model model = compiler.compileFile("model.onnx", options);
//
//===----------------------------------------------------------------------===//
#ifndef KILN_C_COMPILER_HPP
#define KILN_C_COMPILER_HPP

#include "kiln-c/compiler.h"
#include "kiln-c/runtime.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace kiln {

/// Compile options by kilnc's flag names (kiln_compile_options_set).
class CompileOptions {
public:
  CompileOptions() { check(kiln_compile_options_create(&o_)); }
  CompileOptions(
      std::initializer_list<std::pair<std::string, std::string>> settings)
      : CompileOptions() {
    for (const auto &[name, value] : settings)
      set(name, value);
  }
  CompileOptions(CompileOptions &&o) noexcept
      : o_(std::exchange(o.o_, nullptr)) {}
  CompileOptions(const CompileOptions &) = delete;
  CompileOptions &operator=(const CompileOptions &) = delete;
  ~CompileOptions() { kiln_compile_options_free(o_); }

  CompileOptions &set(const std::string &name, const std::string &value) {
    check(kiln_compile_options_set(o_, name.c_str(), value.c_str()));
    return *this;
  }
  const kiln_compile_options_t *get() const { return o_; }

private:
  kiln_compile_options_t *o_ = nullptr;
};

/// A compiler with its cache; share one between threads.
class Compiler {
public:
  /// `cacheDir`: nullptr for the default folder, "" for none.
  explicit Compiler(const char *cacheDir = nullptr) {
    check(kiln_compiler_create(cacheDir, &c_));
  }
  Compiler(const Compiler &) = delete;
  Compiler &operator=(const Compiler &) = delete;
  ~Compiler() { kiln_compiler_free(c_); }

  Model compileFile(const std::string &path,
                    const CompileOptions *options = nullptr) {
    kiln_model_t *m = nullptr;
    check(kiln_compiler_compile_file(c_, path.c_str(),
                                     options ? options->get() : nullptr, &m));
    return Model(m);
  }
  Model compileFile(const std::string &path, const CompileOptions &options) {
    return compileFile(path, &options);
  }
  Model compileBuffer(const std::string &bytes,
                      const CompileOptions *options = nullptr,
                      const char *name = nullptr,
                      const char *baseDir = nullptr) {
    kiln_model_t *m = nullptr;
    check(kiln_compiler_compile_buffer(c_, bytes.data(), bytes.size(), baseDir,
                                       name, options ? options->get() : nullptr,
                                       &m));
    return Model(m);
  }
  void compileToFile(const std::string &bytes, const std::string &soPath,
                     const CompileOptions *options = nullptr) {
    check(kiln_compiler_compile_to_file(
        c_, bytes.data(), bytes.size(), nullptr, nullptr,
        options ? options->get() : nullptr, soPath.c_str()));
  }
  std::string cacheDir() const { return kiln_compiler_cache_dir(c_); }
  /// (hits, misses) of the cache since the compiler was created.
  std::pair<uint64_t, uint64_t> cacheCounters() const {
    uint64_t h = 0, m = 0;
    kiln_compiler_cache_counters(c_, &h, &m);
    return {h, m};
  }

private:
  kiln_compiler_t *c_ = nullptr;
};

} // namespace kiln

#endif // KILN_C_COMPILER_HPP
