/*===- CudaDevice.c - The CUDA driver of the model runtime ----------------===*
 *
 * kiln_device_driver_cuda (kiln/Runtime/Device.h) on the CUDA driver API,
 * opened with dlopen (CudaDriver.c). A device is one CUdevice of a model; a
 * queue (one per instance) retains the device's primary context, creates its
 * own stream, loads the model's device image (a fatbin: cubin and PTX) once
 * and looks kernels up on their first launch. Graphs are CUDA graphs made by
 * stream capture. With a profile path, every launch is bracketed with two
 * CUDA events (CudaProfile.c).
 *===----------------------------------------------------------------------===*/
#include "CudaDriver.h"
#include "CudaProfile.h"
#include "kiln/Runtime/Device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kiln_device {
  kiln_cuda_driver driver;
  CUdevice device;
  int ordinal;
  char chip[32];
};

struct kiln_device_queue {
  kiln_device *dev;
  const kiln_cuda_driver *cu;
  CUcontext context; /* the device's primary context (retained) */
  CUstream own_stream, stream;
  CUmodule module;
  int64_t image_size;
  uint64_t num_kernels;
  CUfunction *functions; /* per kernel, looked up on first launch */
  int64_t *shared_limit; /* per kernel: dynamic shared bytes allowed */
  kiln_cuda_profile *profile;
};

static kiln_status_t *cuda_status(const kiln_cuda_driver *cu,
                                  kiln_status_code_t code, CUresult result,
                                  const char *what) {
  char text[160];
  kiln_cuda_error_text(cu, result, text, sizeof(text));
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    code = KILN_STATUS_RESOURCE_EXHAUSTED;
  return kiln_rtc_make_status(code, "%s failed: %s", what, text);
}

static void error_text(const kiln_device *dev, kiln_device_result result,
                       char *out, size_t size) {
  kiln_cuda_error_text(&dev->driver, result, out, size);
}

static int is_out_of_memory(kiln_device_result result) {
  return result == CUDA_ERROR_OUT_OF_MEMORY;
}

/*===--------------------------------------------------------------------===*
 * Devices
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

static void device_close(kiln_device *dev) {
  if (!dev)
    return;
  kiln_cuda_driver_close(&dev->driver);
  free(dev);
}

static kiln_status_t *device_open(const kiln_device_open_args *args,
                                  kiln_device **out_device) {
  *out_device = NULL;
  const char *chip = args->chip;
  int need_major = 0, need_minor = 0;
  if (!parse_chip(chip, &need_major, &need_minor))
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "model compiled for cuda '%s': unknown chip (expected sm_<NN>)", chip);
  kiln_device *dev = (kiln_device *)calloc(1, sizeof(*dev));
  if (!dev)
    return kiln_rtc_oom_status();
  *out_device = dev; /* closed by the caller on failure too */
  snprintf(dev->chip, sizeof(dev->chip), "%s", chip);

  const char *path = args->library ? args->library : "libcuda.so.1";
  char error[512];
  if (kiln_cuda_driver_open(&dev->driver, path, error, sizeof(error)) != 0)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for cuda %s: cannot load the CUDA driver (%s)", chip,
        error);
  const kiln_cuda_driver *cu = &dev->driver;
  char what[128];
  snprintf(what, sizeof(what), "model compiled for cuda %s: cuInit", chip);
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS)
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  int count = 0;
  r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof(what), "model compiled for cuda %s: cuDeviceGetCount",
             chip);
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  }
  if (count <= 0)
    return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "model compiled for cuda %s: no CUDA device",
                                chip);
  if (args->ordinal >= count)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for cuda %s: %s is '%d', expected a device index "
        "below %d",
        chip, args->ordinal_source ? args->ordinal_source : "the device index",
        (int)args->ordinal, count);
  dev->ordinal = (int)args->ordinal;
  r = cu->cuDeviceGet(&dev->device, dev->ordinal);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS)
    r = cu->cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device);
  if (r == CUDA_SUCCESS)
    r = cu->cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->device);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof(what),
             "model compiled for cuda %s: querying CUDA device %d", chip,
             dev->ordinal);
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
  }
  char name[128] = "";
  if (cu->cuDeviceGetName(name, (int)sizeof(name) - 1, dev->device) !=
      CUDA_SUCCESS)
    snprintf(name, sizeof(name), "unnamed");
  name[sizeof(name) - 1] = '\0';
  /* A chip with a suffix (sm_90a) runs only on that exact architecture;
   * otherwise the cubin or the PTX in the image runs on newer devices. */
  size_t chip_len = strlen(chip);
  int exact = chip[chip_len - 1] == 'a' || chip[chip_len - 1] == 'f';
  int ok = exact ? (major == need_major && minor == need_minor)
                 : (major > need_major ||
                    (major == need_major && minor >= need_minor));
  if (!ok)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for cuda %s: CUDA device %d (%s) has compute "
        "capability %d.%d, the model needs %s (compute capability %d.%d%s)",
        chip, dev->ordinal, name, major, minor, chip, need_major, need_minor,
        exact ? " exactly" : " or newer");
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * Queues
 *===--------------------------------------------------------------------===*/

