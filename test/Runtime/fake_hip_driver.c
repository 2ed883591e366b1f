/*===- fake_hip_driver.c - A HIP runtime that runs on the host ------------===*
 *
 * Test stand-in for libamdhip64 (loaded through the driver_path option or
 * KILN_ROCM_DRIVER): exports the HIP entry points the model runtime
 * resolves (lib/Runtime/Drivers/HIP/HipDriver.c), declared by the real
 * hip/hip_runtime_api.h (HIP 5.x, Debian's libamdhip64-dev), so their
 * signatures are the library's. "Device memory" is host malloc, copies are
 * memcpy, and hipModuleLaunchKernel runs host implementations of the
 * kernels test/Runtime/fake_cuda_model.c launches (built with
 * -DKILN_FAKE_DEVICE_KIND="rocm"). Every device pointer a copy or a kernel
 * touches must lie in a live allocation (else hipErrorInvalidValue /
 * hipErrorIllegalAddress), and calls on a stream, module or allocation of
 * another device than the thread's current one are counted (wrong_device),
 * so the runtime's bookkeeping and its hipSetDevice calls are checked, not
 * just its results. Stream capture records launches and device-to-device
 * copies into a graph that hipGraphLaunch replays.
 *
 * Built twice: as a ROCm 6 runtime (exports hipGetDevicePropertiesR0600,
 * writing the hipDeviceProp_tR0600 layout, and hipGetDeviceProperties with
 * the old layout, as ROCm 6 does) and with -DFAKE_HIP_5 as a HIP 5.x one
 * (hipGetDeviceProperties only, filling the header's hipDeviceProp_t;
 * hipGetErrorString returns the error's name, as HIP 5.2 does).
 *
 * FAKE_HIP_MODE (read at each call) holds words that change the device or
 * inject failures:
 *   initfail    hipInit fails with hipErrorInvalidDevice (HIP 5.2 without
 *               a GPU)
 *   nodevice    hipGetDeviceCount fails with hipErrorNoDevice
 *   zerodevices hipGetDeviceCount reports 0 devices
 *   twodevices  two devices: 0 is a gfx90a, 1 a gfx942
 *   gfx90a      device 0 is a gfx90a (default: gfx942)
 *   noarch      gcnArchName is empty
 *   nobinary    hipModuleLoadData fails with hipErrorNoBinaryForGpu
 *   nofunction  hipModuleGetFunction fails with hipErrorNotFound
 *   launchfail  hipModuleLaunchKernel fails with hipErrorLaunchFailure
 *   nocapture   hipStreamBeginCapture fails with hipErrorNotSupported
 *   noinstantiate  hipGraphInstantiateWithFlags fails likewise
 *   oom         hipMalloc fails with hipErrorOutOfMemory
 * fake_hip_* functions let the test read counters, fail allocations after
 * a count, and make device buffers and streams.
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fake_hip_driver.h"

#include <hip/hip_runtime_api.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t gLock = PTHREAD_MUTEX_INITIALIZER;
static fake_hip_stats gStats;
static int gInitialized;
static int64_t gAllocsLeft = -1; /* fake_hip_fail_alloc_after */
static __thread int tDevice;     /* hipGetDevice of this thread */

static int mode(const char *word) {
  const char *text = getenv("FAKE_HIP_MODE");
  if (!text)
    return 0;
  size_t len = strlen(word);
  for (const char *p = text; (p = strstr(p, word)); p += len)
    if ((p == text || p[-1] == ' ' || p[-1] == ',') &&
        (p[len] == '\0' || p[len] == ' ' || p[len] == ','))
      return 1;
  return 0;
}

static int num_devices(void) { return mode("twodevices") ? 2 : 1; }

/* Counts a call on an object of `device` made while another is current. */
static void check_device(int device) {
  if (device != tDevice)
    ++gStats.wrong_device;
}

/*===--------------------------------------------------------------------===*
 * Memory
 *===--------------------------------------------------------------------===*/

