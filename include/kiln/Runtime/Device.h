/*===- kiln/Runtime/Device.h - The device driver table ----------*- C -*-===*
 *
 * Internal to Kiln's runtime. The generic model runtime (lib/Runtime/Model)
 * reaches a device only through a `kiln_device_driver`: a table of entry
 * points that one driver folder (lib/Runtime/Drivers/<Kind>) implements with
 * its vendor's API, opened by dlopen. The generic side owns everything that
 * is the same on every device: staging of inputs and outputs, the weight
 * cache, the scratch cache, when to capture and replay a graph, and the
 * failure messages of a run; a driver owns the library, the device, and per
 * instance a queue (context, stream, loaded device image, profiling).
 *
 * Drivers register themselves at build time: every folder under
 * lib/Runtime/Drivers defines one `const kiln_device_driver
 * kiln_device_driver_<kind>` and CMake lists them in kiln_device_drivers
 * (a generated file), which the model runtime searches by the signature's
 * device kind. A driver may use lib/Runtime/Common (statuses); the generic
 * code includes no driver header.
 *
 * Conventions: entry points that can fail while generated code runs return
 * a kiln_device_result (0 on success, else the driver's own error code) and
 * the generic code words the failure from `op_names`, `error_text` and
 * `is_out_of_memory`; lifecycle entry points return a kiln_status_t * with
 * the whole message. Every queue entry point but queue_create and
 * queue_destroy is called with the queue entered (enter ... leave).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_DEVICE_H
#define KILN_RUNTIME_DEVICE_H

#include "kiln/Runtime/Common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device address (what kiln_rt_input etc. return on a device, as an
 * integer). */
typedef uint64_t kiln_device_ptr;
/* 0: success; otherwise the driver's own error code. */
typedef int kiln_device_result;

typedef struct kiln_device kiln_device;             /* per model */
typedef struct kiln_device_queue kiln_device_queue; /* per instance */
typedef struct kiln_device_graph kiln_device_graph; /* a replayable run */

/* The calls the generic code names in failure messages ("<name> of 256
 * bytes for input 0 ('x') failed: <error_text>"). */
typedef enum kiln_device_op {
  KILN_DEVICE_OP_ALLOC = 0,      /* alloc */
  KILN_DEVICE_OP_UPLOAD,         /* upload */
  KILN_DEVICE_OP_COPY_TO_DEVICE, /* copy_to_device */
  KILN_DEVICE_OP_COPY_TO_HOST,   /* copy_to_host */
  KILN_DEVICE_OP_COPY_DEVICE,    /* copy_device */
  KILN_DEVICE_OP_SYNCHRONIZE,    /* synchronize */
  KILN_DEVICE_OP_ENTER,          /* enter */
  KILN_DEVICE_OP_GRAPH_LAUNCH,   /* graph_launch */
  KILN_DEVICE_OP_TILE_MAP,       /* encode_tile_map */
  KILN_DEVICE_OP_HOST_ALLOC,     /* host_alloc_mapped */
  KILN_DEVICE_OP_IM2COL_MAP,     /* encode_tile_map of an im2col map */
  KILN_DEVICE_OP_COUNT
} kiln_device_op;

/* What the model runtime resolved for kiln_device_driver.open. */
typedef struct kiln_device_open_args {
  const char *chip;    /* the signature's chip, never NULL */
  const char *library; /* the driver library to dlopen; NULL: the default */
  int32_t ordinal;     /* the device index (>= 0) */
  /* Where `ordinal` came from, for messages: "KILN_<KIND>_DEVICE" or "the
   * device_ordinal option"; NULL for the default. */
  const char *ordinal_source;
} kiln_device_open_args;

/* One launch of kiln_rt_launch_device, already checked: grid dims >= 1,
 * block dims >= 1, all <= UINT32_MAX, 0 <= shared_bytes <= INT32_MAX. */
typedef struct kiln_device_launch {
  int64_t kernel;   /* index < the signature's "kernels" count */
  const char *name; /* its symbol in the device image */
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;
  uint32_t flags; /* KILN_DEVICE_LAUNCH_* */
  void **params;  /* one pointer per kernel parameter */
} kiln_device_launch;

/* kiln_device_launch.flags: the kernel itself waits, before it touches
 * memory, until the queue's previous kernel has finished and its writes are
 * visible (the signature's `dependent-launch`; on NVIDIA GPUs
 * griddepcontrol.wait at its entry), so the driver may launch it while that
 * kernel still runs. Without the flag a launch starts after the previous one
 * ends. */