static kiln_device_result enter(kiln_device_queue *q) {
  return q->cu->cuCtxPushCurrent(q->context);
}

static void leave(kiln_device_queue *q) {
  CUcontext popped = NULL;
  q->cu->cuCtxPopCurrent(&popped);
}

static void queue_destroy(kiln_device_queue *q) {
  if (!q)
    return;
  const kiln_cuda_driver *cu = q->cu;
  kiln_cuda_profile_release(q->profile, q->context);
  if (q->context && enter(q) == CUDA_SUCCESS) {
    if (q->stream)
      cu->cuStreamSynchronize(q->stream);
    if (q->module)
      cu->cuModuleUnload(q->module);
    if (q->own_stream)
      cu->cuStreamDestroy(q->own_stream);
    leave(q);
  }
  if (q->context)
    cu->cuDevicePrimaryCtxRelease(q->dev->device);
  free(q->functions);
  free(q->shared_limit);
  free(q);
}

static kiln_status_t *queue_setup(kiln_device_queue *q, const void *image,
                                  const char *profile_path) {
  const kiln_cuda_driver *cu = q->cu;
  CUresult r = cu->cuDevicePrimaryCtxRetain(&q->context, q->dev->device);
  if (r != CUDA_SUCCESS) {
    q->context = NULL;
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r,
                       "cuDevicePrimaryCtxRetain");
  }
  r = enter(q);
  if (r != CUDA_SUCCESS)
    return cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r,
                       "cuCtxPushCurrent");
  kiln_status_t *status = NULL;
  r = cu->cuStreamCreate(&q->own_stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    q->own_stream = NULL;
    status =
        cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, "cuStreamCreate");
  }
  q->stream = q->own_stream;
  if (!status && image) {
    r = cu->cuModuleLoadData(&q->module, image);
    if (r != CUDA_SUCCESS) {
      q->module = NULL;
      char what[128];
      snprintf(what, sizeof(what),
               "model compiled for cuda %s: cuModuleLoadData of its %lld-byte "
               "device image",
               q->dev->chip, (long long)q->image_size);
      status = cuda_status(cu, KILN_STATUS_FAILED_PRECONDITION, r, what);
    }
  }
  if (!status && profile_path)
    status =
        kiln_cuda_profile_create(cu, profile_path, q->num_kernels, &q->profile);
  leave(q);
  return status;
}

