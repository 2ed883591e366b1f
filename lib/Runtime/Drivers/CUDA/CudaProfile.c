/*===- CudaProfile.c - Kernel and phase times of a CUDA instance ----------===*
 *
 * Events come from a per-instance pool that grows to two per launch of the
 * longest run and is reused by later runs, plus four for the phase marks.
 * See CudaProfile.h.
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "CudaProfile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct kernel_stats {
  int64_t index;
  char *name; /* copied at its first launch */
  uint64_t launches;
  double total_ms, min_ms, max_ms;
} kernel_stats;

struct kiln_cuda_profile {
  const kiln_cuda_driver *cu;
  char *path;     /* the profile_path report; NULL without one */
  int kernels_on; /* time launches (always with a report) */
  int marks_on;   /* record phase marks */
  CUevent marks[4];
  int num_marks; /* mark events created */
  int marked[4]; /* recorded in the current run */
  /* The last run that ended (kiln_cuda_profile_timing). */
  kiln_device_launch_time *last;
  size_t num_last, cap_last;
  int last_from_mark;
  double last_phase_ms[3];
  uint64_t num_kernels;
  kernel_stats *kernels;         /* per kernel index */
  CUevent *events;               /* 2 per launch: start, end */
  size_t num_events, cap_events; /* created / allocated slots */
  int64_t *launch_kernel;        /* per launch of the current run */
  size_t launches;               /* launches recorded in the current run */
  int started;                   /* the start event of launch `launches` */
  uint64_t runs;
  double run_ms;
  char stopped[256]; /* why profiling stopped; "" while it runs */
};

kiln_status_t *kiln_cuda_profile_create(const kiln_cuda_driver *cu,
                                        const char *path, uint64_t num_kernels,
                                        kiln_cuda_profile **out) {
  *out = NULL;
  kiln_cuda_profile *p = (kiln_cuda_profile *)calloc(1, sizeof(*p));
  if (!p)
    return kiln_rtc_oom_status();
  p->cu = cu;
  p->num_kernels = num_kernels;
  p->path = path && *path ? strdup(path) : NULL;
  p->kernels_on = p->path != NULL;
  p->last_phase_ms[0] = p->last_phase_ms[1] = p->last_phase_ms[2] = -1;
  p->kernels = (kernel_stats *)calloc(num_kernels + 1, sizeof(kernel_stats));
  if ((path && *path && !p->path) || !p->kernels) {
    free(p->path);
    free(p->kernels);
    free(p);
    return kiln_rtc_oom_status();
  }
  for (uint64_t i = 0; i < num_kernels; ++i)
    p->kernels[i].index = (int64_t)i;
  if (!cu->cuEventCreate || !cu->cuEventRecord || !cu->cuEventSynchronize ||
      !cu->cuEventElapsedTime || !cu->cuEventDestroy)
    snprintf(p->stopped, sizeof(p->stopped),
             "the CUDA driver has no event entry points");
  *out = p;
  return NULL;
}

static void stop(kiln_cuda_profile *p, const char *call, CUresult result) {
  char text[160];
  kiln_cuda_error_text(p->cu, result, text, sizeof(text));
  snprintf(p->stopped, sizeof(p->stopped), "%s failed: %s", call, text);
  p->launches = 0;
  p->started = 0;
  memset(p->marked, 0, sizeof(p->marked));
}

void kiln_cuda_profile_set(kiln_cuda_profile *p, int kernels, int marks) {
  p->kernels_on = kernels || p->path;
  p->marks_on = marks;
}

void kiln_cuda_profile_mark(kiln_cuda_profile *p, CUstream stream, int mark) {
  if (!p || !p->marks_on || p->stopped[0] || mark < 0 || mark > 3)
    return;
  while (p->num_marks <= mark) {
    CUresult r =
        p->cu->cuEventCreate(&p->marks[p->num_marks], CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
      stop(p, "cuEventCreate", r);
      return;
    }
    ++p->num_marks;
  }
  CUresult r = p->cu->cuEventRecord(p->marks[mark], stream);
  if (r != CUDA_SUCCESS) {
    stop(p, "cuEventRecord", r);
    return;
  }
  p->marked[mark] = 1;
}

/* Event slot `slot`, created on first use; NULL when profiling stopped. */
static CUevent event_at(kiln_cuda_profile *p, size_t slot) {
  if (slot >= p->cap_events) {
    size_t cap = p->cap_events ? 2 * p->cap_events : 16;
    CUevent *events = (CUevent *)realloc(p->events, cap * sizeof(CUevent));
    if (events)
      p->events = events;
    int64_t *kernels =
        events ? (int64_t *)realloc(p->launch_kernel, cap / 2 * sizeof(int64_t))
               : NULL;
    if (!kernels) {
      snprintf(p->stopped, sizeof(p->stopped), "out of memory");
      p->launches = 0;
      p->started = 0;
      return NULL;
    }
    p->launch_kernel = kernels;
    p->cap_events = cap;
  }
  while (p->num_events <= slot) {
    CUresult r =
        p->cu->cuEventCreate(&p->events[p->num_events], CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
      stop(p, "cuEventCreate", r);
      return NULL;
    }
    ++p->num_events;
  }
  return p->events[slot];
}

