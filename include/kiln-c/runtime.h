/*===- kiln-c/runtime.h - Kiln runtime C API --------------------*- C -*-===*
 *
 * Loads a model.so produced by `kilnc`, queries its signature, and runs it.
 *
 * Conventions:
 *   - Every fallible call returns a kiln_status_t*: NULL means OK; otherwise
 *     the caller owns the status and frees it with kiln_status_free().
 *   - Results are returned through `out_` parameters, which are only written
 *     on success (and set to NULL on failure where noted).
 *   - Handles are opaque, with explicit lifetimes: whoever receives a handle
 *     from a create/load/run call owns one reference and releases it.
 *   - The library never aborts, exits or throws; allocation failures are
 *     reported as KILN_STATUS_RESOURCE_EXHAUSTED.
 *
 * Threading: a model may be shared by any number of threads. An instance
 * holds the per-run state (arena, scratch cache) and runs one call at a time;
 * use one instance per thread to run concurrently.
 *
 * Devices: a model compiled for a device (kilnc --target=<kind>:<chip>) opens
 * its device driver library (by dlopen) when it is loaded, and fails with
 * FAILED_PRECONDITION when there is no usable driver or device. Its
 * instances take host tensors (kiln_instance_run: the runtime copies inputs
 * to the device and outputs back) or device buffers
 * (kiln_instance_run_device). See docs/runtime.md, "Device models".
 *
 * Options: model options (kiln_model_options_t: weights file, driver
 * library, device index) and instance options (kiln_instance_options_t:
 * graphs, profile file) are passed through this API. A field left at its
 * "unset" value (NULL, -1) takes the value of a documented environment
 * variable where there is one and it is set, else the built-in default
 * (docs/runtime.md, "Options and environment").
 *===----------------------------------------------------------------------===*/
#ifndef KILN_C_RUNTIME_H
#define KILN_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_RUNTIME_BUILDING)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/*===--------------------------------------------------------------------===*
 * Status
 *===--------------------------------------------------------------------===*/

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1,   /* bad inputs, shapes, dtypes */
  KILN_STATUS_NOT_FOUND = 2,          /* missing file */
  KILN_STATUS_RESOURCE_EXHAUSTED = 3, /* out of memory */
  KILN_STATUS_INCOMPATIBLE = 4,       /* not a Kiln model / ABI mismatch */
  KILN_STATUS_FAILED_PRECONDITION = 5,
  KILN_STATUS_INTERNAL = 6, /* the model failed while running */
  KILN_STATUS_UNIMPLEMENTED = 7,
} kiln_status_code_t;

typedef struct kiln_status kiln_status_t;

/* KILN_STATUS_OK for NULL. */
KILN_API kiln_status_code_t kiln_status_code(const kiln_status_t *status);
/* "" for NULL. Valid until the status is freed. */
KILN_API const char *kiln_status_message(const kiln_status_t *status);
/* Accepts NULL. */
KILN_API void kiln_status_free(kiln_status_t *status);
/* "OK", "INVALID_ARGUMENT", ... */
KILN_API const char *kiln_status_code_name(kiln_status_code_t code);

/*===--------------------------------------------------------------------===*
 * Element types
 *===--------------------------------------------------------------------===*/

typedef enum kiln_dtype_e {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F16 = 1,
  KILN_DTYPE_BF16 = 2,
  KILN_DTYPE_F32 = 3,
  KILN_DTYPE_F64 = 4,
  KILN_DTYPE_I8 = 5,
  KILN_DTYPE_I16 = 6,
  KILN_DTYPE_I32 = 7,
  KILN_DTYPE_I64 = 8,
  KILN_DTYPE_U8 = 9,
  KILN_DTYPE_U16 = 10,
  KILN_DTYPE_U32 = 11,
  KILN_DTYPE_U64 = 12,
  KILN_DTYPE_BOOL = 13, /* one byte per element, 0 or 1 */
  /* 8-bit floats (ONNX FLOAT8*, one byte per element holding the bits). */
  KILN_DTYPE_F8E4M3FN = 14,
  KILN_DTYPE_F8E4M3FNUZ = 15,
  KILN_DTYPE_F8E5M2 = 16,
  KILN_DTYPE_F8E5M2FNUZ = 17,
} kiln_dtype_t;

/* The signature spelling: "f16", "bf16", "f32", ..., "bool"; "invalid" for
 * anything else. */
