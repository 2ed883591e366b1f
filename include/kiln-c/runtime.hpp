//===- kiln-c/runtime.hpp - C++ wrapper of kiln-c/runtime.h -----*- C++ -*-===//
//
// Header-only RAII over the runtime's C API: handles release themselves, a
// failed call throws kiln::Error carrying the status's code and message.
// Everything else (threading, device models, options) is as in
// kiln-c/runtime.h.
//
//   kiln::Model model = kiln::Model::load("model.so");
//   kiln::Instance instance(model);
//   std::vector<kiln::Tensor> out = instance.run({kiln::view(x, {2, 4})});
//
//===----------------------------------------------------------------------===//
#ifndef KILN_C_RUNTIME_HPP
#define KILN_C_RUNTIME_HPP

#include "kiln-c/runtime.h"

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// A failed call: the status's code and message.
class Error : public std::runtime_error {
public:
  Error(kiln_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  kiln_status_code_t code() const { return code_; }

private:
  kiln_status_code_t code_;
};

/// Throws the status (and frees it) unless it is OK.
inline void check(kiln_status_t *status) {
  if (!status)
    return;
  Error error(kiln_status_code(status), kiln_status_message(status));
  kiln_status_free(status);
  throw error;
}

/// A runtime-allocated host tensor (an output of a run).
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(kiln_tensor_t *t) : t_(t) {}
  Tensor(Tensor &&o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  Tensor &operator=(Tensor &&o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor() { kiln_tensor_release(t_); }

  static Tensor read(const std::string &path) {
    kiln_tensor_t *t = nullptr;
    check(kiln_tensor_read_file(path.c_str(), &t));
    return Tensor(t);
  }
  kiln_dtype_t dtype() const { return kiln_tensor_dtype(t_); }
  std::vector<int64_t> shape() const {
    const int64_t *d = kiln_tensor_dims(t_);
    return std::vector<int64_t>(d, d + kiln_tensor_rank(t_));
  }
  template <typename T = void> T *data() const {
    return static_cast<T *>(kiln_tensor_data(t_));
  }
  size_t size() const { return kiln_tensor_num_elements(t_); }
  kiln_tensor_view_t view() const { return kiln_tensor_as_view(t_); }
  kiln_tensor_t *get() const { return t_; }

private:
  kiln_tensor_t *t_ = nullptr;
};

/// A loaded model; copies share it (reference-counted by the runtime).
class Model {
public:
  Model() = default;
  /// Takes over one reference.
  explicit Model(kiln_model_t *m) : m_(m) {}
  Model(const Model &o) : m_(o.m_) {
    if (m_)
      kiln_model_retain(m_);
  }
  Model(Model &&o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Model &operator=(Model o) noexcept {
    std::swap(m_, o.m_);
    return *this;
  }
  ~Model() { kiln_model_release(m_); }

  static Model load(const std::string &path) {
    kiln_model_t *m = nullptr;
    check(kiln_model_load(path.c_str(), &m));
    return Model(m);
  }
  size_t numInputs() const { return kiln_model_num_inputs(m_); }
  size_t numOutputs() const { return kiln_model_num_outputs(m_); }
  kiln_value_info_t input(size_t i) const {
    kiln_value_info_t info;
    check(kiln_model_input_info(m_, i, &info));
    return info;
  }
  kiln_value_info_t output(size_t i) const {
    kiln_value_info_t info;
    check(kiln_model_output_info(m_, i, &info));
    return info;
  }
  kiln_model_t *get() const { return m_; }

private:
  kiln_model_t *m_ = nullptr;
};

/// A view of caller memory as an input (`data` must outlive the run).
template <typename T>
kiln_tensor_view_t view(const T *data, kiln_dtype_t dtype,
                        const std::vector<int64_t> &dims) {
  return kiln_tensor_view_t{dtype, dims.size(), dims.data(),
                            const_cast<T *>(data)};
}
inline kiln_tensor_view_t view(const float *data,
                               const std::vector<int64_t> &dims) {
  return view(data, KILN_DTYPE_F32, dims);
}

/// Per-run state of a model; one call at a time (one instance per thread).
class Instance {
public:
  explicit Instance(const Model &model) {
    check(kiln_instance_create(model.get(), &i_));
    outputs_ = model.numOutputs();
  }
  Instance(Instance &&o) noexcept
      : i_(std::exchange(o.i_, nullptr)), outputs_(o.outputs_) {}
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;
  ~Instance() { kiln_instance_release(i_); }

  /// Runs once on `inputs` (signature order); the outputs in order.
  std::vector<Tensor> run(const std::vector<kiln_tensor_view_t> &inputs) {
    std::vector<kiln_tensor_t *> raw(outputs_, nullptr);
    check(kiln_instance_run(i_, inputs.data(), inputs.size(), raw.data(),
                            raw.size()));
    std::vector<Tensor> out;
    for (kiln_tensor_t *t : raw)
      out.emplace_back(t);
    return out;
  }
  kiln_instance_t *get() const { return i_; }

private:
  kiln_instance_t *i_ = nullptr;
  size_t outputs_ = 0;
};

} // namespace kiln

#endif // KILN_C_RUNTIME_HPP
