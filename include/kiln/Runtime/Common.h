/*===- kiln/Runtime/Common.h - Shared by the loader and model ---*- C -*-===*
 *
 * Internal to Kiln's runtime. lib/Runtime/Common is compiled into both
 * libKilnModelRuntime.a and libkiln_runtime; every symbol here is hidden, so
 * each library has its own copy.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_COMMON_H
#define KILN_RUNTIME_COMMON_H

#include "kiln/Runtime/ModelAPI.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_HIDDEN __attribute__((visibility("hidden")))
#define KILN_ALIGNMENT 64

/* A new status with a printf-formatted message. Never returns NULL: when
 * memory runs out, returns a static RESOURCE_EXHAUSTED status. */
KILN_HIDDEN kiln_status_t *kiln_rtc_make_status(kiln_status_code_t code,
                                                const char *format, ...)
    __attribute__((format(printf, 2, 3)));
KILN_HIDDEN kiln_status_t *kiln_rtc_make_status_v(kiln_status_code_t code,
                                                  const char *format,
                                                  va_list args);
/* The static out-of-memory status. */
KILN_HIDDEN kiln_status_t *kiln_rtc_oom_status(void);

KILN_HIDDEN const char *kiln_rtc_dtype_name(kiln_dtype_t dtype);
KILN_HIDDEN size_t kiln_rtc_dtype_size(kiln_dtype_t dtype);
/* KILN_DTYPE_INVALID when `name` (of length `len`) is not a dtype spelling. */
KILN_HIDDEN kiln_dtype_t kiln_rtc_dtype_from_name(const char *name, size_t len);

/* Multiplies the dims (all >= 0) and the element size; 0 on overflow (sets
 * *overflow) or for an invalid dtype. */
KILN_HIDDEN size_t kiln_rtc_num_elements(size_t rank, const int64_t *dims,
                                         int *overflow);

/* posix_memalign(64) of at least one byte rounded up to 64; NULL on
 * failure or when `bytes` is absurd. */
KILN_HIDDEN void *kiln_rtc_aligned_alloc(size_t bytes);

/* CRC-32 (the IEEE polynomial of zlib's crc32 and llvm::crc32) of `bytes`,
 * continuing from `crc` (0 to start). */
KILN_HIDDEN uint32_t kiln_rtc_crc32(uint32_t crc, const void *bytes,
                                    size_t size);

/* The little-endian u64 at `p` (the weights file's header fields). */
KILN_HIDDEN uint64_t kiln_rtc_load_u64le(const unsigned char *p);

/* kiln_weights_verify (kiln-c/runtime.h): a weights file's header against
 * the file, and its data against the header's CRC-32. */
KILN_HIDDEN kiln_status_t *kiln_rtc_verify_weights_file(const char *path);

/* Allocates a tensor (see ModelAPI.h for the layout). Dims must be >= 0.
 * Returns NULL and writes a status on failure. */
KILN_HIDDEN kiln_tensor_t *kiln_rtc_tensor_create(kiln_dtype_t dtype,
                                                  size_t rank,
                                                  const int64_t *dims,
                                                  kiln_status_t **out_status);
/* The same with a name (NULL: ""). */
KILN_HIDDEN kiln_tensor_t *
kiln_rtc_tensor_create_named(kiln_dtype_t dtype, size_t rank,
                             const int64_t *dims, const char *name,
                             kiln_status_t **out_status);
KILN_HIDDEN void kiln_rtc_tensor_free(kiln_tensor_t *tensor);

/* A pool of worker threads (Common/ThreadPool.c). kiln_rtc_pool_run calls
 * fn(arg, part, num_parts) for part 0 .. num_parts - 1 (num_parts capped
 * to the pool's size), part 0 on the calling thread, and returns when all
 * have returned; when the pool is already running a loop (a call from
 * another thread), it calls fn(arg, 0, 1) on the calling thread instead. */
typedef struct kiln_rtc_pool kiln_rtc_pool;
KILN_HIDDEN kiln_rtc_pool *kiln_rtc_pool_create(void);
KILN_HIDDEN void kiln_rtc_pool_destroy(kiln_rtc_pool *pool);
/* Threads the pool runs a loop on, the caller included; size < 1: the
 * default (KILN_NUM_THREADS if set, else the cores this process may run
 * on). Returns the size set. */
KILN_HIDDEN int kiln_rtc_pool_set_size(kiln_rtc_pool *pool, int size);
KILN_HIDDEN int kiln_rtc_pool_size(kiln_rtc_pool *pool);
KILN_HIDDEN void kiln_rtc_pool_run(kiln_rtc_pool *pool,
                                   void (*fn)(void *arg, int64_t part,
                                              int64_t num_parts),
                                   void *arg, int64_t num_parts);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_COMMON_H */
