/*===- CudaRuntime.c - Runs models compiled for --target=cuda -------------===*
 *
 * The device half of the model runtime (ModelRuntime.h). A cuda model opens
 * the driver with dlopen when it is created (CudaDriver.c) and checks the
 * device; each instance retains the device's primary context, creates its
 * own stream, loads the model's device image once, and owns its device
 * memory: the arena, weights (uploaded on first use), input staging
 * buffers, output buffers and a scratch cache. Graph-capturable models are
 * captured into a CUDA graph on their second run and replayed after that.
 *
 * Every CUDA call made while generated code runs records its failure in the
 * run context (call, CUDA error name and text); after the first failure the
 * remaining launches and copies of the run do nothing.
 *===----------------------------------------------------------------------===*/
#include "CudaDriver.h"
#include "CudaProfile.h"
#include "ModelRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defined by generated code for a cuda target only (ModelABI.h); weak and
 * hidden so a cpu model links without them (they are then NULL). */
extern const unsigned char kiln_model_cuda_image[]
    __attribute__((weak, visibility("hidden")));
extern const int64_t kiln_model_cuda_image_size
    __attribute__((weak, visibility("hidden")));

/* Device allocations are at least this large and sizes are rounded to it. */
#define KILN_DEVICE_ALIGNMENT 256

struct kiln_cuda_model {
  kiln_cuda_driver driver;
  CUdevice device;
  int ordinal;
  const void *image;
};

typedef struct kiln_dev_buffer {
  CUdeviceptr ptr;
  size_t capacity;
} kiln_dev_buffer;

struct kiln_cuda_instance {
  const kiln_cuda_driver *cu;
  CUcontext context; /* the device's primary context (retained) */
  CUstream own_stream, stream;
  CUmodule module;
  CUfunction *functions; /* per kernel, looked up on first launch */
  int64_t *shared_limit; /* per kernel: dynamic shared bytes allowed */
  CUdeviceptr arena;
  kiln_dev_buffer *weights; /* per weight, then per external weight;
                               capacity = its byte size */
  kiln_dev_buffer *inputs;  /* per input: staging buffers */
  kiln_dev_buffer *outputs; /* per output: device buffers */
  kiln_scratch *scratch;    /* ptr holds a CUdeviceptr */
  size_t num_scratch, cap_scratch;
  /* The current run. */
  int staged;              /* inputs/outputs go through our buffers */
  CUdeviceptr *input_ptr;  /* per input: what kiln_rt_input returns */
  CUdeviceptr *output_ptr; /* per output: where the model writes it */
  char *output_done;       /* per output: allocated this run */
  char *output_direct;     /* per output: written straight to the caller */
  int64_t *output_dims;    /* per output, at output_dims_at[i]: its dims */
  size_t *output_dims_at;
  /* CUDA graphs. */
  int graphs_enabled; /* API / KILN_CUDA_GRAPHS */
  int graph_failed;   /* capture or instantiation failed: plain runs */
  int graph_warm;     /* a staged plain run allocated everything */
  int capturing;      /* kiln_model_main runs under stream capture */
  int capture_aborted;
  CUgraphExec graph;
  kiln_cuda_profile *profile; /* KILN_CUDA_PROFILE: no graphs then */
};

/* "<call> failed: CUDA_ERROR_X (text)" into ctx, with RESOURCE_EXHAUSTED
 * for out-of-memory and INTERNAL otherwise. */
static void fail_cuda(kiln_rt_ctx *ctx, CUresult result, const char *call) {
  char text[160];
  kiln_cuda_error_text(ctx->instance->cuda->cu, result, text, sizeof(text));
  kiln_rt_fail(ctx,
               result == CUDA_ERROR_OUT_OF_MEMORY
                   ? KILN_STATUS_RESOURCE_EXHAUSTED
                   : KILN_STATUS_INTERNAL,
               "%s failed: %s", call, text);
}

static kiln_status_t *cuda_status(const kiln_cuda_driver *cu,
                                  kiln_status_code_t code, CUresult result,
                                  const char *what) {
  char text[160];
  kiln_cuda_error_text(cu, result, text, sizeof(text));
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    code = KILN_STATUS_RESOURCE_EXHAUSTED;
  return kiln_rtc_make_status(code, "%s failed: %s", what, text);
}

static size_t round_device(size_t bytes) {
  if (bytes == 0)
    return KILN_DEVICE_ALIGNMENT;
  return (bytes + KILN_DEVICE_ALIGNMENT - 1) &
         ~(size_t)(KILN_DEVICE_ALIGNMENT - 1);
}

/*===--------------------------------------------------------------------===*
 * Models
 *===--------------------------------------------------------------------===*/

/* "sm_90" -> 9.0, "sm_100a" -> 10.0; 0 when malformed. */
static int parse_chip(const char *chip, int *major, int *minor) {
  if (strncmp(chip, "sm_", 3) != 0)
    return 0;
  const char *p = chip + 3;
  int value = 0, digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 4; ++p, ++digits)
    value = value * 10 + (*p - '0');
  if (digits < 2 || (*p && !((*p == 'a' || *p == 'f') && !p[1])))
    return 0;
  *major = value / 10;
  *minor = value % 10;
  return 1;
}

