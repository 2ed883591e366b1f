/*===- ModelABI.h - Contract between generated code and the runtime -*- C -*-===*
 *
 * The interface between the code kilnc generates into model.so (the host
 * program and its kernels) and Kiln's runtime, which is linked into the same
 * model.so. Every target uses the same host-side contract; only the launch
 * entry point differs per device kind.
 *
 * Generated code DEFINES:
 *   int32_t kiln_model_main(kiln_rt_ctx *ctx);
 *       The host program for one run. Returns 0 on success, non-zero when a
 *       runtime call it made failed (the runtime has recorded the reason in
 *       ctx). Called by the runtime only after all inputs were validated
 *       against the signature.
 *   extern const char kiln_model_signature[];
 *       NUL-terminated text, one record per line:
 *         kiln-signature 1
 *         arena <bytes>                       static arena size of one instance
 *         input <name> <dtype> <rank> <dim>*  in signature order
 *         output <name> <dtype> <rank> <dim>*
 *         device <kind> [<chip>]              optional; "cpu" when absent,
 *                                             "<kind> <chip>" for a device
 *                                             target (kilnc --target)
 *                                             (the kind picks the runtime's
 *                                             device driver)
 *         kernels <count>                     device kernels (indices
 *                                             0..count-1 of
 *                                             kiln_rt_launch_device)
 *         weights <count>                     weight indices of kiln_rt_weight
 *         graph-capturable                    present when a run has no host
 *                                             reads of device data and no
 *                                             symbolic dims: the runtime may
 *                                             capture it into a device graph
 *         weights-file <file> <hash> <bytes>  kilnc --external-weights: the
 *                                             weights file's basename (found
 *                                             next to model.so by default),
 *                                             its layout hash (16 hex digits,
 *                                             also in the file's header) and
 *                                             its size
 *         launch <site> <kernel> [<node>,<node>...]
 *                                             optional, one per launch site
 *                                             (site 0, 1, ... in order): the
 *                                             kernel the site launches (its
 *                                             symbol: the CPU function, or
 *                                             the device kernel) and the ONNX
 *                                             nodes it computes, for
 *                                             profiles; generated code calls
 *                                             kiln_rt_launch_site(ctx, site)
 *                                             before the launch (and -1
 *                                             after)
 *         weight <name> <dtype> <rank> <dim>* <offset> <bytes>
 *                                             one per external weight, in
 *                                             kiln_rt_external_weight index
 *                                             order: static dims, the byte
 *                                             offset (64-aligned) and size of
 *                                             its data in the weights file
 *                                             (ONNX raw_data layout). Weights
 *                                             are not inputs: the public API
 *                                             lists only `input` records.
 *       <name>: the ONNX value name, bytes outside [A-Za-z0-9_.:/-] written
 *       as %XX (hex). <dtype>: f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64
 *       bool. <dim>: a non-negative integer, or ?<symbol> for a symbolic dim
 *       (ONNX dim_param; "?" alone when it has no name). Every dim of the same
 *       symbol must have the same value at run time.
 *
 * Generated code CALLS (the runtime defines them):
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_MODELABI_H
#define KILN_RUNTIME_MODELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_rt_ctx kiln_rt_ctx;

/* Data pointer of input `index` (row-major, contiguous). */
void *kiln_rt_input(kiln_rt_ctx *ctx, int64_t index);
/* Size of dimension `dim` of input `index`. */
int64_t kiln_rt_input_dim(kiln_rt_ctx *ctx, int64_t index, int64_t dim);
/* Allocates output `index` with the given dims (as many as its rank) and
 * returns its data pointer (64-byte aligned), or NULL on failure. */
void *kiln_rt_output(kiln_rt_ctx *ctx, int64_t index, const int64_t *dims);
/* Base of this instance's static arena (64-byte aligned; offsets are planned
 * by the compiler). */
void *kiln_rt_arena(kiln_rt_ctx *ctx);
/* Scratch buffer of `bytes` bytes for an intermediate whose size is only known
 * at run time (or a device kernel's own buffer); valid until the run ends or
 * kiln_rt_release. 64-byte aligned; NULL on failure. */
