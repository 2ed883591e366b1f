/*===- HipDevice.c - The HIP driver of the model runtime ------------------===*
 *
 * kiln_device_driver_rocm (kiln/Runtime/Device.h) on the HIP runtime API,
 * opened with dlopen (HipDriver.c). The device kind is "rocm", as in the
 * signature's `device rocm <chip>` record and the kind of the device image
 * kilnc embeds (an AMDGPU code object, an ELF "hsaco").
 *
 * A device is one HIP device of a model, checked to be the signature's chip
 * (its gcnArchName up to the first ':', e.g. "gfx942" of
 * "gfx942:sramecc+:xnack-"). HIP has no explicit contexts: entering a queue
 * makes its device the calling thread's current one (hipSetDevice) and
 * leaving restores the device the thread had. A queue (one per instance)
 * creates its own non-blocking stream, loads the model's code object once
 * (hipModuleLoadData) and looks kernels up on their first launch. Graphs
 * are HIP graphs made by stream capture. There are no tile maps (no tensor
 * memory accelerator on AMD GPUs) and no per-kernel profiling yet.
 *===----------------------------------------------------------------------===*/
#include "HipDriver.h"
#include "kiln/Runtime/Device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kiln_device {
  kiln_hip_driver driver;
  int ordinal;
  char chip[32];
  char name[128]; /* the marketing name, e.g. "AMD Instinct MI300X" */
  char arch[128]; /* gcnArchName, e.g. "gfx942:sramecc+:xnack-" */
  char path[256]; /* the library opened, for messages */
};

struct kiln_device_queue {
  kiln_device *dev;
  const kiln_hip_driver *hip;
  int previous; /* the thread's device before enter */
  kiln_hip_stream own_stream, stream;
  kiln_hip_module module;
  int64_t image_size;
  uint64_t num_kernels;
  kiln_hip_function *functions; /* per kernel, looked up on first launch */
};

static kiln_status_t *hip_status(const kiln_hip_driver *hip,
                                 kiln_status_code_t code, kiln_hip_result r,
                                 const char *what) {
  char text[160];
  kiln_hip_error_text(hip, r, text, sizeof(text));
  if (r == KILN_HIP_ERROR_OUT_OF_MEMORY)
    code = KILN_STATUS_RESOURCE_EXHAUSTED;
  return kiln_rtc_make_status(code, "%s failed: %s", what, text);
}

static void error_text(const kiln_device *dev, kiln_device_result result,
                       char *out, size_t size) {
  kiln_hip_error_text(&dev->driver, result, out, size);
}

static int is_out_of_memory(kiln_device_result result) {
  return result == KILN_HIP_ERROR_OUT_OF_MEMORY;
}

/*===--------------------------------------------------------------------===*
 * Devices
 *===--------------------------------------------------------------------===*/

/* "gfx90a", "gfx942", "gfx1100": gfx and 2 to 6 digits or lower-case
 * letters. */
static int valid_chip(const char *chip) {
  if (strncmp(chip, "gfx", 3) != 0)
    return 0;
  size_t n = 0;
  for (const char *p = chip + 3; *p; ++p, ++n)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')))
      return 0;
  return n >= 2 && n <= 6;
}

/* The length of the processor part of a gcnArchName (before the first ':'
 * that starts its target features). */
static size_t processor_length(const char *arch) {
  const char *colon = strchr(arch, ':');
  return colon ? (size_t)(colon - arch) : strlen(arch);
}

static void device_close(kiln_device *dev) {
  if (!dev)
    return;
  kiln_hip_driver_close(&dev->driver);
  free(dev);
}

/* The HIP runtime libraries searched without a driver_path, newest first:
 * ROCm 7, ROCm 6, HIP 5 (Debian 12's libamdhip64-5). */
static const char *const kLibraries[] = {
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
};
#define KILN_NUM_LIBRARIES (sizeof(kLibraries) / sizeof(kLibraries[0]))

