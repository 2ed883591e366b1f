/*===- kiln-c/compiler.h - Kiln compiler C API -----------------*- C -*-===*
 *
 * Compiles ONNX models in the calling process (no kilnc process) into a
 * loaded model (kiln_model_t of kiln-c/runtime.h, ready for instances) or
 * into a model.so on disk. Library: libkiln_compiler.so, which uses
 * libkiln_runtime.so for the models it loads.
 *
 * Conventions are those of kiln-c/runtime.h: every fallible call returns a
 * kiln_status_t* (NULL means OK; the caller frees it), results go through
 * `out_` parameters written only on success, handles are opaque, and
 * nothing aborts, exits or throws. A model that cannot be compiled gives
 * INVALID_ARGUMENT (a malformed model, an inconsistent shape, a bad
 * option) or UNIMPLEMENTED (an unsupported operator) with the compiler's
 * messages, each naming the ONNX node (name, op type, opset); a missing
 * model file NOT_FOUND; a device target whose vendor tools are missing
 * FAILED_PRECONDITION.
 *
 * Threading: a kiln_compiler_t may be used by any number of threads at
 * once; compiles run concurrently (each has its own MLIR context; nothing
 * serializes the pipeline). Options objects are not synchronized: one per
 * thread, or do not change them while they are used.
 *
 * The compile cache: a compiled model is kept as <cache>/<key>.so (and
 * <key>.weights with external weights), where <key> hashes the model's
 * bytes (and its external-data files), the options, and this compiler
 * library's build id; a compile with the same key loads that file instead
 * of compiling. The folder is the one given to kiln_compiler_create, else
 * $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln
 * (docs/embedding.md).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_C_COMPILER_H
#define KILN_C_COMPILER_H

#include "kiln-c/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_COMPILER_BUILDING)
#define KILN_COMPILER_API __attribute__((visibility("default")))
#else
#define KILN_COMPILER_API
#endif

/* "kiln-compiler <version> (build <build id>)". Static storage. */
KILN_COMPILER_API const char *kiln_compiler_version(void);

/*===--------------------------------------------------------------------===*
 * Options: kilnc's flags by name, without the dashes
 *===--------------------------------------------------------------------===*/

typedef struct kiln_compile_options kiln_compile_options_t;

