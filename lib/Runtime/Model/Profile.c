/*===- Profile.c - Kernel and phase times of an instance's runs -----------===*
 *
 * kiln_instance_set_profiling and kiln_instance_last_profile: while
 * KILN_PROFILE_KERNELS is on, every CPU kernel is timed by the host clock
 * around its call (kiln_rt_launch_cpu) and every device launch by the
 * driver's events; KILN_PROFILE_PHASES has the driver record marks between
 * a device run's input copies, compute and output copies. After each run
 * the measurements become the instance's "last profile": kernel names come
 * from the model's `launch` records when it has them, else from the symbol
 * table of model.so (CPU functions) or the driver (device kernels). An
 * instance that was never asked to profile has no profile and pays one
 * branch per launch.
 *===----------------------------------------------------------------------===*/
#include "DeviceRuntime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A CPU function and its name (NULL: not found), resolved once. */
typedef struct cpu_name {
  void *fn;
  char *name;
} cpu_name;

typedef struct kiln_rt_profile {
  int flags;
  double run_start_us, mark0_us, first_launch_us;
  /* The current run: events (CPU: `fns` holds the function of each) and
   * the sites of device launches, in order. */
  kiln_kernel_event_t *events;
  void **fns;
  size_t num_events, cap_events;
  int64_t *device_sites;
  size_t num_device_sites, cap_device_sites;
  int overflow; /* out of memory while recording: the run has no profile */
  /* The last profiled run. */
  int have_last;
  kiln_run_profile_t last;
  kiln_kernel_event_t *last_events;
  size_t cap_last_events;
  char stopped[256];
  cpu_name *names;
  size_t num_names;
} kiln_rt_profile;

double kiln_rt_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void kiln_rt_launch_site(kiln_rt_ctx *ctx, int64_t site) { ctx->site = site; }

void kiln_rt_profile_free(kiln_instance_impl *inst) {
  kiln_rt_profile *p = inst->profile;
  if (!p)
    return;
  for (size_t i = 0; i < p->num_names; ++i)
    free(p->names[i].name);
  free(p->names);
  free(p->events);
  free(p->fns);
  free(p->device_sites);
  free(p->last_events);
  free(p);
  inst->profile = NULL;
  inst->profile_kernels = 0;
}

kiln_status_t *kiln_rt_set_profiling(kiln_instance_impl *inst, int flags) {
  if (flags & ~(KILN_PROFILE_KERNELS | KILN_PROFILE_PHASES))
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "kiln_instance_set_profiling: unknown flags "
                                "0x%x (KILN_PROFILE_KERNELS, "
                                "KILN_PROFILE_PHASES)",
                                (unsigned)flags);
  kiln_model_impl *model = inst->model;
  if (model->on_device) {
    kiln_dev_instance *di = inst->dev;
    const kiln_device_driver *drv = di->drv;
    if (!drv->set_timing || !drv->mark || !drv->timing) {
      if (flags == 0)
        return NULL;
      return kiln_rtc_make_status(
          KILN_STATUS_UNIMPLEMENTED,
          "model compiled for %s %s: kernel and phase times "
          "(kiln_instance_set_profiling) are not implemented by its device "
          "driver",
          model->device_kind, model->chip);
    }
    kiln_device_result r = drv->enter(di->queue);
    if (r != 0)
      return kiln_dev_status(di, KILN_STATUS_INTERNAL, r,
                             drv->op_names[KILN_DEVICE_OP_ENTER]);
    kiln_status_t *status = drv->set_timing(
        di->queue, (flags & KILN_PROFILE_KERNELS) != 0, flags != 0);
    /* Runs whose launches are timed are plain: a graph made before would
     * hold scratch buffers those runs may give back, so it goes (the next
     * run without kernel timing captures a new one). */
    if (!status && (flags & KILN_PROFILE_KERNELS) &&
        kiln_dev_has_graph(di, 0)) {
      drv->synchronize(di->queue);
      kiln_dev_drop_graph(di);
    }
    drv->leave(di->queue);
    if (status)
      return status;
    di->timing_kernels = (flags & KILN_PROFILE_KERNELS) != 0;
    di->timing_marks = flags != 0;
  }
  if (!inst->profile) {
    if (flags == 0)
      return NULL;
    inst->profile = (kiln_rt_profile *)calloc(1, sizeof(kiln_rt_profile));
    if (!inst->profile)
      return kiln_rtc_oom_status();
  }
  kiln_rt_profile *p = inst->profile;
  p->flags = flags;
  p->have_last = 0;
  inst->profile_kernels = (flags & KILN_PROFILE_KERNELS) != 0;
  return NULL;
}