/* Opens `args->library`, else the first of kLibraries that opens. */
static kiln_status_t *open_library(kiln_device *dev,
                                   const kiln_device_open_args *args) {
  char error[512];
  if (args->library) {
    snprintf(dev->path, sizeof(dev->path), "%s", args->library);
    if (kiln_hip_driver_open(&dev->driver, args->library, error,
                             sizeof(error)) == 0)
      return NULL;
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for rocm %s: cannot load the HIP runtime (%s)",
        dev->chip, error);
  }
  /* Report why the first library that exists failed (a missing symbol or
   * dependency), else why the last one is absent. */
  char why[512] = "";
  for (size_t i = 0; i < KILN_NUM_LIBRARIES; ++i) {
    snprintf(dev->path, sizeof(dev->path), "%s", kLibraries[i]);
    if (kiln_hip_driver_open(&dev->driver, kLibraries[i], error,
                             sizeof(error)) == 0)
      return NULL;
    if (!why[0] || strstr(why, "No such file"))
      snprintf(why, sizeof(why), "%s", error);
  }
  dev->path[0] = '\0';
  return kiln_rtc_make_status(
      KILN_STATUS_FAILED_PRECONDITION,
      "model compiled for rocm %s: cannot load the HIP runtime: none of %s, "
      "%s, %s could be opened (%s); install ROCm or point KILN_ROCM_DRIVER "
      "at libamdhip64",
      dev->chip, kLibraries[0], kLibraries[1], kLibraries[2], why);
}

static kiln_status_t *no_device(const kiln_device *dev, const char *call,
                                kiln_hip_result r) {
  char text[160];
  kiln_hip_error_text(&dev->driver, r, text, sizeof(text));
  return kiln_rtc_make_status(
      KILN_STATUS_FAILED_PRECONDITION,
      "model compiled for rocm %s: no AMD GPU found by the HIP runtime (%s): "
      "%s failed: %s",
      dev->chip, dev->path, call, text);
}

static kiln_status_t *device_open(const kiln_device_open_args *args,
                                  kiln_device **out_device) {
  *out_device = NULL;
  const char *chip = args->chip;
  if (!valid_chip(chip))
    return kiln_rtc_make_status(KILN_STATUS_INCOMPATIBLE,
                                "model compiled for rocm '%s': unknown chip "
                                "(expected gfx<N>, e.g. gfx90a or gfx942)",
                                chip);
  kiln_device *dev = (kiln_device *)calloc(1, sizeof(*dev));
  if (!dev)
    return kiln_rtc_oom_status();
  *out_device = dev; /* closed by the caller on failure too */
  snprintf(dev->chip, sizeof(dev->chip), "%s", chip);
  kiln_status_t *status = open_library(dev, args);
  if (status)
    return status;

  /* Without a GPU (or without /dev/kfd access) HIP 5.x fails hipInit with
   * hipErrorInvalidDevice and hipGetDeviceCount with hipErrorNoDevice. */
  const kiln_hip_driver *hip = &dev->driver;
  kiln_hip_result r = hip->hipInit(0);
  if (r != KILN_HIP_SUCCESS)
    return no_device(dev, "hipInit", r);
  int count = 0;
  r = hip->hipGetDeviceCount(&count);
  if (r != KILN_HIP_SUCCESS)
    return no_device(dev, "hipGetDeviceCount", r);
  if (count <= 0)
    return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "model compiled for rocm %s: no AMD GPU found "
                                "by the HIP runtime (%s): it has 0 devices",
                                chip, dev->path);
  if (args->ordinal >= count)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for rocm %s: %s is '%d', expected a device index "
        "below %d",
        chip, args->ordinal_source ? args->ordinal_source : "the device index",
        (int)args->ordinal, count);
  dev->ordinal = (int)args->ordinal;

  r = kiln_hip_device_props(hip, dev->ordinal, dev->name, sizeof(dev->name),
                            dev->arch, sizeof(dev->arch));
  if (r != KILN_HIP_SUCCESS) {
    char what[160];
    snprintf(what, sizeof(what),
             "model compiled for rocm %s: querying HIP device %d: %s", chip,
             dev->ordinal, hip->props_symbol);
    return hip_status(hip, KILN_STATUS_FAILED_PRECONDITION, r, what);
  }
  if (!dev->name[0])
    snprintf(dev->name, sizeof(dev->name), "unnamed");
  size_t length = processor_length(dev->arch);
  if (strncmp(dev->arch, "gfx", 3) != 0 || length < 5)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for rocm %s: HIP device %d (%s) has no architecture "
        "name: gcnArchName is '%s' (%s of %s)",
        chip, dev->ordinal, dev->name, dev->arch, hip->props_symbol, dev->path);
  /* As the CUDA driver words a device of another compute capability: the
   * model is fine, the machine lacks the device it needs. */
  if (length != strlen(chip) || strncmp(dev->arch, chip, length) != 0)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "model compiled for rocm %s: HIP device %d (%s) is a %.*s (%s), the "
        "model needs %s; recompile it with kilnc --target=rocm:%.*s",
        chip, dev->ordinal, dev->name, (int)length, dev->arch, dev->arch, chip,
        (int)length, dev->arch);
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * Queues
 *===--------------------------------------------------------------------===*/

