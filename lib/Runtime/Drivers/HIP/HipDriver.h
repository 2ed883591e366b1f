/*===- HipDriver.h - The HIP runtime API subset Kiln uses -------*- C -*-===*
 *
 * Kiln's own declarations of the part of the HIP runtime API
 * (hip/hip_runtime_api.h) the model runtime calls. Nothing links
 * libamdhip64: the HIP runtime is dlopen'ed when a rocm model is created
 * (kiln_hip_driver_open) and every entry point is looked up by name.
 *
 * Only entry points whose signatures are the same in HIP 5.x and 6.x (and
 * 7.x) are declared. The one that differs is hipGetDeviceProperties: ROCm 6
 * grew hipDeviceProp_t (hipDeviceProp_tR0600, filled by
 * hipGetDevicePropertiesR0600; its headers #define the old names to these)
 * and kept the 5.x layout (hipDeviceProp_tR0000) behind the plain
 * hipGetDeviceProperties symbol. Kiln reads two fields only, `name` and
 * `gcnArchName`, at the offsets of the layout of the entry point it found
 * (kiln_hip_device_props). The numeric values below match hip_runtime_api.h
 * of HIP 5.2 (Debian 12's libamdhip64-dev) and of ROCm 6.x/7.x, which kept
 * every one of them (test/Runtime/HipLayoutTest.cpp checks them against the
 * 5.x header).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_DRIVERS_HIP_HIPDRIVER_H
#define KILN_LIB_RUNTIME_DRIVERS_HIP_HIPDRIVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Prefixed so that a test can include these next to the real header. */
typedef int kiln_hip_result; /* enum hipError_t: 0 is hipSuccess */
typedef void *kiln_hip_ptr;  /* hipDeviceptr_t */
typedef struct ihipStream_t *kiln_hip_stream;
typedef struct ihipModule_t *kiln_hip_module;
typedef struct ihipModuleSymbol_t *kiln_hip_function;
typedef struct ihipGraph *kiln_hip_graph;
typedef struct hipGraphExec *kiln_hip_graph_exec;

enum {
  KILN_HIP_SUCCESS = 0,
  KILN_HIP_ERROR_INVALID_VALUE = 1,
  KILN_HIP_ERROR_OUT_OF_MEMORY = 2,
  KILN_HIP_ERROR_NOT_INITIALIZED = 3,
  KILN_HIP_ERROR_NO_DEVICE = 100,
  KILN_HIP_ERROR_INVALID_DEVICE = 101,
  KILN_HIP_ERROR_INVALID_IMAGE = 200,
  KILN_HIP_ERROR_NO_BINARY_FOR_GPU = 209,
  KILN_HIP_ERROR_INVALID_HANDLE = 400,
  KILN_HIP_ERROR_NOT_FOUND = 500,
  KILN_HIP_ERROR_LAUNCH_FAILURE = 719,
  KILN_HIP_ERROR_NOT_SUPPORTED = 801,
  KILN_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  KILN_HIP_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
};

enum { KILN_HIP_STREAM_NON_BLOCKING = 0x1 };       /* hipStreamNonBlocking */
enum { KILN_HIP_STREAM_CAPTURE_MODE_RELAXED = 2 }; /* hipStreamCaptureMode */
/* hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent:
 * kernels' writes reach the host without a system-scope release. */
#define KILN_HIP_HOST_MALLOC_FLAGS (0x1u | 0x2u | 0x40000000u)

/* Where hipGetDeviceProperties* writes the two fields Kiln reads, for each
 * layout, and the size of each struct. */
enum {
  KILN_HIP_PROPS_NAME_OFFSET = 0,         /* char name[256], both layouts */
  KILN_HIP_PROPS_R0000_ARCH_OFFSET = 396, /* HIP 5.x hipDeviceProp_t */
  KILN_HIP_PROPS_R0000_SIZE = 792,
  /* hipDeviceProp_tR0600 (ROCm 6.0 and later): gcnArchName follows the
   * CUDA-compatible fields, reserved[63] and hipReserved[32]. */
  KILN_HIP_PROPS_R0600_ARCH_OFFSET = 1160,
  KILN_HIP_PROPS_R0600_SIZE = 1472,
  /* The zeroed buffer the properties are written into: room for either
   * layout and for fields a later ROCm may append. */
  KILN_HIP_PROPS_BUFFER = 8192,
};

