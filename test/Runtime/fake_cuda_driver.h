/*===- fake_cuda_driver.h - Test controls of fake_cuda_driver.c -*- C -*-===*/
#ifndef KILN_TEST_RUNTIME_FAKE_CUDA_DRIVER_H
#define KILN_TEST_RUNTIME_FAKE_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters since the last fake_cuda_reset_stats (live_* are not reset). */
typedef struct fake_cuda_stats {
  int64_t inits;
  int64_t ctx_retains, ctx_releases;
  int64_t module_loads, module_unloads, function_lookups;
  int64_t allocs, frees, live_allocs;
  int64_t host_allocs; /* cuMemHostAlloc (mapped check records) */
  int64_t htod, htod_sync, htod_bytes; /* htod: sync and async copies */
  int64_t dtoh, dtod;
  int64_t launch_attempts; /* cuLaunchKernel calls */
  int64_t launches;        /* successful ones (run now or captured) */
  int64_t kernel_runs;     /* kernels executed, directly or by a graph */
  int64_t syncs;
  int64_t stream_creates, stream_destroys;
  int64_t capture_attempts, captures, instantiations, graph_launches;
  int64_t live_graphs, live_graph_execs;
  int64_t bad_pointers; /* device ranges outside every live allocation */
  void *last_launch_stream;
  int64_t event_creates, event_records, live_events;
  /* cuTensorMapEncodeTiled: calls, and the last call's arguments. */
  int64_t tile_maps;
  int64_t last_map_type, last_map_rank, last_map_swizzle;
  uint64_t last_map_dims[5], last_map_strides[4];
  uint32_t last_map_box[5];
  /* cuTensorMapEncodeIm2col: calls, and the last call's window, box and
   * element strides (its dims and strides go to last_map_*). */
  int64_t im2col_maps;
  int last_im2col_lower[3], last_im2col_upper[3];
  unsigned last_im2col_channels, last_im2col_pixels;
  unsigned last_im2col_element_strides[5];
  /* Successful cuLaunchKernelEx calls with programmatic stream
   * serialization (dependent launches; also counted in `launches`). Last:
   * test/python/test_device.py reads the leading counters by offset. */
  int64_t dependent_launches;
} fake_cuda_stats;

typedef fake_cuda_stats (*fake_cuda_get_stats_fn)(void);
typedef void (*fake_cuda_reset_stats_fn)(void);
typedef int (*fake_cuda_context_depth_fn)(void);
typedef void *(*fake_cuda_device_alloc_fn)(size_t bytes);
typedef void (*fake_cuda_device_free_fn)(void *ptr);
typedef void *(*fake_cuda_stream_create_fn)(void);
typedef void (*fake_cuda_stream_destroy_fn)(void *stream);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TEST_RUNTIME_FAKE_CUDA_DRIVER_H */
