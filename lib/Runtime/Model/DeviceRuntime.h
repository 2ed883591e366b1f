/*===- DeviceRuntime.h - Device models, shared by their files ---*- C -*-===*
 *
 * Internal to the model runtime: the per-model and per-instance state of a
 * device model (DeviceRuntime.c: lifecycle; DeviceCalls.c: device memory
 * and the device calls of generated code; DeviceRun.c: runs and graphs).
 * All of it reaches the device through model->driver (kiln/Runtime/Device.h).
 *
 * Each instance owns its device memory: the arena, weights (uploaded on
 * first use), input staging buffers, output buffers and a scratch cache.
 * Graph-capturable models are captured into a device graph on the second
 * run of each input shape (the values of the signature's symbols) and
 * replayed after that, up to KILN_GRAPH_CACHE shapes per instance (the
 * least recently run is dropped for a new one); runs on device buffers are
 * captured on the caller's buffers, and a new capture follows when those
 * move. Every device
 * call made while generated code runs records its failure in the run
 * context (the call, the driver's error text); after the first failure the
 * remaining launches and copies of the run do nothing.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_LIB_RUNTIME_MODEL_DEVICERUNTIME_H
#define KILN_LIB_RUNTIME_MODEL_DEVICERUNTIME_H

#include "ModelRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device allocations are at least this large and sizes are rounded to it. */
#define KILN_DEVICE_ALIGNMENT 256

struct kiln_dev_model {
  const kiln_device_driver *driver;
  kiln_device *device;
  const void *image; /* NULL when the model has no kernels */
  int64_t image_size;
};

typedef struct kiln_dev_buffer {
  kiln_device_ptr ptr;
  size_t capacity;
} kiln_dev_buffer;

/* Shapes of a graph-capturable model with a graph (or about to get one). */
#define KILN_GRAPH_CACHE 8

/* One input shape's graph: warm after a plain staged run of the shape
 * (which allocated what a capture needs), then captured on its next run.
 * Its scratch buffers are pinned (kiln_scratch.pins) while it lives, so
 * its kernels' pointers stay valid and its capture allocates nothing. */
typedef struct kiln_dev_graph_entry {
  int live;
  int64_t *key; /* the values of the model's symbols */
  int warm;
  int failures; /* captures that needed an allocation: 2 stop trying */
  kiln_device_graph *graph;
  /* The device pointers the graph was captured with: a replay must see the
   * same ones (its kernels and tile maps hold them). */
  kiln_device_ptr *input_ptr;  /* per input */
  kiln_device_ptr *output_ptr; /* per output */
  char *output_direct;         /* per output */
  int64_t *output_dims;        /* the outputs' dims, as the instance's */
  kiln_device_ptr *pins;       /* the scratch buffers it holds */
  size_t num_pins;
  uint64_t last_run;
} kiln_dev_graph_entry;

struct kiln_dev_instance {
  const kiln_device_driver *drv;
  kiln_device *device;
  kiln_device_queue *queue;
  kiln_device_ptr arena;
  kiln_dev_buffer *weights; /* per weight, then per external weight;
                               capacity = its byte size */
  kiln_dev_buffer *inputs;  /* per input: staging buffers */
  kiln_dev_buffer *outputs; /* per output: device buffers */
  kiln_scratch *scratch;    /* ptr holds a kiln_device_ptr */
  size_t num_scratch, cap_scratch;
  /* The current run. */
  int staged;                  /* inputs/outputs go through our buffers */
  kiln_device_ptr *input_ptr;  /* per input: what kiln_rt_input returns */
  kiln_device_ptr *output_ptr; /* per output: where the model writes it */
  char *output_done;           /* per output: allocated this run */
  char *output_direct;         /* per output: written straight to the caller */
  int64_t *output_dims;        /* per output, at output_dims_at[i]: its dims */
  size_t *output_dims_at;
  /* Launches flagged KILN_DEVICE_LAUNCH_DEPENDENT: the signature's
   * dependent-launch and the instance option. */
  int dependent_launch;
  /* Graphs. */
  int graphs_enabled; /* the instance option / kiln_instance_set_graphs */
  int graph_failed;   /* capture or instantiation failed: plain runs */
  int capturing;      /* kiln_model_main runs under stream capture */
  int capture_aborted;
  int capture_retry; /* the capture needed an allocation: warm up again */
  /* The graphs, by input shape. Runs on the caller's device buffers are
   * captured in place; after KILN_GRAPH_MOVES_MAX changes of those buffers
   * they go through the instance's buffers. */
  kiln_dev_graph_entry graphs[KILN_GRAPH_CACHE];
  int64_t *graph_key; /* this run's symbol values */
  uint64_t graph_clock;
  int graph_moves; /* replays refused for moved buffers */
  int profiling;   /* the instance option profile_path: no graphs then */
  /* kiln_instance_set_profiling: every launch timed (no graphs then);
   * phase marks recorded (drv->mark). */
  int timing_kernels, timing_marks;
  /* Failed device checks (kiln.check_record): the record kernels write
   * (host-mapped, KILN_CHECK_RECORD_SIZE int64s: index + 1 of the failed
   * check, 0 while all held; the number of values; the values) and the
   * messages of the model's device checks (one C string each, back to
   * back), both from the first kiln_rt_check_record. */
  volatile int64_t *check_record;
  kiln_device_ptr check_record_ptr;
  const char *check_messages;
  int64_t num_checks;
};

