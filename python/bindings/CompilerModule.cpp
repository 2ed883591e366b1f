//===- CompilerModule.cpp - kiln._compiler: compile from Python -----------===//
//
// The compiler part of the Python package (kiln-c/compiler.h), imported on
// the first kiln.compile: a compiler with its cache, compiles from a file
// or bytes with kilnc's options by name. A compiled model comes back as a
// capsule "kiln_model_t" that kiln._runtime.Model adopts. Compiles release
// the GIL, so threads compile at once.
//
//===----------------------------------------------------------------------===//

#include "Status.h"

#include "kiln-c/compiler.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace {
using Settings = std::vector<std::pair<std::string, std::string>>;

/// Raises the status as the runtime module's kiln.Error.
[[noreturn]] void raise(kiln_status_t *status) {
  kiln_python::raiseStatus(status,
                           nb::module_::import_("kiln._runtime").attr("Error"));
}
void check(kiln_status_t *status) {
  if (status)
    raise(status);
}

/// Options from (name, value) pairs; freed with the object.
struct Options {
  kiln_compile_options_t *o = nullptr;
  explicit Options(const Settings &settings) {
    check(kiln_compile_options_create(&o));
    for (const auto &[name, value] : settings) {
      kiln_status_t *s =
          kiln_compile_options_set(o, name.c_str(), value.c_str());
      if (s) {
        kiln_compile_options_free(o);
        o = nullptr;
        raise(s);
      }
    }
  }
  ~Options() { kiln_compile_options_free(o); }
};

nb::capsule modelCapsule(kiln_model_t *m) {
  return nb::capsule(m, "kiln_model_t", [](void *p) noexcept {
    kiln_model_release(static_cast<kiln_model_t *>(p));
  });
}

class Compiler {
public:
  explicit Compiler(std::optional<std::string> cacheDir) {
    check(kiln_compiler_create(cacheDir ? cacheDir->c_str() : nullptr, &c));
  }
  ~Compiler() { kiln_compiler_free(c); }

  nb::capsule compileFile(const std::string &path, const Settings &settings) {
    Options options(settings);
    kiln_model_t *m = nullptr;
    kiln_status_t *s;
    {
      nb::gil_scoped_release released;
      s = kiln_compiler_compile_file(c, path.c_str(), options.o, &m);
    }
    check(s);
    return modelCapsule(m);
  }
  nb::capsule compileBuffer(nb::bytes data, const std::string &baseDir,
                            const std::string &name, const Settings &settings) {
    Options options(settings);
    kiln_model_t *m = nullptr;
    kiln_status_t *s;
    {
      nb::gil_scoped_release released;
      s = kiln_compiler_compile_buffer(c, data.c_str(), data.size(),
                                       baseDir.c_str(), name.c_str(), options.o,
                                       &m);
    }
    check(s);
    return modelCapsule(m);
  }
  void compileToFile(nb::bytes data, const std::string &baseDir,
                     const std::string &name, const Settings &settings,
                     const std::string &soPath) {
    Options options(settings);
    kiln_status_t *s;
    {
      nb::gil_scoped_release released;
      s = kiln_compiler_compile_to_file(c, data.c_str(), data.size(),
                                        baseDir.c_str(), name.c_str(),
                                        options.o, soPath.c_str());
    }
    check(s);
  }
  std::string cacheDir() const { return kiln_compiler_cache_dir(c); }
  std::pair<uint64_t, uint64_t> counters() const {
    uint64_t h = 0, m = 0;
    kiln_compiler_cache_counters(c, &h, &m);
    return {h, m};
  }

private:
  kiln_compiler_t *c = nullptr;
};
} // namespace

NB_MODULE(_compiler, m) {
  m.doc() = "Kiln's compiler: ONNX to loaded models (kiln-c/compiler.h)";
  m.def("version", [] { return std::string(kiln_compiler_version()); });
  m.def("check", [](nb::bytes data, const std::string &name) {
    char *report = nullptr;
    size_t unsupported = 0;
    check(kiln_compiler_check(data.c_str(), data.size(), name.c_str(), &report,
                              &unsupported));
    std::string text(report);
    kiln_compiler_string_free(report);
    return std::make_pair(text, unsupported);
  });
  nb::class_<Compiler>(m, "Compiler")
      .def(nb::init<std::optional<std::string>>(),
           nb::arg("cache_dir") = nb::none())
      .def("compile_file", &Compiler::compileFile)
      .def("compile_buffer", &Compiler::compileBuffer)
      .def("compile_to_file", &Compiler::compileToFile)
      .def_prop_ro("cache_dir", &Compiler::cacheDir)
      .def_prop_ro("cache_counters", &Compiler::counters);
}