kiln_status_t *kiln_cuda_model_create(kiln_model_impl *model) {
  int need_major = 0, need_minor = 0;
  if (!parse_chip(model->chip, &need_major, &need_minor))
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "model compiled for cuda '%s': unknown chip (expected sm_<NN>)",
        model->chip);
  /* A model without kernels (only copies) needs no device image. */
  int has_image = kiln_model_cuda_image && &kiln_model_cuda_image_size &&
                  kiln_model_cuda_image_size > 0;
  if (model->num_kernels > 0 && !has_image)
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "model compiled for cuda %s has %llu kernels but no device image "
        "(kiln_model_cuda_image)",
        model->chip, (unsigned long long)model->num_kernels);
  kiln_cuda_model *cm = (kiln_cuda_model *)calloc(1, sizeof(*cm));
  if (!cm)
    return kiln_rtc_oom_status();
  model->cuda = cm;
  cm->image = model->num_kernels > 0 ? kiln_model_cuda_image : NULL;

  const char *path = getenv("KILN_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  char error[512];
  if (kiln_cuda_driver_open(&cm->driver, path, error, sizeof(error)) != 0)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for cuda %s: cannot load the CUDA driver (%s)",
        model->chip, error);
  const kiln_cuda_driver *cu = &cm->driver;
  char what[128];
  snprintf(what, sizeof(what), "model compiled for cuda %s: cuInit",
           model->chip);
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS)
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  int count = 0;
  r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof(what), "model compiled for cuda %s: cuDeviceGetCount",
             model->chip);
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  }
  if (count <= 0)
    return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "model compiled for cuda %s: no CUDA device",
                                model->chip);
  const char *ordinal_text = getenv("KILN_CUDA_DEVICE");
  if (ordinal_text && *ordinal_text) {
    char *end = NULL;
    long ordinal = strtol(ordinal_text, &end, 10);
    if (*end || ordinal < 0 || ordinal >= count)
      return kiln_rtc_make_status(
          KILN_STATUS_FAILED_PRECONDITION,
          "model compiled for cuda %s: KILN_CUDA_DEVICE is '%s', expected a "
          "device index below %d",
          model->chip, ordinal_text, count);
    cm->ordinal = (int)ordinal;
  }
  r = cu->cuDeviceGet(&cm->device, cm->ordinal);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS)
    r = cu->cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cm->device);
  if (r == CUDA_SUCCESS)
    r = cu->cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cm->device);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof(what),
             "model compiled for cuda %s: querying CUDA device %d", model->chip,
             cm->ordinal);
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  }
  char name[128] = "";
  if (cu->cuDeviceGetName(name, (int)sizeof(name) - 1, cm->device) !=
      CUDA_SUCCESS)
    snprintf(name, sizeof(name), "unnamed");
  name[sizeof(name) - 1] = '\0';
  /* A chip with a suffix (sm_90a) runs only on that exact architecture;
   * otherwise the cubin or the PTX in the image runs on newer devices. */
  size_t chip_len = strlen(model->chip);
  int exact =
      model->chip[chip_len - 1] == 'a' || model->chip[chip_len - 1] == 'f';
  int ok = exact ? (major == need_major && minor == need_minor)
                 : (major > need_major ||
                    (major == need_major && minor >= need_minor));
  if (!ok)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for cuda %s: CUDA device %d (%s) has compute "
        "capability %d.%d, the model needs %s (compute capability %d.%d%s)",
        model->chip, cm->ordinal, name, major, minor, model->chip, need_major,
        need_minor, exact ? " exactly" : " or newer");
  return NULL;
}

void kiln_cuda_model_destroy(kiln_model_impl *model) {
  kiln_cuda_model *cm = model->cuda;
  if (!cm)
    return;
  kiln_cuda_driver_close(&cm->driver);
  free(cm);
  model->cuda = NULL;
}

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

static CUresult push(kiln_cuda_instance *ci) {
  return ci->cu->cuCtxPushCurrent(ci->context);
}
static void pop(kiln_cuda_instance *ci) {
  CUcontext popped = NULL;
  ci->cu->cuCtxPopCurrent(&popped);
}

static void drop_graph(kiln_cuda_instance *ci) {
  if (ci->graph)
    ci->cu->cuGraphExecDestroy(ci->graph);
  ci->graph = NULL;
  ci->graph_warm = 0;
}

static void free_buffer(kiln_cuda_instance *ci, kiln_dev_buffer *buffer) {
  if (buffer->ptr)
    ci->cu->cuMemFree(buffer->ptr);
  buffer->ptr = 0;
  buffer->capacity = 0;
}

void kiln_cuda_instance_destroy(kiln_instance_impl *inst) {
  kiln_cuda_instance *ci = inst->cuda;
  if (!ci)
    return;
  kiln_model_impl *model = inst->model;
  const kiln_cuda_driver *cu = ci->cu;
  kiln_cuda_profile_release(ci->profile, ci->context);
  if (ci->context && push(ci) == CUDA_SUCCESS) {
    if (ci->stream)
      cu->cuStreamSynchronize(ci->stream);
    drop_graph(ci);
    for (size_t i = 0; i < ci->num_scratch; ++i)
      cu->cuMemFree((CUdeviceptr)(uintptr_t)ci->scratch[i].ptr);
    for (uint64_t i = 0;
         ci->weights && i < model->num_weights + model->num_ext_weights; ++i)
      free_buffer(ci, &ci->weights[i]);
    for (size_t i = 0; ci->inputs && i < model->num_inputs; ++i)
      free_buffer(ci, &ci->inputs[i]);
    for (size_t i = 0; ci->outputs && i < model->num_outputs; ++i)
      free_buffer(ci, &ci->outputs[i]);
    if (ci->arena)
      cu->cuMemFree(ci->arena);
    if (ci->module)
      cu->cuModuleUnload(ci->module);
    if (ci->own_stream)
      cu->cuStreamDestroy(ci->own_stream);
    pop(ci);
  }
  if (ci->context)
    cu->cuDevicePrimaryCtxRelease(model->cuda->device);
  free(ci->functions);
  free(ci->shared_limit);
  free(ci->weights);
  free(ci->inputs);
  free(ci->outputs);
  free(ci->scratch);
  free(ci->input_ptr);
  free(ci->output_ptr);
  free(ci->output_done);
  free(ci->output_direct);
  free(ci->output_dims);
  free(ci->output_dims_at);
  free(ci);
  inst->cuda = NULL;
}