KILN_API const char *kiln_dtype_name(kiln_dtype_t dtype);
/* Bytes per element; 0 for an invalid dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype_t dtype);

/*===--------------------------------------------------------------------===*
 * Tensors
 *===--------------------------------------------------------------------===*/

/* A caller-owned description of an input: row-major, contiguous. `data`
 * must be aligned to the element size (the runtime copies it otherwise) and
 * stay valid for the duration of the call it is passed to. */
typedef struct kiln_tensor_view {
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *dims; /* `rank` entries; may be NULL when rank == 0 */
  const void *data;
} kiln_tensor_view_t;

/* A caller-allocated buffer that receives one output of
 * kiln_instance_run_device: row-major, contiguous, in device memory. `dims`
 * is the shape the caller expects; the run fails with INVALID_ARGUMENT when
 * the model produces another. */
typedef struct kiln_output_view {
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *dims; /* `rank` entries; may be NULL when rank == 0 */
  void *data;
} kiln_output_view_t;

/* A runtime-allocated tensor (host memory, 64-byte aligned, row-major).
 * Tensors are independent of the model that produced them: they stay valid
 * after the instance and the model are released. */
typedef struct kiln_tensor kiln_tensor_t;

/* Allocates an uninitialized tensor. */
KILN_API kiln_status_t *kiln_tensor_allocate(kiln_dtype_t dtype, size_t rank,
                                             const int64_t *dims,
                                             kiln_tensor_t **out_tensor);
/* Accepts NULL. */
KILN_API void kiln_tensor_release(kiln_tensor_t *tensor);
KILN_API kiln_dtype_t kiln_tensor_dtype(const kiln_tensor_t *tensor);
KILN_API size_t kiln_tensor_rank(const kiln_tensor_t *tensor);
/* `rank` entries, valid for the tensor's lifetime. */
KILN_API const int64_t *kiln_tensor_dims(const kiln_tensor_t *tensor);
KILN_API void *kiln_tensor_data(const kiln_tensor_t *tensor);
KILN_API size_t kiln_tensor_num_elements(const kiln_tensor_t *tensor);
KILN_API size_t kiln_tensor_byte_size(const kiln_tensor_t *tensor);
/* A view of the tensor, to pass it as an input. */
KILN_API kiln_tensor_view_t kiln_tensor_as_view(const kiln_tensor_t *tensor);
/* The tensor's name: the `name` field of the TensorProto it was read from
 * (kiln_tensor_read_file), "" for other tensors and for NULL. Valid for the
 * tensor's lifetime. */
KILN_API const char *kiln_tensor_name(const kiln_tensor_t *tensor);

/* Reads a serialized onnx.TensorProto (an ONNX test-data .pb file: dims,
 * data_type, name, raw_data or the typed data fields) into a new tensor.
 * NOT_FOUND when the file does not exist; INVALID_ARGUMENT, naming the file,
 * when it is not a TensorProto or holds an element type Kiln has no dtype
 * for. */
KILN_API kiln_status_t *kiln_tensor_read_file(const char *path,
                                              kiln_tensor_t **out_tensor);
/* Writes `tensor` as a serialized onnx.TensorProto (dims, data_type, name
 * (`name`, or the tensor's own when NULL), raw_data). */
KILN_API kiln_status_t *kiln_tensor_write_file(const kiln_tensor_t *tensor,
                                               const char *name,
                                               const char *path);

/*===--------------------------------------------------------------------===*
 * Threads
 *===--------------------------------------------------------------------===*/

/* CPU models run their kernels on one thread pool per process, shared by
 * every model and instance: a run that finds the pool busy with another
 * run (on another thread) runs on its caller's thread alone, so runs at
 * once never oversubscribe the cores. Sets the pool's size (the calling
 * thread included); num_threads < 1: the default, KILN_NUM_THREADS if set,
 * else the cores this process may run on (sched_getaffinity). Takes effect
 * from the next kernel. Returns the size set. */
KILN_API int kiln_set_num_threads(int num_threads);
/* The pool's size (the default until kiln_set_num_threads is called). */
KILN_API int kiln_get_num_threads(void);

/*===--------------------------------------------------------------------===*
 * Models
 *===--------------------------------------------------------------------===*/

typedef struct kiln_model kiln_model_t;

/* Options of kiln_model_load_with_options. Initialize with
 * kiln_model_options_init (which sets struct_size and every field to
 * "unset"), then set the fields you need: a caller compiled against an older
 * header passes a smaller struct_size and gets the defaults for the fields
 * it does not know. */
