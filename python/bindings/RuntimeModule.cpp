//===- RuntimeModule.cpp - kiln._runtime: models from Python --------------===//
//
// The runtime part of the Python package (no LLVM or MLIR: what a machine
// that only runs models needs): load a model.so, describe its inputs and
// outputs, run it on arrays. Inputs are any DLPack or buffer-protocol
// arrays on the CPU (numpy, torch, ...), read in place; each output is a
// numpy array over the runtime's own tensor (no copy), released with the
// array. Runs release the GIL; a model keeps a pool of instances so threads
// run it at once (an instance runs one call at a time). Failures raise
// kiln.Error with the status's code and message.
//
//===----------------------------------------------------------------------===//

#include "Status.h"

#include "kiln-c/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {
/// kiln.Error: the status's message, with `code` (kiln_status_code_name).
nb::object errorType;

void check(kiln_status_t *status) {
  if (status)
    kiln_python::raiseStatus(status, errorType);
}

struct DtypeMap {
  kiln_dtype_t kiln;
  uint8_t code, bits;
};
// DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
const DtypeMap kDtypes[] = {
    {KILN_DTYPE_F16, 2, 16}, {KILN_DTYPE_BF16, 4, 16}, {KILN_DTYPE_F32, 2, 32},
    {KILN_DTYPE_F64, 2, 64}, {KILN_DTYPE_I8, 0, 8},    {KILN_DTYPE_I16, 0, 16},
    {KILN_DTYPE_I32, 0, 32}, {KILN_DTYPE_I64, 0, 64},  {KILN_DTYPE_U8, 1, 8},
    {KILN_DTYPE_U16, 1, 16}, {KILN_DTYPE_U32, 1, 32},  {KILN_DTYPE_U64, 1, 64},
    {KILN_DTYPE_BOOL, 6, 8},
};

kiln_dtype_t toKiln(nb::dlpack::dtype d) {
  for (const DtypeMap &m : kDtypes)
    if (m.code == d.code && m.bits == d.bits && d.lanes == 1)
      return m.kiln;
  return KILN_DTYPE_INVALID;
}
nb::dlpack::dtype toDlpack(kiln_dtype_t t) {
  for (const DtypeMap &m : kDtypes)
    if (m.kiln == t)
      return nb::dlpack::dtype{m.code, m.bits, 1};
  // 8-bit floats: their bits as uint8.
  return nb::dlpack::dtype{1, 8, 1};
}

/// One input or output: name, dtype name, shape (ints; a symbolic dim is
/// its symbol's name, or None when unnamed).
nb::tuple describe(const kiln_value_info_t &info) {
  nb::list shape;
  for (size_t d = 0; d < info.rank; ++d) {
    if (info.dims[d] >= 0)
      shape.append(info.dims[d]);
    else if (info.dim_symbols && info.dim_symbols[d] && *info.dim_symbols[d])
      shape.append(nb::str(info.dim_symbols[d]));
    else
      shape.append(nb::none());
  }
  return nb::make_tuple(nb::str(info.name),
                        nb::str(kiln_dtype_name(info.dtype)), nb::tuple(shape));
}

/// A loaded model with a pool of instances.
class Model {
public:
  explicit Model(kiln_model_t *m) : model(m, kiln_model_release) {}

  static Model load(const std::string &path, const std::string &weights) {
    kiln_model_t *m = nullptr;
    check(weights.empty() ? kiln_model_load(path.c_str(), &m)
                          : kiln_model_load_with_weights(path.c_str(),
                                                         weights.c_str(), &m));
    return Model(m);
  }
  /// Adopts the model a capsule "kiln_model_t" holds (kiln._compiler's).
  static Model adopt(nb::capsule capsule) {
    if (std::string(capsule.name()) != "kiln_model_t")
      throw nb::type_error("expected a kiln_model_t capsule");
    auto *m = static_cast<kiln_model_t *>(capsule.data());
    kiln_model_retain(m);
    return Model(m);
  }

