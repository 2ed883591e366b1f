/*===- KernelAlloc.c - Buffers that CPU kernels allocate themselves -------===*
 *
 * A CPU kernel's own temporaries (a padded copy of its input, a reduction's
 * partial sums: buffers the memory planner does not see) are memref.alloc
 * and memref.dealloc in the kernel, which the host lowering turns into
 * calls of MLIR's generic allocation functions, defined here. Through
 * malloc, each large block went back to the system when freed (an mmap'd
 * chunk, or a trimmed heap top) and the next run faulted its pages in again:
 * a 3 MB padded buffer cost more than the max pooling that read it
 * (opennsfw's first MaxPool: 2.9 ms of 6.1, nearly all page faults).
 *
 * Freed blocks of at least kMinCached bytes are kept in a small cache, one
 * per model library, and handed out again for a request of at most their
 * size and at least half of it: a model's kernels ask for the same sizes
 * every run, so a run after the first allocates nothing. The cache holds at
 * most kMaxEntries blocks of at most 64 MiB each and 256 MiB in all,
 * dropping the least recently freed first, and is emptied when the library
 * is unloaded. Smaller blocks
 * go to malloc and free directly. Every block carries a 64-byte header (its
 * base and capacity) so that free needs no size.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
  kHeader = KILN_ALIGNMENT,
  kMaxEntries = 32,
  kMinCached = 64 * 1024,
};
/* What the cache may hold, in all and per block: it is memory a run does
 * not use between kernels, on top of the arena. A block above
 * kMaxCachedBlock belongs to a kernel long enough that faulting its pages
 * in again is a small part of its time. */
static const uint64_t kMaxBytes = (uint64_t)256 << 20;
static const uint64_t kMaxCachedBlock = (uint64_t)64 << 20;

typedef struct {
  void *base;        /* what malloc returned */
  uint64_t capacity; /* usable bytes after the header */
} block_header;

typedef struct {
  block_header *blocks[kMaxEntries]; /* oldest first */
  int count;
  uint64_t bytes;
} block_cache;

static block_cache g_cache;
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static block_header *header_of(void *user) {
  return (block_header *)((char *)user - sizeof(block_header));
}

/* A block whose user pointer is `alignment`-aligned (a power of two, at
 * least kHeader), `bytes` usable. */
static void *new_block(uint64_t alignment, uint64_t bytes) {
  if (bytes > ((uint64_t)1 << 62))
    return NULL;
  uint64_t capacity =
      (bytes + KILN_ALIGNMENT - 1) & ~(uint64_t)(KILN_ALIGNMENT - 1);
  void *base = NULL;
  if (posix_memalign(&base, (size_t)alignment,
                     (size_t)(alignment + capacity)) != 0)
    return NULL;
  char *user = (char *)base + alignment;
  block_header *h = header_of(user);
  h->base = base;
  h->capacity = capacity;
  return user;
}

/* A cached block for `bytes` at `alignment`, or NULL. */
static void *take_cached(uint64_t alignment, uint64_t bytes) {
  if (bytes < kMinCached)
    return NULL;
  void *found = NULL;
  pthread_mutex_lock(&g_cache_lock);
  int best = -1;
  for (int i = 0; i < g_cache.count; ++i) {
    block_header *h = g_cache.blocks[i];
    void *user = (char *)h + sizeof(block_header);
    if (h->capacity < bytes || h->capacity / 2 > bytes ||
        ((uintptr_t)user & (alignment - 1)) != 0)
      continue;
    if (best < 0 || h->capacity < g_cache.blocks[best]->capacity)
      best = i;
  }
  if (best >= 0) {
    block_header *h = g_cache.blocks[best];
    found = (char *)h + sizeof(block_header);
    g_cache.bytes -= h->capacity;
    memmove(&g_cache.blocks[best], &g_cache.blocks[best + 1],
            (size_t)(g_cache.count - best - 1) * sizeof(block_header *));
    --g_cache.count;
  }
  pthread_mutex_unlock(&g_cache_lock);
  return found;
}

static void *allocate(uint64_t alignment, uint64_t bytes) {
  if (alignment < kHeader)
    alignment = kHeader;
  if (alignment & (alignment - 1))
    return NULL;
  void *user = take_cached(alignment, bytes);
  return user ? user : new_block(alignment, bytes);
}

static void release(void *user) {
  if (!user)
    return;
  block_header *h = header_of(user);
  if (h->capacity < kMinCached || h->capacity > kMaxCachedBlock) {
    free(h->base);
    return;
  }
  block_header *evicted[kMaxEntries + 1];
  int numEvicted = 0;
  pthread_mutex_lock(&g_cache_lock);
  while (g_cache.count > 0 && (g_cache.count == kMaxEntries ||
                               g_cache.bytes + h->capacity > kMaxBytes)) {
    block_header *oldest = g_cache.blocks[0];
    g_cache.bytes -= oldest->capacity;
    memmove(&g_cache.blocks[0], &g_cache.blocks[1],
            (size_t)(g_cache.count - 1) * sizeof(block_header *));
    --g_cache.count;
    evicted[numEvicted++] = oldest;
  }
  g_cache.blocks[g_cache.count++] = h;
  g_cache.bytes += h->capacity;
  pthread_mutex_unlock(&g_cache_lock);
  for (int i = 0; i < numEvicted; ++i)
    free(evicted[i]->base);
}

/* MLIR's generic allocation functions (LowerToLLVMOptions::
 * useGenericFunctions), called by the lowered memref.alloc/dealloc. */
KILN_HIDDEN void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return allocate(kHeader, bytes);
}

KILN_HIDDEN void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                     uint64_t bytes) {
  return allocate(alignment, bytes);
}

KILN_HIDDEN void _mlir_memref_to_llvm_free(void *ptr) { release(ptr); }

/* The library is being unloaded: its cached blocks go back to malloc. */
__attribute__((destructor)) static void empty_cache(void) {
  pthread_mutex_lock(&g_cache_lock);
  for (int i = 0; i < g_cache.count; ++i)
    free(g_cache.blocks[i]->base);
  g_cache.count = 0;
  g_cache.bytes = 0;
  pthread_mutex_unlock(&g_cache_lock);
}