void kiln_rt_profile_begin(kiln_instance_impl *inst) {
  kiln_rt_profile *p = inst->profile;
  if (!p || !p->flags)
    return;
  p->num_events = 0;
  p->num_device_sites = 0;
  p->overflow = 0;
  p->mark0_us = p->first_launch_us = -1;
  p->run_start_us = kiln_rt_now_us();
}

/* Room for one more event; 0 when memory runs out. */
static int reserve_event(kiln_rt_profile *p) {
  if (p->num_events < p->cap_events)
    return 1;
  size_t cap = p->cap_events ? 2 * p->cap_events : 64;
  kiln_kernel_event_t *events = (kiln_kernel_event_t *)realloc(
      p->events, cap * sizeof(kiln_kernel_event_t));
  if (events)
    p->events = events;
  void **fns = events ? (void **)realloc(p->fns, cap * sizeof(void *)) : NULL;
  if (!fns) {
    p->overflow = 1;
    return 0;
  }
  p->fns = fns;
  p->cap_events = cap;
  return 1;
}

static const kiln_launch_site *site_of(const kiln_model_impl *model,
                                       int64_t site) {
  return site >= 0 && (uint64_t)site < model->num_sites ? &model->sites[site]
                                                        : NULL;
}

void kiln_rt_profile_cpu_kernel(kiln_rt_ctx *ctx, void (*kernel)(void **args),
                                void **args) {
  kiln_rt_profile *p = ctx->instance->profile;
  int64_t site = ctx->site; /* set until the code sets another (or -1) */
  double start = kiln_rt_now_us();
  kernel(args);
  double end = kiln_rt_now_us();
  if (!reserve_event(p))
    return;
  kiln_kernel_event_t *e = &p->events[p->num_events];
  memset(e, 0, sizeof(*e));
  e->index = -1;
  e->site = site;
  e->start_us = start - p->run_start_us;
  e->duration_us = end - start;
  /* kiln_rt_profile_end names it. */
  memcpy(&p->fns[p->num_events], &kernel, sizeof(void *));
  ++p->num_events;
}

void kiln_rt_profile_device_launch(kiln_rt_ctx *ctx) {
  kiln_rt_profile *p = ctx->instance->profile;
  int64_t site = ctx->site; /* set until the code sets another (or -1) */
  if (p->first_launch_us < 0)
    p->first_launch_us = kiln_rt_now_us();
  if (p->num_device_sites == p->cap_device_sites) {
    size_t cap = p->cap_device_sites ? 2 * p->cap_device_sites : 64;
    int64_t *sites = (int64_t *)realloc(p->device_sites, cap * sizeof(int64_t));
    if (!sites) {
      p->overflow = 1;
      return;
    }
    p->device_sites = sites;
    p->cap_device_sites = cap;
  }
  p->device_sites[p->num_device_sites++] = site;
}

void kiln_rt_profile_mark0(kiln_instance_impl *inst) {
  if (inst->profile)
    inst->profile->mark0_us = kiln_rt_now_us();
}

/* The name of CPU function `fn`: resolved from model.so's symbol table the
 * first time, with its packed entry's suffix dropped (`<kernel>_packed`
 * calls the kernel `<kernel>`, the name kilnc --report uses). */
static const char *cpu_kernel_name(kiln_rt_profile *p, void *fn) {
  for (size_t i = 0; i < p->num_names; ++i)
    if (p->names[i].fn == fn)
      return p->names[i].name ? p->names[i].name : "";
  return "";
}

static void resolve_cpu_names(kiln_rt_profile *p) {
  /* The functions not named yet. */
  size_t fresh = 0;
  void **todo = (void **)malloc((p->num_events + 1) * sizeof(void *));
  if (!todo)
    return;
  for (size_t i = 0; i < p->num_events; ++i) {
    if (p->events[i].on_device)
      continue;
    int known = 0;
    for (size_t k = 0; k < p->num_names && !known; ++k)
      known = p->names[k].fn == p->fns[i];
    for (size_t k = 0; k < fresh && !known; ++k)
      known = todo[k] == p->fns[i];
    if (!known)
      todo[fresh++] = p->fns[i];
  }
  char **names = fresh ? (char **)calloc(fresh, sizeof(char *)) : NULL;
  cpu_name *grown = fresh
                        ? (cpu_name *)realloc(p->names, (p->num_names + fresh) *
                                                            sizeof(cpu_name))
                        : NULL;
  if (grown)
    p->names = grown;
  if (fresh && names && grown) {
    kiln_rt_symbol_names(todo, fresh, names);
    for (size_t k = 0; k < fresh; ++k) {
      char *name = names[k];
      size_t len = name ? strlen(name) : 0;
      if (len > 7 && strcmp(name + len - 7, "_packed") == 0)
        name[len - 7] = '\0';
      p->names[p->num_names].fn = todo[k];
      p->names[p->num_names].name = name;
      ++p->num_names;
    }
  }
  free(names);
  free(todo);
}

