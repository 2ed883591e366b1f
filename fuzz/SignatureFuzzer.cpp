//===- SignatureFuzzer.cpp - libFuzzer target: the model signature parser -===//
//
// Parses arbitrary text as the signature a model.so embeds
// (kiln_rt_parse_signature, lib/Runtime/Model/Signature.c), then reads
// every field the parser filled: a hostile model must get a status, never a
// write or read past the arrays it sized.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/Model/ModelRuntime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// Reads every byte of a parsed value (names, symbols, dims).
size_t touchValue(const kiln_model_impl &model, const kiln_value_sig &value) {
  size_t sum = strlen(value.name) + value.dtype;
  if (value.rank > 64) // the parser's limit (Signature.c)
    abort();
  for (size_t d = 0; d < value.rank; ++d) {
    sum += static_cast<size_t>(value.dims[d]);
    if (value.dim_symbols && value.dim_symbols[d])
      sum += strlen(value.dim_symbols[d]);
    if (value.symbol_ids && value.symbol_ids[d] >= 0) {
      // A symbol id indexes the model's symbol table.
      if (static_cast<size_t>(value.symbol_ids[d]) >= model.num_symbols)
        abort();
      sum += strlen(model.symbols[value.symbol_ids[d]]);
    }
  }
  return sum;
}

void freeModel(kiln_model_impl *model) {
  for (kiln_meta_block *block = model->meta; block;) {
    kiln_meta_block *next = block->next;
    free(block);
    block = next;
  }
  free(model);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The signature is a NUL-terminated string in the model.
  std::string text(reinterpret_cast<const char *>(data), size);
  auto *model =
      static_cast<kiln_model_impl *>(calloc(1, sizeof(kiln_model_impl)));
  kiln_status_t *status = kiln_rt_parse_signature(model, text.c_str());
  if (status) {
    if (!status->message[0])
      abort(); // every rejection says why
    if (!status->is_static)
      free(status);
  } else {
    size_t sum = 0;
    for (size_t i = 0; i < model->num_inputs; ++i)
      sum += touchValue(*model, model->inputs[i]);
    for (size_t i = 0; i < model->num_outputs; ++i)
      sum += touchValue(*model, model->outputs[i]);
    for (size_t i = 0; i < model->num_ext_weights; ++i)
      sum += touchValue(*model, model->ext_weights[i].sig) +
             model->ext_weights[i].offset + model->ext_weights[i].bytes;
    if (model->weights_file)
      sum += strlen(model->weights_file);
    if (model->cpu_name)
      sum += strlen(model->cpu_name);
    if (model->cpu_features)
      sum += strlen(model->cpu_features);
    (void)sum;
  }
  freeModel(model);
  return 0;
}