/* Options with kilnc's defaults (target cpu, fp32, -O2, no dims fixed). */
KILN_COMPILER_API kiln_status_t *
kiln_compile_options_create(kiln_compile_options_t **out_options);
/* Accepts NULL. */
KILN_COMPILER_API void
kiln_compile_options_free(kiln_compile_options_t *options);
/* Sets option `name` (kilnc's flag without the leading dashes) to `value`:
 *   target            as kilnc --target: cpu, cpu:<chip>, <kind>[:<chip>]
 *                     (an unknown one's message lists them all)
 *   precision         fp32, tf32, fp16, bf16
 *   layout            target, nchw, nhwc
 *   O                 0, 1, 2, 3 (the graph optimizer's level)
 *   dim               NAME=VALUE (repeatable): fixes a symbolic dim
 *   shapes            NAME:DxD...[,NAME:...] (repeatable): fixes inputs'
 *                     shapes
 *   keep-fp32         an ONNX node name or op type kept in fp32
 *                     (repeatable)
 *   external-weights  1 or 0: large initializers go to a weights file next
 *                     to the model (needs a cache folder, or a *_to_file
 *                     compile); or the weights FILE's path, for the
 *                     *_to_file compiles (a file named like a boolean: ./1)
 *   gpu-tiled-contractions, gpu-warp-reductions, gpu-row-fusion,
 *   gpu-tensor-cores, gpu-async-copy, gpu-dependent-launch
 *                     1 or 0
 *   gpu-block-size, gpu-fill-blocks, gpu-min-threads
 *                     integers, as kilnc's --gpu-* flags
 *   gpu-persistent    off, on or auto: persistent contraction kernels
 *                     (where the target has them), as kilnc's --gpu-persistent
 *   gpu-split-k       auto or off: whether the target's own contraction
 *                     kernels split K for few tiles, as kilnc's --gpu-split-k
 *   gpu-tiles         BMxBN[,BMxBN...]: the output tiles the target's own
 *                     contraction kernels may take, as kilnc's --gpu-tiles
 *   gpu-attention-block
 *                     WARPSxKEYS[/BLOCKS]: the fused attention kernel's
 *                     block, as kilnc's --gpu-attention-block
 *   max-memory        SIZE: bytes with K/M/G, or a fraction such as 0.6x
 *   max-memory-weights
 *                     1 or 0: the max-memory budget covers the weights too
 *   external-weights-min-bytes
 *                     N >= 0: smaller initializers stay embedded (1024)
 *   expose-intermediates
 *                     all, or NODE[,NODE...] (repeatable): intermediate
 *                     float values become extra outputs
 *   calibrate         DIR of input_N.pb samples (or test_data_set_*):
 *                     keep in fp32 what would overflow the half type
 *   calibration-ranges
 *                     FILE.json: with calibrate, written; else read
 *   dump-after        STAGE (import, graph, lower, kernels, host,
 *                     bufferize, codegen, llvm): the IR after that stage
 *                     to the output callback's LISTING
 *   print-pipeline    STAGE (after import): its pass pipeline to LISTING
 *                     before it runs
 *   report            FILE.json: the compile report (kernels, ONNX nodes,
 *                     FLOPs, bytes, arena), its summary to LISTING
 *   save-device-image FILE: the device code the model embeds (a device
 *                     target's image; none is an error at the end)
 *   timing            1 or 0: where the time went, to TIMING
 *   S                 1 or 0: the *_to_file compiles write the host code's
 *                     assembly instead of the shared library
 *   model-runtime     FILE: the runtime archive linked into the model
 *                     (default: libKilnModelRuntime.a beside this library;
 *                     a sanitized one for testing)
 * The messages spell options as kilnc's flags (--shapes, -O). Options that
 * write files or text (dump-after, print-pipeline, report,
 * save-device-image, timing, calibrate, calibration-ranges, S,
 * model-runtime, a named external-weights FILE) bypass the compile cache:
 * such a compile always compiles (a miss) and stores nothing there.
 * INVALID_ARGUMENT naming the option for an unknown name or a bad value
 * (the unknown-name message lists the known ones); `options` is then
 * unchanged. Checks that involve two options (calibrate and keep-fp32 need
 * a precision other than fp32, external-weights-min-bytes needs
 * external-weights) are made when compiling. */
KILN_COMPILER_API kiln_status_t *
kiln_compile_options_set(kiln_compile_options_t *options, const char *name,
                         const char *value);

/* Where a compile's text goes (kilnc prints LISTING on stdout, the rest on
 * stderr). */
typedef enum kiln_compile_output_kind {
  /* The IR of dump-after, the pipeline of print-pipeline, the report's
   * summary. */
  KILN_COMPILE_OUTPUT_LISTING = 0,
  /* One error diagnostic as "LOCATION: error: MESSAGE\n" with its notes
   * (the failed compile's status carries the same messages). */
  KILN_COMPILE_OUTPUT_ERROR = 1,
  /* A warning or remark, in the same form. */
  KILN_COMPILE_OUTPUT_WARNING = 2,
  /* The timing option's report. */
  KILN_COMPILE_OUTPUT_TIMING = 3,
} kiln_compile_output_kind_t;
/* Receives `size` bytes of text (not NUL-terminated) of `kind`, on the
 * compiling thread, during the compile. */
typedef void (*kiln_compile_output_fn)(void *user_data,
                                       kiln_compile_output_kind_t kind,
                                       const char *text, size_t size);
/* Sends the text of compiles with these options to `fn` (NULL: drop it, the
 * default; diagnostics are still in the statuses). Not part of the cache
 * key. */
KILN_COMPILER_API kiln_status_t *
kiln_compile_options_set_output(kiln_compile_options_t *options,
                                kiln_compile_output_fn fn, void *user_data);
/* The pass pipeline of `stage` (graph, lower, kernels, host, bufferize,
 * codegen, llvm) as these options build it, in kiln-opt's
 * --dump-pass-pipeline form (kilnc --print-pipeline=STAGE without a model),
 * in *out_text (kiln_compiler_string_free). INVALID_ARGUMENT for an unknown
 * stage or bad options. */
KILN_COMPILER_API kiln_status_t *
kiln_compile_options_pipeline(const kiln_compile_options_t *options,
                              const char *stage, char **out_text);

