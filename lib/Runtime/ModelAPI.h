/*===- ModelAPI.h - Between the loader and a model's runtime ----*- C -*-===*
 *
 * model.so exports exactly one symbol, `kiln_model_api_v1`, returning a table
 * of entry points implemented by the runtime linked into it (ModelRuntime.c).
 * The loader (Loader.c, libkiln_runtime) dlopens model.so, looks the symbol
 * up and forwards the public API (kiln-c/runtime.h) to the table.
 *
 * Objects that cross the boundary and outlive a call (kiln_status_t,
 * kiln_tensor_t) are plain malloc/posix_memalign allocations with the layout
 * below, so the loader frees them with free() no matter which side created
 * them, even after the model was unloaded. Bump KILN_MODEL_ABI_VERSION on any
 * change to this file or to the structs of kiln-c/runtime.h.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_MODELAPI_H
#define KILN_LIB_RUNTIME_MODELAPI_H

#include "kiln-c/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: device models (device_name, cuda stream/graphs, run_device).
 * 3: external weights (model_create takes the model's and the weights
 *    file's paths; weights_path). */
#define KILN_MODEL_ABI_VERSION 3u
#define KILN_MODEL_API_SYMBOL "kiln_model_api_v1"

/* One malloc'ed block; `message` is NUL-terminated. A status with
 * `is_static` set is a preallocated out-of-memory status and is not freed. */
struct kiln_status {
  int32_t code;
  int32_t is_static;
  char message[];
};

/* One malloc'ed block holding the struct and `dims` (which points just past
 * it); `data` is a separate posix_memalign(64) allocation (never NULL). */
struct kiln_tensor {
  kiln_dtype_t dtype;
  size_t rank;
  int64_t *dims;
  void *data;
  size_t num_elements;
  size_t byte_size;
};

typedef struct kiln_model_impl kiln_model_impl;
typedef struct kiln_instance_impl kiln_instance_impl;

typedef struct kiln_model_api_v1_table {
  uint32_t abi_version; /* KILN_MODEL_ABI_VERSION of the model's runtime */
  uint32_t struct_size; /* sizeof(kiln_model_api_v1_table) */
  /* `model_path`: the path the loader opened (the default weights file is
   * looked up next to it); `weights_path`: the caller's weights file or
   * NULL (KILN_WEIGHTS, then the default). */
  kiln_status_t *(*model_create)(const char *model_path,
                                 const char *weights_path,
                                 kiln_model_impl **out_model);
  void (*model_destroy)(kiln_model_impl *model);
  size_t (*num_inputs)(const kiln_model_impl *model);
  size_t (*num_outputs)(const kiln_model_impl *model);
  kiln_status_t *(*input_info)(const kiln_model_impl *model, size_t index,
                               kiln_value_info_t *out_info);
  kiln_status_t *(*output_info)(const kiln_model_impl *model, size_t index,
                                kiln_value_info_t *out_info);
  uint64_t (*arena_size)(const kiln_model_impl *model);
  kiln_status_t *(*instance_create)(kiln_model_impl *model,
                                    kiln_instance_impl **out_instance);
  void (*instance_destroy)(kiln_instance_impl *instance);
  kiln_status_t *(*instance_run)(kiln_instance_impl *instance,
                                 const kiln_tensor_view_t *inputs,
                                 size_t num_inputs, kiln_tensor_t **out_outputs,
                                 size_t num_outputs);
  /* "cpu", "cuda:sm_90"; owned by the model. */
  const char *(*device_name)(const kiln_model_impl *model);
  kiln_status_t *(*instance_set_cuda_stream)(kiln_instance_impl *instance,
                                             void *stream);
  kiln_status_t *(*instance_set_cuda_graphs)(kiln_instance_impl *instance,
                                             int enable);
  kiln_status_t *(*instance_run_device)(kiln_instance_impl *instance,
                                        const kiln_tensor_view_t *inputs,
                                        size_t num_inputs,
                                        const kiln_output_view_t *outputs,
                                        size_t num_outputs);
  /* The memory-mapped weights file; "" without external weights. */
  const char *(*weights_path)(const kiln_model_impl *model);
} kiln_model_api_v1_table;

typedef const kiln_model_api_v1_table *(*kiln_model_api_v1_fn)(void);

/* Defined by the runtime in model.so; the only symbol model.so exports. */
const kiln_model_api_v1_table *kiln_model_api_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_MODELAPI_H */
