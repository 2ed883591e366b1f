/*===- kiln/Runtime/ModelAPI.h - Between the loader and a model --*- C -*-===*
 *
 * Internal to Kiln's runtime (not installed for users): model.so exports
 * `kiln_model_api_v2`, returning a table of entry points implemented by the
 * runtime linked into it (lib/Runtime/Model). The loader (lib/Runtime/Loader,
 * libkiln_runtime) dlopens model.so, looks the symbol up and forwards the
 * public API (kiln-c/runtime.h) to the table. Every version's table starts
 * with the same two fields (kiln_model_api_header), so versions can be told
 * apart without calling anything else:
 *   - a model built before version 4 exports only `kiln_model_api_v1`: this
 *     loader reads its version to name it in the INCOMPATIBLE status;
 *   - a model of version 4 also exports `kiln_model_api_v1`, returning only
 *     the header, so loaders of versions 1 to 3 (which check the version
 *     first) refuse it naming version 4.
 *
 * Objects that cross the boundary and outlive a call (kiln_status_t,
 * kiln_tensor_t) are plain malloc/posix_memalign allocations with the layout
 * below, so the loader frees them with free() no matter which side created
 * them, even after the model was unloaded. Bump KILN_MODEL_ABI_VERSION on any
 * change to this file or to the structs of kiln-c/runtime.h.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_MODELAPI_H
#define KILN_RUNTIME_MODELAPI_H

#include "kiln-c/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: device models (device_name, device stream/graphs, run_device).
 * 3: external weights (model_create takes the model's and the weights
 *    file's paths; weights_path).
 * 4: device-neutral names (kiln_rt_launch_device, kiln_model_device_image*,
 *    instance_set_stream/graphs), options through the API (model_create and
 *    instance_create take option structs), tensor names; the table is
 *    exported as kiln_model_api_v2.
 * 5: CPU kernels on a thread pool the loader hands over (set_thread_pool),
 *    the model's required CPU features checked in model_create.
 * 6: profiling (instance_set_profiling, instance_last_profile); the
 *    environment no longer sets the profile_path option.
 * 7: models of several device images (kiln_model_programs), the model
 *    option device_chip. */
#define KILN_MODEL_ABI_VERSION 7u
#define KILN_MODEL_API_SYMBOL "kiln_model_api_v2"
/* What models of ABI versions 1 to 3 export. */
#define KILN_MODEL_API_V1_SYMBOL "kiln_model_api_v1"

/* One malloc'ed block; `message` is NUL-terminated. A status with
 * `is_static` set is a preallocated out-of-memory status and is not freed. */
struct kiln_status {
  int32_t code;
  int32_t is_static;
  char message[];
};

/* One malloc'ed block holding the struct, `dims` (which points just past
 * it) and `name` (NUL-terminated, after the dims; "" when unnamed); `data`
 * is a separate posix_memalign(64) allocation (never NULL). */
struct kiln_tensor {
  kiln_dtype_t dtype;
  size_t rank;
  int64_t *dims;
  void *data;
  size_t num_elements;
  size_t byte_size;
  const char *name;
};

typedef struct kiln_model_impl kiln_model_impl;
typedef struct kiln_instance_impl kiln_instance_impl;

/* The process's thread pool, owned by the loader (one per process, shared
 * by every model and instance): run(pool, fn, arg, n) calls fn(arg, part,
 * parts) for part 0 .. parts - 1 with parts <= n, part 0 on the calling
 * thread, and returns when all have returned. */
typedef struct kiln_thread_pool_api {
  uint32_t struct_size; /* sizeof(kiln_thread_pool_api) */
  void *pool;
  void (*run)(void *pool, void (*fn)(void *arg, int64_t part, int64_t parts),
              void *arg, int64_t num_parts);
} kiln_thread_pool_api;

typedef struct kiln_model_api_v2_table {
  uint32_t abi_version; /* KILN_MODEL_ABI_VERSION of the model's runtime */
  uint32_t struct_size; /* sizeof(kiln_model_api_v2_table) */
  /* `model_path`: the path the loader opened (the default weights file is
   * looked up next to it). `options`: the caller's options as given (never
   * NULL; struct_size is this version's, fields the caller did not know are
   * unset); the model's runtime fills unset fields from the environment
   * (kiln_rt_options_from_env, the one place that reads it). */
  kiln_status_t *(*model_create)(const char *model_path,
                                 const kiln_model_options_t *options,
                                 kiln_model_impl **out_model);
  void (*model_destroy)(kiln_model_impl *model);
  size_t (*num_inputs)(const kiln_model_impl *model);
  size_t (*num_outputs)(const kiln_model_impl *model);
  kiln_status_t *(*input_info)(const kiln_model_impl *model, size_t index,
                               kiln_value_info_t *out_info);
  kiln_status_t *(*output_info)(const kiln_model_impl *model, size_t index,
                                kiln_value_info_t *out_info);
  uint64_t (*arena_size)(const kiln_model_impl *model);
  /* `options` as for model_create. */
  kiln_status_t *(*instance_create)(kiln_model_impl *model,
                                    const kiln_instance_options_t *options,
                                    kiln_instance_impl **out_instance);
  void (*instance_destroy)(kiln_instance_impl *instance);
  kiln_status_t *(*instance_run)(kiln_instance_impl *instance,
                                 const kiln_tensor_view_t *inputs,
                                 size_t num_inputs, kiln_tensor_t **out_outputs,
                                 size_t num_outputs);
  /* "cpu" or "<kind>:<chip>"; owned by the model. */
  const char *(*device_name)(const kiln_model_impl *model);
  kiln_status_t *(*instance_set_stream)(kiln_instance_impl *instance,
                                        void *stream);
  kiln_status_t *(*instance_set_graphs)(kiln_instance_impl *instance,
                                        int enable);
  kiln_status_t *(*instance_run_device)(kiln_instance_impl *instance,
                                        const kiln_tensor_view_t *inputs,
                                        size_t num_inputs,
                                        const kiln_output_view_t *outputs,
                                        size_t num_outputs);
  /* The memory-mapped weights file; "" without external weights. */
  const char *(*weights_path)(const kiln_model_impl *model);
  /* Called by the loader once, after dlopen and before model_create: the
   * pool CPU kernels run on (NULL or never called: the model's own). */
  void (*set_thread_pool)(const kiln_thread_pool_api *pool);
  kiln_status_t *(*instance_set_profiling)(kiln_instance_impl *instance,
                                           int flags);
  /* `out`: a full-size struct (the loader copies the caller's part). */
  kiln_status_t *(*instance_last_profile)(kiln_instance_impl *instance,
                                          kiln_run_profile_t *out);
} kiln_model_api_v2_table;

typedef const kiln_model_api_v2_table *(*kiln_model_api_v2_fn)(void);

/* The fields every version's table starts with. */
typedef struct kiln_model_api_header {
  uint32_t abi_version;
  uint32_t struct_size;
} kiln_model_api_header;
typedef const kiln_model_api_header *(*kiln_model_api_header_fn)(void);

/* Defined by the runtime in model.so: the only symbols model.so exports. */
const kiln_model_api_v2_table *kiln_model_api_v2(void);
const kiln_model_api_header *kiln_model_api_v1(void); /* header only */

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_MODELAPI_H */