void *kiln_rt_alloc(kiln_rt_ctx *ctx, int64_t bytes);
/* Ends the use of a kiln_rt_alloc buffer before the run ends: allocations
 * after it in the same run may return its memory. On a device target the
 * work queued before the call is ordered before any that reuses it. */
void kiln_rt_release(kiln_rt_ctx *ctx, void *ptr);
/* External weight `index` (0 <= index < the number of `weight` records):
 * on the CPU a pointer into the memory-mapped weights file (read-only, 64-byte
 * aligned); on a device target the instance's device copy, uploaded on first
 * use and kept for the instance's lifetime. NULL on failure (recorded in
 * ctx). */
void *kiln_rt_external_weight(kiln_rt_ctx *ctx, int64_t index);
/* Runs one kernel on the host CPU. `args[i]` points to the memref descriptor
 * of kernel argument i: { void *allocated; void *aligned; int64_t offset;
 * int64_t sizes[rank]; int64_t strides[rank]; } */
void kiln_rt_launch_cpu(kiln_rt_ctx *ctx, void (*kernel)(void **args),
                        void **args);
/* Runs a CPU kernel's parallel loop (kiln.parallel_for): splits the tasks
 * [0, tasks) into one contiguous range per thread of the process's pool
 * and calls body(argv) for each, argv a copy of `args` (`nargs` slots)
 * whose slots 0 and 1 point to the range's first and end task (int64_t);
 * returns when all have returned. */
void kiln_rt_parallel_for(void (*body)(void **args), void **args, int64_t nargs,
                          int64_t tasks);
/* The launch site of the kiln_rt_launch_cpu / kiln_rt_launch_device calls
 * that follow, until the next call (-1: none; kilnc sets it before each
 * launch, or each call of a GPU kernel's launcher, and -1 after): its
 * `launch` record in the signature names the kernel and its ONNX nodes, and
 * profiles attribute those launches to it. Costs one store. */
void kiln_rt_launch_site(kiln_rt_ctx *ctx, int64_t site);
/* A run-time check of the generated code failed (kiln.check): records
 * INVALID_ARGUMENT with `message`, its `{i}` replaced by values[i] (at most
 * 8), and the host program returns non-zero right after. */
void kiln_rt_check_failed(kiln_rt_ctx *ctx, const char *message,
                          int64_t num_values, const int64_t *values);

/*---------------------------------------------------------------------------
 * Device targets. On a device target kiln_rt_input, kiln_rt_output,
 * kiln_rt_arena and kiln_rt_alloc return DEVICE pointers (the runtime stages
 * host inputs/outputs), and generated code additionally calls:
 *---------------------------------------------------------------------------*/

/* Launches device kernel `kernel` (0 <= kernel < the signature's "kernels"
 * count; `name` is its symbol in the device image) on the instance's stream,
 * through the model's device driver. `params` holds one pointer per kernel
 * parameter (the driver's kernel-parameter array), each memref expanded
 * to allocated, aligned, offset, sizes[rank], strides[rank]. On failure
 * records the reason in ctx; once ctx has failed, later launches do
 * nothing. */
void kiln_rt_launch_device(kiln_rt_ctx *ctx, int64_t kernel, const char *name,
                           int64_t grid_x, int64_t grid_y, int64_t grid_z,
                           int64_t block_x, int64_t block_y, int64_t block_z,
                           int64_t shared_bytes, void **params);
/* Encodes into `out` (128 bytes, 64-byte aligned: a kernel parameter
 * passed by value) the tile map of a `rank`-dim view of device memory at
 * `base` for the device's bulk tensor copies: elements of `dtype` (a
 * kiln_dtype_t), dims[rank] elements and strides[rank] bytes innermost
 * first (strides[0] ignored, the others multiples of 16), boxes of
 * box[rank] elements, `swizzle` 0, 32, 64 or 128 bytes. On failure records
 * the reason in ctx and zero-fills `out`. */
void kiln_rt_tile_map(kiln_rt_ctx *ctx, void *out, int64_t dtype, int64_t rank,
                      void *base, const int64_t *dims, const int64_t *strides,
                      const int64_t *box, int64_t swizzle);
