/*===- fake_cuda_streams.c - The fake CUDA driver's streams and events ---===*
 *
 * Streams, stream capture and graphs of fake_cuda_driver.c: a capturing
 * stream records launches and device-to-device copies (record) into a
 * graph, which cuGraphInstantiateWithFlags copies and cuGraphLaunch
 * replays (run_node); a synchronization or an event record during a
 * capture invalidates it. FAKE_CUDA_MODE nocapture and noinstantiate make
 * capture and instantiation fail with CUDA_ERROR_NOT_SUPPORTED.
 *
 * Events (the runtime's profiles, CudaProfile.c) record the fake clock
 * gClockMs, which kernel runs (and, under FAKE_CUDA_MODE copyclock,
 * copies) advance, so elapsed times are known exactly. FAKE_CUDA_MODE eventfail makes every
 * call but create's argument checks and destroy fail with
 * CUDA_ERROR_NOT_SUPPORTED; recording on a capturing stream invalidates the
 * capture.
 *===----------------------------------------------------------------------===*/
#include "fake_cuda_internal.h"

#include <stdlib.h>
#include <string.h>

CUresult check_stream(stream *s) {
  /* The runtime never uses the legacy default stream. */
  if (!s || s->magic != STREAM_MAGIC)
    return INVALID_HANDLE;
  return OK;
}

CUresult record(stream *s, node n) {
  graph *g = s->capture;
  if (g->count == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 8;
    node *grown = (node *)realloc(g->nodes, cap * sizeof(node));
    if (!grown)
      return OUT_OF_MEMORY;
    g->nodes = grown;
    g->cap = cap;
  }
  g->nodes[g->count++] = n;
  return OK;
}

EXPORT CUresult cuStreamCreate(stream **out, unsigned flags) {
  if (need_context())
    return INVALID_CONTEXT;
  if (flags > 1) /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
    return INVALID_VALUE;
  stream *s = (stream *)calloc(1, sizeof(stream));
  if (!s)
    return OUT_OF_MEMORY;
  s->magic = STREAM_MAGIC;
  *out = s;
  LOCKED((++gStats.stream_creates, OK));
}

EXPORT CUresult cuStreamDestroy_v2(stream *s) {
  if (check_stream(s) || s->capturing)
    return INVALID_HANDLE;
  s->magic = 0;
  free(s);
  LOCKED((++gStats.stream_destroys, OK));
}

