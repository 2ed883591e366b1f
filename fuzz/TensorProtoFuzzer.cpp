//===- TensorProtoFuzzer.cpp - libFuzzer target: the TensorProto reader ---===//
//
// Decodes arbitrary bytes as an onnx.TensorProto with the protobuf-free
// reader kiln-run and kiln_tensor_read_file use (lib/Runtime/TensorProto),
// then touches every element it claims to hold and writes the tensor back
// and decodes it again: an accepted tensor must round-trip unchanged.
//
//===----------------------------------------------------------------------===//

#include "TensorProto.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::HostTensor tensor;
  std::string error;
  if (!kiln::decodeTensorProto(data, size, tensor, error))
    return 0;
  size_t count = tensor.numElements();
  size_t esize = kiln_dtype_size(tensor.dtype);
  if (tensor.data.size() != count * esize)
    abort(); // the reader promises numElements() * element size bytes
  double sum = 0;
  for (size_t i = 0; i < count; ++i)
    sum += kiln::elementAsDouble(tensor.dtype, tensor.data.data(), i);
  (void)sum;
  std::string encoded = kiln::encodeTensorProto(tensor);
  kiln::HostTensor again;
  if (!kiln::decodeTensorProto(
          reinterpret_cast<const uint8_t *>(encoded.data()), encoded.size(),
          again, error) ||
      again.dtype != tensor.dtype || again.dims != tensor.dims ||
      again.name != tensor.name || again.data != tensor.data)
    abort();
  return 0;
}