static int env_graphs_enabled(void) {
  const char *text = getenv("KILN_CUDA_GRAPHS");
  return !(text && strcmp(text, "0") == 0);
}

kiln_status_t *kiln_cuda_instance_create(kiln_instance_impl *inst) {
  kiln_model_impl *model = inst->model;
  kiln_cuda_model *cm = model->cuda;
  kiln_cuda_instance *ci = (kiln_cuda_instance *)calloc(1, sizeof(*ci));
  if (!ci)
    return kiln_rtc_oom_status();
  inst->cuda = ci;
  ci->cu = &cm->driver;
  ci->graphs_enabled = env_graphs_enabled();
  size_t kernels = (size_t)model->num_kernels + 1;
  size_t weights = (size_t)model->num_weights + model->num_ext_weights + 1;
  size_t ins = model->num_inputs + 1, outs = model->num_outputs + 1;
  size_t total_rank = 1;
  for (size_t i = 0; i < model->num_outputs; ++i)
    total_rank += model->outputs[i].rank;
  ci->functions = (CUfunction *)calloc(kernels, sizeof(CUfunction));
  ci->shared_limit = (int64_t *)calloc(kernels, sizeof(int64_t));
  ci->weights = (kiln_dev_buffer *)calloc(weights, sizeof(kiln_dev_buffer));
  ci->inputs = (kiln_dev_buffer *)calloc(ins, sizeof(kiln_dev_buffer));
  ci->outputs = (kiln_dev_buffer *)calloc(outs, sizeof(kiln_dev_buffer));
  ci->input_ptr = (CUdeviceptr *)calloc(ins, sizeof(CUdeviceptr));
  ci->output_ptr = (CUdeviceptr *)calloc(outs, sizeof(CUdeviceptr));
  ci->output_done = (char *)calloc(outs, 1);
  ci->output_direct = (char *)calloc(outs, 1);
  ci->output_dims = (int64_t *)calloc(total_rank, sizeof(int64_t));
  ci->output_dims_at = (size_t *)calloc(outs, sizeof(size_t));
  if (!ci->functions || !ci->shared_limit || !ci->weights || !ci->inputs ||
      !ci->outputs || !ci->input_ptr || !ci->output_ptr || !ci->output_done ||
      !ci->output_direct || !ci->output_dims || !ci->output_dims_at)
    return kiln_rtc_oom_status();
  for (size_t i = 0, at = 0; i < model->num_outputs; ++i) {
    ci->output_dims_at[i] = at;
    at += model->outputs[i].rank;
  }

  const kiln_cuda_driver *cu = ci->cu;
  CUresult r = cu->cuDevicePrimaryCtxRetain(&ci->context, cm->device);
  if (r != CUDA_SUCCESS) {
    ci->context = NULL;
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r,
                       "cuDevicePrimaryCtxRetain");
  }
  r = push(ci);
  if (r != CUDA_SUCCESS)
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r,
                       "cuCtxPushCurrent");
  kiln_status_t *status = NULL;
  char what[128];
  r = cu->cuStreamCreate(&ci->own_stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    ci->own_stream = NULL;
    status =
        cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, "cuStreamCreate");
  }
  ci->stream = ci->own_stream;
  if (!status && cm->image) {
    r = cu->cuModuleLoadData(&ci->module, cm->image);
    if (r != CUDA_SUCCESS) {
      ci->module = NULL;
      snprintf(what, sizeof(what),
               "model compiled for cuda %s: cuModuleLoadData of its %lld-byte "
               "device image",
               model->chip, (long long)kiln_model_cuda_image_size);
      status = cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
    }
  }
  if (!status) {
    if (model->arena_size > ((uint64_t)1 << 62)) {
      status = kiln_rtc_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                    "arena of %llu bytes is too large",
                                    (unsigned long long)model->arena_size);
    } else {
      r = cu->cuMemAlloc(&ci->arena, round_device((size_t)model->arena_size));
      if (r != CUDA_SUCCESS) {
        ci->arena = 0;
        snprintf(what, sizeof(what),
                 "cuMemAlloc of the %llu-byte instance arena",
                 (unsigned long long)model->arena_size);
        status = cuda_status(cu, KILN_STATUS_RESOURCE_EXHAUSTED, r, what);
      }
    }
  }
  if (!status)
    status = kiln_cuda_profile_create(cu, model->num_kernels, &ci->profile);
  pop(ci);
  return status;
}

