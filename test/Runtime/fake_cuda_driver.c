/*===- fake_cuda_driver.c - A CUDA driver that runs on the host -----------===*
 *
 * Test stand-in for libcuda.so.1 (loaded through KILN_CUDA_DRIVER): exports
 * the driver entry points the model runtime resolves (lib/Runtime/
 * CudaDriver.c), with "device memory" that is host malloc, copies that are
 * memcpy, and cuLaunchKernel running host implementations of the kernels
 * test/Runtime/fake_cuda_model.c launches. Every device pointer a copy or a
 * kernel touches must lie in a live allocation (else the call fails with
 * CUDA_ERROR_INVALID_VALUE / CUDA_ERROR_ILLEGAL_ADDRESS), and calls that need
 * a context fail without a current one, so the runtime's bookkeeping is
 * checked, not just its results. Stream capture records launches and
 * device-to-device copies into a graph that cuGraphLaunch replays.
 *
 * FAKE_CUDA_MODE (read at each call) holds words that inject failures:
 *   initfail  cuInit fails with CUDA_ERROR_NO_DEVICE
 *   nodevice  cuDeviceGetCount reports 0 devices
 *   cc80      the device has compute capability 8.0
 *   cc75      the device has compute capability 7.5
 *   badimage  cuModuleLoadData fails with CUDA_ERROR_INVALID_IMAGE
 *   nofunction  cuModuleGetFunction fails with CUDA_ERROR_NOT_FOUND
 *   launchfail  cuLaunchKernel fails with CUDA_ERROR_LAUNCH_FAILED
 *   nocapture   cuStreamBeginCapture fails with CUDA_ERROR_NOT_SUPPORTED
 *   noinstantiate  cuGraphInstantiateWithFlags fails likewise
 *   oom       cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY
 *   eventfail  cuEventCreate, cuEventRecord, cuEventSynchronize and
 *              cuEventElapsedTime fail with CUDA_ERROR_NOT_SUPPORTED
 *   tilemapfail  cuTensorMapEncodeTiled fails with CUDA_ERROR_INVALID_VALUE
 *   copyclock  async host-to-device copies advance the events' clock by
 *              3 ms, device-to-host ones by 5 ms
 * cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col are in
 * fake_cuda_tensor_maps.c; streams, capture, graphs and events in
 * fake_cuda_streams.c.
 * Events read a fake clock that each kernel run advances by (index of the
 * kernel in kKernels + 1) ms: scale takes 1 ms, add_weight_sum 2 ms.
 * fake_cuda_* functions let the test read counters and make device buffers.
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fake_cuda_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t gLock = PTHREAD_MUTEX_INITIALIZER;
fake_cuda_stats gStats;
static int gInitialized;
int64_t gClockMs;

int mode(const char *word) {
  const char *text = getenv("FAKE_CUDA_MODE");
  if (!text)
    return 0;
  size_t len = strlen(word);
  for (const char *p = text; (p = strstr(p, word)); p += len)
    if ((p == text || p[-1] == ' ' || p[-1] == ',') &&
        (p[len] == '\0' || p[len] == ' ' || p[len] == ','))
      return 1;
  return 0;
}

/*===--------------------------------------------------------------------===*
 * Memory
 *===--------------------------------------------------------------------===*/

typedef struct {
  char *ptr;
  size_t size;
} allocation;
static allocation *gAllocs;
static size_t gNumAllocs, gCapAllocs;

/* Whether [ptr, ptr + bytes) lies in one live allocation. Locked. */
static int in_device(const void *ptr, size_t bytes) {
  const char *p = (const char *)ptr;
  for (size_t i = 0; i < gNumAllocs; ++i)
    if (p >= gAllocs[i].ptr && p + bytes <= gAllocs[i].ptr + gAllocs[i].size)
      return 1;
  ++gStats.bad_pointers;
  return 0;
}

static CUresult device_alloc(CUdeviceptr *out, size_t bytes) {
  if (bytes == 0)
    return INVALID_VALUE;
  if (gNumAllocs == gCapAllocs) {
    size_t cap = gCapAllocs ? 2 * gCapAllocs : 64;
    allocation *grown = (allocation *)realloc(gAllocs, cap * sizeof(*grown));
    if (!grown)
      return OUT_OF_MEMORY;
    gAllocs = grown;
    gCapAllocs = cap;
  }
  void *mem = NULL; /* cuMemAlloc's alignment */
  if (posix_memalign(&mem, 256, bytes) != 0)
    return OUT_OF_MEMORY;
  char *ptr = (char *)memset(mem, 0, bytes);
  gAllocs[gNumAllocs].ptr = ptr;
  gAllocs[gNumAllocs].size = bytes;
  ++gNumAllocs;
  ++gStats.allocs;
  gStats.live_allocs = (int64_t)gNumAllocs;
  *out = (CUdeviceptr)(uintptr_t)ptr;
  return OK;
}