typedef struct kiln_model_options {
  size_t struct_size; /* sizeof(kiln_model_options_t) */
  /* The weights file of a model compiled with `kilnc --external-weights`,
   * memory-mapped (read-only) for the model's lifetime. NULL or "": the
   * environment variable KILN_WEIGHTS if set, else the file kilnc recorded
   * (model.weights), next to the model. The file must have the layout the
   * model was compiled for (checked by the hash in its header) and cover
   * every weight; otherwise NOT_FOUND (missing) or INVALID_ARGUMENT
   * (truncated, not a weights file, another layout), naming the file and
   * the weight. A model without external weights fails with
   * INVALID_ARGUMENT when a weights file is given here (the environment is
   * ignored for it). New weights of the same shapes and dtypes (e.g.
   * written by utils/models/fill_weights.py from the model's manifest) drop
   * in without recompiling. */
  const char *weights_path;
  /* Device models: the driver library to dlopen. NULL or "":
   * KILN_<KIND>_DRIVER if set, else the driver's default library
   * (docs/runtime.md lists them per device). Ignored by cpu models. */
  const char *driver_path;
  /* Device models: the device index. -1: KILN_<KIND>_DEVICE if set, else 0.
   * FAILED_PRECONDITION when there is no such device. */
  int32_t device_ordinal;
  /* Device models built for several chips (kilnc --target=<kind> without a
   * chip, for kinds that embed several images; docs/runtime.md): the chip
   * whose image runs. NULL or "": KILN_<KIND>_CHIP if set, else the first
   * of the model's images the device runs (in the order kilnc wrote them).
   * A chip the model has no image for is INVALID_ARGUMENT naming the
   * images it has; models of one image ignore it. kiln_model_device()
   * names the image taken. */
  const char *device_chip;
} kiln_model_options_t;

/* Sets struct_size and leaves every option unset (NULL, -1). */
KILN_API void kiln_model_options_init(kiln_model_options_t *options);

/* Loads a model.so produced by kilnc (dlopen RTLD_NOW | RTLD_LOCAL). A path
 * without '/' is taken relative to the current directory. `options` may be
 * NULL (all unset). Fails with NOT_FOUND when the file does not exist,
 * INCOMPATIBLE when it is not a Kiln model or was built for another runtime
 * ABI version (the message names both versions), and INVALID_ARGUMENT for a
 * bad struct_size. */
KILN_API kiln_status_t *
kiln_model_load_with_options(const char *path,
                             const kiln_model_options_t *options,
                             kiln_model_t **out_model);
/* kiln_model_load_with_options with every option unset. */
KILN_API kiln_status_t *kiln_model_load(const char *path,
                                        kiln_model_t **out_model);
/* kiln_model_load_with_options with only `weights_path` set. */
KILN_API kiln_status_t *kiln_model_load_with_weights(const char *path,
                                                     const char *weights_path,
                                                     kiln_model_t **out_model);
KILN_API void kiln_model_retain(kiln_model_t *model);
/* Drops one reference; the library is unloaded with the last one (instances
 * hold a reference). Accepts NULL. */
KILN_API void kiln_model_release(kiln_model_t *model);

/* Signature of one input or output. All pointers are owned by the model and
 * valid for its lifetime. */
typedef struct kiln_value_info {
  const char *name;
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *dims;            /* -1 for a symbolic dim */
  const char *const *dim_symbols; /* per dim: symbol name; "" when the dim is
                                     static or its symbol is unnamed */
} kiln_value_info_t;

KILN_API size_t kiln_model_num_inputs(const kiln_model_t *model);
KILN_API size_t kiln_model_num_outputs(const kiln_model_t *model);
KILN_API kiln_status_t *kiln_model_input_info(const kiln_model_t *model,
                                              size_t index,
                                              kiln_value_info_t *out_info);
KILN_API kiln_status_t *kiln_model_output_info(const kiln_model_t *model,
                                               size_t index,
                                               kiln_value_info_t *out_info);
/* Size in bytes of the static arena each instance allocates (in device
 * memory for a device model). */
KILN_API uint64_t kiln_model_arena_size(const kiln_model_t *model);
/* Where the model runs: "cpu", or "<kind>:<chip>" for a device model (the
 * spelling of kilnc --target). Owned by the model; "" for NULL. */
KILN_API const char *kiln_model_device(const kiln_model_t *model);
/* The weights file the model mapped ("" without external weights). Owned by
 * the model. */
