/*===- Loader.c - The public runtime API (libkiln_runtime) ----------------===*
 *
 * Implements kiln-c/runtime.h: dlopens a model.so, finds its exported
 * kiln_model_api_v2 table (kiln/Runtime/ModelAPI.h) and forwards to it.
 * Status and tensor objects are shared plain allocations, freed here with
 * free(). Options are copied into structs of this version's size (fields a
 * caller built against an older header does not know stay unset) and passed
 * on as given: the model's runtime fills unset fields from the environment.
 * (The TensorProto calls of the API are in lib/Runtime/TensorProto.)
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "kiln/Runtime/Common.h"
#include "kiln/Runtime/RegularFile.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct kiln_model {
  int refcount; /* atomic */
  void *library;
  const kiln_model_api_v2_table *api;
  kiln_model_impl *impl;
};

struct kiln_instance {
  kiln_model_t *model;
  kiln_instance_impl *impl;
};

/* A status from the model's side: its static out-of-memory status lives in
 * model.so, which may be unloaded before the caller frees the status, so
 * swap it for ours. */
static kiln_status_t *adopt(kiln_status_t *status) {
  if (status && status->is_static)
    return kiln_rtc_oom_status();
  return status;
}

/*===--------------------------------------------------------------------===*
 * Status, dtypes
 *===--------------------------------------------------------------------===*/

kiln_status_code_t kiln_status_code(const kiln_status_t *status) {
  return status ? (kiln_status_code_t)status->code : KILN_STATUS_OK;
}

const char *kiln_status_message(const kiln_status_t *status) {
  return status ? status->message : "";
}

void kiln_status_free(kiln_status_t *status) {
  if (status && !status->is_static)
    free(status);
}

const char *kiln_status_code_name(kiln_status_code_t code) {
  switch (code) {
  case KILN_STATUS_OK:
    return "OK";
  case KILN_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case KILN_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case KILN_STATUS_RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case KILN_STATUS_INCOMPATIBLE:
    return "INCOMPATIBLE";
  case KILN_STATUS_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case KILN_STATUS_INTERNAL:
    return "INTERNAL";
  case KILN_STATUS_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  }
  return "UNKNOWN";
}

const char *kiln_dtype_name(kiln_dtype_t dtype) {
  return kiln_rtc_dtype_name(dtype);
}

size_t kiln_dtype_size(kiln_dtype_t dtype) {
  return kiln_rtc_dtype_size(dtype);
}

/*===--------------------------------------------------------------------===*
 * Tensors
 *===--------------------------------------------------------------------===*/

kiln_status_t *kiln_tensor_allocate(kiln_dtype_t dtype, size_t rank,
                                    const int64_t *dims,
                                    kiln_tensor_t **out_tensor) {
  if (!out_tensor)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "out_tensor is NULL");
  kiln_status_t *status = NULL;
  *out_tensor = kiln_rtc_tensor_create(dtype, rank, dims, &status);
  return status;
}

void kiln_tensor_release(kiln_tensor_t *tensor) {
  kiln_rtc_tensor_free(tensor);
}

kiln_dtype_t kiln_tensor_dtype(const kiln_tensor_t *tensor) {
  return tensor ? tensor->dtype : KILN_DTYPE_INVALID;
}
size_t kiln_tensor_rank(const kiln_tensor_t *tensor) {
  return tensor ? tensor->rank : 0;
}
const int64_t *kiln_tensor_dims(const kiln_tensor_t *tensor) {
  return tensor ? tensor->dims : NULL;
}
void *kiln_tensor_data(const kiln_tensor_t *tensor) {
  return tensor ? tensor->data : NULL;
}
size_t kiln_tensor_num_elements(const kiln_tensor_t *tensor) {
  return tensor ? tensor->num_elements : 0;
}
size_t kiln_tensor_byte_size(const kiln_tensor_t *tensor) {
  return tensor ? tensor->byte_size : 0;
}

const char *kiln_tensor_name(const kiln_tensor_t *tensor) {
  return tensor && tensor->name ? tensor->name : "";
}

