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

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_COMMON_H */
