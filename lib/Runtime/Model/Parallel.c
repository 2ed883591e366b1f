/*===- Parallel.c - Parallel loops of CPU kernels on a thread pool --------===*
 *
 * kiln_rt_parallel_for (kiln/Runtime/ModelABI.h): the tasks of a
 * kiln.parallel_for split into one contiguous range per part of a pool run.
 * The pool is the loader's process pool (set_thread_pool), or for a model
 * used without the loader one of its own (Common/ThreadPool.c).
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* The loader's process pool, or (a model used without the loader) one of
 * this model's own. */
static const kiln_thread_pool_api *g_thread_pool;
static kiln_rtc_pool *g_own_pool;
static pthread_once_t g_own_pool_once = PTHREAD_ONCE_INIT;

static void create_own_pool(void) { g_own_pool = kiln_rtc_pool_create(); }

void kiln_rt_set_thread_pool(const kiln_thread_pool_api *pool) {
  if (pool && pool->struct_size >= sizeof(kiln_thread_pool_api))
    g_thread_pool = pool;
}

typedef struct {
  void (*body)(void **args);
  void **args;
  int64_t nargs;
  int64_t tasks;
} parallel_job;

static void run_part(void *arg, int64_t part, int64_t parts) {
  const parallel_job *job = (const parallel_job *)arg;
  int64_t lo = job->tasks * part / parts;
  int64_t hi = job->tasks * (part + 1) / parts;
  if (lo >= hi)
    return;
  void *argv[job->nargs];
  memcpy(argv, job->args, sizeof(void *) * (size_t)job->nargs);
  argv[0] = &lo;
  argv[1] = &hi;
  job->body(argv);
}

void kiln_rt_parallel_for(void (*body)(void **args), void **args, int64_t nargs,
                          int64_t tasks) {
  parallel_job job = {body, args, nargs, tasks};
  if (tasks <= 1) {
    run_part(&job, 0, 1);
    return;
  }
  if (g_thread_pool) {
    g_thread_pool->run(g_thread_pool->pool, run_part, &job, tasks);
    return;
  }
  pthread_once(&g_own_pool_once, create_own_pool);
  if (g_own_pool)
    kiln_rtc_pool_run(g_own_pool, run_part, &job, tasks);
  else
    run_part(&job, 0, 1);
}