static CUresult device_free(CUdeviceptr ptr) {
  for (size_t i = 0; i < gNumAllocs; ++i) {
    if ((CUdeviceptr)(uintptr_t)gAllocs[i].ptr != ptr)
      continue;
    free(gAllocs[i].ptr);
    gAllocs[i] = gAllocs[--gNumAllocs];
    ++gStats.frees;
    gStats.live_allocs = (int64_t)gNumAllocs;
    return OK;
  }
  ++gStats.bad_pointers;
  return INVALID_VALUE;
}

/*===--------------------------------------------------------------------===*
 * Contexts: one primary context; a per-thread stack of current ones.
 *===--------------------------------------------------------------------===*/

static int gPrimary;
static __thread int tDepth;

CUresult need_context(void) { return tDepth > 0 ? OK : INVALID_CONTEXT; }

/*===--------------------------------------------------------------------===*
 * Kernels
 *===--------------------------------------------------------------------===*/

/* A memref among kernel parameters: allocated, aligned, offset, sizes,
 * strides. */
typedef struct {
  float *data; /* aligned + offset */
  int64_t sizes[2], strides[2];
} view;

static int read_view(void **params, int *at, int rank, view *v) {
  char *aligned = *(char **)params[*at + 1];
  int64_t offset = *(int64_t *)params[*at + 2];
  for (int d = 0; d < rank; ++d) {
    v->sizes[d] = *(int64_t *)params[*at + 3 + d];
    v->strides[d] = *(int64_t *)params[*at + 3 + rank + d];
  }
  *at += 3 + 2 * rank;
  v->data = (float *)(aligned + offset * 4);
  int64_t extent = 1;
  for (int d = 0; d < rank; ++d)
    extent += (v->sizes[d] - 1) * v->strides[d];
  for (int d = 0; d < rank; ++d)
    if (v->sizes[d] == 0)
      return 1;
  return in_device(v->data, (size_t)extent * 4);
}

#define AT2(v, i, j) (v).data[(i) * (v).strides[0] + (j) * (v).strides[1]]

static CUresult k_scale(void **params) {
  view x, t;
  int at = 0;
  if (!read_view(params, &at, 2, &x) || !read_view(params, &at, 2, &t))
    return ILLEGAL_ADDRESS;
  for (int64_t i = 0; i < x.sizes[0]; ++i)
    for (int64_t j = 0; j < x.sizes[1]; ++j)
      AT2(t, i, j) = 2.0f * AT2(x, i, j);
  return OK;
}

static CUresult k_add_weight_sum(void **params) {
  view t, w, y, a;
  int at = 0;
  if (!read_view(params, &at, 2, &t) || !read_view(params, &at, 1, &w) ||
      !read_view(params, &at, 2, &y) || !read_view(params, &at, 0, &a))
    return ILLEGAL_ADDRESS;
  float sum = 0;
  for (int64_t i = 0; i < t.sizes[0]; ++i)
    for (int64_t j = 0; j < t.sizes[1]; ++j) {
      AT2(y, i, j) = AT2(t, i, j) + w.data[j * w.strides[0]];
      sum += AT2(y, i, j);
    }
  a.data[0] = sum;
  return OK;
}

static CUresult k_count_positive(void **params) {
  view y, c;
  int at = 0;
  if (!read_view(params, &at, 2, &y) || !read_view(params, &at, 0, &c) ||
      !in_device(c.data, 8))
    return ILLEGAL_ADDRESS;
  int64_t count = 0;
  for (int64_t i = 0; i < y.sizes[0]; ++i)
    for (int64_t j = 0; j < y.sizes[1]; ++j)
      count += AT2(y, i, j) > 0;
  memcpy(c.data, &count, sizeof(count));
  return OK;
}

static CUresult k_gather_positive(void **params) {
  view y, p;
  int at = 0;
  if (!read_view(params, &at, 2, &y) || !read_view(params, &at, 1, &p))
    return ILLEGAL_ADDRESS;
  int64_t k = 0;
  for (int64_t i = 0; i < y.sizes[0]; ++i)
    for (int64_t j = 0; j < y.sizes[1]; ++j)
      if (AT2(y, i, j) > 0) {
        if (k >= p.sizes[0])
          return ILLEGAL_ADDRESS;
        p.data[k++ * p.strides[0]] = AT2(y, i, j);
      }
  return OK;
}