kiln_status_t *kiln_cuda_set_stream(kiln_instance_impl *inst, void *stream) {
  kiln_cuda_instance *ci = inst->cuda;
  CUstream next = stream ? (CUstream)stream : ci->own_stream;
  if (next == ci->stream)
    return NULL;
  CUresult r = push(ci);
  if (r != CUDA_SUCCESS)
    return cuda_status(ci->cu, KILN_STATUS_INTERNAL, r, "cuCtxPushCurrent");
  r = ci->cu->cuStreamSynchronize(ci->stream);
  pop(ci);
  if (r != CUDA_SUCCESS)
    return cuda_status(ci->cu, KILN_STATUS_INTERNAL, r,
                       "cuStreamSynchronize of the previous stream");
  ci->stream = next;
  return NULL;
}

kiln_status_t *kiln_cuda_set_graphs(kiln_instance_impl *inst, int enable) {
  kiln_cuda_instance *ci = inst->cuda;
  if (!enable && ci->graph) {
    CUresult r = push(ci);
    if (r != CUDA_SUCCESS)
      return cuda_status(ci->cu, KILN_STATUS_INTERNAL, r, "cuCtxPushCurrent");
    ci->cu->cuStreamSynchronize(ci->stream);
    drop_graph(ci);
    pop(ci);
  }
  ci->graphs_enabled = enable != 0;
  ci->graph_failed = 0;
  ci->graph_warm = 0;
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * Device memory of a run
 *===--------------------------------------------------------------------===*/

/* Work that cannot be captured in a CUDA graph (allocation, freeing, host
 * synchronization) was needed while capturing: the capture is abandoned and
 * the run redone without it. Returns 1 when that happened. */
static int abort_capture(kiln_rt_ctx *ctx, const char *what) {
  kiln_cuda_instance *ci = ctx->instance->cuda;
  if (!ci->capturing)
    return 0;
  ci->capture_aborted = 1;
  kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "%s during CUDA graph capture", what);
  return 1;
}

/* Makes `buffer` hold at least `bytes`; waits for the stream before freeing
 * a smaller one. Returns 0 on failure (recorded in ctx). */
static int reserve(kiln_rt_ctx *ctx, kiln_dev_buffer *buffer, size_t bytes,
                   const char *what) {
  kiln_cuda_instance *ci = ctx->instance->cuda;
  if (buffer->ptr && buffer->capacity >= bytes)
    return 1;
  if (abort_capture(ctx, "a device allocation"))
    return 0;
  if (buffer->ptr) {
    CUresult r = ci->cu->cuStreamSynchronize(ci->stream);
    if (r != CUDA_SUCCESS) {
      fail_cuda(ctx, r, "cuStreamSynchronize");
      return 0;
    }
    free_buffer(ci, buffer);
  }
  size_t size = round_device(bytes);
  CUresult r = ci->cu->cuMemAlloc(&buffer->ptr, size);
  if (r != CUDA_SUCCESS) {
    buffer->ptr = 0;
    char call[160];
    snprintf(call, sizeof(call), "cuMemAlloc of %zu bytes for %s", size, what);
    fail_cuda(ctx, r, call);
    return 0;
  }
  buffer->capacity = size;
  return 1;
}

static size_t view_bytes(kiln_dtype_t dtype, size_t rank, const int64_t *dims) {
  int overflow = 0;
  return kiln_rtc_num_elements(rank, dims, &overflow) *
         kiln_rtc_dtype_size(dtype);
}

/* Sets input_ptr: host inputs are copied into the staging buffers; device
 * inputs are used in place unless the run is staged (graphs) or they are
 * not aligned to their element size. */
static void stage_inputs(kiln_rt_ctx *ctx, int device_inputs) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_cuda_instance *ci = inst->cuda;
  const kiln_cuda_driver *cu = ci->cu;
  for (size_t i = 0; i < inst->model->num_inputs && !ctx->failed; ++i) {
    const kiln_tensor_view_t *view = &ctx->inputs[i];
    size_t bytes = view_bytes(view->dtype, view->rank, view->dims);
    CUdeviceptr src = (CUdeviceptr)(uintptr_t)view->data;
    if (device_inputs && !ci->staged && src != 0 &&
        src % kiln_rtc_dtype_size(view->dtype) == 0) {
      ci->input_ptr[i] = src;
      continue;
    }
    char what[160];
    snprintf(what, sizeof(what), "input %zu ('%s')", i,
             inst->model->inputs[i].name);
    if (!reserve(ctx, &ci->inputs[i], bytes, what))
      return;
    ci->input_ptr[i] = ci->inputs[i].ptr;
    if (bytes == 0)
      continue;
    CUresult r =
        device_inputs
            ? cu->cuMemcpyDtoDAsync(ci->inputs[i].ptr, src, bytes, ci->stream)
            : cu->cuMemcpyHtoDAsync(ci->inputs[i].ptr, view->data, bytes,
                                    ci->stream);
    if (r != CUDA_SUCCESS) {
      char call[224];
      snprintf(call, sizeof(call), "%s of %s",
               device_inputs ? "cuMemcpyDtoDAsync" : "cuMemcpyHtoDAsync", what);
      fail_cuda(ctx, r, call);
    }
  }
}

void *kiln_cuda_input(kiln_rt_ctx *ctx, int64_t index) {
  return (void *)(uintptr_t)ctx->instance->cuda->input_ptr[index];
}

static void format_dims(char *out, size_t size, size_t rank,
                        const int64_t *dims) {
  size_t n = 0;
  n += (size_t)snprintf(out + n, size - n, "[");
  for (size_t d = 0; d < rank && n < size; ++d)
    n += (size_t)snprintf(out + n, size - n, "%s%lld", d ? ", " : "",
                          (long long)dims[d]);
  if (n < size)
    snprintf(out + n, size - n, "]");
}