/* Appends the driver's launch times to the run's CPU events (a device
 * model has no CPU kernels) and takes its phase times. */
static void take_device_timing(kiln_instance_impl *inst) {
  kiln_rt_profile *p = inst->profile;
  kiln_dev_instance *di = inst->dev;
  kiln_device_timing t;
  memset(&t, 0, sizeof(t));
  t.phase_ms[0] = t.phase_ms[1] = t.phase_ms[2] = -1;
  di->drv->timing(di->queue, &t);
  snprintf(p->stopped, sizeof(p->stopped), "%s", t.stopped ? t.stopped : "");
  double *phase[3] = {&p->last.h2d_us, &p->last.compute_us, &p->last.d2h_us};
  for (int i = 0; i < 3; ++i)
    *phase[i] = (p->flags & KILN_PROFILE_PHASES) && t.phase_ms[i] >= 0
                    ? 1000.0 * t.phase_ms[i]
                    : -1;
  if (!(p->flags & KILN_PROFILE_KERNELS))
    return;
  /* Device time 0 is where the host recorded mark 0 (the stream is idle
   * then: the previous run has synchronized), else the first launch. */
  double anchor =
      t.from_mark && p->mark0_us >= 0 ? p->mark0_us : p->first_launch_us;
  anchor = anchor >= 0 ? anchor - p->run_start_us : 0;
  /* The generic side saw the same launches in the same order, unless
   * timing stopped: then the sites are not known. */
  int sites = p->num_device_sites == t.num_launches;
  for (size_t i = 0; i < t.num_launches; ++i) {
    if (!reserve_event(p))
      return;
    const kiln_device_launch_time *l = &t.launches[i];
    kiln_kernel_event_t *e = &p->events[p->num_events];
    memset(e, 0, sizeof(*e));
    e->kernel = l->name ? l->name : "";
    e->index = l->kernel;
    e->site = sites ? p->device_sites[i] : -1;
    e->on_device = 1;
    e->start_us = anchor + 1000.0 * l->start_ms;
    e->duration_us = 1000.0 * l->ms;
    p->fns[p->num_events++] = NULL;
  }
}

void kiln_rt_profile_end(kiln_instance_impl *inst, int failed) {
  kiln_rt_profile *p = inst->profile;
  if (!p || !p->flags)
    return;
  double end = kiln_rt_now_us();
  if (failed || p->overflow) {
    p->have_last = 0;
    return;
  }
  kiln_model_impl *model = inst->model;
  memset(&p->last, 0, sizeof(p->last));
  p->last.struct_size = sizeof(p->last);
  p->last.flags = p->flags;
  p->last.run_us = end - p->run_start_us;
  p->last.h2d_us = p->last.compute_us = p->last.d2h_us = -1;
  p->stopped[0] = '\0';
  if (model->on_device)
    take_device_timing(inst);
  if (p->overflow) {
    p->have_last = 0;
    return;
  }
  if (!model->on_device)
    resolve_cpu_names(p);
  for (size_t i = 0; i < p->num_events; ++i) {
    kiln_kernel_event_t *e = &p->events[i];
    const kiln_launch_site *site = site_of(model, e->site);
    if (!e->on_device)
      e->kernel = cpu_kernel_name(p, p->fns[i]);
    if (site) {
      if (site->kernel && *site->kernel && !e->on_device && !*e->kernel)
        e->kernel = site->kernel;
      e->nodes = site->nodes;
      e->num_nodes = site->num_nodes;
    }
  }
  /* The events become the last run's (a copy: the next run records into
   * `events` while the caller may still read the last one). */
  if (p->cap_last_events < p->num_events) {
    kiln_kernel_event_t *grown = (kiln_kernel_event_t *)realloc(
        p->last_events, p->num_events * sizeof(kiln_kernel_event_t));
    if (!grown) {
      p->have_last = 0;
      return;
    }
    p->last_events = grown;
    p->cap_last_events = p->num_events;
  }
  if (p->num_events)
    memcpy(p->last_events, p->events,
           p->num_events * sizeof(kiln_kernel_event_t));
  p->last.events = p->last_events;
  p->last.num_events = p->num_events;
  p->last.stopped = p->stopped;
  p->num_events = 0;
  p->have_last = 1;
}

kiln_status_t *kiln_rt_last_profile(kiln_instance_impl *inst,
                                    kiln_run_profile_t *out) {
  kiln_rt_profile *p = inst->profile;
  if (!p || !p->have_last)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "kiln_instance_last_profile: the instance has no profiled run (call "
        "kiln_instance_set_profiling, then run it)");
  *out = p->last;
  return NULL;
}
