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
 *                     to the model (needs a cache folder, or
 *                     kiln_compiler_compile_to_file)
 *   gpu-tiled-contractions, gpu-warp-reductions, gpu-tensor-cores
 *                     1 or 0
 *   gpu-block-size, gpu-fill-blocks, gpu-min-threads
 *                     integers, as kilnc's --gpu-* flags
 * INVALID_ARGUMENT naming the option for an unknown name or a bad value
 * (the unknown-name message lists the known ones); `options` is then
 * unchanged. */
KILN_COMPILER_API kiln_status_t *
kiln_compile_options_set(kiln_compile_options_t *options, const char *name,
                         const char *value);

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
/* Accepts NULL. */
KILN_COMPILER_API void kiln_compiler_string_free(char *string);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_COMPILER_H */