#define KILN_DEVICE_LAUNCH_DEPENDENT 0x1u

/* The bytes (and alignment) of an encoded tile map. */
#define KILN_DEVICE_TILE_MAP_BYTES 128

/* A tiled view of device memory for the device's bulk tensor copies (on
 * NVIDIA GPUs a tensor map, read by cp.async.bulk.tensor): kernels get the
 * encoded map by value and copy boxes of `box` elements at coordinates they
 * choose; elements outside `dims` read as zeros. Checked by
 * kiln_rt_tile_map: 1 <= rank <= 5, dims and box >= 1, strides of the dims
 * above the innermost (bytes, strides[0] unused) multiples of 16.
 *
 * An im2col map (`im2col` 1, kiln_rt_im2col_map) views a channels-last
 * activation [batch, spatial..., channels] (rank 3 to 5) as the rows of a
 * convolution's implicit matrix: a copy reads `pixels` consecutive output
 * pixels of `channels` channels each, walking the spatial dims within the
 * window [lower, dim - 1 + upper] (per spatial dim, innermost first, shifted
 * by the copy's filter offsets) in steps of `element_strides` (the
 * convolution's strides; 1 for the batch and channel dims). `box` is
 * unused. */
typedef struct kiln_device_tile_map {
  int32_t dtype; /* kiln_dtype_t of the elements */
  int32_t rank;
  kiln_device_ptr base;
  uint64_t dims[5];            /* elements, innermost first */
  uint64_t strides[5];         /* bytes, innermost first */
  uint32_t box[5];             /* elements, innermost first */
  int32_t swizzle;             /* bytes: 0 (none), 32, 64 or 128 */
  int32_t im2col;              /* 0: a tiled map; 1: an im2col map */
  int32_t lower[3], upper[3];  /* im2col: the window's corners */
  uint32_t channels, pixels;   /* im2col: a copy's box */
  uint32_t element_strides[5]; /* im2col: traversal steps, innermost first */
} kiln_device_tile_map;

/* One timed launch of a run (kiln_device_driver.timing). */
typedef struct kiln_device_launch_time {
  int64_t kernel;   /* its index */
  const char *name; /* its symbol; valid while the queue lives */
  double start_ms;  /* since mark 0 of the run (from_mark), else since the
                       start of the run's first launch */
  double ms;
} kiln_device_launch_time;

/* The device times of the last run that ended (end_run). */
typedef struct kiln_device_timing {
  const kiln_device_launch_time *launches; /* in launch order */
  size_t num_launches;
  int from_mark;       /* launches' start_ms count from mark 0 */
  double phase_ms[3];  /* mark 0 to 1, 1 to 2, 2 to 3; -1 when not known */
  const char *stopped; /* "" or why timing stopped */
} kiln_device_timing;

