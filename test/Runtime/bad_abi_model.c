/*===- bad_abi_model.c - A "model" built for another runtime ABI ---------===*/
#include <stdint.h>

struct fake_api_table {
  uint32_t abi_version;
  uint32_t struct_size;
};

static const struct fake_api_table kTable = {999, sizeof(kTable)};

const struct fake_api_table *kiln_model_api_v1(void);
const struct fake_api_table *kiln_model_api_v1(void) { return &kTable; }
