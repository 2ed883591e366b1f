/*===- CudaDriver.c - dlopen of the CUDA driver ---------------------------===*/
#include "CudaDriver.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The layouts cuda.h gives these (64-bit). */
_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute");
_Static_assert(offsetof(CUlaunchConfig, hStream) == 32 &&
                   offsetof(CUlaunchConfig, attrs) == 40 &&
                   offsetof(CUlaunchConfig, numAttrs) == 48,
               "CUlaunchConfig");

#define KILN_ENTRY(field, symbol)                                              \
  {offsetof(kiln_cuda_driver, field), symbol, NULL, 0}
/* An entry point a model runs without (left NULL when missing); `older` is
 * the name to try when `symbol` is missing. */
#define KILN_OPTIONAL(field, symbol, older)                                    \
  {offsetof(kiln_cuda_driver, field), symbol, older, 1}

/* cuda.h #defines several names to versioned symbols (cuMemAlloc ->
 * cuMemAlloc_v2); the exported symbol is what dlsym needs. */
static const struct {
  size_t offset;
  const char *symbol, *older;
  int optional;
} kEntries[] = {
    KILN_ENTRY(cuInit, "cuInit"),
    KILN_ENTRY(cuGetErrorName, "cuGetErrorName"),
    KILN_ENTRY(cuGetErrorString, "cuGetErrorString"),
    KILN_ENTRY(cuDeviceGetCount, "cuDeviceGetCount"),
    KILN_ENTRY(cuDeviceGet, "cuDeviceGet"),
    KILN_ENTRY(cuDeviceGetName, "cuDeviceGetName"),
    KILN_ENTRY(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    KILN_ENTRY(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    KILN_ENTRY(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    KILN_ENTRY(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
    KILN_ENTRY(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
    KILN_ENTRY(cuModuleLoadData, "cuModuleLoadData"),
    KILN_ENTRY(cuModuleUnload, "cuModuleUnload"),
    KILN_ENTRY(cuModuleGetFunction, "cuModuleGetFunction"),
    KILN_ENTRY(cuFuncSetAttribute, "cuFuncSetAttribute"),
    KILN_ENTRY(cuMemAlloc, "cuMemAlloc_v2"),
    KILN_ENTRY(cuMemFree, "cuMemFree_v2"),
    KILN_ENTRY(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    KILN_ENTRY(cuMemHostAlloc, "cuMemHostAlloc"),
    KILN_ENTRY(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    KILN_ENTRY(cuMemFreeHost, "cuMemFreeHost"),
    KILN_ENTRY(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    KILN_ENTRY(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    KILN_ENTRY(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    KILN_ENTRY(cuLaunchKernel, "cuLaunchKernel"),
    KILN_ENTRY(cuStreamCreate, "cuStreamCreate"),
    KILN_ENTRY(cuStreamDestroy, "cuStreamDestroy_v2"),
    KILN_ENTRY(cuStreamSynchronize, "cuStreamSynchronize"),
    KILN_ENTRY(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
    KILN_ENTRY(cuStreamEndCapture, "cuStreamEndCapture"),
    KILN_ENTRY(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    KILN_ENTRY(cuGraphLaunch, "cuGraphLaunch"),
    KILN_ENTRY(cuGraphExecDestroy, "cuGraphExecDestroy"),
    KILN_ENTRY(cuGraphDestroy, "cuGraphDestroy"),
    KILN_OPTIONAL(cuEventCreate, "cuEventCreate", NULL),
    KILN_OPTIONAL(cuEventRecord, "cuEventRecord", NULL),
    KILN_OPTIONAL(cuEventSynchronize, "cuEventSynchronize", NULL),
    KILN_OPTIONAL(cuEventElapsedTime, "cuEventElapsedTime_v2",
                  "cuEventElapsedTime"),
    KILN_OPTIONAL(cuEventDestroy, "cuEventDestroy_v2", NULL),
    KILN_OPTIONAL(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", NULL),
    KILN_OPTIONAL(cuTensorMapEncodeIm2col, "cuTensorMapEncodeIm2col", NULL),
    KILN_OPTIONAL(cuLaunchKernelEx, "cuLaunchKernelEx", NULL),
};

int kiln_cuda_driver_open(kiln_cuda_driver *driver, const char *path,
                          char *error, size_t size) {
  memset(driver, 0, sizeof(*driver));
  dlerror();
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    snprintf(error, size, "%s", why ? why : path);
    return -1;
  }
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    void *fn = dlsym(library, kEntries[i].symbol);
    if (!fn && kEntries[i].older)
      fn = dlsym(library, kEntries[i].older);
    if (!fn && kEntries[i].optional)
      continue;
    if (!fn) {
      snprintf(error, size, "%s has no symbol %s", path, kEntries[i].symbol);
      dlclose(library);
      memset(driver, 0, sizeof(*driver));
      return -1;
    }
    memcpy((char *)driver + kEntries[i].offset, &fn, sizeof(fn));
  }
  driver->library = library;
  return 0;
}

void kiln_cuda_driver_close(kiln_cuda_driver *driver) {
  if (driver->library)
    dlclose(driver->library);
  memset(driver, 0, sizeof(*driver));
}

void kiln_cuda_error_text(const kiln_cuda_driver *driver, CUresult result,
                          char *out, size_t size) {
  const char *name = NULL, *text = NULL;
  if (driver->cuGetErrorName &&
      driver->cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (driver->cuGetErrorString &&
      driver->cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name && text)
    snprintf(out, size, "%s (%s)", name, text);
  else if (name)
    snprintf(out, size, "%s", name);
  else
    snprintf(out, size, "CUDA error %d", (int)result);
}
