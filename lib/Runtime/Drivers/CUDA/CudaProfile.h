/*===- CudaProfile.h - Kernel and phase times on the GPU -------*- C -*-===*
 *
 * With the instance option profile_path, or kiln_instance_set_profiling's
 * KILN_PROFILE_KERNELS (the driver's set_timing), an instance of a cuda
 * model brackets every kernel launch with two CUDA events on its stream
 * and reads their elapsed times after each run: the last run's launches
 * for kiln_instance_last_profile, and with profile_path their sums per
 * kernel, appended as one JSON line to <path> when the instance is released
 * (docs/runtime.md, "Per-kernel times"). Phase marks (KILN_PROFILE_PHASES)
 * are four more events between a run's input copies, compute and output
 * copies. Failing event calls never fail a run: profiling stops and the
 * report says why. Every function accepts a NULL profile and then does
 * nothing.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H
#define KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H

#include "CudaDriver.h"
#include "kiln/Runtime/Common.h"
#include "kiln/Runtime/Device.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_cuda_profile kiln_cuda_profile;

/* *out: a profile for an instance of a model with `num_kernels` kernels
 * that times every launch and reports to `path`, or (`path` NULL or empty)
 * that times what kiln_cuda_profile_set asks for. Returns a status only
 * when memory runs out. */
KILN_HIDDEN kiln_status_t *kiln_cuda_profile_create(const kiln_cuda_driver *cu,
                                                    const char *path,
                                                    uint64_t num_kernels,
                                                    kiln_cuda_profile **out);
/* From the next run on: time launches (`kernels`; always with a report
 * path) and record marks (`marks`). */
KILN_HIDDEN void kiln_cuda_profile_set(kiln_cuda_profile *p, int kernels,
                                       int marks);
/* Records phase mark `mark` (0 to 3) on `stream` when marks are on. */
KILN_HIDDEN void kiln_cuda_profile_mark(kiln_cuda_profile *p, CUstream stream,
                                        int mark);
/* Around one cuLaunchKernel on `stream` (the context current): begin
 * records a start event; end records the end event when `launched`, else
 * forgets the start. */
KILN_HIDDEN void kiln_cuda_profile_begin(kiln_cuda_profile *p, CUstream stream);
KILN_HIDDEN void kiln_cuda_profile_end(kiln_cuda_profile *p, CUstream stream,
                                       int64_t kernel, const char *name,
                                       int launched);
/* After a run (the context current): waits for its last event, keeps its
 * launch and phase times and adds the launches to the per-kernel sums; the
 * launches of a failed run are dropped. */
KILN_HIDDEN void kiln_cuda_profile_end_run(kiln_cuda_profile *p, int failed);
/* The times of the run end_run last ended. */
KILN_HIDDEN void kiln_cuda_profile_timing(const kiln_cuda_profile *p,
                                          kiln_device_timing *out);
/* Appends the report, destroys the events (pushing `context` when it is not
 * NULL) and frees the profile. */
KILN_HIDDEN void kiln_cuda_profile_release(kiln_cuda_profile *p,
                                           CUcontext context);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_DRIVERS_CUDA_CUDAPROFILE_H */