/* A device check: when some y is above 1000 and the record (10 int64s) is
 * still clear, writes check 2's record: y's indices and value. */
static CUresult k_check_large(void **params) {
  view y;
  int at = 0;
  if (!read_view(params, &at, 2, &y))
    return ILLEGAL_ADDRESS;
  int64_t *record = *(int64_t **)params[at + 1];
  if (!in_device(record, 10 * sizeof(int64_t)))
    return ILLEGAL_ADDRESS;
  for (int64_t i = 0; i < y.sizes[0]; ++i)
    for (int64_t j = 0; j < y.sizes[1]; ++j)
      if (AT2(y, i, j) > 1000 && record[0] == 0) {
        record[1] = 3;
        record[2] = i;
        record[3] = j;
        record[4] = (int64_t)AT2(y, i, j);
        record[0] = 2;
      }
  return OK;
}

typedef struct kernel {
  const char *name;
  int num_params;
  CUresult (*run)(void **params);
} kernel;

static const kernel kKernels[] = {
    {"scale", 14, k_scale},
    {"add_weight_sum", 7 + 5 + 7 + 3, k_add_weight_sum},
    {"count_positive", 7 + 3, k_count_positive},
    {"gather_positive", 7 + 5, k_gather_positive},
    {"check_large", 7 + 5, k_check_large},
};
#define NUM_KERNELS (sizeof(kKernels) / sizeof(kKernels[0]))

/*===--------------------------------------------------------------------===*
 * Running recorded operations
 *===--------------------------------------------------------------------===*/

CUresult run_node(const node *n) {
  if (n->k) {
    uint64_t values[32];
    void *params[32];
    for (int i = 0; i < n->k->num_params; ++i) {
      values[i] = n->values[i];
      params[i] = &values[i];
    }
    ++gStats.kernel_runs;
    gClockMs += (n->k - kKernels) + 1;
    return n->k->run(params);
  }
  if (!in_device((void *)(uintptr_t)n->dst, n->bytes) ||
      !in_device((void *)(uintptr_t)n->src, n->bytes))
    return INVALID_VALUE;
  memmove((void *)(uintptr_t)n->dst, (void *)(uintptr_t)n->src, n->bytes);
  return OK;
}

/*===--------------------------------------------------------------------===*
 * The driver API
 *===--------------------------------------------------------------------===*/

EXPORT CUresult cuInit(unsigned flags) {
  pthread_mutex_lock(&gLock);
  ++gStats.inits;
  pthread_mutex_unlock(&gLock);
  if (flags != 0)
    return INVALID_VALUE;
  if (mode("initfail"))
    return NO_DEVICE;
  gInitialized = 1;
  return OK;
}

static const struct {
  CUresult code;
  const char *name, *text;
} kErrors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
};

EXPORT CUresult cuGetErrorName(CUresult error, const char **str) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
    if (kErrors[i].code == error) {
      *str = kErrors[i].name;
      return OK;
    }
  *str = NULL;
  return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **str) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
    if (kErrors[i].code == error) {
      *str = kErrors[i].text;
      return OK;
    }
  *str = NULL;
  return INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  if (!gInitialized)
    return NOT_INITIALIZED;
  *count = mode("nodevice") ? 0 : 1;
  return OK;
}

EXPORT CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal != 0 || mode("nodevice"))
    return INVALID_DEVICE;
  *device = 0;
  return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, int dev) {
  const char *text = mode("cc80")   ? "Fake A100"
                     : mode("cc75") ? "Fake T4"
                                    : "Fake H200";
  if (dev != 0 || len <= 0)
    return INVALID_VALUE;
  strncpy(name, text, (size_t)len - 1);
  name[len - 1] = '\0';
  return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attrib, int dev) {
  if (dev != 0)
    return INVALID_DEVICE;
  if (attrib == 75)
    *value = mode("cc80") ? 8 : mode("cc75") ? 7 : 9;
  else if (attrib == 76)
    *value = mode("cc75") ? 5 : 0;
  else
    return INVALID_VALUE;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  if (dev != 0)
    return INVALID_DEVICE;
  pthread_mutex_lock(&gLock);
  ++gStats.ctx_retains;
  pthread_mutex_unlock(&gLock);
  *ctx = &gPrimary;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  if (dev != 0)
    return INVALID_DEVICE;
  LOCKED((++gStats.ctx_releases, OK));
}