EXPORT CUresult cuStreamSynchronize(stream *s) {
  if (check_stream(s))
    return INVALID_HANDLE;
  pthread_mutex_lock(&gLock);
  CUresult r = OK;
  if (s->capturing) {
    s->invalidated = 1;
    r = CAPTURE_UNSUPPORTED;
  } else {
    ++gStats.syncs;
  }
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuStreamBeginCapture_v2(stream *s, int capture_mode) {
  if (check_stream(s))
    return INVALID_HANDLE;
  if (s->capturing || capture_mode != 2 /* RELAXED */)
    return ILLEGAL_STATE;
  pthread_mutex_lock(&gLock);
  ++gStats.capture_attempts;
  pthread_mutex_unlock(&gLock);
  if (mode("nocapture"))
    return NOT_SUPPORTED;
  graph *g = (graph *)calloc(1, sizeof(graph));
  if (!g)
    return OUT_OF_MEMORY;
  s->capture = g;
  s->capturing = 1;
  s->invalidated = 0;
  LOCKED((++gStats.captures, OK));
}

EXPORT CUresult cuStreamEndCapture(stream *s, graph **out) {
  if (check_stream(s))
    return INVALID_HANDLE;
  if (!s->capturing)
    return ILLEGAL_STATE;
  s->capturing = 0;
  graph *g = s->capture;
  s->capture = NULL;
  if (s->invalidated) {
    free(g->nodes);
    free(g);
    *out = NULL;
    return CAPTURE_INVALIDATED;
  }
  *out = g;
  LOCKED((++gStats.live_graphs, OK));
}

EXPORT CUresult cuGraphInstantiateWithFlags(graph **exec, graph *g,
                                            unsigned long long flags) {
  if (!g || flags)
    return INVALID_VALUE;
  if (mode("noinstantiate"))
    return NOT_SUPPORTED;
  graph *copy = (graph *)calloc(1, sizeof(graph));
  if (!copy)
    return OUT_OF_MEMORY;
  copy->nodes = (node *)malloc((g->count + 1) * sizeof(node));
  if (!copy->nodes) {
    free(copy);
    return OUT_OF_MEMORY;
  }
  memcpy(copy->nodes, g->nodes, g->count * sizeof(node));
  copy->count = copy->cap = g->count;
  *exec = copy;
  LOCKED((++gStats.instantiations, ++gStats.live_graph_execs, OK));
}

EXPORT CUresult cuGraphLaunch(graph *exec, stream *s) {
  if (!exec || check_stream(s) || s->capturing)
    return INVALID_HANDLE;
  pthread_mutex_lock(&gLock);
  ++gStats.graph_launches;
  CUresult r = OK;
  for (size_t i = 0; i < exec->count && r == OK; ++i)
    r = run_node(&exec->nodes[i]);
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuGraphExecDestroy(graph *exec) {
  if (!exec)
    return INVALID_HANDLE;
  free(exec->nodes);
  free(exec);
  LOCKED((--gStats.live_graph_execs, OK));
}

EXPORT CUresult cuGraphDestroy(graph *g) {
  if (!g)
    return INVALID_HANDLE;
  free(g->nodes);
  free(g);
  LOCKED((--gStats.live_graphs, OK));
}

typedef struct event {
  int magic, recorded;
  int64_t stamp; /* gClockMs when recorded */
} event;

#define EVENT_MAGIC 0xE7E7

static CUresult check_event(event *e) {
  return e && e->magic == EVENT_MAGIC ? OK : INVALID_HANDLE;
}

EXPORT CUresult cuEventCreate(event **out, unsigned flags) {
  if (need_context())
    return INVALID_CONTEXT;
  if (flags != 0) /* the runtime needs timing: CU_EVENT_DEFAULT */
    return INVALID_VALUE;
  if (mode("eventfail"))
    return NOT_SUPPORTED;
  event *e = (event *)calloc(1, sizeof(event));
  if (!e)
    return OUT_OF_MEMORY;
  e->magic = EVENT_MAGIC;
  *out = e;
  LOCKED((++gStats.event_creates, ++gStats.live_events, OK));
}

EXPORT CUresult cuEventRecord(event *e, stream *s) {
  if (check_event(e) || check_stream(s))
    return INVALID_HANDLE;
  if (mode("eventfail"))
    return NOT_SUPPORTED;
  pthread_mutex_lock(&gLock);
  CUresult r = OK;
  if (s->capturing) { /* the runtime profiles plain runs only */
    s->invalidated = 1;
    r = CAPTURE_UNSUPPORTED;
  } else {
    e->recorded = 1;
    e->stamp = gClockMs;
    ++gStats.event_records;
  }
  pthread_mutex_unlock(&gLock);
  return r;
}

EXPORT CUresult cuEventSynchronize(event *e) {
  if (check_event(e))
    return INVALID_HANDLE;
  return mode("eventfail") ? NOT_SUPPORTED : OK;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, event *start, event *end) {
  if (check_event(start) || check_event(end) || !start->recorded ||
      !end->recorded || !ms)
    return INVALID_HANDLE;
  if (mode("eventfail"))
    return NOT_SUPPORTED;
  pthread_mutex_lock(&gLock);
  *ms = (float)(end->stamp - start->stamp);
  pthread_mutex_unlock(&gLock);
  return OK;
}

EXPORT CUresult cuEventDestroy_v2(event *e) {
  if (need_context())
    return INVALID_CONTEXT;
  if (check_event(e))
    return INVALID_HANDLE;
  e->magic = 0;
  free(e);
  LOCKED((--gStats.live_events, OK));
}