typedef struct {
  char *ptr;
  size_t size;
  int device;
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

static hipError_t device_alloc(void **out, size_t bytes, int device) {
  if (bytes == 0)
    return hipErrorInvalidValue;
  if (gNumAllocs == gCapAllocs) {
    size_t cap = gCapAllocs ? 2 * gCapAllocs : 64;
    allocation *grown = (allocation *)realloc(gAllocs, cap * sizeof(*grown));
    if (!grown)
      return hipErrorOutOfMemory;
    gAllocs = grown;
    gCapAllocs = cap;
  }
  void *mem = NULL; /* hipMalloc's alignment */
  if (posix_memalign(&mem, 256, bytes) != 0)
    return hipErrorOutOfMemory;
  gAllocs[gNumAllocs].ptr = (char *)memset(mem, 0, bytes);
  gAllocs[gNumAllocs].size = bytes;
  gAllocs[gNumAllocs].device = device;
  ++gNumAllocs;
  ++gStats.allocs;
  gStats.allocs_on_device1 += device == 1;
  gStats.live_allocs = (int64_t)gNumAllocs;
  *out = mem;
  return hipSuccess;
}

static hipError_t device_free(void *ptr, int check) {
  for (size_t i = 0; i < gNumAllocs; ++i) {
    if (gAllocs[i].ptr != ptr)
      continue;
    if (check)
      check_device(gAllocs[i].device);
    free(gAllocs[i].ptr);
    gAllocs[i] = gAllocs[--gNumAllocs];
    ++gStats.frees;
    gStats.live_allocs = (int64_t)gNumAllocs;
    return hipSuccess;
  }
  ++gStats.bad_pointers;
  return hipErrorInvalidValue;
}

/*===--------------------------------------------------------------------===*
 * Kernels (those of fake_cuda_model.c's static and check models)
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
  int64_t extent = 1;
  for (int d = 0; d < rank; ++d) {
    v->sizes[d] = *(int64_t *)params[*at + 3 + d];
    v->strides[d] = *(int64_t *)params[*at + 3 + rank + d];
    extent += (v->sizes[d] - 1) * v->strides[d];
  }
  *at += 3 + 2 * rank;
  v->data = (float *)(aligned + offset * 4);
  return in_device(v->data, (size_t)extent * 4);
}

#define AT2(v, i, j) (v).data[(i) * (v).strides[0] + (j) * (v).strides[1]]

static hipError_t k_scale(void **params) {
  view x, t;
  int at = 0;
  if (!read_view(params, &at, 2, &x) || !read_view(params, &at, 2, &t))
    return hipErrorIllegalAddress;
  for (int64_t i = 0; i < x.sizes[0]; ++i)
    for (int64_t j = 0; j < x.sizes[1]; ++j)
      AT2(t, i, j) = 2.0f * AT2(x, i, j);
  return hipSuccess;
}

static hipError_t k_add_weight_sum(void **params) {
  view t, w, y, a;
  int at = 0;
  if (!read_view(params, &at, 2, &t) || !read_view(params, &at, 1, &w) ||
      !read_view(params, &at, 2, &y) || !read_view(params, &at, 0, &a))
    return hipErrorIllegalAddress;
  float sum = 0;
  for (int64_t i = 0; i < t.sizes[0]; ++i)
    for (int64_t j = 0; j < t.sizes[1]; ++j) {
      AT2(y, i, j) = AT2(t, i, j) + w.data[j * w.strides[0]];
      sum += AT2(y, i, j);
    }
  a.data[0] = sum;
  return hipSuccess;
}

/* A device check: when some y is above 1000 and the record (10 int64s) is
 * still clear, writes check 2's record: y's indices and value. */
static hipError_t k_check_large(void **params) {
  view y;
  int at = 0;
  if (!read_view(params, &at, 2, &y))
    return hipErrorIllegalAddress;
  int64_t *record = *(int64_t **)params[at + 1];
  if (!in_device(record, 10 * sizeof(int64_t)))
    return hipErrorIllegalAddress;
  for (int64_t i = 0; i < y.sizes[0]; ++i)
    for (int64_t j = 0; j < y.sizes[1]; ++j)
      if (AT2(y, i, j) > 1000 && record[0] == 0) {
        record[1] = 3;
        record[2] = i;
        record[3] = j;
        record[4] = (int64_t)AT2(y, i, j);
        record[0] = 2;
      }
  return hipSuccess;
}

typedef struct kernel {
  const char *name;
  int num_params;
  hipError_t (*run)(void **params);
} kernel;

static const kernel kKernels[] = {
    {"scale", 14, k_scale},
    {"add_weight_sum", 7 + 5 + 7 + 3, k_add_weight_sum},
    {"check_large", 7 + 5, k_check_large},
};
#define NUM_KERNELS (sizeof(kKernels) / sizeof(kKernels[0]))

/*===--------------------------------------------------------------------===*
 * Handles
 *===--------------------------------------------------------------------===*/

#define MODULE_MAGIC 0x30D
#define STREAM_MAGIC 0x5157

/* A loaded module: one function handle per kernel. */
struct ihipModuleSymbol_t {
  const kernel *k;
  struct ihipModule_t *module;
};
struct ihipModule_t {
  int magic, device;
  struct ihipModuleSymbol_t functions[NUM_KERNELS];
};

/* A recorded operation: a launch (its parameter values copied, 8 bytes
 * each) or a device-to-device copy. */
typedef struct node {
  const kernel *k;
  uint64_t values[32];
  void *dst, *src;
  size_t bytes;
} node;

struct ihipGraph {
  node *nodes;
  size_t count, cap;
};
struct hipGraphExec {
  node *nodes;
  size_t count;
};

struct ihipStream_t {
  int magic, device;
  int capturing, invalidated;
  struct ihipGraph *capture;
};

/* The runtime never uses the null stream. */
static hipError_t check_stream(hipStream_t s) {
  return s && s->magic == STREAM_MAGIC ? hipSuccess : hipErrorInvalidHandle;
}

static hipError_t record(hipStream_t s, node n) {
  struct ihipGraph *g = s->capture;
  if (g->count == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 8;
    node *grown = (node *)realloc(g->nodes, cap * sizeof(node));
    if (!grown)
      return hipErrorOutOfMemory;
    g->nodes = grown;
    g->cap = cap;
  }
  g->nodes[g->count++] = n;
  return hipSuccess;
}

static hipError_t run_node(const node *n) {
  if (n->k) {
    uint64_t values[32];
    void *params[32];
    for (int i = 0; i < n->k->num_params; ++i) {
      values[i] = n->values[i];
      params[i] = &values[i];
    }
    ++gStats.kernel_runs;
    return n->k->run(params);
  }
  if (!in_device(n->dst, n->bytes) || !in_device(n->src, n->bytes))
    return hipErrorInvalidValue;
  memmove(n->dst, n->src, n->bytes);
  return hipSuccess;
}

/*===--------------------------------------------------------------------===*
 * Devices and errors
 *===--------------------------------------------------------------------===*/

#define LOCKED(expr)                                                           \
  do {                                                                         \
    pthread_mutex_lock(&gLock);                                                \
    hipError_t result_ = (expr);                                               \
    pthread_mutex_unlock(&gLock);                                              \
    return result_;                                                            \
  } while (0)

EXPORT hipError_t hipInit(unsigned int flags) {
  pthread_mutex_lock(&gLock);
  ++gStats.inits;
  pthread_mutex_unlock(&gLock);
  if (flags != 0)
    return hipErrorInvalidValue;
  if (mode("initfail"))
    return hipErrorInvalidDevice;
  gInitialized = 1;
  return hipSuccess;
}

static const struct {
  hipError_t code;
  const char *name, *text;
} kErrors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorNoDevice, "hipErrorNoDevice",
     "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidImage, "hipErrorInvalidImage",
     "device kernel image is invalid"},
    {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu",
     "no kernel image is available for execution on the device"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorIllegalState, "hipErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorIllegalAddress, "hipErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {hipErrorLaunchFailure, "hipErrorLaunchFailure",
     "unspecified launch failure"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorStreamCaptureUnsupported, "hipErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {hipErrorStreamCaptureInvalidated, "hipErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
};

static size_t error_index(hipError_t error) {
  for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
    if (kErrors[i].code == error)
      return i;
  return (size_t)-1;
}

EXPORT const char *hipGetErrorName(hipError_t error) {
  size_t i = error_index(error);
  return i == (size_t)-1 ? "hipErrorUnknown" : kErrors[i].name;
}

EXPORT const char *hipGetErrorString(hipError_t error) {
#ifdef FAKE_HIP_5
  return hipGetErrorName(error);
#else
  size_t i = error_index(error);
  return i == (size_t)-1 ? "unknown error" : kErrors[i].text;
#endif
}

EXPORT hipError_t hipGetDeviceCount(int *count) {
  if (!gInitialized)
    return hipErrorNotInitialized;
  if (mode("nodevice")) {
    *count = 0;
    return hipErrorNoDevice;
  }
  *count = mode("zerodevices") ? 0 : num_devices();
  return hipSuccess;
}

EXPORT hipError_t hipSetDevice(int device) {
  if (device < 0 || device >= num_devices())
    return hipErrorInvalidDevice;
  tDevice = device;
  LOCKED((++gStats.set_device_calls, hipSuccess));
}

EXPORT hipError_t hipGetDevice(int *device) {
  *device = tDevice;
  return hipSuccess;
}

/* Device 0 is a gfx90a with two devices or in mode gfx90a. */
static void device_names(int device, const char **name, const char **arch) {
  int mi210 = device == 0 && (mode("gfx90a") || mode("twodevices"));
  *name = mi210 ? "Fake MI210" : "Fake MI300X";
  *arch = mode("noarch") ? ""
          : mi210        ? "gfx90a:sramecc+:xnack-"
                         : "gfx942:sramecc+:xnack-";
}

/* HIP 5.x's layout, from the header. */
EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t *props, int device) {
  if (device < 0 || device >= num_devices())
    return hipErrorInvalidDevice;
  const char *name, *arch;
  device_names(device, &name, &arch);
  memset(props, 0x5A, sizeof(*props)); /* every byte written, as HIP does */
  strcpy(props->name, name);
  strcpy(props->gcnArchName, arch);
  props->warpSize = 64;
  LOCKED((++gStats.props_r0000, hipSuccess));
}