EXPORT CUresult cuCtxPushCurrent_v2(void *ctx) {
  if (ctx != &gPrimary)
    return INVALID_CONTEXT;
  ++tDepth;
  return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **ctx) {
  if (tDepth == 0)
    return INVALID_CONTEXT;
  --tDepth;
  if (ctx)
    *ctx = &gPrimary;
  return OK;
}

typedef struct module {
  int magic;
} module;

EXPORT CUresult cuModuleLoadData(module **out, const void *image) {
  if (need_context())
    return INVALID_CONTEXT;
  if (mode("badimage") || strncmp((const char *)image, "KILNFAKEIMAGE", 13))
    return INVALID_IMAGE;
  module *m = (module *)malloc(sizeof(module));
  if (!m)
    return OUT_OF_MEMORY;
  m->magic = 0x30D;
  LOCKED((++gStats.module_loads, *out = m, OK));
}

EXPORT CUresult cuModuleUnload(module *m) {
  if (!m || m->magic != 0x30D)
    return INVALID_HANDLE;
  m->magic = 0;
  free(m);
  LOCKED((++gStats.module_unloads, OK));
}

EXPORT CUresult cuModuleGetFunction(const kernel **fn, module *m,
                                    const char *name) {
  if (!m || m->magic != 0x30D)
    return INVALID_HANDLE;
  pthread_mutex_lock(&gLock);
  ++gStats.function_lookups;
  pthread_mutex_unlock(&gLock);
  if (mode("nofunction"))
    return NOT_FOUND;
  for (size_t i = 0; i < NUM_KERNELS; ++i)
    if (strcmp(kKernels[i].name, name) == 0) {
      *fn = &kKernels[i];
      return OK;
    }
  return NOT_FOUND;
}

EXPORT CUresult cuFuncSetAttribute(const kernel *fn, int attrib, int value) {
  if (fn && attrib == 9) // the preferred shared memory carveout, in percent
    return value < -1 || value > 100 ? INVALID_VALUE : OK;
  if (!fn || attrib != 8 || value < 0 || value > 227 * 1024)
    return INVALID_VALUE;
  return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  if (need_context())
    return INVALID_CONTEXT;
  if (mode("oom"))
    return OUT_OF_MEMORY;
  LOCKED(device_alloc(ptr, bytes));
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  if (need_context())
    return INVALID_CONTEXT;
  LOCKED(device_free(ptr));
}

/* Mapped host memory: a device allocation whose device pointer is its host
 * address (as with unified addressing). */
EXPORT CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags) {
  if (need_context())
    return INVALID_CONTEXT;
  if (!ptr || !(flags & 0x2))
    return INVALID_VALUE;
  CUdeviceptr at = 0;
  pthread_mutex_lock(&gLock);
  CUresult r = device_alloc(&at, bytes);
  if (r == OK)
    ++gStats.host_allocs;
  pthread_mutex_unlock(&gLock);
  *ptr = r == OK ? (void *)(uintptr_t)at : NULL;
  return r;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *ptr,
                                             unsigned int flags) {
  if (need_context())
    return INVALID_CONTEXT;
  pthread_mutex_lock(&gLock);
  int ok = in_device(ptr, 1);
  pthread_mutex_unlock(&gLock);
  if (!ok || flags != 0)
    return INVALID_VALUE;
  *out = (CUdeviceptr)(uintptr_t)ptr;
  return OK;
}