static void record(kiln_cuda_profile *p, size_t slot, CUstream stream) {
  CUevent event = event_at(p, slot);
  if (!event)
    return;
  CUresult r = p->cu->cuEventRecord(event, stream);
  if (r != CUDA_SUCCESS)
    stop(p, "cuEventRecord", r);
}

void kiln_cuda_profile_begin(kiln_cuda_profile *p, CUstream stream) {
  if (!p || !p->kernels_on || p->stopped[0])
    return;
  record(p, 2 * p->launches, stream);
  p->started = !p->stopped[0];
}

void kiln_cuda_profile_end(kiln_cuda_profile *p, CUstream stream,
                           int64_t kernel, const char *name, int launched) {
  if (!p || !p->started)
    return;
  p->started = 0;
  if (!launched || kernel < 0 || (uint64_t)kernel >= p->num_kernels)
    return;
  record(p, 2 * p->launches + 1, stream);
  if (p->stopped[0])
    return;
  kernel_stats *k = &p->kernels[kernel];
  if (!k->name && name)
    k->name = strdup(name); /* NULL on failure: reported as "" */
  p->launch_kernel[p->launches++] = kernel;
}

/* The elapsed time from `a` to `b`; 0 when a call failed (profiling
 * stopped then). */
static float elapsed(kiln_cuda_profile *p, CUevent a, CUevent b) {
  float ms = 0;
  CUresult r = p->cu->cuEventElapsedTime(&ms, a, b);
  if (r != CUDA_SUCCESS) {
    stop(p, "cuEventElapsedTime", r);
    return 0;
  }
  return ms;
}

/* Room for the last run's `n` launches; 0 when memory runs out. */
static int reserve_last(kiln_cuda_profile *p, size_t n) {
  if (n <= p->cap_last)
    return 1;
  kiln_device_launch_time *last = (kiln_device_launch_time *)realloc(
      p->last, n * sizeof(kiln_device_launch_time));
  if (!last) {
    snprintf(p->stopped, sizeof(p->stopped), "out of memory");
    return 0;
  }
  p->last = last;
  p->cap_last = n;
  return 1;
}

void kiln_cuda_profile_end_run(kiln_cuda_profile *p, int failed) {
  if (!p)
    return;
  p->num_last = 0;
  p->last_from_mark = 0;
  p->last_phase_ms[0] = p->last_phase_ms[1] = p->last_phase_ms[2] = -1;
  size_t n = p->launches;
  int marked[4];
  memcpy(marked, p->marked, sizeof(marked));
  memset(p->marked, 0, sizeof(p->marked));
  p->launches = 0;
  p->started = 0;
  if (failed || p->stopped[0])
    return;
  const kiln_cuda_driver *cu = p->cu;
  /* The run's last event: mark 3 comes after every launch. */
  CUevent last = marked[3] ? p->marks[3] : n > 0 ? p->events[2 * n - 1] : NULL;
  if (last) {
    CUresult r = cu->cuEventSynchronize(last);
    if (r != CUDA_SUCCESS) {
      stop(p, "cuEventSynchronize", r);
      return;
    }
  }
  float run = n > 0 ? elapsed(p, p->events[0], p->events[2 * n - 1]) : 0;
  /* Read every time before adding any, so a failure leaves no half run. */
  float stack[64];
  float *ms = n <= 64 ? stack : (float *)malloc(n * sizeof(float));
  if (!ms || !reserve_last(p, n)) {
    snprintf(p->stopped, sizeof(p->stopped), "out of memory");
    if (ms != stack)
      free(ms);
    return;
  }
  int from_mark = marked[0];
  CUevent origin = from_mark ? p->marks[0] : n > 0 ? p->events[0] : NULL;
  for (size_t i = 0; i < n && !p->stopped[0]; ++i) {
    ms[i] = elapsed(p, p->events[2 * i], p->events[2 * i + 1]);
    p->last[i].start_ms = elapsed(p, origin, p->events[2 * i]);
  }
  double phase[3] = {-1, -1, -1};
  for (int k = 0; k < 3 && !p->stopped[0]; ++k)
    if (marked[k] && marked[k + 1])
      phase[k] = elapsed(p, p->marks[k], p->marks[k + 1]);
  if (p->stopped[0]) {
    if (ms != stack)
      free(ms);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    kernel_stats *k = &p->kernels[p->launch_kernel[i]];
    if (k->launches == 0 || ms[i] < k->min_ms)
      k->min_ms = ms[i];
    if (k->launches == 0 || ms[i] > k->max_ms)
      k->max_ms = ms[i];
    ++k->launches;
    k->total_ms += ms[i];
    p->last[i].kernel = p->launch_kernel[i];
    p->last[i].name = k->name ? k->name : "";
    p->last[i].ms = ms[i];
  }
  if (ms != stack)
    free(ms);
  p->num_last = n;
  p->last_from_mark = from_mark;
  memcpy(p->last_phase_ms, phase, sizeof(phase));
  if (p->kernels_on) {
    ++p->runs;
    p->run_ms += run;
  }
}