/* Makes the queue's device current, remembering the thread's. Enter and
 * leave do not nest on one queue (the generic code never nests them). */
static kiln_device_result enter(kiln_device_queue *q) {
  int previous = 0;
  kiln_hip_result r = q->hip->hipGetDevice(&previous);
  if (r != KILN_HIP_SUCCESS)
    return r;
  if (previous != q->dev->ordinal) {
    r = q->hip->hipSetDevice(q->dev->ordinal);
    if (r != KILN_HIP_SUCCESS)
      return r;
  }
  q->previous = previous;
  return KILN_HIP_SUCCESS;
}

static void leave(kiln_device_queue *q) {
  if (q->previous != q->dev->ordinal)
    q->hip->hipSetDevice(q->previous);
}

static void queue_destroy(kiln_device_queue *q) {
  if (!q)
    return;
  const kiln_hip_driver *hip = q->hip;
  if ((q->module || q->own_stream) && enter(q) == KILN_HIP_SUCCESS) {
    if (q->stream)
      hip->hipStreamSynchronize(q->stream);
    if (q->module)
      hip->hipModuleUnload(q->module);
    if (q->own_stream)
      hip->hipStreamDestroy(q->own_stream);
    leave(q);
  }
  free(q->functions);
  free(q);
}

static kiln_status_t *queue_setup(kiln_device_queue *q, const void *image) {
  const kiln_hip_driver *hip = q->hip;
  const kiln_device *dev = q->dev;
  kiln_hip_result r = enter(q);
  if (r != KILN_HIP_SUCCESS)
    return hip_status(hip, KILN_STATUS_FAILED_PRECONDITION, r, "hipSetDevice");
  kiln_status_t *status = NULL;
  r = hip->hipStreamCreateWithFlags(&q->own_stream,
                                    KILN_HIP_STREAM_NON_BLOCKING);
  if (r != KILN_HIP_SUCCESS) {
    q->own_stream = NULL;
    status = hip_status(hip, KILN_STATUS_FAILED_PRECONDITION, r,
                        "hipStreamCreateWithFlags");
  }
  q->stream = q->own_stream;
  if (!status && image) {
    r = hip->hipModuleLoadData(&q->module, image);
    if (r != KILN_HIP_SUCCESS) {
      q->module = NULL;
      char what[160], text[160];
      snprintf(what, sizeof(what),
               "model compiled for rocm %s: hipModuleLoadData of its "
               "%lld-byte device image",
               dev->chip, (long long)q->image_size);
      kiln_hip_error_text(hip, r, text, sizeof(text));
      if (r == KILN_HIP_ERROR_NO_BINARY_FOR_GPU)
        status = kiln_rtc_make_status(
            KILN_STATUS_FAILED_PRECONDITION,
            "%s failed: %s: the image has no code object that HIP device %d "
            "(%s, %s) runs; its target features (xnack, sramecc) must match "
            "the device's",
            what, text, dev->ordinal, dev->name, dev->arch);
      else
        status = hip_status(hip, KILN_STATUS_FAILED_PRECONDITION, r, what);
    }
  }
  leave(q);
  return status;
}

static kiln_status_t *queue_create(kiln_device *dev, const void *image,
                                   int64_t image_size, uint64_t num_kernels,
                                   const char *profile_path,
                                   kiln_device_queue **out_queue) {
  *out_queue = NULL;
  if (profile_path)
    return kiln_rtc_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "model compiled for rocm %s: per-kernel times (the profile_path "
        "option) are not implemented by the HIP driver; use rocprofv3 "
        "instead",
        dev->chip);
  kiln_device_queue *q = (kiln_device_queue *)calloc(1, sizeof(*q));
  if (!q)
    return kiln_rtc_oom_status();
  q->dev = dev;
  q->hip = &dev->driver;
  q->image_size = image_size;
  q->num_kernels = num_kernels;
  q->functions =
      (kiln_hip_function *)calloc(num_kernels + 1, sizeof(kiln_hip_function));
  kiln_status_t *status =
      !q->functions ? kiln_rtc_oom_status() : queue_setup(q, image);
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
  void *ptr = NULL;
  kiln_hip_result r = q->hip->hipMalloc(&ptr, bytes);
  *out_ptr = r == KILN_HIP_SUCCESS ? (kiln_device_ptr)(uintptr_t)ptr : 0;
  return r;
}