KILN_API const char *kiln_model_weights_path(const kiln_model_t *model);

/* Verifies a weights file (kilnc --external-weights, or written by
 * utils/models/fill_weights.py) against the checksum in its header: reads
 * the whole file. NULL when the header agrees with the file and the data's
 * CRC-32 matches; INVALID_ARGUMENT when it is not a weights file, is
 * damaged (the header's size differs from the file's) or corrupt (the CRC
 * differs); FAILED_PRECONDITION for a file written without a checksum;
 * NOT_FOUND when it does not exist. Loading a model checks the header, not
 * the data (kiln-run --verify-weights calls this first). */
KILN_API kiln_status_t *kiln_weights_verify(const char *path);

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

typedef struct kiln_instance kiln_instance_t;

/* Options of kiln_instance_create_with_options; initialize with
 * kiln_instance_options_init (see kiln_model_options_t). cpu models accept
 * and ignore them. */
typedef struct kiln_instance_options {
  size_t struct_size; /* sizeof(kiln_instance_options_t) */
  /* Device graphs (see kiln_instance_set_graphs): 1 on, 0 off, -1:
   * KILN_<KIND>_GRAPHS=0 turns them off, else on. */
  int32_t graphs;
  /* Per-kernel device times of all its runs are appended as one JSON line
   * to this file when the instance is released (docs/runtime.md,
   * "Per-kernel times"; no graphs then). NULL or "": off. (For the times
   * of single launches, see kiln_instance_set_profiling.) */
  const char *profile_path;
  /* Dependent launches (a model whose signature has `dependent-launch`,
   * docs/runtime.md): each kernel is launched while the one before it still
   * runs and waits for it itself. 1 on, 0 off, -1:
   * KILN_<KIND>_DEPENDENT_LAUNCH=0 turns them off, else on. */
  int32_t dependent_launch;
} kiln_instance_options_t;

/* Sets struct_size and leaves every option unset (-1, NULL). */
KILN_API void kiln_instance_options_init(kiln_instance_options_t *options);

/* Allocates the per-instance state (static arena, scratch cache; a device
 * model's stream, loaded device image and device memory). The instance
 * holds a reference to `model`. `options` may be NULL (all unset). */
KILN_API kiln_status_t *
kiln_instance_create_with_options(kiln_model_t *model,
                                  const kiln_instance_options_t *options,
                                  kiln_instance_t **out_instance);
/* kiln_instance_create_with_options with every option unset. */
KILN_API kiln_status_t *kiln_instance_create(kiln_model_t *model,
                                             kiln_instance_t **out_instance);
/* Accepts NULL. */
KILN_API void kiln_instance_release(kiln_instance_t *instance);

/* Runs the model once. `inputs` are in signature order and are validated
 * (count, dtype, rank, static dims, agreement of dims sharing a symbol)
 * before any generated code runs. On success out_outputs[i] receives a new
 * tensor for output i, owned by the caller; on failure every out_outputs[i]
 * is NULL. Not reentrant for one instance. */
KILN_API kiln_status_t *kiln_instance_run(kiln_instance_t *instance,
                                          const kiln_tensor_view_t *inputs,
                                          size_t num_inputs,
                                          kiln_tensor_t **out_outputs,
                                          size_t num_outputs);

/*===--------------------------------------------------------------------===*
 * Device models (kiln_model_device() is not "cpu")
 *
 * Every call below returns FAILED_PRECONDITION for a cpu model.
 *===--------------------------------------------------------------------===*/

/* Runs the model on device buffers: every input's `data` and every output's
 * `data` is a device pointer (the driver's device address cast to void *)
 * of the instance's device context (the primary context of its device).
 * Inputs are validated as by kiln_instance_run; outputs must have the signature's
 * dtype and rank, and dims that match the signature and the symbols the
 * inputs bind (checked before the run) and the dims the model computes
 * (checked when it allocates the output; INVALID_ARGUMENT on mismatch,
 * the buffer is then not written).
 *
 * Ordering: the work runs on the instance's stream. With the instance's own
 * stream the call waits for it, so outputs are ready on return. With a
 * caller's stream (kiln_instance_set_stream) it returns once the work
 * is enqueued (it may still wait when the model reads device results on the
 * host): the outputs are ready when that stream reaches this point, and the
 * input and output buffers must stay valid until then. */
