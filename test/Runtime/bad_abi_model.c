/*===- bad_abi_model.c - A "model" built for another runtime ABI ---------===*
 *
 * Default: what every model.so built before ABI version 4 exports, the
 * entry `kiln_model_api_v1` whose table starts with abi_version 3 (the rest
 * of that table differs from today's and must never be called).
 * -DKILN_BAD_ABI_V2: today's entry `kiln_model_api_v2` with a version this
 * runtime does not know (a model from a later runtime).
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

struct fake_api_table {
  uint32_t abi_version;
  uint32_t struct_size;
  /* Where version 3 kept its entry points: a loader that called one would
   * crash, so the test proves it only reads the header. */
  void (*model_create)(void);
};

#ifdef KILN_BAD_ABI_V2
static const struct fake_api_table kTable = {999, sizeof(kTable), 0};
const struct fake_api_table *kiln_model_api_v2(void);
const struct fake_api_table *kiln_model_api_v2(void) { return &kTable; }
#else
static const struct fake_api_table kTable = {3, sizeof(kTable), 0};
const struct fake_api_table *kiln_model_api_v1(void);
const struct fake_api_table *kiln_model_api_v1(void) { return &kTable; }
#endif