void *kiln_cuda_output(kiln_rt_ctx *ctx, int64_t index, const int64_t *dims) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_cuda_instance *ci = inst->cuda;
  kiln_model_impl *model = inst->model;
  const kiln_value_sig *sig =
      kiln_rt_check_output(ctx, index, dims,
                           index >= 0 && (uint64_t)index < model->num_outputs &&
                               ci->output_done[index]);
  if (!sig)
    return NULL;
  int overflow = 0;
  size_t count = kiln_rtc_num_elements(sig->rank, dims, &overflow);
  size_t bytes = 0;
  if (overflow ||
      __builtin_mul_overflow(count, kiln_rtc_dtype_size(sig->dtype), &bytes)) {
    kiln_rt_fail(ctx, KILN_STATUS_INVALID_ARGUMENT,
                 "output %lld ('%s'): number of elements overflows",
                 (long long)index, sig->name);
    return NULL;
  }
  if (ctx->output_views) {
    const kiln_output_view_t *view = &ctx->output_views[index];
    if (sig->rank > 0 &&
        memcmp(view->dims, dims, sig->rank * sizeof(int64_t)) != 0) {
      char got[256], want[256];
      format_dims(got, sizeof(got), sig->rank, dims);
      format_dims(want, sizeof(want), sig->rank, view->dims);
      kiln_rt_fail(ctx, KILN_STATUS_INVALID_ARGUMENT,
                   "output %lld ('%s'): the model produced dimensions %s, the "
                   "output buffer has %s",
                   (long long)index, sig->name, got, want);
      return NULL;
    }
    CUdeviceptr dst = (CUdeviceptr)(uintptr_t)view->data;
    if (!ci->staged && dst != 0 && dst % KILN_ALIGNMENT == 0) {
      ci->output_done[index] = 1;
      ci->output_direct[index] = 1;
      ci->output_ptr[index] = dst;
      memcpy(ci->output_dims + ci->output_dims_at[index], dims,
             sig->rank * sizeof(int64_t));
      return (void *)(uintptr_t)dst;
    }
  } else {
    if (!kiln_rt_create_output(ctx, index, sig, dims))
      return NULL;
  }
  char what[160];
  snprintf(what, sizeof(what), "output %lld ('%s')", (long long)index,
           sig->name);
  if (!reserve(ctx, &ci->outputs[index], bytes, what))
    return NULL;
  ci->output_done[index] = 1;
  ci->output_direct[index] = 0;
  ci->output_ptr[index] = ci->outputs[index].ptr;
  memcpy(ci->output_dims + ci->output_dims_at[index], dims,
         sig->rank * sizeof(int64_t));
  return (void *)(uintptr_t)ci->output_ptr[index];
}

void *kiln_cuda_arena(kiln_rt_ctx *ctx) {
  return (void *)(uintptr_t)ctx->instance->cuda->arena;
}

void *kiln_cuda_alloc(kiln_rt_ctx *ctx, size_t bytes) {
  kiln_cuda_instance *ci = ctx->instance->cuda;
  if (bytes > ((size_t)1 << 62)) {
    kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED,
                 "out of memory allocating a %zu-byte scratch buffer", bytes);
    return NULL;
  }
  kiln_scratch *best =
      kiln_rt_scratch_find(ci->scratch, ci->num_scratch, bytes);
  if (best) {
    best->in_use = 1;
    return best->ptr;
  }
  if (abort_capture(ctx, "a device allocation"))
    return NULL;
  if (ci->num_scratch == ci->cap_scratch) {
    size_t cap = ci->cap_scratch ? 2 * ci->cap_scratch : 16;
    kiln_scratch *grown =
        (kiln_scratch *)realloc(ci->scratch, cap * sizeof(kiln_scratch));
    if (!grown) {
      kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    ci->scratch = grown;
    ci->cap_scratch = cap;
  }
  size_t size = round_device(bytes);
  CUdeviceptr ptr = 0;
  CUresult r = ci->cu->cuMemAlloc(&ptr, size);
  if (r != CUDA_SUCCESS) {
    char call[96];
    snprintf(call, sizeof(call), "cuMemAlloc of a %zu-byte scratch buffer",
             bytes);
    fail_cuda(ctx, r, call);
    return NULL;
  }
  kiln_scratch *s = &ci->scratch[ci->num_scratch++];
  s->ptr = (void *)(uintptr_t)ptr;
  s->size = size;
  s->in_use = 1;
  return s->ptr;
}

/* Ends a run: keeps the scratch buffers it used, frees the others (after
 * the stream is done with them). */
static void scratch_end_run(kiln_cuda_instance *ci) {
  int any_free = 0;
  for (size_t i = 0; i < ci->num_scratch; ++i)
    any_free |= !ci->scratch[i].in_use;
  if (any_free)
    ci->cu->cuStreamSynchronize(ci->stream);
  size_t kept = 0;
  for (size_t i = 0; i < ci->num_scratch; ++i) {
    kiln_scratch s = ci->scratch[i];
    if (!s.in_use) {
      ci->cu->cuMemFree((CUdeviceptr)(uintptr_t)s.ptr);
      continue;
    }
    s.in_use = 0;
    ci->scratch[kept++] = s;
  }
  ci->num_scratch = kept;
}

/*===--------------------------------------------------------------------===*
 * Calls of generated code (ModelABI.h, device targets)
 *===--------------------------------------------------------------------===*/

