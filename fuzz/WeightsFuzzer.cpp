//===- WeightsFuzzer.cpp - libFuzzer target: the weights-file loader ------===//
//
// The input is a model signature, a NUL byte, and the bytes of a weights
// file (kilnc --external-weights). The signature is parsed as a model.so's
// would be; the bytes go to an anonymous file (memfd) that is loaded as the
// model's weights file (kiln_rt_map_weights: magic, layout hash, header
// size and count fields) and verified (kiln_rtc_verify_weights_file: the
// CRC-32). Every weight of a loaded file is read whole: a file that passes
// the checks must hold every byte the signature points at.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/Model/ModelRuntime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// What the runtime's model destructor frees of a model that only parsed a
/// signature and mapped weights.
void releaseModel(kiln_model_impl *model) {
  kiln_rt_unmap_weights(model);
  kiln_rt_meta_free(model);
  free(model);
}

void freeStatus(kiln_status_t *status) {
  if (!status->message[0])
    abort(); // every rejection says why
  if (!status->is_static)
    free(status);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const void *nul = memchr(data, 0, size);
  size_t signatureBytes =
      nul ? static_cast<size_t>(static_cast<const uint8_t *>(nul) - data)
          : size;
  std::string signature(reinterpret_cast<const char *>(data), signatureBytes);
  const uint8_t *file = data + signatureBytes + (nul ? 1 : 0);
  size_t fileBytes = size - signatureBytes - (nul ? 1 : 0);

  auto *model =
      static_cast<kiln_model_impl *>(calloc(1, sizeof(kiln_model_impl)));
  kiln_status_t *status = kiln_rt_parse_signature(model, signature.c_str());
  if (status) {
    freeStatus(status);
    releaseModel(model);
    return 0;
  }
  int fd = memfd_create("kiln-fuzz-weights", 0);
  if (fd < 0 ||
      (fileBytes && write(fd, file, fileBytes) != (ssize_t)fileBytes)) {
    perror("kiln-fuzz-weights: memfd");
    abort();
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  kiln_rt_options options;
  memset(&options, 0, sizeof(options));
  options.weights_path = path;
  options.weights_given = 1;
  status = kiln_rt_map_weights(model, "fuzz/model.so", &options);
  if (status) {
    freeStatus(status);
  } else if (model->weights_map) {
    unsigned sum = 0;
    for (size_t i = 0; i < model->num_ext_weights; ++i) {
      const kiln_ext_weight &w = model->ext_weights[i];
      if (w.offset + w.bytes > model->weights_map_size)
        abort(); // loaded, but the file does not hold this weight
      for (uint64_t b = 0; b < w.bytes; ++b)
        sum += model->weights_map[w.offset + b];
    }
    (void)sum;
  }
  if ((status = kiln_rtc_verify_weights_file(path)))
    freeStatus(status);
  close(fd);
  releaseModel(model);
  return 0;
}