void kiln_cuda_profile_timing(const kiln_cuda_profile *p,
                              kiln_device_timing *out) {
  out->launches = p ? p->last : NULL;
  out->num_launches = p ? p->num_last : 0;
  out->from_mark = p ? p->last_from_mark : 0;
  for (int k = 0; k < 3; ++k)
    out->phase_ms[k] = p ? p->last_phase_ms[k] : -1;
  out->stopped = p ? p->stopped : "";
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *text) {
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)text; *c; ++c) {
    if (*c == '"' || *c == '\\')
      fprintf(out, "\\%c", *c);
    else if (*c < 0x20)
      fprintf(out, "\\u%04x", *c);
    else
      fputc(*c, out);
  }
  fputc('"', out);
}

static int by_total_time(const void *a, const void *b) {
  const kernel_stats *x = *(const kernel_stats *const *)a;
  const kernel_stats *y = *(const kernel_stats *const *)b;
  if (x->total_ms != y->total_ms)
    return x->total_ms > y->total_ms ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The report as one line (malloc'ed); NULL when memory runs out. */
static char *format_report(const kiln_cuda_profile *p, size_t *size) {
  char *text = NULL;
  FILE *out = open_memstream(&text, size);
  kernel_stats **sorted =
      (kernel_stats **)calloc(p->num_kernels + 1, sizeof(kernel_stats *));
  if (!out || !sorted) {
    if (out)
      fclose(out);
    free(text);
    free(sorted);
    return NULL;
  }
  size_t count = 0;
  double kernel_ms = 0;
  for (uint64_t i = 0; i < p->num_kernels; ++i)
    if (p->kernels[i].launches > 0) {
      sorted[count++] = &p->kernels[i];
      kernel_ms += p->kernels[i].total_ms;
    }
  qsort(sorted, count, sizeof(*sorted), by_total_time);
  /* The .so this runtime is linked into: the model. */
  Dl_info info;
  const char *model =
      dladdr((void *)&kiln_cuda_profile_create, &info) && info.dli_fname
          ? info.dli_fname
          : "(model)";
  fputs("{\"model\": ", out);
  json_string(out, model);
  fprintf(out, ", \"runs\": %llu, \"run_ms\": %.4f, \"kernel_ms\": %.4f",
          (unsigned long long)p->runs, p->run_ms, kernel_ms);
  fputs(", \"stopped\": ", out);
  if (p->stopped[0])
    json_string(out, p->stopped);
  else
    fputs("null", out);
  fputs(", \"kernels\": [", out);
  for (size_t i = 0; i < count; ++i) {
    const kernel_stats *k = sorted[i];
    fprintf(out, "%s{\"index\": %lld, \"name\": ", i ? ", " : "",
            (long long)k->index);
    json_string(out, k->name ? k->name : "");
    fprintf(out,
            ", \"launches\": %llu, \"total_ms\": %.4f, \"mean_us\": %.3f, "
            "\"min_us\": %.3f, \"max_us\": %.3f}",
            (unsigned long long)k->launches, k->total_ms,
            1000.0 * k->total_ms / (double)k->launches, 1000.0 * k->min_ms,
            1000.0 * k->max_ms);
  }
  fputs("]}\n", out);
  free(sorted);
  if (fclose(out) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* Appends the report with one write(), so the lines of instances released
 * at the same time do not interleave. Failures go to stderr: there is no
 * run left to report them to. */
static void write_report(const kiln_cuda_profile *p) {
  if (!p->path)
    return;
  size_t size = 0;
  char *text = format_report(p, &size);
  if (!text) {
    fprintf(stderr, "kiln: profile: out of memory\n");
    return;
  }
  int fd = open(p->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  ssize_t written = fd >= 0 ? write(fd, text, size) : -1;
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && written == (ssize_t)size) {
    written = -1;
    err = errno;
  }
  if (written != (ssize_t)size)
    fprintf(stderr, "kiln: profile: cannot write '%s': %s\n", p->path,
            written < 0 ? strerror(err) : "short write");
  free(text);
}

void kiln_cuda_profile_release(kiln_cuda_profile *p, CUcontext context) {
  if (!p)
    return;
  write_report(p);
  const kiln_cuda_driver *cu = p->cu;
  if ((p->num_events > 0 || p->num_marks > 0) && context &&
      cu->cuCtxPushCurrent(context) == CUDA_SUCCESS) {
    for (size_t i = 0; i < p->num_events; ++i)
      cu->cuEventDestroy(p->events[i]);
    for (int i = 0; i < p->num_marks; ++i)
      cu->cuEventDestroy(p->marks[i]);
    CUcontext popped = NULL;
    cu->cuCtxPopCurrent(&popped);
  }
  for (uint64_t i = 0; i < p->num_kernels; ++i)
    free(p->kernels[i].name);
  free(p->kernels);
  free(p->events);
  free(p->launch_kernel);
  free(p->last);
  free(p->path);
  free(p);
}