  nb::list info(bool inputs) const {
    nb::list out;
    size_t n = inputs ? kiln_model_num_inputs(model.get())
                      : kiln_model_num_outputs(model.get());
    for (size_t i = 0; i < n; ++i) {
      kiln_value_info_t v;
      check(inputs ? kiln_model_input_info(model.get(), i, &v)
                   : kiln_model_output_info(model.get(), i, &v));
      out.append(describe(v));
    }
    return out;
  }
  std::string device() const { return kiln_model_device(model.get()); }

  /// Runs on `inputs` (signature order); the outputs as numpy arrays.
  nb::list
  run(const std::vector<nb::ndarray<nb::c_contig, nb::device::cpu>> &inputs) {
    std::vector<kiln_tensor_view_t> views;
    std::vector<std::vector<int64_t>> dims(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto &a = inputs[i];
      kiln_dtype_t dtype = toKiln(a.dtype());
      if (dtype == KILN_DTYPE_INVALID)
        throw nb::type_error(("input " + std::to_string(i) +
                              ": an element type Kiln has no dtype for")
                                 .c_str());
      for (size_t d = 0; d < a.ndim(); ++d)
        dims[i].push_back(a.shape(d));
      views.push_back({dtype, a.ndim(), dims[i].data(), a.data()});
    }
    size_t numOutputs = kiln_model_num_outputs(model.get());
    std::vector<kiln_tensor_t *> outs(numOutputs, nullptr);
    kiln_status_t *status = nullptr;
    {
      nb::gil_scoped_release released;
      kiln_instance_t *instance = nullptr;
      status = acquire(&instance);
      if (!status) {
        status = kiln_instance_run(instance, views.data(), views.size(),
                                   outs.data(), outs.size());
        release(instance);
      }
    }
    check(status);
    nb::list result;
    for (kiln_tensor_t *t : outs) {
      nb::capsule owner(t, [](void *p) noexcept {
        kiln_tensor_release(static_cast<kiln_tensor_t *>(p));
      });
      std::vector<size_t> shape(kiln_tensor_dims(t),
                                kiln_tensor_dims(t) + kiln_tensor_rank(t));
      result.append(nb::ndarray<nb::numpy>(
                        kiln_tensor_data(t), shape.size(), shape.data(), owner,
                        /*strides=*/nullptr, toDlpack(kiln_tensor_dtype(t)))
                        .cast());
    }
    return result;
  }

  ~Model() {
    for (kiln_instance_t *i : pool)
      kiln_instance_release(i);
  }
  Model(Model &&o) noexcept
      : model(std::move(o.model)), pool(std::move(o.pool)) {}

private:
  kiln_status_t *acquire(kiln_instance_t **out) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!pool.empty()) {
        *out = pool.back();
        pool.pop_back();
        return nullptr;
      }
    }
    return kiln_instance_create(model.get(), out);
  }
  void release(kiln_instance_t *i) {
    std::lock_guard<std::mutex> lock(mutex);
    pool.push_back(i);
  }

  std::shared_ptr<kiln_model_t> model;
  std::mutex mutex;
  std::vector<kiln_instance_t *> pool;
};
} // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "Kiln's runtime: load and run compiled models (kiln-c/runtime.h)";
  errorType = nb::borrow(PyErr_NewExceptionWithDoc(
      "kiln.Error", "A failed Kiln call: the status's message; .code names it.",
      PyExc_RuntimeError, nullptr));
  m.attr("Error") = errorType;
  nb::class_<Model>(m, "Model")
      .def_static("load", &Model::load, nb::arg("path"),
                  nb::arg("weights") = "")
      .def_static("_adopt", &Model::adopt)
      .def("_inputs", [](const Model &m) { return m.info(true); })
      .def("_outputs", [](const Model &m) { return m.info(false); })
      .def_prop_ro("device", &Model::device)
      .def("_run", &Model::run, nb::arg("inputs"));
}