#ifndef FAKE_HIP_5
/* hipDeviceProp_tR0600 of ROCm 6 and 7 (hip_runtime_api.h), field by field
 * where they are of one type; Kiln reads name and gcnArchName. */
typedef struct {
  char name[256];
  char uuid[16];
  char luid[8];
  unsigned luidDeviceNodeMask;
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment, texturePitchAlignment;
  int deviceOverlap_to_maxSurfaceCubemapLayered[46];
  size_t surfaceAlignment;
  int concurrentKernels_to_localL1CacheSupported[16];
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor_to_cooperativeMultiDeviceLaunch[12];
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables_to_accessPolicyMaxWindowSize[4];
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported_to_unifiedFunctionPointers[13];
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
  size_t maxSharedMemoryPerMultiProcessor;
  int clockInstructionRate;
  unsigned arch; /* hipDeviceArch_t: 17 one-bit fields */
  unsigned *hdpMemFlushCntl, *hdpRegFlushCntl;
  int cooperativeMultiDeviceUnmatched[4];
  int isLargeBar, asicRevision;
} fake_props_r0600;

_Static_assert(offsetof(fake_props_r0600, gcnArchName) == 1160,
               "hipDeviceProp_tR0600::gcnArchName");
_Static_assert(sizeof(fake_props_r0600) == 1472, "hipDeviceProp_tR0600");