EXPORT CUresult cuMemFreeHost(void *ptr) {
  if (need_context())
    return INVALID_CONTEXT;
  LOCKED(device_free((CUdeviceptr)(uintptr_t)ptr));
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t bytes) {
  if (!in_device((void *)(uintptr_t)dst, bytes))
    return INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  ++gStats.htod;
  gStats.htod_bytes += (int64_t)bytes;
  return OK;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                size_t bytes) {
  if (need_context())
    return INVALID_CONTEXT;
  pthread_mutex_lock(&gLock);
  ++gStats.htod_sync;
  CUresult r = htod(dst, src, bytes);
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                     size_t bytes, stream *s) {
  if (need_context() || check_stream(s))
    return need_context() ? INVALID_CONTEXT : INVALID_HANDLE;
  if (s->capturing) /* not needed by the runtime: treated as a bug */
    LOCKED((s->invalidated = 1, CAPTURE_UNSUPPORTED));
  LOCKED((gClockMs += mode("copyclock") ? 3 : 0, htod(dst, src, bytes)));
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                                     stream *s) {
  if (need_context() || check_stream(s))
    return need_context() ? INVALID_CONTEXT : INVALID_HANDLE;
  pthread_mutex_lock(&gLock);
  CUresult r = OK;
  if (s->capturing) {
    s->invalidated = 1;
    r = CAPTURE_UNSUPPORTED;
  } else if (!in_device((void *)(uintptr_t)src, bytes)) {
    r = INVALID_VALUE;
  } else {
    memcpy(dst, (void *)(uintptr_t)src, bytes);
    ++gStats.dtoh;
    gClockMs += mode("copyclock") ? 5 : 0;
  }
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, stream *s) {
  if (need_context() || check_stream(s))
    return need_context() ? INVALID_CONTEXT : INVALID_HANDLE;
  node n;
  memset(&n, 0, sizeof(n));
  n.dst = dst;
  n.src = src;
  n.bytes = bytes;
  pthread_mutex_lock(&gLock);
  ++gStats.dtod;
  CUresult r = s->capturing ? record(s, n) : run_node(&n);
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuLaunchKernel(const kernel *fn, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, stream *s,
                               void **params, void **extra) {
  if (need_context())
    return INVALID_CONTEXT;
  pthread_mutex_lock(&gLock);
  ++gStats.launch_attempts;
  pthread_mutex_unlock(&gLock);
  if (check_stream(s) || !fn)
    return INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 ||
      shared > 227 * 1024 || extra || !params)
    return INVALID_VALUE;
  if (mode("launchfail"))
    return LAUNCH_FAILED;
  node n;
  memset(&n, 0, sizeof(n));
  n.k = fn;
  for (int i = 0; i < fn->num_params; ++i)
    memcpy(&n.values[i], params[i], 8);
  pthread_mutex_lock(&gLock);
  ++gStats.launches;
  gStats.last_launch_stream = s;
  CUresult r = s->capturing ? record(s, n) : run_node(&n);
  pthread_mutex_unlock(&gLock);
  return r;
}

/* cuda.h's CUlaunchAttribute and CUlaunchConfig (64-bit layout). */
typedef struct {
  int id;
  char pad[4];
  union {
    char pad[64];
    int programmatic;
  } value;
} launch_attribute;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, shared;
  stream *s;
  launch_attribute *attrs;
  unsigned num_attrs;
} launch_config;

/* Takes one attribute, programmatic stream serialization (6) allowed. */
EXPORT CUresult cuLaunchKernelEx(const launch_config *config, const kernel *fn,
                                 void **params, void **extra) {
  if (!config || config->num_attrs != 1 || !config->attrs ||
      config->attrs[0].id != 6 || config->attrs[0].value.programmatic != 1)
    return INVALID_VALUE;
  CUresult r = cuLaunchKernel(fn, config->gx, config->gy, config->gz,
                              config->bx, config->by, config->bz,
                              config->shared, config->s, params, extra);
  if (r == OK)
    LOCKED((++gStats.dependent_launches, OK));
  return r;
}

/*===--------------------------------------------------------------------===*
 * Test controls
 *===--------------------------------------------------------------------===*/

EXPORT fake_cuda_stats fake_cuda_get_stats(void) {
  pthread_mutex_lock(&gLock);
  fake_cuda_stats stats = gStats;
  pthread_mutex_unlock(&gLock);
  return stats;
}

EXPORT void fake_cuda_reset_stats(void) {
  pthread_mutex_lock(&gLock);
  int64_t live = gStats.live_allocs, graphs = gStats.live_graphs,
          execs = gStats.live_graph_execs, events = gStats.live_events;
  memset(&gStats, 0, sizeof(gStats));
  gStats.live_events = events;
  gStats.live_allocs = live;
  gStats.live_graphs = graphs;
  gStats.live_graph_execs = execs;
  pthread_mutex_unlock(&gLock);
}

EXPORT int fake_cuda_context_depth(void) { return tDepth; }

EXPORT void *fake_cuda_device_alloc(size_t bytes) {
  CUdeviceptr ptr = 0;
  pthread_mutex_lock(&gLock);
  CUresult r = device_alloc(&ptr, bytes);
  pthread_mutex_unlock(&gLock);
  return r == OK ? (void *)(uintptr_t)ptr : NULL;
}

EXPORT void fake_cuda_device_free(void *ptr) {
  pthread_mutex_lock(&gLock);
  device_free((CUdeviceptr)(uintptr_t)ptr);
  pthread_mutex_unlock(&gLock);
}

EXPORT void *fake_cuda_stream_create(void) {
  stream *s = (stream *)calloc(1, sizeof(stream));
  if (s)
    s->magic = STREAM_MAGIC;
  return s;
}

EXPORT void fake_cuda_stream_destroy(void *s) {
  if (s)
    ((stream *)s)->magic = 0;
  free(s);
}