static void mem_free(kiln_device_queue *q, kiln_device_ptr ptr) {
  q->hip->hipFree((void *)(uintptr_t)ptr);
}

/* Pinned, coherent host memory mapped into the device's address space. */
static kiln_device_result host_alloc_mapped(kiln_device_queue *q, size_t bytes,
                                            void **out_host,
                                            kiln_device_ptr *out_ptr) {
  void *host = NULL, *ptr = NULL;
  *out_host = NULL;
  *out_ptr = 0;
  kiln_hip_result r =
      q->hip->hipHostMalloc(&host, bytes, KILN_HIP_HOST_MALLOC_FLAGS);
  if (r != KILN_HIP_SUCCESS)
    return r;
  r = q->hip->hipHostGetDevicePointer(&ptr, host, 0);
  if (r != KILN_HIP_SUCCESS) {
    q->hip->hipHostFree(host);
    return r;
  }
  memset(host, 0, bytes);
  *out_host = host;
  *out_ptr = (kiln_device_ptr)(uintptr_t)ptr;
  return KILN_HIP_SUCCESS;
}

static void host_free(kiln_device_queue *q, void *host) {
  if (host)
    q->hip->hipHostFree(host);
}

static kiln_device_result upload(kiln_device_queue *q, kiln_device_ptr dst,
                                 const void *src, size_t bytes) {
  return q->hip->hipMemcpyHtoD((kiln_hip_ptr)(uintptr_t)dst, src, bytes);
}

static kiln_device_result copy_to_device(kiln_device_queue *q,
                                         kiln_device_ptr dst, const void *src,
                                         size_t bytes) {
  return q->hip->hipMemcpyHtoDAsync((kiln_hip_ptr)(uintptr_t)dst, src, bytes,
                                    q->stream);
}

static kiln_device_result copy_to_host(kiln_device_queue *q, void *dst,
                                       kiln_device_ptr src, size_t bytes) {
  return q->hip->hipMemcpyDtoHAsync(dst, (kiln_hip_ptr)(uintptr_t)src, bytes,
                                    q->stream);
}

static kiln_device_result copy_device(kiln_device_queue *q, kiln_device_ptr dst,
                                      kiln_device_ptr src, size_t bytes) {
  return q->hip->hipMemcpyDtoDAsync((kiln_hip_ptr)(uintptr_t)dst,
                                    (kiln_hip_ptr)(uintptr_t)src, bytes,
                                    q->stream);
}

static kiln_device_result synchronize(kiln_device_queue *q) {
  return q->hip->hipStreamSynchronize(q->stream);
}

/* `stream` is a hipStream_t of the model's device. */
static kiln_status_t *set_stream(kiln_device_queue *q, void *stream) {
  kiln_hip_stream next = stream ? (kiln_hip_stream)stream : q->own_stream;
  if (next == q->stream)
    return NULL;
  kiln_hip_result r = enter(q);
  if (r != KILN_HIP_SUCCESS)
    return hip_status(q->hip, KILN_STATUS_INTERNAL, r, "hipSetDevice");
  r = q->hip->hipStreamSynchronize(q->stream);
  leave(q);
  if (r != KILN_HIP_SUCCESS)
    return hip_status(q->hip, KILN_STATUS_INTERNAL, r,
                      "hipStreamSynchronize of the previous stream");
  q->stream = next;
  return NULL;
}

static int on_own_stream(const kiln_device_queue *q) {
  return q->stream == q->own_stream;
}

/*===--------------------------------------------------------------------===*
 * Launches and graphs
 *===--------------------------------------------------------------------===*/