EXPORT hipError_t hipGetDevicePropertiesR0600(fake_props_r0600 *props,
                                              int device) {
  if (device < 0 || device >= num_devices())
    return hipErrorInvalidDevice;
  const char *name, *arch;
  device_names(device, &name, &arch);
  memset(props, 0x5A, sizeof(*props));
  strcpy(props->name, name);
  strcpy(props->gcnArchName, arch);
  props->warpSize = 64;
  LOCKED((++gStats.props_r0600, hipSuccess));
}
#endif

/*===--------------------------------------------------------------------===*
 * Modules and memory
 *===--------------------------------------------------------------------===*/

EXPORT hipError_t hipModuleLoadData(hipModule_t *out, const void *image) {
  if (mode("nobinary"))
    return hipErrorNoBinaryForGpu;
  if (!image || strncmp((const char *)image, "KILNFAKEIMAGE", 13) != 0)
    return hipErrorInvalidImage;
  hipModule_t m = (hipModule_t)calloc(1, sizeof(*m));
  if (!m)
    return hipErrorOutOfMemory;
  m->magic = MODULE_MAGIC;
  m->device = tDevice;
  for (size_t i = 0; i < NUM_KERNELS; ++i) {
    m->functions[i].k = &kKernels[i];
    m->functions[i].module = m;
  }
  *out = m;
  LOCKED((++gStats.module_loads, hipSuccess));
}