kiln_tensor_view_t kiln_tensor_as_view(const kiln_tensor_t *tensor) {
  kiln_tensor_view_t view;
  memset(&view, 0, sizeof(view));
  if (tensor) {
    view.dtype = tensor->dtype;
    view.rank = tensor->rank;
    view.dims = tensor->dims;
    view.data = tensor->data;
  }
  return view;
}

/*===--------------------------------------------------------------------===*
 * Models
 *===--------------------------------------------------------------------===*/

/*===--------------------------------------------------------------------===*
 * The process's thread pool
 *===--------------------------------------------------------------------===*/

static kiln_rtc_pool *g_pool;
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void create_pool(void) { g_pool = kiln_rtc_pool_create(); }

static kiln_rtc_pool *process_pool(void) {
  pthread_once(&g_pool_once, create_pool);
  return g_pool;
}

static void pool_run(void *pool,
                     void (*fn)(void *arg, int64_t part, int64_t parts),
                     void *arg, int64_t num_parts) {
  kiln_rtc_pool_run((kiln_rtc_pool *)pool, fn, arg, num_parts);
}

int kiln_set_num_threads(int num_threads) {
  kiln_rtc_pool *pool = process_pool();
  return pool ? kiln_rtc_pool_set_size(pool, num_threads) : 1;
}

int kiln_get_num_threads(void) {
  kiln_rtc_pool *pool = process_pool();
  return pool ? kiln_rtc_pool_size(pool) : 1;
}

void kiln_model_options_init(kiln_model_options_t *options) {
  if (!options)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->device_ordinal = -1;
}

void kiln_instance_options_init(kiln_instance_options_t *options) {
  if (!options)
    return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->graphs = -1;
  options->dependent_launch = -1;
}

/* Copies the caller's options (NULL: all unset) into `full`, whose fields
 * past the caller's struct_size keep the unset values of `init`. */
static kiln_status_t *copy_options(const char *what, const void *given,
                                   size_t given_size, void *full,
                                   size_t full_size) {
  if (!given)
    return NULL;
  if (given_size < sizeof(size_t) || given_size > full_size)
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: struct_size is %zu, expected %zu (initialize the struct with "
        "%s_init)",
        what, given_size, full_size, what);
  memcpy(full, given, given_size);
  memcpy(full, &full_size, sizeof(size_t)); /* struct_size comes first */
  return NULL;
}

kiln_status_t *kiln_weights_verify(const char *path) {
  if (!path || !*path)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "weights path is empty");
  return kiln_rtc_verify_weights_file(path);
}

kiln_status_t *kiln_model_load(const char *path, kiln_model_t **out_model) {
  return kiln_model_load_with_options(path, NULL, out_model);
}

kiln_status_t *kiln_model_load_with_weights(const char *path,
                                            const char *weights_path,
                                            kiln_model_t **out_model) {
  kiln_model_options_t options;
  kiln_model_options_init(&options);
  options.weights_path = weights_path;
  return kiln_model_load_with_options(path, &options, out_model);
}

/* The table of a model built for another ABI version: its version, from
 * the fields every version's table starts with; 0 when unknown. */
static unsigned other_abi_version(void *library, const char **symbol) {
  *symbol = KILN_MODEL_API_V1_SYMBOL;
  kiln_model_api_header_fn entry =
      (kiln_model_api_header_fn)dlsym(library, KILN_MODEL_API_V1_SYMBOL);
  if (!entry)
    return 0;
  const kiln_model_api_header *header = entry();
  return header ? header->abi_version : 0;
}