static kiln_status_t *queue_create(kiln_device *dev, const void *image,
                                   int64_t image_size, uint64_t num_kernels,
                                   const char *profile_path,
                                   kiln_device_queue **out_queue) {
  *out_queue = NULL;
  kiln_device_queue *q = (kiln_device_queue *)calloc(1, sizeof(*q));
  if (!q)
    return kiln_rtc_oom_status();
  q->dev = dev;
  q->cu = &dev->driver;
  q->image_size = image_size;
  q->num_kernels = num_kernels;
  q->functions = (CUfunction *)calloc(num_kernels + 1, sizeof(CUfunction));
  q->shared_limit = (int64_t *)calloc(num_kernels + 1, sizeof(int64_t));
  kiln_status_t *status = !q->functions || !q->shared_limit
                              ? kiln_rtc_oom_status()
                              : queue_setup(q, image, profile_path);
  if (status) {
    queue_destroy(q);
    return status;
  }
  *out_queue = q;
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * Memory and streams
 *===--------------------------------------------------------------------===*/

static kiln_device_result mem_alloc(kiln_device_queue *q, size_t bytes,
                                    kiln_device_ptr *out_ptr) {
  CUdeviceptr ptr = 0;
  CUresult r = q->cu->cuMemAlloc(&ptr, bytes);
  *out_ptr = r == CUDA_SUCCESS ? (kiln_device_ptr)ptr : 0;
  return r;
}

static void mem_free(kiln_device_queue *q, kiln_device_ptr ptr) {
  q->cu->cuMemFree((CUdeviceptr)ptr);
}

/* Pinned host memory mapped into the device's address space
 * (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE). */
static kiln_device_result host_alloc_mapped(kiln_device_queue *q, size_t bytes,
                                            void **out_host,
                                            kiln_device_ptr *out_ptr) {
  void *host = NULL;
  CUdeviceptr ptr = 0;
  *out_host = NULL;
  *out_ptr = 0;
  CUresult r = q->cu->cuMemHostAlloc(&host, bytes, 0x1 | 0x2);
  if (r != CUDA_SUCCESS)
    return r;
  r = q->cu->cuMemHostGetDevicePointer(&ptr, host, 0);
  if (r != CUDA_SUCCESS) {
    q->cu->cuMemFreeHost(host);
    return r;
  }
  memset(host, 0, bytes);
  *out_host = host;
  *out_ptr = (kiln_device_ptr)ptr;
  return CUDA_SUCCESS;
}

static void host_free(kiln_device_queue *q, void *host) {
  if (host)
    q->cu->cuMemFreeHost(host);
}

static kiln_device_result upload(kiln_device_queue *q, kiln_device_ptr dst,
                                 const void *src, size_t bytes) {
  return q->cu->cuMemcpyHtoD((CUdeviceptr)dst, src, bytes);
}

static kiln_device_result copy_to_device(kiln_device_queue *q,
                                         kiln_device_ptr dst, const void *src,
                                         size_t bytes) {
  return q->cu->cuMemcpyHtoDAsync((CUdeviceptr)dst, src, bytes, q->stream);
}

static kiln_device_result copy_to_host(kiln_device_queue *q, void *dst,
                                       kiln_device_ptr src, size_t bytes) {
  return q->cu->cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, bytes, q->stream);
}

static kiln_device_result copy_device(kiln_device_queue *q, kiln_device_ptr dst,
                                      kiln_device_ptr src, size_t bytes) {
  return q->cu->cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes,
                                  q->stream);
}

static kiln_device_result synchronize(kiln_device_queue *q) {
  return q->cu->cuStreamSynchronize(q->stream);
}

static kiln_status_t *set_stream(kiln_device_queue *q, void *stream) {
  CUstream next = stream ? (CUstream)stream : q->own_stream;
  if (next == q->stream)
    return NULL;
  CUresult r = enter(q);
  if (r != CUDA_SUCCESS)
    return cuda_status(q->cu, KILN_STATUS_INTERNAL, r, "cuCtxPushCurrent");
  r = q->cu->cuStreamSynchronize(q->stream);
  leave(q);
  if (r != CUDA_SUCCESS)
    return cuda_status(q->cu, KILN_STATUS_INTERNAL, r,
                       "cuStreamSynchronize of the previous stream");
  q->stream = next;
  return NULL;
}

static int on_own_stream(const kiln_device_queue *q) {
  return q->stream == q->own_stream;
}

/*===--------------------------------------------------------------------===*
 * Launches and graphs
 *===--------------------------------------------------------------------===*/