EXPORT hipError_t hipModuleUnload(hipModule_t m) {
  if (!m || m->magic != MODULE_MAGIC)
    return hipErrorInvalidHandle;
  pthread_mutex_lock(&gLock);
  check_device(m->device);
  ++gStats.module_unloads;
  pthread_mutex_unlock(&gLock);
  m->magic = 0;
  free(m);
  return hipSuccess;
}

EXPORT hipError_t hipModuleGetFunction(hipFunction_t *fn, hipModule_t m,
                                       const char *name) {
  if (!m || m->magic != MODULE_MAGIC)
    return hipErrorInvalidHandle;
  pthread_mutex_lock(&gLock);
  ++gStats.function_lookups;
  pthread_mutex_unlock(&gLock);
  if (mode("nofunction"))
    return hipErrorNotFound;
  for (size_t i = 0; i < NUM_KERNELS; ++i)
    if (strcmp(kKernels[i].name, name) == 0) {
      *fn = &m->functions[i];
      return hipSuccess;
    }
  return hipErrorNotFound;
}

EXPORT hipError_t hipMalloc(void **ptr, size_t bytes) {
  *ptr = NULL;
  if (mode("oom"))
    return hipErrorOutOfMemory;
  pthread_mutex_lock(&gLock);
  hipError_t r = hipErrorOutOfMemory;
  if (gAllocsLeft != 0) {
    r = device_alloc(ptr, bytes, tDevice);
    if (r == hipSuccess && gAllocsLeft > 0)
      --gAllocsLeft;
  }
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipFree(void *ptr) { LOCKED(device_free(ptr, 1)); }

/* Mapped host memory: a device allocation whose device pointer is its host
 * address (as on AMD GPUs with large BARs). */
EXPORT hipError_t hipHostMalloc(void **ptr, size_t bytes, unsigned int flags) {
  if (!ptr || !(flags & hipHostMallocMapped))
    return hipErrorInvalidValue;
  pthread_mutex_lock(&gLock);
  hipError_t r = device_alloc(ptr, bytes, tDevice);
  gStats.host_allocs += r == hipSuccess;
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipHostGetDevicePointer(void **out, void *ptr,
                                          unsigned int flags) {
  pthread_mutex_lock(&gLock);
  int ok = in_device(ptr, 1);
  pthread_mutex_unlock(&gLock);
  if (!ok || flags != 0)
    return hipErrorInvalidValue;
  *out = ptr;
  return hipSuccess;
}

EXPORT hipError_t hipHostFree(void *ptr) { LOCKED(device_free(ptr, 0)); }

static hipError_t htod(void *dst, const void *src, size_t bytes) {
  if (!in_device(dst, bytes))
    return hipErrorInvalidValue;
  memcpy(dst, src, bytes);
  ++gStats.htod;
  return hipSuccess;
}

EXPORT hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void *src, size_t bytes) {
  pthread_mutex_lock(&gLock);
  ++gStats.htod_sync;
  hipError_t r = htod(dst, src, bytes);
  pthread_mutex_unlock(&gLock);
  return r;
}

/* The checks of every call on a stream (locked). */
static hipError_t on_stream(hipStream_t s) {
  if (check_stream(s))
    return hipErrorInvalidHandle;
  check_device(s->device);
  if (s->capturing) /* a copy the runtime never captures: treated as a bug */
    s->invalidated = 1;
  return s->capturing ? hipErrorStreamCaptureUnsupported : hipSuccess;
}

EXPORT hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void *src,
                                     size_t bytes, hipStream_t s) {
  pthread_mutex_lock(&gLock);
  hipError_t r = on_stream(s);
  if (r == hipSuccess)
    r = htod(dst, src, bytes);
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src,
                                     size_t bytes, hipStream_t s) {
  pthread_mutex_lock(&gLock);
  hipError_t r = on_stream(s);
  if (r == hipSuccess && !in_device(src, bytes))
    r = hipErrorInvalidValue;
  if (r == hipSuccess) {
    memcpy(dst, src, bytes);
    ++gStats.dtoh;
  }
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src,
                                     size_t bytes, hipStream_t s) {
  if (check_stream(s))
    return hipErrorInvalidHandle;
  node n;
  memset(&n, 0, sizeof(n));
  n.dst = dst;
  n.src = src;
  n.bytes = bytes;
  pthread_mutex_lock(&gLock);
  check_device(s->device);
  ++gStats.dtod;
  hipError_t r = s->capturing ? record(s, n) : run_node(&n);
  pthread_mutex_unlock(&gLock);
  return r;
}

