/*===- CudaDriver.h - The CUDA driver API subset Kiln uses ------*- C -*-===*
 *
 * Kiln's own declarations of the part of the CUDA driver API (cuda.h) the
 * model runtime calls. Nothing links libcuda: the driver is dlopen'ed when a
 * cuda model is created (kiln_cuda_driver_open) and every entry point is
 * looked up by its exported, versioned name (cuMemAlloc_v2 where cuda.h
 * #defines cuMemAlloc to it). Types and enum values match cuda.h (CUDA 13).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDADRIVER_H
#define KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDADRIVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult; /* enum cudaError_enum: 0 is CUDA_SUCCESS */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUevent_st *CUevent;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
};

enum {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
enum {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
};
enum { CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum { CU_EVENT_DEFAULT = 0x0 };
enum { CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };

/* cuLaunchKernelEx's attribute and configuration (CUDA 12+). */
typedef struct CUlaunchAttribute {
  int id; /* CU_LAUNCH_ATTRIBUTE_* */
  char pad[8 - sizeof(int)];
  union {
    char pad[64];
    int programmaticStreamSerializationAllowed;
  } value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* The entry points, resolved from the driver library. */
typedef struct kiln_cuda_driver {
  void *library; /* dlopen handle */
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuGetErrorName)(CUresult error, const char **str);
  CUresult (*cuGetErrorString)(CUresult error, const char **str);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2 */
  CUresult (*cuCtxPushCurrent)(CUcontext ctx);         /* _v2 */
  CUresult (*cuCtxPopCurrent)(CUcontext *ctx);         /* _v2 */
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module,
                                  const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction fn, int attrib, int value);
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes); /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr ptr);                 /* _v2 */
  CUresult (*cuMemHostAlloc)(void **ptr, size_t bytes, unsigned int flags);
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *dptr, void *ptr,
                                        unsigned int flags); /* _v2 */
  CUresult (*cuMemFreeHost)(void *ptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src,
                           size_t bytes); /* _v2 */
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                CUstream stream); /* _v2 */
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                CUstream stream); /* _v2 */
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream); /* _v2 */
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned grid_x, unsigned grid_y,
                             unsigned grid_z, unsigned block_x,
                             unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream,
                             void **params, void **extra);
  /* Launches with attributes (CUDA 12+): optional; kernels that wait for
   * the previous one themselves (dependent launches) use it. */
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction fn,
                               void **params, void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned int flags);
  CUresult (*cuStreamDestroy)(CUstream stream); /* _v2 */
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode); /* _v2 */
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  /* Events (profiling only): optional, NULL when the driver lacks
   * them. cuEventElapsedTime is cuEventElapsedTime_v2 where the driver has
   * it (CUDA 12.8+; the same signature). */
  CUresult (*cuEventCreate)(CUevent *event, unsigned int flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
  CUresult (*cuEventDestroy)(CUevent event); /* _v2 */
  /* Tensor maps (CUDA 12+; sm_90 kernels' TMA copies): optional. */
  CUresult (*cuTensorMapEncodeTiled)(void *tensorMap, int dataType,
                                     unsigned rank, void *globalAddress,
                                     const unsigned long long *globalDim,
                                     const unsigned long long *globalStrides,
                                     const unsigned *boxDim,
                                     const unsigned *elementStrides,
                                     int interleave, int swizzle,
                                     int l2Promotion, int oobFill);
  CUresult (*cuTensorMapEncodeIm2col)(
      void *tensorMap, int dataType, unsigned rank, void *globalAddress,
      const unsigned long long *globalDim,
      const unsigned long long *globalStrides, const int *pixelBoxLowerCorner,
      const int *pixelBoxUpperCorner, unsigned channelsPerPixel,
      unsigned pixelsPerColumn, const unsigned *elementStrides, int interleave,
      int swizzle, int l2Promotion, int oobFill);
} kiln_cuda_driver;

/* Opens the driver library (`path`, e.g. "libcuda.so.1") and resolves every
 * entry point. Returns 0 on success; otherwise -1 with `error` (of `size`
 * bytes) saying why ("libcuda.so.1: cannot open shared object file..." or
 * "libcuda.so.1 has no symbol cuMemAlloc_v2"), and nothing left open. */
__attribute__((visibility("hidden"))) int
kiln_cuda_driver_open(kiln_cuda_driver *driver, const char *path, char *error,
                      size_t size);
/* Accepts a driver that failed to open. */
__attribute__((visibility("hidden"))) void
kiln_cuda_driver_close(kiln_cuda_driver *driver);
/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or "CUDA error 123" when the
 * driver does not know the code. */
__attribute__((visibility("hidden"))) void
kiln_cuda_error_text(const kiln_cuda_driver *driver, CUresult result, char *out,
                     size_t size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDADRIVER_H */
