/*===- ThreadPool.c - The process's worker threads for CPU kernels --------===*
 *
 * One pool runs the parts of one parallel loop at a time: the caller runs
 * part 0 and the workers the others, static partitioning (part i of n is
 * the i-th contiguous range of the loop's tasks, computed by the caller of
 * kiln_rtc_pool_run). A caller that finds the pool busy (another instance
 * running at the same moment, on another host thread) runs its loop alone
 * on its own thread, so instances running at once never put more threads
 * on the cores than the pool has. Workers spin briefly on a generation
 * counter after each loop (kernels come in quick succession) and then
 * sleep on a condition variable.
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include "kiln/Runtime/Common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PAUSE() _mm_pause()
#else
#define KILN_PAUSE() ((void)0)
#endif

enum { kMaxThreads = 256, kSpins = 1 << 16 };

struct kiln_rtc_pool {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t workers[kMaxThreads];
  int num_workers; /* threads started (the pool's size minus the caller) */
  int wanted;      /* size asked for; 0: not yet decided */
  atomic_int busy; /* a loop is running */
  atomic_ulong generation;
  atomic_int remaining; /* workers yet to finish the current loop */
  int stop;
  /* The current loop. */
  void (*fn)(void *arg, int64_t part, int64_t num_parts);
  void *arg;
  int64_t num_parts;
};

static int cores_available(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  return 1;
}

static int default_size(void) {
  const char *env = getenv("KILN_NUM_THREADS");
  if (env && *env) {
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (end && *end == '\0' && n >= 1)
      return n > kMaxThreads ? kMaxThreads : (int)n;
  }
  int n = cores_available();
  return n > kMaxThreads ? kMaxThreads : n;
}

typedef struct {
  kiln_rtc_pool *pool;
  int index;
  unsigned long seen; /* the generation before the worker's first loop */
} worker_arg;

static void *worker_main(void *p) {
  kiln_rtc_pool *pool = ((worker_arg *)p)->pool;
  int64_t part = (int64_t)((worker_arg *)p)->index + 1;
  unsigned long seen = ((worker_arg *)p)->seen;
  free(p);
  for (;;) {
    unsigned long now =
        atomic_load_explicit(&pool->generation, memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpins; ++spin) {
      KILN_PAUSE();
      now = atomic_load_explicit(&pool->generation, memory_order_acquire);
    }
    if (now == seen) {
      pthread_mutex_lock(&pool->lock);
      while (!pool->stop && atomic_load(&pool->generation) == seen)
        pthread_cond_wait(&pool->wake, &pool->lock);
      int stop = pool->stop;
      pthread_mutex_unlock(&pool->lock);
      if (stop)
        return NULL;
      now = atomic_load(&pool->generation);
    }
    /* Every worker acknowledges every loop, so none can lag behind one:
     * the caller waits for all of them before it starts the next. */
    seen = now;
    if (part < pool->num_parts)
      pool->fn(pool->arg, part, pool->num_parts);
    atomic_fetch_sub_explicit(&pool->remaining, 1, memory_order_release);
  }
}

/* Starts workers up to `size` - 1; called with the pool idle and locked. */
static void grow(kiln_rtc_pool *pool, int size) {
  while (pool->num_workers < size - 1 && pool->num_workers < kMaxThreads) {
    worker_arg *arg = (worker_arg *)malloc(sizeof(worker_arg));
    if (!arg)
      break;
    arg->pool = pool;
    arg->index = pool->num_workers;
    arg->seen = atomic_load(&pool->generation);
    if (pthread_create(&pool->workers[pool->num_workers], NULL, worker_main,
                       arg) != 0) {
      free(arg);
      break;
    }
    ++pool->num_workers;
  }
}

kiln_rtc_pool *kiln_rtc_pool_create(void) {
  kiln_rtc_pool *pool = (kiln_rtc_pool *)calloc(1, sizeof(*pool));
  if (!pool)
    return NULL;
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  return pool;
}

void kiln_rtc_pool_destroy(kiln_rtc_pool *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->num_workers; ++i)
    pthread_join(pool->workers[i], NULL);
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->wake);
  free(pool);
}

int kiln_rtc_pool_set_size(kiln_rtc_pool *pool, int size) {
  if (size < 1)
    size = default_size();
  if (size > kMaxThreads)
    size = kMaxThreads;
  pthread_mutex_lock(&pool->lock);
  pool->wanted = size;
  pthread_mutex_unlock(&pool->lock);
  return size;
}

int kiln_rtc_pool_size(kiln_rtc_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  if (!pool->wanted)
    pool->wanted = default_size();
  int size = pool->wanted;
  pthread_mutex_unlock(&pool->lock);
  return size;
}

void kiln_rtc_pool_run(kiln_rtc_pool *pool,
                       void (*fn)(void *arg, int64_t part, int64_t num_parts),
                       void *arg, int64_t num_parts) {
  int expected = 0;
  if (num_parts <= 1 ||
      !atomic_compare_exchange_strong(&pool->busy, &expected, 1)) {
    /* One part, or the pool is running another loop: all on this thread. */
    fn(arg, 0, 1);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  if (!pool->wanted)
    pool->wanted = default_size();
  /* Fewer threads than asked (a smaller size set since): the extra
   * workers stay idle; more: start them. */
  grow(pool, pool->wanted);
  int64_t threads = pool->num_workers + 1;
  if (threads > pool->wanted)
    threads = pool->wanted;
  if (num_parts > threads)
    num_parts = threads;
  pool->fn = fn;
  pool->arg = arg;
  pool->num_parts = num_parts;
  atomic_store(&pool->remaining, pool->num_workers);
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  fn(arg, 0, num_parts);
  while (atomic_load_explicit(&pool->remaining, memory_order_acquire) > 0)
    KILN_PAUSE();
  atomic_store(&pool->busy, 0);
}