static kiln_device_result launch(kiln_device_queue *q,
                                 const kiln_device_launch *l, char *call,
                                 size_t call_size) {
  const kiln_cuda_driver *cu = q->cu;
  long long kernel = (long long)l->kernel;
  CUfunction fn = q->functions[l->kernel];
  if (!fn) {
    CUresult r = cu->cuModuleGetFunction(&fn, q->module, l->name);
    if (r != CUDA_SUCCESS) {
      snprintf(call, call_size, "cuModuleGetFunction(kernel %lld '%s')", kernel,
               l->name);
      return r;
    }
    q->functions[l->kernel] = fn;
    q->shared_limit[l->kernel] = 48 * 1024;
  }
  if ((int64_t)l->shared_bytes > q->shared_limit[l->kernel]) {
    CUresult r = cu->cuFuncSetAttribute(
        fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        (int)l->shared_bytes);
    if (r != CUDA_SUCCESS) {
      snprintf(call, call_size,
               "cuFuncSetAttribute(kernel %lld '%s', %u dynamic shared "
               "bytes)",
               kernel, l->name, l->shared_bytes);
      return r;
    }
    // All of the L1/shared memory as shared memory: kernels past the
    // static 48 KiB read their operands through it (copies to shared
    // memory do not use L1), and two blocks of 96 KiB share a
    // multiprocessor only under the largest carveout.
    r = cu->cuFuncSetAttribute(
        fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
    if (r != CUDA_SUCCESS) {
      snprintf(call, call_size,
               "cuFuncSetAttribute(kernel %lld '%s', shared memory carveout "
               "100%%)",
               kernel, l->name);
      return r;
    }
    q->shared_limit[l->kernel] = l->shared_bytes;
  }
  kiln_cuda_profile_begin(q->profile, q->stream);
  const int dependent =
      (l->flags & KILN_DEVICE_LAUNCH_DEPENDENT) && cu->cuLaunchKernelEx;
  CUresult r;
  if (dependent) {
    // The kernel waits for the previous one itself (griddepcontrol.wait at
    // its entry): it may be launched, and its blocks placed, while that one
    // runs (programmatic stream serialization; in a captured graph, a
    // programmatic edge).
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = {
        l->grid[0],  l->grid[1],      l->grid[2], l->block[0], l->block[1],
        l->block[2], l->shared_bytes, q->stream,  &attr,       1};
    r = cu->cuLaunchKernelEx(&config, fn, l->params, NULL);
  } else {
    r = cu->cuLaunchKernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_bytes, q->stream,
                           l->params, NULL);
  }
  kiln_cuda_profile_end(q->profile, q->stream, l->kernel, l->name,
                        r == CUDA_SUCCESS);
  if (r != CUDA_SUCCESS)
    snprintf(call, call_size,
             "%s(kernel %lld '%s', grid %ux%ux%u, block "
             "%ux%ux%u)",
             dependent ? "cuLaunchKernelEx" : "cuLaunchKernel", kernel, l->name,
             l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
             l->block[2]);
  return r;
}

/* CU_TENSOR_MAP_DATA_TYPE_* of a kiln dtype; -1 for none. Integers of
 * one byte and two bytes move as unsigned ones (a copy keeps the bits). */
static int tensor_map_type(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_U8:
  case KILN_DTYPE_I8:
  case KILN_DTYPE_BOOL:
    return 0; /* UINT8 */
  case KILN_DTYPE_U16:
  case KILN_DTYPE_I16:
    return 1; /* UINT16 */
  case KILN_DTYPE_U32:
    return 2;
  case KILN_DTYPE_I32:
    return 3;
  case KILN_DTYPE_U64:
    return 4;
  case KILN_DTYPE_I64:
    return 5;
  case KILN_DTYPE_F16:
    return 6;
  case KILN_DTYPE_F32:
    return 7;
  case KILN_DTYPE_F64:
    return 8;
  case KILN_DTYPE_BF16:
    return 9;
  default:
    return -1;
  }
}