typedef struct kiln_device_driver {
  /* The signature's device kind (its `device <kind> <chip>` record), also
   * the kind of device image the driver loads
   * (kiln_model_device_image_kind). */
  const char *kind;
  /* Words for messages: the vendor's name of the graph feature and of the
   * calls behind each kiln_device_op. */
  const char *graph_name;
  const char *op_names[KILN_DEVICE_OP_COUNT];

  /*--- Models ---*/
  /* Opens the library, finds the device and checks that it runs `chip`.
   * FAILED_PRECONDITION without a usable library or device, INCOMPATIBLE
   * for a chip the driver does not know. *out_device may be set on failure
   * too (what was opened so far): the caller closes it either way. */
  kiln_status_t *(*open)(const kiln_device_open_args *args,
                         kiln_device **out_device);
  void (*close)(kiln_device *device); /* accepts NULL */
  /* The error's name and text, as the vendor's library words them. */
  void (*error_text)(const kiln_device *device, kiln_device_result result,
                     char *out, size_t size);
  int (*is_out_of_memory)(kiln_device_result result);

  /*--- Queues (one per instance) ---*/
  /* Makes the context current for this thread, creates a stream and loads
   * `image` (NULL when the model has no kernels). `profile_path` non-NULL:
   * per-kernel times go there (docs/runtime.md, "Profiling"). */
  kiln_status_t *(*queue_create)(kiln_device *device, const void *image,
                                 int64_t image_size, uint64_t num_kernels,
                                 const char *profile_path,
                                 kiln_device_queue **out_queue);
  /* Waits for the stream and releases everything queue_create made; the
   * generic code has freed its device memory and graphs before. */
  void (*queue_destroy)(kiln_device_queue *queue);
  kiln_device_result (*enter)(kiln_device_queue *queue);
  void (*leave)(kiln_device_queue *queue);

  kiln_device_result (*alloc)(kiln_device_queue *queue, size_t bytes,
                              kiln_device_ptr *out_ptr);
  void (*free)(kiln_device_queue *queue, kiln_device_ptr ptr);
  /* Synchronous host-to-device copy (weights). */
  kiln_device_result (*upload)(kiln_device_queue *queue, kiln_device_ptr dst,
                               const void *src, size_t bytes);
  /* Copies ordered on the queue's stream. */
  kiln_device_result (*copy_to_device)(kiln_device_queue *queue,
                                       kiln_device_ptr dst, const void *src,
                                       size_t bytes);
  kiln_device_result (*copy_to_host)(kiln_device_queue *queue, void *dst,
                                     kiln_device_ptr src, size_t bytes);
  kiln_device_result (*copy_device)(kiln_device_queue *queue,
                                    kiln_device_ptr dst, kiln_device_ptr src,
                                    size_t bytes);
  kiln_device_result (*synchronize)(kiln_device_queue *queue);
  /* Zeroed host memory that kernels read and write directly (the record of
   * failed device checks): *out_host for the host, *out_ptr for kernels.
   * What kernels wrote is visible to the host after synchronize. */
  kiln_device_result (*host_alloc_mapped)(kiln_device_queue *queue,
                                          size_t bytes, void **out_host,
                                          kiln_device_ptr *out_ptr);
  void (*host_free)(kiln_device_queue *queue, void *host); /* accepts NULL */
  /* Runs later work on `stream` (the caller's, NULL: the queue's own) after
   * waiting for the current one; returns a status saying what failed. */
  kiln_status_t *(*set_stream)(kiln_device_queue *queue, void *stream);
  /* 1 while the queue runs on its own stream. */
  int (*on_own_stream)(const kiln_device_queue *queue);
  /* Launches one kernel on the stream (looking its function up on first
   * use). On failure writes the failed call and its arguments to `call`
   * (kernel index and name, grid, block). */
  kiln_device_result (*launch)(kiln_device_queue *queue,
                               const kiln_device_launch *launch, char *call,
                               size_t call_size);
  /* Encodes `map` into `out` (KILN_DEVICE_TILE_MAP_BYTES, aligned to as
   * many). NULL when the device has no bulk tensor copies (kernels built for
   * it never ask for tile maps). */
  kiln_device_result (*encode_tile_map)(kiln_device_queue *queue,
                                        const kiln_device_tile_map *map,
                                        void *out);
  /* Graphs: begin captures the stream's work; end stops the capture and
   * makes a replayable graph of it (*out_graph NULL when that failed). */
  kiln_device_result (*capture_begin)(kiln_device_queue *queue);
  kiln_device_result (*capture_end)(kiln_device_queue *queue,
                                    kiln_device_graph **out_graph);
  kiln_device_result (*graph_launch)(kiln_device_queue *queue,
                                     kiln_device_graph *graph);
  void (*graph_destroy)(kiln_device_queue *queue, kiln_device_graph *graph);
  /* After each run has synchronized (profiling: collect its times; the
   * launches of a failed run are dropped). */
  void (*end_run)(kiln_device_queue *queue, int failed);

  /*--- Timing (kiln_instance_set_profiling); NULL where the driver cannot
   * time device work ---*/
  /* From the next run on: time every launch (`kernels`; the generic code
   * runs without graphs then) and record marks (`marks`); off when 0.
   * Queues created with a profile_path time launches regardless. */
  kiln_status_t *(*set_timing)(kiln_device_queue *queue, int kernels,
                               int marks);
  /* Records mark `mark` (0 to 3) of the run on the stream, when marks are
   * on: 0 before the inputs are copied in, 1 before the compute, 2 after
   * it, 3 after the outputs are copied out. */
  void (*mark)(kiln_device_queue *queue, int mark);
  /* After end_run: the times of the run it ended (nothing for a failed
   * run). Valid until the next run. */
  void (*timing)(kiln_device_queue *queue, kiln_device_timing *out);
} kiln_device_driver;

/* Every driver this runtime was built with, NULL-terminated (generated by
 * CMake from the folders under lib/Runtime/Drivers). */
KILN_HIDDEN extern const kiln_device_driver *const kiln_device_drivers[];

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_DEVICE_H */
