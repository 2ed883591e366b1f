/*===- fake_hip_driver.h - Test controls of fake_hip_driver.c ---*- C -*-===*/
#ifndef KILN_TEST_RUNTIME_FAKE_HIP_DRIVER_H
#define KILN_TEST_RUNTIME_FAKE_HIP_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters since the last fake_hip_reset_stats (live_* are not reset). */
typedef struct fake_hip_stats {
  int64_t inits;
  /* hipGetDevicePropertiesR0600 (6.x layout) and hipGetDeviceProperties
   * (5.x layout) calls. */
  int64_t props_r0600, props_r0000;
  int64_t set_device_calls;
  /* Calls on a stream, module or allocation of another device than the
   * calling thread's current one (the driver did not enter the queue). */
  int64_t wrong_device;
  int64_t module_loads, module_unloads, function_lookups;
  int64_t allocs, frees, live_allocs;
  int64_t allocs_on_device1;
  int64_t host_allocs; /* hipHostMalloc (mapped check records) */
  int64_t htod, htod_sync, dtoh, dtod;
  int64_t launch_attempts; /* hipModuleLaunchKernel calls */
  int64_t launches;        /* successful ones (run now or captured) */
  int64_t kernel_runs;     /* kernels executed, directly or by a graph */
  int64_t syncs;
  int64_t stream_creates, stream_destroys;
  int64_t capture_attempts, captures, instantiations, graph_launches;
  int64_t live_graphs, live_graph_execs;
  int64_t bad_pointers; /* device ranges outside every live allocation */
  void *last_launch_stream;
} fake_hip_stats;

typedef fake_hip_stats (*fake_hip_get_stats_fn)(void);
typedef void (*fake_hip_reset_stats_fn)(void);
/* The calling thread's current device (hipGetDevice). */
typedef int (*fake_hip_current_device_fn)(void);
/* After `n` more successful hipMalloc calls, the next ones fail with
 * hipErrorOutOfMemory; -1: never. */
typedef void (*fake_hip_fail_alloc_after_fn)(int64_t n);
typedef void *(*fake_hip_device_alloc_fn)(size_t bytes);
typedef void (*fake_hip_device_free_fn)(void *ptr);
/* A stream of device `device`. */
typedef void *(*fake_hip_stream_create_fn)(int device);
typedef void (*fake_hip_stream_destroy_fn)(void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TEST_RUNTIME_FAKE_HIP_DRIVER_H */