#define KILN_CHECK_RECORD_SIZE 10

/* When a device check failed (the record holds an index): fails ctx with
 * that check's message, `what` before it ("" or a note), and clears the
 * record. Call after the stream has synchronized. */
KILN_HIDDEN void kiln_dev_report_checks(kiln_rt_ctx *ctx, const char *what);

/* How often the caller's device buffers may move before graph runs stage
 * them (each move costs a plain run and a new capture). */
#define KILN_GRAPH_MOVES_MAX 2

/* "<call> failed: <error text>" into ctx, with RESOURCE_EXHAUSTED for
 * out-of-memory and INTERNAL otherwise. */
KILN_HIDDEN void kiln_dev_fail(kiln_rt_ctx *ctx, kiln_device_result result,
                               const char *call);
/* The same as a status; `code` unless the result is out-of-memory. */
KILN_HIDDEN kiln_status_t *kiln_dev_status(const kiln_dev_instance *di,
                                           kiln_status_code_t code,
                                           kiln_device_result result,
                                           const char *what);
KILN_HIDDEN size_t kiln_dev_round(size_t bytes);
KILN_HIDDEN size_t kiln_dev_view_bytes(kiln_dtype_t dtype, size_t rank,
                                       const int64_t *dims);
/* Work that cannot be captured in a graph (allocation, freeing, host
 * synchronization) was needed while capturing: the capture is abandoned
 * and the run redone without it. `retry`: work a plain run of the shape
 * does once (an allocation), after which a capture may succeed. Returns 1
 * when that happened. */
KILN_HIDDEN int kiln_dev_abort_capture(kiln_rt_ctx *ctx, const char *what,
                                       int retry);
/* Sets input_ptr: host inputs are copied into the staging buffers; device
 * inputs are used in place unless the run is staged (graphs) or they are
 * not aligned to their element size. */
KILN_HIDDEN void kiln_dev_stage_inputs(kiln_rt_ctx *ctx, int device_inputs);
/* The caller's buffer that output `index` is written to in place this run
 * (device views, not staged, 64-byte aligned), else 0. */
KILN_HIDDEN kiln_device_ptr kiln_dev_output_in_place(const kiln_rt_ctx *ctx,
                                                     size_t index);
/* Ends a run: keeps the scratch buffers it used, frees the others (after
 * the stream is done with them). */
KILN_HIDDEN void kiln_dev_scratch_end_run(kiln_dev_instance *di);
/* Drops every shape's graph (and unpins its scratch buffers). */
KILN_HIDDEN void kiln_dev_drop_graph(kiln_dev_instance *di);
/* Whether any shape has a graph (`or_warm`: or is about to get one). */
KILN_HIDDEN int kiln_dev_has_graph(const kiln_dev_instance *di, int or_warm);

#ifdef __cplusplus
}
#endif

#endif /* KILN_LIB_RUNTIME_MODEL_DEVICERUNTIME_H */
