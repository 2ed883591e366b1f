//===- RuntimeModule.cpp - kiln._runtime: models from Python --------------===//
//
// The runtime part of the Python package (no LLVM or MLIR: what a machine
// that only runs models needs): load a model.so, describe its inputs and
// outputs, run it on arrays. Inputs are any DLPack or buffer-protocol
// arrays on the CPU (numpy, torch, ...), read in place; each output is a
// numpy array over the runtime's own tensor (no copy), released with the
// array. A device model also runs on DLPack tensors in its device's memory
// (_run_device: kiln_instance_run_device on the caller's stream, into
// output buffers the caller allocated; kiln/__init__.py picks the stream
// and allocates). Runs release the GIL; a model keeps a pool of instances
// so threads run it at once (an instance runs one call at a time).
// Failures raise kiln.Error with the status's code and message.
//
//===----------------------------------------------------------------------===//

#include "Status.h"

#include "kiln-c/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
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

/// Raises kiln.Error(message) with code INVALID_ARGUMENT.
[[noreturn]] void invalid(const std::string &message) {
  nb::object error = errorType(message);
  error.attr("code") = "INVALID_ARGUMENT";
  PyErr_SetObject(errorType.ptr(), error.ptr());
  throw nb::python_error();
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

  /// `driver` "", `device` -1 and `chip` "": the runtime's defaults.
  static Model load(const std::string &path, const std::string &weights,
                    const std::string &driver, int32_t device,
                    const std::string &chip) {
    kiln_model_options_t options;
    kiln_model_options_init(&options);
    options.weights_path = weights.c_str();
    options.driver_path = driver.c_str();
    options.device_ordinal = device;
    options.device_chip = chip.c_str();
    kiln_model_t *m = nullptr;
    check(kiln_model_load_with_options(path.c_str(), &options, &m));
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

  /// Runs on device tensors (DLPack capsules or objects, in signature
  /// order): every input and output must be on DLPack device `deviceType`
  /// number `deviceId`, contiguous, of a Kiln dtype. The work goes on
  /// `stream` (the driver's handle; 0: the instance's own, waited for).
  /// Returns the device pointers handed to the runtime (inputs, outputs).
  nb::tuple runDevice(const std::vector<nb::ndarray<>> &inputs,
                      const std::vector<nb::ndarray<>> &outputs,
                      int32_t deviceType, int32_t deviceId, uintptr_t stream) {
    std::vector<kiln_tensor_view_t> ins;
    std::vector<kiln_output_view_t> outs;
    std::vector<std::vector<int64_t>> dims(inputs.size() + outputs.size());
    nb::list inPtrs, outPtrs;
    for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
      bool isInput = i < inputs.size();
      size_t index = isInput ? i : i - inputs.size();
      const nb::ndarray<> &a = isInput ? inputs[i] : outputs[index];
      std::string what = valueName(isInput, index);
      if (a.device_type() != deviceType)
        invalid(what + " is on DLPack device type " +
                std::to_string(a.device_type()) + ", not the model's (" +
                std::to_string(deviceType) + ", " + device() + ")");
      if (a.device_id() != deviceId)
        invalid(what + " is on device " + std::to_string(a.device_id()) +
                "; the model runs on device " + std::to_string(deviceId));
      kiln_dtype_t dtype = toKiln(a.dtype());
      if (dtype == KILN_DTYPE_INVALID)
        invalid(what + " has an element type Kiln has no dtype for");
      int64_t expected = 1;
      for (size_t d = a.ndim(); d-- > 0;) {
        if (a.shape(d) != 1 && a.stride(d) != expected)
          invalid(what + " is not contiguous (row-major); make it contiguous "
                         "first");
        expected *= a.shape(d);
      }
      for (size_t d = 0; d < a.ndim(); ++d)
        dims[i].push_back(a.shape(d));
      auto ptr = reinterpret_cast<uintptr_t>(a.data());
      if (isInput) {
        ins.push_back({dtype, a.ndim(), dims[i].data(), a.data()});
        inPtrs.append(ptr);
      } else {
        outs.push_back({dtype, a.ndim(), dims[i].data(), a.data()});
        outPtrs.append(ptr);
      }
    }
    kiln_status_t *status = nullptr;
    {
      nb::gil_scoped_release released;
      // An instance stays on the stream it last ran on (switching waits
      // for the previous stream, which the caller may have destroyed since):
      // one pool per stream.
      kiln_instance_t *instance = nullptr;
      status = acquire(&instance, stream);
      if (!status) {
        status = kiln_instance_set_stream(instance,
                                          reinterpret_cast<void *>(stream));
        if (status) {
          kiln_instance_release(instance);
        } else {
          status = kiln_instance_run_device(instance, ins.data(), ins.size(),
                                            outs.data(), outs.size());
          release(instance, stream);
        }
      }
    }
    check(status);
    return nb::make_tuple(inPtrs, outPtrs);
  }

  ~Model() {
    for (auto &[stream, instances] : pools)
      for (kiln_instance_t *i : instances)
        kiln_instance_release(i);
  }
  Model(Model &&o) noexcept
      : model(std::move(o.model)), pools(std::move(o.pools)) {}

private:
  /// "input 'x'" / "output 'y'" for messages.
  std::string valueName(bool input, size_t index) const {
    kiln_value_info_t v;
    kiln_status_t *s = input ? kiln_model_input_info(model.get(), index, &v)
                             : kiln_model_output_info(model.get(), index, &v);
    std::string kind = input ? "input " : "output ";
    if (s) {
      kiln_status_free(s);
      return kind + std::to_string(index);
    }
    return kind + "'" + v.name + "'";
  }

  /// An idle instance on `stream` (0: the instance's own), else a new one.
  kiln_status_t *acquire(kiln_instance_t **out, uintptr_t stream = 0) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      std::vector<kiln_instance_t *> &pool = pools[stream];
      if (!pool.empty()) {
        *out = pool.back();
        pool.pop_back();
        return nullptr;
      }
    }
    return kiln_instance_create(model.get(), out);
  }
  void release(kiln_instance_t *i, uintptr_t stream = 0) {
    std::lock_guard<std::mutex> lock(mutex);
    pools[stream].push_back(i);
  }

  std::shared_ptr<kiln_model_t> model;
  std::mutex mutex;
  std::map<uintptr_t, std::vector<kiln_instance_t *>> pools;
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
                  nb::arg("weights") = "", nb::arg("driver") = "",
                  nb::arg("device") = -1, nb::arg("chip") = "")
      .def_static("_adopt", &Model::adopt)
      .def("_inputs", [](const Model &m) { return m.info(true); })
      .def("_outputs", [](const Model &m) { return m.info(false); })
      .def_prop_ro("device", &Model::device)
      .def("_run", &Model::run, nb::arg("inputs"))
      .def("_run_device", &Model::runDevice, nb::arg("inputs"),
           nb::arg("outputs"), nb::arg("device_type"), nb::arg("device_id"),
           nb::arg("stream"));
}
