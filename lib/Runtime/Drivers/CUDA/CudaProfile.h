/*===- CudaProfile.h - Per-kernel GPU times -------------------*- C -*-===*
 *
 * With the instance option profile_path (or KILN_CUDA_PROFILE, see
 * docs/runtime.md), an instance of a cuda model brackets every kernel
 * launch with two CUDA events on its
 * stream, reads their elapsed times after each run, and appends one JSON
 * line to <path> when it is released (docs/runtime.md, "Profiling").
 * Failing event calls never fail a run: profiling stops and the report says
 * why. Every function accepts a NULL profile and then does nothing.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H
#define KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H

#include "CudaDriver.h"
#include "kiln/Runtime/Common.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_cuda_profile kiln_cuda_profile;

/* *out: a profile for an instance of a model with `num_kernels` kernels
 * that reports to `path`, or NULL when `path` is NULL or empty. Returns a
 * status only when memory runs out. */
KILN_HIDDEN kiln_status_t *kiln_cuda_profile_create(const kiln_cuda_driver *cu,
                                                    const char *path,
                                                    uint64_t num_kernels,
                                                    kiln_cuda_profile **out);
/* Around one cuLaunchKernel on `stream` (the context current): begin
 * records a start event; end records the end event when `launched`, else
 * forgets the start. */
KILN_HIDDEN void kiln_cuda_profile_begin(kiln_cuda_profile *p, CUstream stream);
KILN_HIDDEN void kiln_cuda_profile_end(kiln_cuda_profile *p, CUstream stream,
                                       int64_t kernel, const char *name,
                                       int launched);
/* After a run (the context current): waits for its last event and adds the
 * times of its launches; the launches of a failed run are dropped. */
KILN_HIDDEN void kiln_cuda_profile_end_run(kiln_cuda_profile *p, int failed);
/* Appends the report, destroys the events (pushing `context` when it is not
 * NULL) and frees the profile. */
KILN_HIDDEN void kiln_cuda_profile_release(kiln_cuda_profile *p,
                                           CUcontext context);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H */