kiln_status_t *kiln_model_load_with_options(const char *path,
                                            const kiln_model_options_t *given,
                                            kiln_model_t **out_model) {
  if (!out_model)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "out_model is NULL");
  *out_model = NULL;
  if (!path || !*path)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "model path is empty");
  kiln_model_options_t options;
  kiln_model_options_init(&options);
  kiln_status_t *status =
      copy_options("kiln_model_options", given, given ? given->struct_size : 0,
                   &options, sizeof(options));
  if (status)
    return status;
  struct stat st;
  if (stat(path, &st) != 0)
    return kiln_rtc_make_status(
        errno == ENOENT ? KILN_STATUS_NOT_FOUND : KILN_STATUS_INVALID_ARGUMENT,
        "cannot open model '%s': %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "cannot open model '%s': %s", path,
                                kiln_regular_file_error(0, st.st_mode));

  /* dlopen searches the library path for names without '/'. */
  char *local = NULL;
  const char *open_path = path;
  if (!strchr(path, '/')) {
    size_t len = strlen(path);
    local = (char *)malloc(len + 3);
    if (!local)
      return kiln_rtc_oom_status();
    memcpy(local, "./", 2);
    memcpy(local + 2, path, len + 1);
    open_path = local;
  }
  dlerror();
  void *library = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  free(local);
  if (!library) {
    const char *why = dlerror();
    return kiln_rtc_make_status(KILN_STATUS_INCOMPATIBLE,
                                "cannot load model '%s': %s", path,
                                why ? why : "unknown dlopen error");
  }
  kiln_model_api_v2_fn entry =
      (kiln_model_api_v2_fn)dlsym(library, KILN_MODEL_API_SYMBOL);
  const kiln_model_api_v2_table *api = entry ? entry() : NULL;
  if (!api || api->abi_version != KILN_MODEL_ABI_VERSION ||
      api->struct_size < sizeof(kiln_model_api_v2_table)) {
    const char *symbol = KILN_MODEL_API_SYMBOL;
    unsigned version = api ? api->abi_version : 0;
    if (!entry)
      version = other_abi_version(library, &symbol);
    dlclose(library);
    if (!entry && version == 0)
      return kiln_rtc_make_status(
          KILN_STATUS_INCOMPATIBLE,
          "'%s' is not a Kiln model (it does not export %s)", path,
          KILN_MODEL_API_SYMBOL);
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "model '%s' was built for Kiln runtime ABI version %u (%s), this "
        "runtime supports version %u (%s); recompile it with a matching "
        "kilnc",
        path, version, symbol, KILN_MODEL_ABI_VERSION, KILN_MODEL_API_SYMBOL);
  }
  kiln_rtc_pool *pool = process_pool();
  if (pool) {
    static kiln_thread_pool_api pool_api;
    pool_api.struct_size = sizeof(pool_api);
    pool_api.pool = pool;
    pool_api.run = pool_run;
    api->set_thread_pool(&pool_api);
  }
  kiln_model_t *model = (kiln_model_t *)calloc(1, sizeof(*model));
  if (!model) {
    dlclose(library);
    return kiln_rtc_oom_status();
  }
  status = adopt(api->model_create(path, &options, &model->impl));
  if (status) {
    /* A plain malloc'ed block: it outlives dlclose. */
    free(model);
    dlclose(library);
    return status;
  }
  model->refcount = 1;
  model->library = library;
  model->api = api;
  *out_model = model;
  return NULL;
}

void kiln_model_retain(kiln_model_t *model) {
  if (model)
    __atomic_fetch_add(&model->refcount, 1, __ATOMIC_RELAXED);
}

void kiln_model_release(kiln_model_t *model) {
  if (!model || __atomic_sub_fetch(&model->refcount, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  model->api->model_destroy(model->impl);
  dlclose(model->library);
  free(model);
}

size_t kiln_model_num_inputs(const kiln_model_t *model) {
  return model ? model->api->num_inputs(model->impl) : 0;
}

size_t kiln_model_num_outputs(const kiln_model_t *model) {
  return model ? model->api->num_outputs(model->impl) : 0;
}

kiln_status_t *kiln_model_input_info(const kiln_model_t *model, size_t index,
                                     kiln_value_info_t *out_info) {
  if (!model || !out_info)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "model or out_info is NULL");
  return adopt(model->api->input_info(model->impl, index, out_info));
}

kiln_status_t *kiln_model_output_info(const kiln_model_t *model, size_t index,
                                      kiln_value_info_t *out_info) {
  if (!model || !out_info)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "model or out_info is NULL");
  return adopt(model->api->output_info(model->impl, index, out_info));
}