static int is_cuda(kiln_rt_ctx *ctx, const char *call) {
  if (ctx->instance->model->device == KILN_DEVICE_CUDA)
    return 1;
  kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "%s called by a %s model", call,
               ctx->instance->model->device_name);
  return 0;
}

void kiln_rt_launch_cuda(kiln_rt_ctx *ctx, int64_t kernel, const char *name,
                         int64_t grid_x, int64_t grid_y, int64_t grid_z,
                         int64_t block_x, int64_t block_y, int64_t block_z,
                         int64_t shared_bytes, void **params) {
  if (ctx->failed || !is_cuda(ctx, "kiln_rt_launch_cuda"))
    return;
  kiln_model_impl *model = ctx->instance->model;
  kiln_cuda_instance *ci = ctx->instance->cuda;
  if (kernel < 0 || (uint64_t)kernel >= model->num_kernels || !name) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_launch_cuda: no kernel %lld ('%s'; the model has "
                 "%llu)",
                 (long long)kernel, name ? name : "(null)",
                 (unsigned long long)model->num_kernels);
    return;
  }
  const int64_t dims[6] = {grid_x, grid_y, grid_z, block_x, block_y, block_z};
  for (int d = 0; d < 6; ++d) {
    if (dims[d] < (d < 3 ? 0 : 1) || dims[d] > (int64_t)UINT32_MAX ||
        shared_bytes < 0 || shared_bytes > (int64_t)INT32_MAX) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "kiln_rt_launch_cuda: kernel %lld ('%s') launched with grid "
                   "%lldx%lldx%lld, block %lldx%lldx%lld, %lld shared bytes",
                   (long long)kernel, name, (long long)grid_x,
                   (long long)grid_y, (long long)grid_z, (long long)block_x,
                   (long long)block_y, (long long)block_z,
                   (long long)shared_bytes);
      return;
    }
  }
  /* An empty grid (a zero-sized tensor) has nothing to do. */
  if (grid_x == 0 || grid_y == 0 || grid_z == 0)
    return;
  const kiln_cuda_driver *cu = ci->cu;
  char call[224];
  CUfunction fn = ci->functions[kernel];
  if (!fn) {
    CUresult r = cu->cuModuleGetFunction(&fn, ci->module, name);
    if (r != CUDA_SUCCESS) {
      snprintf(call, sizeof(call), "cuModuleGetFunction(kernel %lld '%s')",
               (long long)kernel, name);
      fail_cuda(ctx, r, call);
      return;
    }
    ci->functions[kernel] = fn;
    ci->shared_limit[kernel] = 48 * 1024;
  }
  if (shared_bytes > ci->shared_limit[kernel]) {
    CUresult r = cu->cuFuncSetAttribute(
        fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
    if (r != CUDA_SUCCESS) {
      snprintf(call, sizeof(call),
               "cuFuncSetAttribute(kernel %lld '%s', %lld dynamic shared "
               "bytes)",
               (long long)kernel, name, (long long)shared_bytes);
      fail_cuda(ctx, r, call);
      return;
    }
    ci->shared_limit[kernel] = shared_bytes;
  }
  kiln_cuda_profile_begin(ci->profile, ci->stream);
  CUresult r = cu->cuLaunchKernel(
      fn, (unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z,
      (unsigned)block_x, (unsigned)block_y, (unsigned)block_z,
      (unsigned)shared_bytes, ci->stream, params, NULL);
  kiln_cuda_profile_end(ci->profile, ci->stream, kernel, name,
                        r == CUDA_SUCCESS);
  if (r != CUDA_SUCCESS) {
    snprintf(call, sizeof(call),
             "cuLaunchKernel(kernel %lld '%s', grid %lldx%lldx%lld, block "
             "%lldx%lldx%lld)",
             (long long)kernel, name, (long long)grid_x, (long long)grid_y,
             (long long)grid_z, (long long)block_x, (long long)block_y,
             (long long)block_z);
    fail_cuda(ctx, r, call);
  }
}

/* The device copy in weight cache slot `slot` of `bytes` bytes from `host`:
 * uploaded on first use, then reused for the instance's lifetime. `what`
 * names the weight in failures. */
static void *cached_weight(kiln_rt_ctx *ctx, size_t slot, const void *host,
                           int64_t bytes, const char *what) {
  kiln_cuda_instance *ci = ctx->instance->cuda;
  kiln_dev_buffer *w = &ci->weights[slot];
  if (w->ptr) {
    if (w->capacity != (size_t)bytes) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "kiln_rt_weight: %s is %lld bytes, it was %zu", what,
                   (long long)bytes, w->capacity);
      return NULL;
    }
    return (void *)(uintptr_t)w->ptr;
  }
  if (abort_capture(ctx, "a weight upload"))
    return NULL;
  const kiln_cuda_driver *cu = ci->cu;
  char call[384];
  CUdeviceptr ptr = 0;
  CUresult r = cu->cuMemAlloc(&ptr, round_device((size_t)bytes));
  if (r != CUDA_SUCCESS) {
    snprintf(call, sizeof(call), "cuMemAlloc of %s (%lld bytes)", what,
             (long long)bytes);
    fail_cuda(ctx, r, call);
    return NULL;
  }
  if (bytes > 0) {
    r = cu->cuMemcpyHtoD(ptr, host, (size_t)bytes);
    if (r != CUDA_SUCCESS) {
      cu->cuMemFree(ptr);
      snprintf(call, sizeof(call), "cuMemcpyHtoD of %s (%lld bytes)", what,
               (long long)bytes);
      fail_cuda(ctx, r, call);
      return NULL;
    }
  }
  w->ptr = ptr;
  w->capacity = (size_t)bytes;
  return (void *)(uintptr_t)ptr;
}