static kiln_device_result encode_tile_map(kiln_device_queue *q,
                                          const kiln_device_tile_map *map,
                                          void *out) {
  const kiln_cuda_driver *cu = q->cu;
  int type = tensor_map_type(map->dtype);
  int swizzle = map->swizzle == 0     ? 0
                : map->swizzle == 32  ? 1
                : map->swizzle == 64  ? 2
                : map->swizzle == 128 ? 3
                                      : -1;
  if (type < 0 || swizzle < 0 || map->rank < 1 || map->rank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned long long dims[5], strides[4];
  unsigned box[5], element_strides[5];
  for (int d = 0; d < map->rank; ++d) {
    dims[d] = map->dims[d];
    box[d] = map->box[d];
    element_strides[d] = map->im2col ? map->element_strides[d] : 1;
    if (d > 0)
      strides[d - 1] = map->strides[d];
  }
  /* Interleave none, L2 promotion of 256 bytes, out-of-bounds elements
   * read as zeros. */
  if (map->im2col) {
    if (!cu->cuTensorMapEncodeIm2col)
      return CUDA_ERROR_NOT_SUPPORTED;
    if (map->rank < 3)
      return CUDA_ERROR_INVALID_VALUE;
    return cu->cuTensorMapEncodeIm2col(
        out, type, (unsigned)map->rank, (void *)(uintptr_t)map->base, dims,
        strides, map->lower, map->upper, map->channels, map->pixels,
        element_strides, 0, swizzle, 3, 0);
  }
  if (!cu->cuTensorMapEncodeTiled)
    return CUDA_ERROR_NOT_SUPPORTED;
  return cu->cuTensorMapEncodeTiled(out, type, (unsigned)map->rank,
                                    (void *)(uintptr_t)map->base, dims, strides,
                                    box, element_strides, 0, swizzle, 3, 0);
}

static kiln_device_result capture_begin(kiln_device_queue *q) {
  return q->cu->cuStreamBeginCapture(q->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
}

static kiln_device_result capture_end(kiln_device_queue *q,
                                      kiln_device_graph **out_graph) {
  *out_graph = NULL;
  CUgraph graph = NULL;
  CUresult r = q->cu->cuStreamEndCapture(q->stream, &graph);
  if (r != CUDA_SUCCESS || !graph) {
    if (graph)
      q->cu->cuGraphDestroy(graph);
    return r;
  }
  CUgraphExec exec = NULL;
  r = q->cu->cuGraphInstantiateWithFlags(&exec, graph, 0);
  q->cu->cuGraphDestroy(graph);
  if (r == CUDA_SUCCESS)
    *out_graph = (kiln_device_graph *)exec;
  return r;
}

static kiln_device_result graph_launch(kiln_device_queue *q,
                                       kiln_device_graph *graph) {
  return q->cu->cuGraphLaunch((CUgraphExec)graph, q->stream);
}

static void graph_destroy(kiln_device_queue *q, kiln_device_graph *graph) {
  q->cu->cuGraphExecDestroy((CUgraphExec)graph);
}

static void end_run(kiln_device_queue *q, int failed) {
  kiln_cuda_profile_end_run(q->profile, failed);
}

/* Called entered (kiln_instance_set_profiling): the profile is made on
 * first need. */
static kiln_status_t *set_timing(kiln_device_queue *q, int kernels, int marks) {
  if (!q->profile && !kernels && !marks)
    return NULL;
  if (!q->profile) {
    kiln_status_t *status =
        kiln_cuda_profile_create(q->cu, NULL, q->num_kernels, &q->profile);
    if (status)
      return status;
  }
  kiln_cuda_profile_set(q->profile, kernels, marks);
  return NULL;
}

static void mark(kiln_device_queue *q, int mark) {
  kiln_cuda_profile_mark(q->profile, q->stream, mark);
}

static void timing(kiln_device_queue *q, kiln_device_timing *out) {
  kiln_cuda_profile_timing(q->profile, out);
}

KILN_HIDDEN const kiln_device_driver kiln_device_driver_cuda = {
    .kind = "cuda",
    .graph_name = "CUDA graph",
    .op_names =
        {
            [KILN_DEVICE_OP_ALLOC] = "cuMemAlloc",
            [KILN_DEVICE_OP_UPLOAD] = "cuMemcpyHtoD",
            [KILN_DEVICE_OP_COPY_TO_DEVICE] = "cuMemcpyHtoDAsync",
            [KILN_DEVICE_OP_COPY_TO_HOST] = "cuMemcpyDtoHAsync",
            [KILN_DEVICE_OP_COPY_DEVICE] = "cuMemcpyDtoDAsync",
            [KILN_DEVICE_OP_SYNCHRONIZE] = "cuStreamSynchronize",
            [KILN_DEVICE_OP_ENTER] = "cuCtxPushCurrent",
            [KILN_DEVICE_OP_GRAPH_LAUNCH] = "cuGraphLaunch",
            [KILN_DEVICE_OP_TILE_MAP] = "cuTensorMapEncodeTiled",
            [KILN_DEVICE_OP_IM2COL_MAP] = "cuTensorMapEncodeIm2col",
            [KILN_DEVICE_OP_HOST_ALLOC] = "cuMemHostAlloc",
        },
    .open = device_open,
    .close = device_close,
    .error_text = error_text,
    .is_out_of_memory = is_out_of_memory,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .enter = enter,
    .leave = leave,
    .alloc = mem_alloc,
    .free = mem_free,
    .upload = upload,
    .copy_to_device = copy_to_device,
    .copy_to_host = copy_to_host,
    .copy_device = copy_device,
    .synchronize = synchronize,
    .host_alloc_mapped = host_alloc_mapped,
    .host_free = host_free,
    .set_stream = set_stream,
    .on_own_stream = on_own_stream,
    .launch = launch,
    .encode_tile_map = encode_tile_map,
    .capture_begin = capture_begin,
    .capture_end = capture_end,
    .graph_launch = graph_launch,
    .graph_destroy = graph_destroy,
    .end_run = end_run,
    .set_timing = set_timing,
    .mark = mark,
    .timing = timing,
};
