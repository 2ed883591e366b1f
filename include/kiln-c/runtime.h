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
 * Devices: a model compiled for a GPU (kilnc --target=cuda:sm_90) loads the
 * driver (libcuda.so.1, by dlopen) when it is loaded, and fails with
 * FAILED_PRECONDITION when there is no usable driver or device. Its
 * instances take host tensors (kiln_instance_run: the runtime copies inputs
 * to the device and outputs back) or device buffers
 * (kiln_instance_run_device). See docs/runtime.md, "CUDA models".
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

/*===--------------------------------------------------------------------===*
 * Models
 *===--------------------------------------------------------------------===*/

typedef struct kiln_model kiln_model_t;

/* Loads a model.so produced by kilnc (dlopen RTLD_NOW | RTLD_LOCAL). A path
 * without '/' is taken relative to the current directory. Fails with
 * NOT_FOUND when the file does not exist and INCOMPATIBLE when it is not a
 * Kiln model or was built for another runtime ABI version. */
KILN_API kiln_status_t *kiln_model_load(const char *path,
                                        kiln_model_t **out_model);
/* Loads a model compiled with `kilnc --external-weights`, whose weights live
 * in a separate file that is memory-mapped (read-only) for the model's
 * lifetime. `weights_path` NULL or "": the environment variable KILN_WEIGHTS
 * if set, else the file kilnc recorded (model.weights), next to the model.
 * (kiln_model_load is this with NULL.) The file must have the layout the
 * model was compiled for (checked by the hash in its header) and cover every
 * weight; otherwise NOT_FOUND (missing) or INVALID_ARGUMENT (truncated, not
 * a weights file, another layout), naming the file and the weight. A model
 * without external weights fails with INVALID_ARGUMENT when `weights_path`
 * is given. New weights of the same shapes and dtypes (e.g. written by
 * utils/models/fill_weights.py from the model's manifest) drop in without
 * recompiling. */
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
/* Where the model runs: "cpu", or "cuda:<chip>" (e.g. "cuda:sm_90"). Owned
 * by the model; "" for NULL. */
KILN_API const char *kiln_model_device(const kiln_model_t *model);
/* The weights file the model mapped ("" without external weights). Owned by
 * the model. */
KILN_API const char *kiln_model_weights_path(const kiln_model_t *model);

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

typedef struct kiln_instance kiln_instance_t;

/* Allocates the per-instance state (static arena, scratch cache). The
 * instance holds a reference to `model`. */
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
 * Device models (kiln_model_device() is "cuda:...")
 *
 * Every call below returns FAILED_PRECONDITION for a cpu model.
 *===--------------------------------------------------------------------===*/

/* Runs the model on device buffers: every input's `data` and every output's
 * `data` is a device pointer (a CUdeviceptr cast to void *) of the
 * instance's CUDA context (the primary context of its device). Inputs are
 * validated as by kiln_instance_run; outputs must have the signature's
 * dtype and rank, and dims that match the signature and the symbols the
 * inputs bind (checked before the run) and the dims the model computes
 * (checked when it allocates the output; INVALID_ARGUMENT on mismatch,
 * the buffer is then not written).
 *
 * Ordering: the work runs on the instance's stream. With the instance's own
 * stream the call waits for it, so outputs are ready on return. With a
 * caller's stream (kiln_instance_set_cuda_stream) it returns once the work
 * is enqueued (it may still wait when the model reads device results on the
 * host): the outputs are ready when that stream reaches this point, and the
 * input and output buffers must stay valid until then. */
KILN_API kiln_status_t *
kiln_instance_run_device(kiln_instance_t *instance,
                         const kiln_tensor_view_t *inputs, size_t num_inputs,
                         const kiln_output_view_t *outputs, size_t num_outputs);

/* Runs the instance's work on `stream` (a CUstream of the instance's
 * context, cast to void *) instead of its own; NULL goes back to its own.
 * Waits for the previous stream first. The caller keeps the stream alive
 * until it sets another or releases the instance. */
KILN_API kiln_status_t *kiln_instance_set_cuda_stream(kiln_instance_t *instance,
                                                      void *stream);

/* Turns CUDA graphs on (default, unless the environment sets
 * KILN_CUDA_GRAPHS=0) or off for this instance. With graphs on, a model
 * whose signature says it is graph-capturable runs its second run captured
 * into a CUDA graph and replays the graph from then on; turning graphs off
 * drops the graph, and turning them on again retries a capture that failed
 * before. */
KILN_API kiln_status_t *kiln_instance_set_cuda_graphs(kiln_instance_t *instance,
                                                      int enable);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_RUNTIME_H */