/* Encodes into `out` (as kiln_rt_tile_map) the im2col map of a
 * channels-last activation at `base` ([batch, spatial..., channels], rank 3
 * to 5; dims and strides innermost first): a convolution's copies read
 * `pixels` output pixels of `channels` channels, the spatial dims walked
 * within [lower[i], dims[i + 1] - 1 + upper[i]] (i over the rank - 2
 * spatial dims, innermost first) in steps of element_strides[i + 1]
 * (element_strides: rank entries, 1 for the channels and the batch). */
void kiln_rt_im2col_map(kiln_rt_ctx *ctx, void *out, int64_t dtype,
                        int64_t rank, void *base, const int64_t *dims,
                        const int64_t *strides, const int64_t *lower,
                        const int64_t *upper, const int64_t *element_strides,
                        int64_t channels, int64_t pixels, int64_t swizzle);
/* Device copy of weight `index` (0 <= index < the signature's "weights"
 * count) whose host data is `host` (`bytes` bytes, in the .so): uploaded on
 * first use, then reused for the instance's lifetime. NULL on failure
 * (recorded in ctx). */
void *kiln_rt_weight(kiln_rt_ctx *ctx, int64_t index, const void *host,
                     int64_t bytes);
/* Copies `bytes` from device memory to host memory (waits for the stream):
 * the host program's reads of kernel results (data-dependent sizes). On
 * failure records the reason in ctx and zero-fills `dst`. */
void kiln_rt_read_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes);
/* The instance's record of failed device checks (kiln.check_record: 10
 * int64s the kernels write when a check of device data fails), as a device
 * pointer; `messages` holds the model's `count` device-check messages, one
 * C string each, back to back. The runtime reads the record after the run
 * synchronizes and fails the run with the message of the check it names.
 * NULL on failure (recorded in ctx). */
void *kiln_rt_check_record(kiln_rt_ctx *ctx, const char *messages,
                           int64_t count);
/* Device-to-device copy of `bytes` on the stream. */
void kiln_rt_copy_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes);

/* Defined by generated code. */
int32_t kiln_model_main(kiln_rt_ctx *ctx);
/* Defined by generated code when some kernels depend only on weights
 * (kiln-hoist-weight-kernels; the runtime references it weakly): runs them
 * once per instance, before its first kiln_model_main, writing persistent
 * buffers at the end of the arena that kiln_model_main then reads. Returns
 * 0 on success like kiln_model_main. */
int32_t kiln_model_init(kiln_rt_ctx *ctx);
extern const char kiln_model_signature[];
/* Defined by generated code for a device target only (the runtime
 * references them weakly): the device image (in the format of the target's
 * driver, docs/runtime.md; 64-byte aligned), its size in bytes, and its
 * kind, the NUL-terminated device kind of the signature: the
 * driver of that kind loads it, and the runtime refuses a model whose image
 * kind is not its driver's. */
extern const unsigned char kiln_model_device_image[];
extern const int64_t kiln_model_device_image_size;
extern const char kiln_model_device_image_kind[];

/* A model of several device images (kilnc --target=<kind> for a kind whose
 * target table row lists default images: one whole compile per chip, in
 * that order) defines, instead of the six symbols
 * above, one program per image and the two symbols below; the runtime
 * takes the first program whose image the device runs (its driver opens
 * the signature's chip), or the one the model option device_chip
 * (KILN_<KIND>_CHIP) names. Every program has the same inputs, outputs and
 * weights file; each has its own signature (arena, chip, kernels). */
typedef struct kiln_model_program {
  const char *signature;             /* as kiln_model_signature */
  int32_t (*main)(kiln_rt_ctx *ctx); /* as kiln_model_main */
  int32_t (*init)(kiln_rt_ctx *ctx); /* as kiln_model_init; or NULL */
  const unsigned char *image;        /* NULL: no kernels */
  const int64_t *image_size;         /* NULL: no kernels */
  const char *image_kind;            /* NULL: no kernels */
} kiln_model_program;
extern const kiln_model_program kiln_model_programs[];
extern const int64_t kiln_model_num_programs;

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_MODELABI_H */
