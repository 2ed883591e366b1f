/*===- fake_cuda_internal.h - What the fake CUDA driver's files share ----===*
 *
 * The driver's result codes and the state that fake_cuda_driver.c keeps
 * and fake_cuda_tensor_maps.c records into (hidden: the module exports
 * only EXPORT functions).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H
#define KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H

#include "fake_cuda_driver.h"

#include <pthread.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  NO_DEVICE = 100,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  INVALID_HANDLE = 400,
  ILLEGAL_STATE = 401,
  NOT_FOUND = 500,
  ILLEGAL_ADDRESS = 700,
  LAUNCH_FAILED = 719,
  NOT_SUPPORTED = 801,
  CAPTURE_UNSUPPORTED = 900,
  CAPTURE_INVALIDATED = 901,
};

#define EXPORT __attribute__((visibility("default")))

/* The lock over every counter and allocation, and the counters. */
extern pthread_mutex_t gLock;
extern fake_cuda_stats gStats;

/* Whether FAKE_CUDA_MODE holds `word`. */
int mode(const char *word);

/* OK with a current context, else CUDA_ERROR_INVALID_CONTEXT. */
CUresult need_context(void);

#endif /* KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H */