/* Dynamic LDS (shared memory) needs no opt-in on AMD GPUs: a launch asking
 * for more than the device has fails and names its kernel. Arguments go
 * through kernelParams (one pointer per parameter, as Triton's AMD launcher
 * passes them; HIP 5.2's header still warns they are unimplemented, a
 * stale note), never `extra`. */
static kiln_device_result launch(kiln_device_queue *q,
                                 const kiln_device_launch *l, char *call,
                                 size_t call_size) {
  const kiln_hip_driver *hip = q->hip;
  long long kernel = (long long)l->kernel;
  kiln_hip_function fn = q->functions[l->kernel];
  if (!fn) {
    kiln_hip_result r = hip->hipModuleGetFunction(&fn, q->module, l->name);
    if (r != KILN_HIP_SUCCESS) {
      snprintf(call, call_size, "hipModuleGetFunction(kernel %lld '%s')",
               kernel, l->name);
      return r;
    }
    q->functions[l->kernel] = fn;
  }
  kiln_hip_result r = hip->hipModuleLaunchKernel(
      fn, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
      l->block[2], l->shared_bytes, q->stream, l->params, NULL);
  if (r != KILN_HIP_SUCCESS)
    snprintf(call, call_size,
             "hipModuleLaunchKernel(kernel %lld '%s', grid %ux%ux%u, block "
             "%ux%ux%u)",
             kernel, l->name, l->grid[0], l->grid[1], l->grid[2], l->block[0],
             l->block[1], l->block[2]);
  return r;
}

static kiln_device_result capture_begin(kiln_device_queue *q) {
  return q->hip->hipStreamBeginCapture(q->stream,
                                       KILN_HIP_STREAM_CAPTURE_MODE_RELAXED);
}

static kiln_device_result capture_end(kiln_device_queue *q,
                                      kiln_device_graph **out_graph) {
  *out_graph = NULL;
  kiln_hip_graph graph = NULL;
  kiln_hip_result r = q->hip->hipStreamEndCapture(q->stream, &graph);
  if (r != KILN_HIP_SUCCESS || !graph) {
    if (graph)
      q->hip->hipGraphDestroy(graph);
    return r;
  }
  kiln_hip_graph_exec exec = NULL;
  r = q->hip->hipGraphInstantiateWithFlags(&exec, graph, 0);
  q->hip->hipGraphDestroy(graph);
  if (r == KILN_HIP_SUCCESS)
    *out_graph = (kiln_device_graph *)exec;
  return r;
}

static kiln_device_result graph_launch(kiln_device_queue *q,
                                       kiln_device_graph *graph) {
  return q->hip->hipGraphLaunch((kiln_hip_graph_exec)graph, q->stream);
}

static void graph_destroy(kiln_device_queue *q, kiln_device_graph *graph) {
  q->hip->hipGraphExecDestroy((kiln_hip_graph_exec)graph);
}

static void end_run(kiln_device_queue *q, int failed) {}

KILN_HIDDEN const kiln_device_driver kiln_device_driver_rocm = {
    .kind = "rocm",
    .graph_name = "HIP graph",
    .op_names =
        {
            [KILN_DEVICE_OP_ALLOC] = "hipMalloc",
            [KILN_DEVICE_OP_UPLOAD] = "hipMemcpyHtoD",
            [KILN_DEVICE_OP_COPY_TO_DEVICE] = "hipMemcpyHtoDAsync",
            [KILN_DEVICE_OP_COPY_TO_HOST] = "hipMemcpyDtoHAsync",
            [KILN_DEVICE_OP_COPY_DEVICE] = "hipMemcpyDtoDAsync",
            [KILN_DEVICE_OP_SYNCHRONIZE] = "hipStreamSynchronize",
            [KILN_DEVICE_OP_ENTER] = "hipSetDevice",
            [KILN_DEVICE_OP_GRAPH_LAUNCH] = "hipGraphLaunch",
            [KILN_DEVICE_OP_TILE_MAP] = "tile maps (none on AMD GPUs)",
            [KILN_DEVICE_OP_IM2COL_MAP] = "im2col maps (none on AMD GPUs)",
            [KILN_DEVICE_OP_HOST_ALLOC] = "hipHostMalloc",
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
    .encode_tile_map = NULL,
    .capture_begin = capture_begin,
    .capture_end = capture_end,
    .graph_launch = graph_launch,
    .graph_destroy = graph_destroy,
    .end_run = end_run,
};