void *kiln_rt_weight(kiln_rt_ctx *ctx, int64_t index, const void *host,
                     int64_t bytes) {
  if (ctx->failed || !is_cuda(ctx, "kiln_rt_weight"))
    return NULL;
  kiln_model_impl *model = ctx->instance->model;
  if (index < 0 || (uint64_t)index >= model->num_weights || bytes < 0 ||
      (bytes > 0 && !host)) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_weight: bad weight %lld (%lld bytes; the model has "
                 "%llu weights)",
                 (long long)index, (long long)bytes,
                 (unsigned long long)model->num_weights);
    return NULL;
  }
  char what[64];
  snprintf(what, sizeof(what), "weight %lld", (long long)index);
  return cached_weight(ctx, (size_t)index, host, bytes, what);
}

void *kiln_cuda_external_weight(kiln_rt_ctx *ctx, int64_t index) {
  if (ctx->failed)
    return NULL;
  const void *host = kiln_rt_ext_weight_host(ctx, index);
  if (!host)
    return NULL;
  kiln_model_impl *model = ctx->instance->model;
  const kiln_ext_weight *w = &model->ext_weights[index];
  char what[320];
  snprintf(what, sizeof(what), "external weight %lld ('%s')", (long long)index,
           w->sig.name);
  return cached_weight(ctx, (size_t)model->num_weights + (size_t)index, host,
                       (int64_t)w->bytes, what);
}

void kiln_rt_read_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes) {
  if (bytes <= 0)
    return;
  if (!ctx->failed && is_cuda(ctx, "kiln_rt_read_device") &&
      !abort_capture(ctx, "a read of device memory")) {
    kiln_cuda_instance *ci = ctx->instance->cuda;
    CUresult r = ci->cu->cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src,
                                           (size_t)bytes, ci->stream);
    if (r == CUDA_SUCCESS)
      r = ci->cu->cuStreamSynchronize(ci->stream);
    if (r == CUDA_SUCCESS)
      return;
    char call[96];
    snprintf(call, sizeof(call), "kiln_rt_read_device of %lld bytes",
             (long long)bytes);
    fail_cuda(ctx, r, call);
  }
  memset(dst, 0, (size_t)bytes);
}

void kiln_rt_copy_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes) {
  if (bytes <= 0 || ctx->failed || !is_cuda(ctx, "kiln_rt_copy_device"))
    return;
  kiln_cuda_instance *ci = ctx->instance->cuda;
  CUresult r = ci->cu->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst,
                                         (CUdeviceptr)(uintptr_t)src,
                                         (size_t)bytes, ci->stream);
  if (r != CUDA_SUCCESS) {
    char call[96];
    snprintf(call, sizeof(call), "cuMemcpyDtoDAsync of %lld bytes",
             (long long)bytes);
    fail_cuda(ctx, r, call);
  }
}

/*===--------------------------------------------------------------------===*
 * Runs
 *===--------------------------------------------------------------------===*/

static void reset_ctx(kiln_rt_ctx *ctx) {
  ctx->failed = 0;
  ctx->code = KILN_STATUS_OK;
  ctx->reason[0] = '\0';
}

/* Forgets the outputs of an abandoned attempt (a failed capture). */
static void reset_outputs(kiln_instance_impl *inst) {
  kiln_cuda_instance *ci = inst->cuda;
  for (size_t i = 0; i < inst->model->num_outputs; ++i) {
    kiln_rtc_tensor_free(inst->outputs[i]);
    inst->outputs[i] = NULL;
    ci->output_done[i] = 0;
    ci->output_direct[i] = 0;
    ci->output_ptr[i] = 0;
  }
}

static void run_main(kiln_rt_ctx *ctx) {
  int32_t rc = kiln_rt_run_program(ctx);
  if (!ctx->failed && rc != 0)
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "the host program returned %d",
                 (int)rc);
}

/* The second run of a graph-capturable model: kiln_model_main under stream
 * capture, then the graph is instantiated and launched. Returns 0 when the
 * capture did not work out (nothing ran; the caller redoes the run). */
static int capture_and_launch(kiln_rt_ctx *ctx) {
  kiln_cuda_instance *ci = ctx->instance->cuda;
  const kiln_cuda_driver *cu = ci->cu;
  if (cu->cuStreamBeginCapture(ci->stream, CU_STREAM_CAPTURE_MODE_RELAXED) !=
      CUDA_SUCCESS)
    return 0;
  ci->capturing = 1;
  ci->capture_aborted = 0;
  run_main(ctx);
  ci->capturing = 0;
  CUgraph graph = NULL;
  CUresult r = cu->cuStreamEndCapture(ci->stream, &graph);
  if (ctx->failed || r != CUDA_SUCCESS || !graph) {
    if (graph)
      cu->cuGraphDestroy(graph);
    return 0;
  }
  CUgraphExec exec = NULL;
  r = cu->cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu->cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS || !exec)
    return 0;
  ci->graph = exec;
  r = cu->cuGraphLaunch(exec, ci->stream);
  if (r != CUDA_SUCCESS)
    fail_cuda(ctx, r, "cuGraphLaunch");
  return 1;
}

/* A replay: the graph writes the staging buffers of the capture run; the
 * outputs have the dims recorded then (graph-capturable models have no
 * symbolic dims). */
