//===- TensorProto.h - onnx.TensorProto without protobuf --------*- C++ -*-===//
//
// Reads and writes serialized onnx.TensorProto (the .pb files of ONNX test
// data) with a small hand-written wire-format codec, so kiln-run and the
// runtime tests need no protobuf. Decoding never crashes on bad input: it
// returns false with a message.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_RUNTIME_TENSORPROTO_H
#define KILN_LIB_RUNTIME_TENSORPROTO_H

#include "kiln-c/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// A host tensor: row-major, little-endian element bytes.
struct HostTensor {
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> dims;
  std::string name;
  std::vector<uint8_t> data; // numElements() * kiln_dtype_size(dtype) bytes

  size_t numElements() const;
};

/// ONNX TensorProto.DataType <-> kiln_dtype_t; KILN_DTYPE_INVALID / 0 when
/// there is no counterpart.
kiln_dtype_t dtypeFromOnnx(int32_t onnxType);
int32_t dtypeToOnnx(kiln_dtype_t dtype);

/// Decodes a serialized TensorProto. On failure returns false and sets
/// `error` (e.g. "truncated field 9 (raw_data)").
bool decodeTensorProto(const uint8_t *bytes, size_t size, HostTensor &out,
                       std::string &error);
/// Reads and decodes `path`; errors name the file.
bool readTensorProtoFile(const std::string &path, HostTensor &out,
                         std::string &error);

/// Encodes dims, data_type, name and raw_data.
std::string encodeTensorProto(const HostTensor &tensor);
/// Writes encodeTensorProto(tensor) to `path`; on failure sets `error` to
/// "cannot write '<path>': <strerror>".
bool writeTensorProtoFile(const std::string &path, const HostTensor &tensor,
                          std::string &error);

/// Element `i` of `data` (of type `dtype`) as a double (f16/bf16 widened).
double elementAsDouble(kiln_dtype_t dtype, const void *data, size_t i);

} // namespace kiln

#endif // KILN_LIB_RUNTIME_TENSORPROTO_H
