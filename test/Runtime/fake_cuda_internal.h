/*===- fake_cuda_internal.h - What the fake CUDA driver's files share ----===*
 *
 * The driver's result codes and the state that fake_cuda_driver.c keeps
 * and fake_cuda_tensor_maps.c and fake_cuda_events.c read and record into (hidden: the module exports
 * only EXPORT functions).
 *===----------------------------------------------------------------------===*/
#ifndef KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H
#define KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H

#include "fake_cuda_driver.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

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

/* A recorded operation: a launch (its parameter values copied, 8 bytes
 * each) or a device-to-device copy. */
typedef struct node {
  const struct kernel *k; /* fake_cuda_driver.c's; NULL: a copy */
  uint64_t values[32];
  CUdeviceptr dst, src;
  size_t bytes;
} node;

typedef struct graph {
  node *nodes;
  size_t count, cap;
} graph;

/* A stream: capturing into `capture` between
 * cuStreamBeginCapture and cuStreamEndCapture; `invalidated` when a call
 * that cannot be captured came in between. */
typedef struct stream {
  int magic;
  int capturing, invalidated;
  graph *capture;
} stream;
#define STREAM_MAGIC 0x5157
/* OK for a live stream, else CUDA_ERROR_INVALID_HANDLE. */
CUresult check_stream(stream *s);
/* Appends `n` to the capturing stream's graph (fake_cuda_streams.c). */
CUresult record(stream *s, node n);
/* Runs a launch or a copy now, under gLock (fake_cuda_driver.c). */
CUresult run_node(const node *n);

/* The events' clock (ms): each kernel run advances it (fake_cuda_driver.c,
 * FAKE_CUDA_MODE copyclock for copies); under gLock. */
extern int64_t gClockMs;

/* Returns `expr` (a CUresult) evaluated under gLock. */
#define LOCKED(expr)                                                           \
  do {                                                                         \
    pthread_mutex_lock(&gLock);                                                \
    CUresult result_ = (expr);                                                 \
    pthread_mutex_unlock(&gLock);                                              \
    return result_;                                                            \
  } while (0)

#endif /* KILN_TEST_RUNTIME_FAKE_CUDA_INTERNAL_H */