/* The entry points, resolved from the HIP runtime library. */
typedef struct kiln_hip_driver {
  void *library; /* dlopen handle */
  kiln_hip_result (*hipInit)(unsigned int flags);
  const char *(*hipGetErrorName)(kiln_hip_result error);
  const char *(*hipGetErrorString)(kiln_hip_result error);
  kiln_hip_result (*hipGetDeviceCount)(int *count);
  kiln_hip_result (*hipSetDevice)(int device);
  kiln_hip_result (*hipGetDevice)(int *device);
  /* hipGetDevicePropertiesR0600 where the library has it (ROCm 6+), else
   * hipGetDeviceProperties (HIP 5.x); see props_arch_offset. */
  kiln_hip_result (*hipGetDeviceProperties)(void *props, int device);
  kiln_hip_result (*hipModuleLoadData)(kiln_hip_module *module,
                                       const void *image);
  kiln_hip_result (*hipModuleUnload)(kiln_hip_module module);
  kiln_hip_result (*hipModuleGetFunction)(kiln_hip_function *fn,
                                          kiln_hip_module module,
                                          const char *name);
  kiln_hip_result (*hipModuleLaunchKernel)(kiln_hip_function fn,
                                           unsigned grid_x, unsigned grid_y,
                                           unsigned grid_z, unsigned block_x,
                                           unsigned block_y, unsigned block_z,
                                           unsigned shared_bytes,
                                           kiln_hip_stream stream,
                                           void **params, void **extra);
  kiln_hip_result (*hipMalloc)(void **ptr, size_t bytes);
  kiln_hip_result (*hipFree)(void *ptr);
  kiln_hip_result (*hipHostMalloc)(void **ptr, size_t bytes,
                                   unsigned int flags);
  kiln_hip_result (*hipHostGetDevicePointer)(void **dptr, void *host,
                                             unsigned int flags);
  kiln_hip_result (*hipHostFree)(void *ptr);
  /* `src` is `void *` in HIP 5.x and `const void *` in 7.x: the same ABI. */
  kiln_hip_result (*hipMemcpyHtoD)(kiln_hip_ptr dst, const void *src,
                                   size_t bytes);
  kiln_hip_result (*hipMemcpyHtoDAsync)(kiln_hip_ptr dst, const void *src,
                                        size_t bytes, kiln_hip_stream stream);
  kiln_hip_result (*hipMemcpyDtoHAsync)(void *dst, kiln_hip_ptr src,
                                        size_t bytes, kiln_hip_stream stream);
  kiln_hip_result (*hipMemcpyDtoDAsync)(kiln_hip_ptr dst, kiln_hip_ptr src,
                                        size_t bytes, kiln_hip_stream stream);
  kiln_hip_result (*hipStreamCreateWithFlags)(kiln_hip_stream *stream,
                                              unsigned int flags);
  kiln_hip_result (*hipStreamDestroy)(kiln_hip_stream stream);
  kiln_hip_result (*hipStreamSynchronize)(kiln_hip_stream stream);
  kiln_hip_result (*hipStreamBeginCapture)(kiln_hip_stream stream, int mode);
  kiln_hip_result (*hipStreamEndCapture)(kiln_hip_stream stream,
                                         kiln_hip_graph *graph);
  kiln_hip_result (*hipGraphInstantiateWithFlags)(kiln_hip_graph_exec *exec,
                                                  kiln_hip_graph graph,
                                                  unsigned long long flags);
  kiln_hip_result (*hipGraphLaunch)(kiln_hip_graph_exec exec,
                                    kiln_hip_stream stream);
  kiln_hip_result (*hipGraphExecDestroy)(kiln_hip_graph_exec exec);
  kiln_hip_result (*hipGraphDestroy)(kiln_hip_graph graph);
  /* Which hipDeviceProp_t layout hipGetDeviceProperties fills: the offset
   * of gcnArchName, and the symbol it was resolved from (for messages). */
  size_t props_arch_offset;
  const char *props_symbol;
} kiln_hip_driver;

/* Opens the HIP runtime `path` (e.g. "libamdhip64.so.6") and resolves every
 * entry point. Returns 0 on success; otherwise -1 with `error` (of `size`
 * bytes) saying why ("libamdhip64.so.6: cannot open shared object file..."
 * or "libamdhip64.so.6 has no symbol hipInit"), and nothing left open. The
 * library stays mapped after kiln_hip_driver_close (RTLD_NODELETE): the HIP
 * runtime starts threads and registers exit handlers that must outlive a
 * model. */
__attribute__((visibility("hidden"))) int
kiln_hip_driver_open(kiln_hip_driver *driver, const char *path, char *error,
                     size_t size);
/* Accepts a driver that failed to open. */
__attribute__((visibility("hidden"))) void
kiln_hip_driver_close(kiln_hip_driver *driver);
/* "hipErrorOutOfMemory (out of memory)", "hipErrorNoDevice" when the text
 * is the name (HIP 5.x), or "HIP error 123". */
__attribute__((visibility("hidden"))) void
kiln_hip_error_text(const kiln_hip_driver *driver, kiln_hip_result result,
                    char *out, size_t size);
/* The device's marketing name and its architecture (gcnArchName, e.g.
 * "gfx942:sramecc+:xnack-"), read from hipGetDeviceProperties*. Returns
 * its result; both strings are "" when the call failed. */
__attribute__((visibility("hidden"))) kiln_hip_result
kiln_hip_device_props(const kiln_hip_driver *driver, int device, char *name,
                      size_t name_size, char *arch, size_t arch_size);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_DRIVERS_HIP_HIPDRIVER_H */