KILN_API kiln_status_t *
kiln_instance_run_device(kiln_instance_t *instance,
                         const kiln_tensor_view_t *inputs, size_t num_inputs,
                         const kiln_output_view_t *outputs, size_t num_outputs);

/* Runs the instance's work on `stream` (a stream of the instance's device
 * context, the driver's stream handle cast to void *) instead of its own; NULL
 * goes back to its own. Waits for the previous stream first. The caller
 * keeps the stream alive until it sets another or releases the instance. */
KILN_API kiln_status_t *kiln_instance_set_stream(kiln_instance_t *instance,
                                                 void *stream);

/* Turns device graphs (the driver's captured work graphs) on or off for this
 * instance;
 * the initial setting is the instance option `graphs`. With graphs on, a
 * model whose signature says it is graph-capturable runs its second run
 * captured into a graph and replays the graph from then on (on the caller's
 * device buffers while they stay where they were: docs/runtime.md); turning
 * graphs off drops the graph, and turning them on again retries a capture
 * that failed before. */
KILN_API kiln_status_t *kiln_instance_set_graphs(kiln_instance_t *instance,
                                                 int enable);

/*===--------------------------------------------------------------------===*
 * Profiling (docs/runtime.md, "Profiling")
 *===--------------------------------------------------------------------===*/

/* What an instance measures in its runs, or-ed together. Nothing is
 * measured by default, and an instance that measures nothing pays nothing
 * for it. */
typedef enum kiln_profile_flags_e {
  KILN_PROFILE_OFF = 0,
  /* Every kernel launch: when it started and how long it ran. CPU kernels
   * by the host's clock around each kernel; device kernels by device events
   * around each launch, so a device instance then runs without graphs and
   * its runs take longer than unprofiled ones. */
  KILN_PROFILE_KERNELS = 1,
  /* Device models: the device time of each run's input copies, its compute
   * (kernels, device copies, host reads) and its output copies, from four
   * device events between them (graphs stay on). A run on the caller's
   * stream then returns with its work done. */
  KILN_PROFILE_PHASES = 2,
} kiln_profile_flags_t;

/* Measures `flags` (kiln_profile_flags_t, or-ed) from the next run on;
 * KILN_PROFILE_OFF stops measuring. INVALID_ARGUMENT for unknown flags;
 * UNIMPLEMENTED when the model's device driver cannot time device work. */
KILN_API kiln_status_t *kiln_instance_set_profiling(kiln_instance_t *instance,
                                                    int flags);

/* One kernel launch of a profiled run. Strings are owned by the instance. */
typedef struct kiln_kernel_event {
  /* The kernel's name: the symbol of the function or device kernel that
   * ran ("" when the model does not say and the symbol is not found). */
  const char *kernel;
  /* The ONNX nodes the launch computes, when the model records them (its
   * `launch` records, kiln/Runtime/ModelABI.h); else NULL and 0. */
  const char *const *nodes;
  size_t num_nodes;
  int64_t index;     /* device kernels: the kernel's index; CPU: -1 */
  int64_t site;      /* the launch site the model named; -1 when none */
  int32_t on_device; /* 1: timed by device events; 0: by the host clock */
  double start_us;   /* from the start of the run */
  double duration_us;
} kiln_kernel_event_t;

/* The measurements of an instance's last run (kiln_instance_last_profile).
 * The caller sets struct_size; fields past it are not written. */
typedef struct kiln_run_profile {
  size_t struct_size; /* sizeof(kiln_run_profile_t) */
  int32_t flags;      /* what was measured (kiln_profile_flags_t) */
  double run_us;      /* host clock, from the call's start to its end */
  /* Device models with KILN_PROFILE_PHASES: device time of the input
   * copies, the compute and the output copies; -1 when not measured. */
  double h2d_us, compute_us, d2h_us;
  /* KILN_PROFILE_KERNELS: every launch, in launch order. Device launches
   * start at the device time since the run's first device event, placed
   * where the host recorded that event (docs/runtime.md). */
  size_t num_events;
  const kiln_kernel_event_t *events;
  /* "" or why device timing stopped (a failed event call; the run itself
   * succeeded). */
  const char *stopped;
} kiln_run_profile_t;

/* The measurements of the instance's last successful run made while
 * profiling was on, valid until its next run, kiln_instance_set_profiling
 * or kiln_instance_release. FAILED_PRECONDITION when there is none. */
KILN_API kiln_status_t *
kiln_instance_last_profile(kiln_instance_t *instance,
                           kiln_run_profile_t *out_profile);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_RUNTIME_H */