uint64_t kiln_model_arena_size(const kiln_model_t *model) {
  return model ? model->api->arena_size(model->impl) : 0;
}

const char *kiln_model_device(const kiln_model_t *model) {
  return model ? model->api->device_name(model->impl) : "";
}

const char *kiln_model_weights_path(const kiln_model_t *model) {
  return model ? model->api->weights_path(model->impl) : "";
}

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

kiln_status_t *kiln_instance_create(kiln_model_t *model,
                                    kiln_instance_t **out_instance) {
  return kiln_instance_create_with_options(model, NULL, out_instance);
}

kiln_status_t *
kiln_instance_create_with_options(kiln_model_t *model,
                                  const kiln_instance_options_t *given,
                                  kiln_instance_t **out_instance) {
  if (!out_instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "out_instance is NULL");
  *out_instance = NULL;
  if (!model)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "model is NULL");
  kiln_instance_options_t options;
  kiln_instance_options_init(&options);
  kiln_status_t *status =
      copy_options("kiln_instance_options", given,
                   given ? given->struct_size : 0, &options, sizeof(options));
  if (status)
    return status;
  kiln_instance_t *instance = (kiln_instance_t *)calloc(1, sizeof(*instance));
  if (!instance)
    return kiln_rtc_oom_status();
  status = adopt(
      model->api->instance_create(model->impl, &options, &instance->impl));
  if (status) {
    free(instance);
    return status;
  }
  kiln_model_retain(model);
  instance->model = model;
  *out_instance = instance;
  return NULL;
}

void kiln_instance_release(kiln_instance_t *instance) {
  if (!instance)
    return;
  instance->model->api->instance_destroy(instance->impl);
  kiln_model_release(instance->model);
  free(instance);
}

kiln_status_t *kiln_instance_run(kiln_instance_t *instance,
                                 const kiln_tensor_view_t *inputs,
                                 size_t num_inputs, kiln_tensor_t **out_outputs,
                                 size_t num_outputs) {
  if (!instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance is NULL");
  return adopt(instance->model->api->instance_run(
      instance->impl, inputs, num_inputs, out_outputs, num_outputs));
}

kiln_status_t *kiln_instance_run_device(kiln_instance_t *instance,
                                        const kiln_tensor_view_t *inputs,
                                        size_t num_inputs,
                                        const kiln_output_view_t *outputs,
                                        size_t num_outputs) {
  if (!instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance is NULL");
  return adopt(instance->model->api->instance_run_device(
      instance->impl, inputs, num_inputs, outputs, num_outputs));
}

kiln_status_t *kiln_instance_set_stream(kiln_instance_t *instance,
                                        void *stream) {
  if (!instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance is NULL");
  return adopt(
      instance->model->api->instance_set_stream(instance->impl, stream));
}

kiln_status_t *kiln_instance_set_graphs(kiln_instance_t *instance, int enable) {
  if (!instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance is NULL");
  return adopt(
      instance->model->api->instance_set_graphs(instance->impl, enable));
}

kiln_status_t *kiln_instance_set_profiling(kiln_instance_t *instance,
                                           int flags) {
  if (!instance)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance is NULL");
  return adopt(
      instance->model->api->instance_set_profiling(instance->impl, flags));
}

kiln_status_t *kiln_instance_last_profile(kiln_instance_t *instance,
                                          kiln_run_profile_t *out_profile) {
  if (!instance || !out_profile)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "instance or out_profile is NULL");
  size_t given = out_profile->struct_size;
  if (given < sizeof(size_t) || given > sizeof(kiln_run_profile_t))
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "kiln_run_profile: struct_size is %zu, expected %zu (set it to "
        "sizeof(kiln_run_profile_t))",
        given, sizeof(kiln_run_profile_t));
  kiln_run_profile_t full;
  memset(&full, 0, sizeof(full));
  kiln_status_t *status =
      adopt(instance->model->api->instance_last_profile(instance->impl, &full));
  if (status)
    return status;
  full.struct_size = given;
  memcpy(out_profile, &full, given);
  return NULL;
}