static void replay(kiln_rt_ctx *ctx) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_cuda_instance *ci = inst->cuda;
  for (size_t i = 0; i < inst->model->num_outputs; ++i) {
    const kiln_value_sig *sig = &inst->model->outputs[i];
    if (!ctx->output_views) {
      kiln_status_t *status = NULL;
      inst->outputs[i] = kiln_rtc_tensor_create(
          sig->dtype, sig->rank, ci->output_dims + ci->output_dims_at[i],
          &status);
      if (!inst->outputs[i]) {
        kiln_rt_fail(ctx, (kiln_status_code_t)status->code,
                     "output %zu ('%s'): %s", i, sig->name, status->message);
        if (!status->is_static)
          free(status);
        return;
      }
    }
    ci->output_done[i] = 1;
    ci->output_direct[i] = 0;
    ci->output_ptr[i] = ci->outputs[i].ptr;
  }
  CUresult r = ci->cu->cuGraphLaunch(ci->graph, ci->stream);
  if (r != CUDA_SUCCESS)
    fail_cuda(ctx, r, "cuGraphLaunch");
}

/* Copies outputs that were not written in place to the host tensors or the
 * caller's device buffers. */
static void copy_outputs_out(kiln_rt_ctx *ctx) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_cuda_instance *ci = inst->cuda;
  for (size_t i = 0; i < inst->model->num_outputs && !ctx->failed; ++i) {
    if (ci->output_direct[i])
      continue;
    const kiln_value_sig *sig = &inst->model->outputs[i];
    size_t bytes = view_bytes(sig->dtype, sig->rank,
                              ci->output_dims + ci->output_dims_at[i]);
    if (bytes == 0)
      continue;
    CUresult r;
    if (ctx->output_views)
      r = ci->cu->cuMemcpyDtoDAsync(
          (CUdeviceptr)(uintptr_t)ctx->output_views[i].data, ci->output_ptr[i],
          bytes, ci->stream);
    else
      r = ci->cu->cuMemcpyDtoHAsync(inst->outputs[i]->data, ci->output_ptr[i],
                                    bytes, ci->stream);
    if (r != CUDA_SUCCESS) {
      char call[192];
      snprintf(call, sizeof(call), "%s of output %zu ('%s')",
               ctx->output_views ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoHAsync", i,
               sig->name);
      fail_cuda(ctx, r, call);
    }
  }
}

kiln_status_t *kiln_cuda_run(kiln_instance_impl *inst,
                             const kiln_tensor_view_t *inputs,
                             const kiln_output_view_t *views,
                             kiln_tensor_t **out_outputs) {
  kiln_model_impl *model = inst->model;
  kiln_cuda_instance *ci = inst->cuda;
  const kiln_cuda_driver *cu = ci->cu;
  CUresult r = push(ci);
  if (r != CUDA_SUCCESS)
    return cuda_status(cu, KILN_STATUS_INTERNAL, r,
                       "model run: cuCtxPushCurrent");

  kiln_rt_ctx ctx;
  ctx.instance = inst;
  ctx.inputs = inputs;
  ctx.output_views = views;
  reset_ctx(&ctx);
  reset_outputs(inst);

  /* Graphs need every device pointer fixed across runs: inputs and outputs
   * go through the instance's buffers, and no dim may vary. */
  int use_graph = ci->graphs_enabled && !ci->graph_failed &&
                  model->graph_capturable && model->num_symbols == 0 &&
                  !ci->profile;
  int replayed = 0;
  ci->staged = use_graph || !views;
  stage_inputs(&ctx, views != NULL);
  if (!ctx.failed) {
    if (use_graph && ci->graph) {
      replay(&ctx);
      replayed = 1;
    } else if (use_graph && ci->graph_warm && capture_and_launch(&ctx)) {
      /* Captured and launched. */
    } else {
      int after_capture = use_graph && ci->graph_warm;
      if (after_capture) {
        /* The capture failed: nothing ran; redo the run plainly. */
        reset_ctx(&ctx);
        reset_outputs(inst);
        for (size_t i = 0; i < ci->num_scratch; ++i)
          ci->scratch[i].in_use = 0;
      }
      run_main(&ctx);
      if (!ctx.failed && after_capture)
        ci->graph_failed = 1; /* a model that runs but cannot be captured */
      else if (!ctx.failed && use_graph)
        ci->graph_warm = 1;
    }
  }
  for (size_t i = 0; !ctx.failed && i < model->num_outputs; ++i)
    if (!ci->output_done[i])
      kiln_rt_fail(&ctx, KILN_STATUS_INTERNAL,
                   "model run did not produce output %zu ('%s')", i,
                   model->outputs[i].name);
  copy_outputs_out(&ctx);
  if (!views || ci->stream == ci->own_stream) {
    r = cu->cuStreamSynchronize(ci->stream);
    if (r != CUDA_SUCCESS)
      fail_cuda(&ctx, r, "cuStreamSynchronize");
  }
  kiln_cuda_profile_end_run(ci->profile, ctx.failed);
  if (!replayed)
    scratch_end_run(ci);
  pop(ci);

  if (ctx.failed) {
    reset_outputs(inst);
    return kiln_rtc_make_status(ctx.code, "model run failed: %s", ctx.reason);
  }
  for (size_t i = 0; out_outputs && i < model->num_outputs; ++i) {
    out_outputs[i] = inst->outputs[i];
    inst->outputs[i] = NULL;
  }
  return NULL;
}