/*===--------------------------------------------------------------------===*
 * Launches, streams and graphs
 *===--------------------------------------------------------------------===*/

EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t fn, unsigned gx,
                                        unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz,
                                        unsigned shared, hipStream_t s,
                                        void **params, void **extra) {
  pthread_mutex_lock(&gLock);
  ++gStats.launch_attempts;
  pthread_mutex_unlock(&gLock);
  if (check_stream(s) || !fn || !fn->module ||
      fn->module->magic != MODULE_MAGIC)
    return hipErrorInvalidHandle;
  /* Work-groups of at most 1024 items, 64 KiB of LDS. */
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 ||
      shared > 64 * 1024 || extra || !params)
    return hipErrorInvalidValue;
  if (mode("launchfail"))
    return hipErrorLaunchFailure;
  node n;
  memset(&n, 0, sizeof(n));
  n.k = fn->k;
  for (int i = 0; i < fn->k->num_params; ++i)
    memcpy(&n.values[i], params[i], 8);
  pthread_mutex_lock(&gLock);
  check_device(s->device);
  if (fn->module->device != s->device)
    ++gStats.wrong_device;
  ++gStats.launches;
  gStats.last_launch_stream = s;
  hipError_t r = s->capturing ? record(s, n) : run_node(&n);
  pthread_mutex_unlock(&gLock);
  return r;
}

static hipStream_t new_stream(int device) {
  hipStream_t s = (hipStream_t)calloc(1, sizeof(*s));
  if (s) {
    s->magic = STREAM_MAGIC;
    s->device = device;
  }
  return s;
}

EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t *out,
                                           unsigned int flags) {
  if (flags > hipStreamNonBlocking)
    return hipErrorInvalidValue;
  hipStream_t s = new_stream(tDevice);
  if (!s)
    return hipErrorOutOfMemory;
  *out = s;
  LOCKED((++gStats.stream_creates, hipSuccess));
}

EXPORT hipError_t hipStreamDestroy(hipStream_t s) {
  if (check_stream(s) || s->capturing)
    return hipErrorInvalidHandle;
  pthread_mutex_lock(&gLock);
  check_device(s->device);
  ++gStats.stream_destroys;
  pthread_mutex_unlock(&gLock);
  s->magic = 0;
  free(s);
  return hipSuccess;
}

EXPORT hipError_t hipStreamSynchronize(hipStream_t s) {
  pthread_mutex_lock(&gLock);
  hipError_t r = on_stream(s);
  gStats.syncs += r == hipSuccess;
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipStreamBeginCapture(hipStream_t s,
                                        hipStreamCaptureMode capture_mode) {
  if (check_stream(s))
    return hipErrorInvalidHandle;
  if (s->capturing || capture_mode != hipStreamCaptureModeRelaxed)
    return hipErrorIllegalState;
  pthread_mutex_lock(&gLock);
  ++gStats.capture_attempts;
  pthread_mutex_unlock(&gLock);
  if (mode("nocapture"))
    return hipErrorNotSupported;
  struct ihipGraph *g = (struct ihipGraph *)calloc(1, sizeof(*g));
  if (!g)
    return hipErrorOutOfMemory;
  s->capture = g;
  s->capturing = 1;
  s->invalidated = 0;
  LOCKED((++gStats.captures, hipSuccess));
}

EXPORT hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *out) {
  if (check_stream(s))
    return hipErrorInvalidHandle;
  if (!s->capturing)
    return hipErrorIllegalState;
  s->capturing = 0;
  hipGraph_t g = s->capture;
  s->capture = NULL;
  if (s->invalidated) {
    free(g->nodes);
    free(g);
    *out = NULL;
    return hipErrorStreamCaptureInvalidated;
  }
  *out = g;
  LOCKED((++gStats.live_graphs, hipSuccess));
}