/*===--------------------------------------------------------------------===*
 * Compilers
 *===--------------------------------------------------------------------===*/

typedef struct kiln_compiler kiln_compiler_t;

/* A compiler with a compile cache in `cache_dir`: NULL for the default
 * folder (see above), "" for no cache. The folder is created when first
 * written. */
KILN_COMPILER_API kiln_status_t *
kiln_compiler_create(const char *cache_dir, kiln_compiler_t **out_compiler);
/* Accepts NULL. Models it returned stay valid. */
KILN_COMPILER_API void kiln_compiler_free(kiln_compiler_t *compiler);
/* The cache folder ("" without a cache). Valid while the compiler lives. */
KILN_COMPILER_API const char *
kiln_compiler_cache_dir(const kiln_compiler_t *compiler);
/* Compiles that found their model in the cache (hits) and that compiled
 * (misses), since the compiler was created. */
KILN_COMPILER_API void
kiln_compiler_cache_counters(const kiln_compiler_t *compiler,
                             uint64_t *out_hits, uint64_t *out_misses);

/* Compiles the ONNX model in file `model_path` (external data read from
 * its folder) and loads it. `options` may be NULL (the defaults). The
 * returned model is the caller's (kiln_model_release). */
KILN_COMPILER_API kiln_status_t *
kiln_compiler_compile_file(kiln_compiler_t *compiler, const char *model_path,
                           const kiln_compile_options_t *options,
                           kiln_model_t **out_model);
/* The same for a serialized ModelProto in memory (`size` bytes at `data`);
 * `base_dir` resolves external data (NULL or "": the model may have none),
 * `name` names the model in messages (NULL: "<buffer>"). */
KILN_COMPILER_API kiln_status_t *kiln_compiler_compile_buffer(
    kiln_compiler_t *compiler, const void *data, size_t size,
    const char *base_dir, const char *name,
    const kiln_compile_options_t *options, kiln_model_t **out_model);
/* Compiles the model of `data` (as kiln_compiler_compile_buffer) into the
 * shared library `so_path` (and, with external-weights, its weights file
 * beside it, as kilnc writes them), through the cache like the others. */
KILN_COMPILER_API kiln_status_t *kiln_compiler_compile_to_file(
    kiln_compiler_t *compiler, const void *data, size_t size,
    const char *base_dir, const char *name,
    const kiln_compile_options_t *options, const char *so_path);

/* Compiles the ONNX model in file `model_path` (external data read from its
 * folder) into `output_path`, as kilnc does: the shared library (or, with
 * S, the host assembly), with external-weights its weights file (the named
 * FILE, else `output_path` with .weights for .so) and FILE.json beside it.
 * `output_path` NULL writes nothing: the stages run for dump-after,
 * print-pipeline and report (with dump-after=import, only the import). A
 * model file that cannot be read is NOT_FOUND or INVALID_ARGUMENT, its
 * message also sent to the output callback as an ERROR. */
KILN_COMPILER_API kiln_status_t *kiln_compiler_compile_file_to_file(
    kiln_compiler_t *compiler, const char *model_path,
    const kiln_compile_options_t *options, const char *output_path);

/*===--------------------------------------------------------------------===*
 * Checking a model without compiling it
 *===--------------------------------------------------------------------===*/

/* kilnc --check on the ModelProto of `size` bytes at `data` (`name` names
 * it in messages; NULL: "<buffer>"): a table of the model's operators
 * (subgraphs included) with opset, count and whether Kiln supports each,
 * then a summary line, in *out_report (the caller frees it with
 * kiln_compiler_string_free); *out_unsupported the number of unsupported
 * operator types (0: everything is supported). INVALID_ARGUMENT when the
 * bytes are not a ModelProto. */
KILN_COMPILER_API kiln_status_t *
kiln_compiler_check(const void *data, size_t size, const char *name,
                    char **out_report, size_t *out_unsupported);
/* kiln_compiler_check on the file `model_path`; NOT_FOUND or
 * INVALID_ARGUMENT ("cannot read 'PATH': why") when it cannot be read. */
KILN_COMPILER_API kiln_status_t *
kiln_compiler_check_file(const char *model_path, char **out_report,
                         size_t *out_unsupported);
/* Accepts NULL. */
KILN_COMPILER_API void kiln_compiler_string_free(char *string);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_COMPILER_H */
