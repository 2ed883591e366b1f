//===- TensorProtoAPI.cpp - kiln_tensor_read_file / write_file ------------===//
//
// The public C API's TensorProto calls (kiln-c/runtime.h), compiled into
// libkiln_runtime: the codec of TensorProto.cpp between .pb files and
// runtime tensors, so tools (kiln-run, kilnc --calibrate) need only the
// public API to feed a model from ONNX test data.
//
//===----------------------------------------------------------------------===//

#include "TensorProto.h"
#include "kiln/Runtime/Common.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace {

/// Runs `body`, turning an exception (std::bad_alloc from the codec's
/// buffers) into RESOURCE_EXHAUSTED: the library never throws or aborts.
template <typename Fn> kiln_status_t *guarded(Fn body) {
#if defined(__cpp_exceptions)
  try {
    return body();
  } catch (...) {
    return kiln_rtc_oom_status();
  }
#else
  return body();
#endif
}

kiln_status_t *readFile(const char *path, kiln_tensor_t **out_tensor) {
  if (!out_tensor)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "out_tensor is NULL");
  *out_tensor = nullptr;
  if (!path || !*path)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "tensor file path is empty");
  struct stat st;
  if (stat(path, &st) != 0 && errno == ENOENT)
    return kiln_rtc_make_status(KILN_STATUS_NOT_FOUND, "cannot open '%s': %s",
                                path, std::strerror(ENOENT));
  kiln::HostTensor host;
  std::string error;
  if (!kiln::readTensorProtoFile(path, host, error))
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s",
                                error.c_str());
  kiln_status_t *status = nullptr;
  kiln_tensor_t *tensor = kiln_rtc_tensor_create_named(
      host.dtype, host.dims.size(), host.dims.data(), host.name.c_str(),
      &status);
  if (!tensor)
    return status;
  if (!host.data.empty())
    std::memcpy(tensor->data, host.data.data(), host.data.size());
  *out_tensor = tensor;
  return nullptr;
}

kiln_status_t *writeFile(const kiln_tensor_t *tensor, const char *name,
                         const char *path) {
  if (!tensor || !path || !*path)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "tensor or path is NULL");
  kiln::HostTensor host;
  host.dtype = tensor->dtype;
  host.dims.assign(tensor->dims, tensor->dims + tensor->rank);
  host.name = name ? name : (tensor->name ? tensor->name : "");
  const uint8_t *data = static_cast<const uint8_t *>(tensor->data);
  host.data.assign(data, data + tensor->byte_size);
  std::string error;
  if (!kiln::writeTensorProtoFile(path, host, error))
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s",
                                error.c_str());
  return nullptr;
}

} // namespace

extern "C" {

kiln_status_t *kiln_tensor_read_file(const char *path,
                                     kiln_tensor_t **out_tensor) {
  if (out_tensor)
    *out_tensor = nullptr;
  return guarded([&] { return readFile(path, out_tensor); });
}

kiln_status_t *kiln_tensor_write_file(const kiln_tensor_t *tensor,
                                      const char *name, const char *path) {
  return guarded([&] { return writeFile(tensor, name, path); });
}

} // extern "C"