EXPORT hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *exec,
                                               hipGraph_t g,
                                               unsigned long long flags) {
  if (!g || flags)
    return hipErrorInvalidValue;
  if (mode("noinstantiate"))
    return hipErrorNotSupported;
  hipGraphExec_t copy = (hipGraphExec_t)calloc(1, sizeof(*copy));
  if (!copy)
    return hipErrorOutOfMemory;
  copy->nodes = (node *)malloc((g->count + 1) * sizeof(node));
  if (!copy->nodes) {
    free(copy);
    return hipErrorOutOfMemory;
  }
  memcpy(copy->nodes, g->nodes, g->count * sizeof(node));
  copy->count = g->count;
  *exec = copy;
  LOCKED((++gStats.instantiations, ++gStats.live_graph_execs, hipSuccess));
}

EXPORT hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
  if (!exec || check_stream(s) || s->capturing)
    return hipErrorInvalidHandle;
  pthread_mutex_lock(&gLock);
  check_device(s->device);
  ++gStats.graph_launches;
  hipError_t r = hipSuccess;
  for (size_t i = 0; i < exec->count && r == hipSuccess; ++i)
    r = run_node(&exec->nodes[i]);
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  if (!exec)
    return hipErrorInvalidHandle;
  free(exec->nodes);
  free(exec);
  LOCKED((--gStats.live_graph_execs, hipSuccess));
}

EXPORT hipError_t hipGraphDestroy(hipGraph_t g) {
  if (!g)
    return hipErrorInvalidHandle;
  free(g->nodes);
  free(g);
  LOCKED((--gStats.live_graphs, hipSuccess));
}

/*===--------------------------------------------------------------------===*
 * Test controls
 *===--------------------------------------------------------------------===*/

EXPORT fake_hip_stats fake_hip_get_stats(void) {
  pthread_mutex_lock(&gLock);
  fake_hip_stats stats = gStats;
  pthread_mutex_unlock(&gLock);
  return stats;
}

EXPORT void fake_hip_reset_stats(void) {
  pthread_mutex_lock(&gLock);
  fake_hip_stats kept = gStats;
  memset(&gStats, 0, sizeof(gStats));
  gStats.live_allocs = kept.live_allocs;
  gStats.live_graphs = kept.live_graphs;
  gStats.live_graph_execs = kept.live_graph_execs;
  pthread_mutex_unlock(&gLock);
}

EXPORT int fake_hip_current_device(void) { return tDevice; }

EXPORT void fake_hip_fail_alloc_after(int64_t n) {
  pthread_mutex_lock(&gLock);
  gAllocsLeft = n;
  pthread_mutex_unlock(&gLock);
}

EXPORT void *fake_hip_device_alloc(size_t bytes) {
  void *ptr = NULL;
  pthread_mutex_lock(&gLock);
  hipError_t r = device_alloc(&ptr, bytes, 0);
  pthread_mutex_unlock(&gLock);
  return r == hipSuccess ? ptr : NULL;
}

EXPORT void fake_hip_device_free(void *ptr) {
  pthread_mutex_lock(&gLock);
  device_free(ptr, 0);
  pthread_mutex_unlock(&gLock);
}

EXPORT void *fake_hip_stream_create(int device) { return new_stream(device); }

EXPORT void fake_hip_stream_destroy(void *s) {
  if (s)
    ((hipStream_t)s)->magic = 0;
  free(s);
}
