/*===- DeviceRun.c - One run of a device model, and its graphs ------------===*
 *
 * Stages the inputs, runs the host program (or replays the graph captured
 * on the second run of a graph-capturable model), copies the outputs out
 * and waits for the stream. Graphs of runs on the caller's device buffers
 * are captured on those buffers (no staging copies) and replayed while the
 * buffers stay where they were. See DeviceRuntime.h.
 *===----------------------------------------------------------------------===*/
#include "DeviceRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===--------------------------------------------------------------------===*
 * Runs
 *===--------------------------------------------------------------------===*/

static void reset_ctx(kiln_rt_ctx *ctx) {
  ctx->failed = 0;
  ctx->code = KILN_STATUS_OK;
  ctx->reason[0] = '\0';
  ctx->site = -1;
}

/* Phase mark `mark` of a profiled run (DeviceRuntime.h). */
static void mark(kiln_instance_impl *inst, int mark) {
  kiln_dev_instance *di = inst->dev;
  if (!di->timing_marks)
    return;
  if (mark == 0)
    kiln_rt_profile_mark0(inst);
  di->drv->mark(di->queue, mark);
}

/* Forgets the outputs of an abandoned attempt (a failed capture). */
static void reset_outputs(kiln_instance_impl *inst) {
  kiln_dev_instance *di = inst->dev;
  for (size_t i = 0; i < inst->model->num_outputs; ++i) {
    kiln_rtc_tensor_free(inst->outputs[i]);
    inst->outputs[i] = NULL;
    di->output_done[i] = 0;
    di->output_direct[i] = 0;
    di->output_ptr[i] = 0;
  }
}

static void run_main(kiln_rt_ctx *ctx) {
  int32_t rc = kiln_rt_run_program(ctx);
  if (!ctx->failed && rc != 0)
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "the host program returned %d",
                 (int)rc);
}

/*===--------------------------------------------------------------------===*
 * Graphs, by input shape
 *===--------------------------------------------------------------------===*/

static void unpin(kiln_dev_instance *di, kiln_dev_graph_entry *e) {
  for (size_t p = 0; p < e->num_pins; ++p)
    for (size_t i = 0; i < di->num_scratch; ++i)
      if ((kiln_device_ptr)(uintptr_t)di->scratch[i].ptr == e->pins[p] &&
          di->scratch[i].pins > 0) {
        --di->scratch[i].pins;
        break;
      }
  e->num_pins = 0;
}

/* Pins the scratch buffers this run used (held at some point, released or
 * not) to `e` (instead of its old ones). */
static void pin_used(kiln_dev_instance *di, kiln_dev_graph_entry *e) {
  unpin(di, e);
  for (size_t i = 0; i < di->num_scratch; ++i)
    if (di->scratch[i].used) {
      ++di->scratch[i].pins;
      e->pins[e->num_pins++] = (kiln_device_ptr)(uintptr_t)di->scratch[i].ptr;
    }
}

static void drop_entry_graph(kiln_dev_instance *di, kiln_dev_graph_entry *e) {
  if (e->graph)
    di->drv->graph_destroy(di->queue, e->graph);
  e->graph = NULL;
  e->warm = 0;
}

static void clear_entry(kiln_dev_instance *di, kiln_dev_graph_entry *e) {
  drop_entry_graph(di, e);
  unpin(di, e);
  free(e->key);
  free(e->pins);
  memset(e, 0, sizeof(*e));
}

void kiln_dev_drop_graph(kiln_dev_instance *di) {
  for (size_t i = 0; i < KILN_GRAPH_CACHE; ++i)
    if (di->graphs[i].live)
      clear_entry(di, &di->graphs[i]);
}

int kiln_dev_has_graph(const kiln_dev_instance *di, int or_warm) {
  for (size_t i = 0; i < KILN_GRAPH_CACHE; ++i)
    if (di->graphs[i].graph || (or_warm && di->graphs[i].live))
      return 1;
  return 0;
}

/* This run's symbol values into di->graph_key. */
static void read_key(const kiln_instance_impl *inst) {
  for (size_t s = 0; s < inst->model->num_symbols; ++s)
    inst->dev->graph_key[s] = inst->bindings[s].value;
}

static kiln_dev_graph_entry *find_entry(const kiln_instance_impl *inst) {
  kiln_dev_instance *di = inst->dev;
  size_t n = inst->model->num_symbols;
  for (size_t i = 0; i < KILN_GRAPH_CACHE; ++i)
    if (di->graphs[i].live &&
        (n == 0 ||
         memcmp(di->graphs[i].key, di->graph_key, n * sizeof(int64_t)) == 0))
      return &di->graphs[i];
  return NULL;
}

/* A new entry for this run's shape, in a free slot or the least recently
 * run one's; NULL when out of memory (the run stays plain). */
static kiln_dev_graph_entry *new_entry(kiln_instance_impl *inst) {
  kiln_dev_instance *di = inst->dev;
  const kiln_model_impl *model = inst->model;
  kiln_dev_graph_entry *e = NULL;
  for (size_t i = 0; i < KILN_GRAPH_CACHE && !e; ++i)
    if (!di->graphs[i].live)
      e = &di->graphs[i];
  if (!e) {
    e = &di->graphs[0];
    for (size_t i = 1; i < KILN_GRAPH_CACHE; ++i)
      if (di->graphs[i].last_run < e->last_run)
        e = &di->graphs[i];
    clear_entry(di, e);
  }
  size_t ins = model->num_inputs, outs = model->num_outputs;
  size_t rank = 0;
  for (size_t i = 0; i < outs; ++i)
    rank += model->outputs[i].rank;
  /* One block: key, pointers, dims, flags. */
  size_t bytes = (model->num_symbols + rank) * sizeof(int64_t) +
                 (ins + outs) * sizeof(kiln_device_ptr) + outs + 1;
  char *block = (char *)calloc(1, bytes);
  kiln_device_ptr *pins =
      (kiln_device_ptr *)calloc(di->num_scratch + 1, sizeof(kiln_device_ptr));
  if (!block || !pins) {
    free(block);
    free(pins);
    return NULL;
  }
  e->live = 1;
  e->key = (int64_t *)block;
  e->output_dims = e->key + model->num_symbols;
  e->input_ptr = (kiln_device_ptr *)(e->output_dims + rank);
  e->output_ptr = e->input_ptr + ins;
  e->output_direct = (char *)(e->output_ptr + outs);
  e->pins = pins;
  memcpy(e->key, di->graph_key, model->num_symbols * sizeof(int64_t));
  return e;
}

/* Makes room in e->pins for every scratch buffer of the instance. */
static int reserve_pins(kiln_dev_instance *di, kiln_dev_graph_entry *e) {
  kiln_device_ptr *grown = (kiln_device_ptr *)realloc(
      e->pins, (di->num_scratch + 1) * sizeof(kiln_device_ptr));
  if (!grown)
    return 0;
  e->pins = grown;
  return 1;
}

/* The second run of a shape: kiln_model_main under stream capture, then
 * the graph is made and launched. Returns 0 when the capture did not work
 * out (nothing ran; the caller redoes the run). */
static int capture_and_launch(kiln_rt_ctx *ctx, kiln_dev_graph_entry *e) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_dev_instance *di = inst->dev;
  const kiln_device_driver *drv = di->drv;
  di->capture_retry = 0;
  if (drv->capture_begin(di->queue) != 0)
    return 0;
  di->capturing = 1;
  di->capture_aborted = 0;
  run_main(ctx);
  di->capturing = 0;
  kiln_device_graph *graph = NULL;
  kiln_device_result r = drv->capture_end(di->queue, &graph);
  if (ctx->failed || r != 0 || !graph) {
    if (graph)
      drv->graph_destroy(di->queue, graph);
    return 0;
  }
  if (!reserve_pins(di, e)) {
    drv->graph_destroy(di->queue, graph);
    di->capture_retry = 0;
    return 0;
  }
  e->graph = graph;
  size_t ins = inst->model->num_inputs, outs = inst->model->num_outputs;
  if (ins)
    memcpy(e->input_ptr, di->input_ptr, ins * sizeof(kiln_device_ptr));
  if (outs) {
    memcpy(e->output_ptr, di->output_ptr, outs * sizeof(kiln_device_ptr));
    memcpy(e->output_direct, di->output_direct, outs);
  }
  size_t rank = 0;
  for (size_t i = 0; i < outs; ++i)
    rank += inst->model->outputs[i].rank;
  if (rank)
    memcpy(e->output_dims, di->output_dims, rank * sizeof(int64_t));
  /* The graph holds the buffers this run found: pin those. */
  pin_used(di, e);
  r = drv->graph_launch(di->queue, graph);
  if (r != 0)
    kiln_dev_fail(ctx, r, drv->op_names[KILN_DEVICE_OP_GRAPH_LAUNCH]);
  return 1;
}

/* Whether this run's inputs (staged already) and outputs are where the
 * graph's were: the caller's buffers when they are used in place, the
 * instance's otherwise. */
static int graph_fits(const kiln_rt_ctx *ctx, const kiln_dev_graph_entry *e) {
  const kiln_instance_impl *inst = ctx->instance;
  const kiln_dev_instance *di = inst->dev;
  for (size_t i = 0; i < inst->model->num_inputs; ++i)
    if (di->input_ptr[i] != e->input_ptr[i])
      return 0;
  for (size_t i = 0; i < inst->model->num_outputs; ++i) {
    kiln_device_ptr at = kiln_dev_output_in_place(ctx, i);
    if ((at ? at : di->outputs[i].ptr) != e->output_ptr[i])
      return 0;
  }
  return 1;
}

/* A replay: the graph writes where the capture run wrote; the outputs have
 * the dims recorded then (those of this shape). */
static void replay(kiln_rt_ctx *ctx, const kiln_dev_graph_entry *e) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_dev_instance *di = inst->dev;
  size_t rank = 0;
  for (size_t i = 0; i < inst->model->num_outputs; ++i)
    rank += inst->model->outputs[i].rank;
  if (rank)
    memcpy(di->output_dims, e->output_dims, rank * sizeof(int64_t));
  for (size_t i = 0; i < inst->model->num_outputs; ++i) {
    const kiln_value_sig *sig = &inst->model->outputs[i];
    if (!ctx->output_views) {
      kiln_status_t *status = NULL;
      inst->outputs[i] = kiln_rtc_tensor_create(
          sig->dtype, sig->rank, di->output_dims + di->output_dims_at[i],
          &status);
      if (!inst->outputs[i]) {
        kiln_rt_fail(ctx, (kiln_status_code_t)status->code,
                     "output %zu ('%s'): %s", i, sig->name, status->message);
        if (!status->is_static)
          free(status);
        return;
      }
    }
    di->output_done[i] = 1;
    di->output_direct[i] = e->output_direct[i];
    di->output_ptr[i] = e->output_ptr[i];
  }
  kiln_device_result r = di->drv->graph_launch(di->queue, e->graph);
  if (r != 0)
    kiln_dev_fail(ctx, r, di->drv->op_names[KILN_DEVICE_OP_GRAPH_LAUNCH]);
}

/* Copies outputs that were not written in place to the host tensors or the
 * caller's device buffers. */
static void copy_outputs_out(kiln_rt_ctx *ctx) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_dev_instance *di = inst->dev;
  for (size_t i = 0; i < inst->model->num_outputs && !ctx->failed; ++i) {
    if (di->output_direct[i])
      continue;
    const kiln_value_sig *sig = &inst->model->outputs[i];
    size_t bytes = kiln_dev_view_bytes(sig->dtype, sig->rank,
                                       di->output_dims + di->output_dims_at[i]);
    if (bytes == 0)
      continue;
    kiln_device_result r;
    if (ctx->output_views)
      r = di->drv->copy_device(
          di->queue, (kiln_device_ptr)(uintptr_t)ctx->output_views[i].data,
          di->output_ptr[i], bytes);
    else
      r = di->drv->copy_to_host(di->queue, inst->outputs[i]->data,
                                di->output_ptr[i], bytes);
    if (r != 0) {
      char call[192];
      snprintf(
          call, sizeof(call), "%s of output %zu ('%s')",
          di->drv->op_names[ctx->output_views ? KILN_DEVICE_OP_COPY_DEVICE
                                              : KILN_DEVICE_OP_COPY_TO_HOST],
          i, sig->name);
      kiln_dev_fail(ctx, r, call);
    }
  }
}

kiln_status_t *kiln_dev_run(kiln_instance_impl *inst,
                            const kiln_tensor_view_t *inputs,
                            const kiln_output_view_t *views,
                            kiln_tensor_t **out_outputs) {
  kiln_model_impl *model = inst->model;
  kiln_dev_instance *di = inst->dev;
  const kiln_device_driver *drv = di->drv;
  kiln_device_result r = drv->enter(di->queue);
  if (r != 0) {
    char what[96];
    snprintf(what, sizeof(what), "model run: %s",
             drv->op_names[KILN_DEVICE_OP_ENTER]);
    return kiln_dev_status(di, KILN_STATUS_INTERNAL, r, what);
  }

  kiln_rt_ctx ctx;
  ctx.instance = inst;
  ctx.inputs = inputs;
  ctx.output_views = views;
  reset_ctx(&ctx);
  reset_outputs(inst);
  /* A device check failed in an earlier run that returned before its work
   * ran (on the caller's stream): this run reports it. */
  kiln_dev_report_checks(&ctx, "a device check failed in an earlier run on "
                               "the caller's stream: ");
  if (ctx.failed) {
    drv->leave(di->queue);
    return kiln_rtc_make_status(ctx.code, "model run failed: %s", ctx.reason);
  }

  /* Graphs need every device pointer fixed across runs; each input shape
   * gets its own. The caller's device buffers are used in place until they
   * have moved too often, then they go through the instance's buffers. */
  int use_graph = di->graphs_enabled && !di->graph_failed &&
                  model->graph_capturable && !di->profiling &&
                  !di->timing_kernels;
  kiln_dev_graph_entry *entry = NULL;
  if (use_graph) {
    read_key(inst);
    entry = find_entry(inst);
  }
  int replayed = 0;
  di->staged = !views || (use_graph && di->graph_moves >= KILN_GRAPH_MOVES_MAX);
  mark(inst, 0);
  kiln_dev_stage_inputs(&ctx, views != NULL);
  if (!ctx.failed && entry && entry->graph && !graph_fits(&ctx, entry)) {
    /* The graph holds other buffers: run plainly, capture again next time
     * (this run allocates what the capture will use, so it is staged as
     * the captured runs will be once the buffers have moved too often). */
    drop_entry_graph(di, entry);
    if (++di->graph_moves == KILN_GRAPH_MOVES_MAX && !di->staged) {
      di->staged = 1;
      kiln_dev_stage_inputs(&ctx, 1);
    }
  }
  mark(inst, 1);
  if (!ctx.failed) {
    if (entry && entry->graph) {
      replay(&ctx, entry);
      replayed = 1;
    } else if (entry && entry->warm && capture_and_launch(&ctx, entry)) {
      /* Captured and launched. */
    } else {
      int after_capture = entry && entry->warm;
      if (after_capture) {
        /* The capture failed: nothing ran; redo the run plainly. */
        reset_ctx(&ctx);
        reset_outputs(inst);
        for (size_t i = 0; i < di->num_scratch; ++i)
          di->scratch[i].in_use = di->scratch[i].used = 0;
      }
      run_main(&ctx);
      if (!ctx.failed && after_capture &&
          (!di->capture_retry || ++entry->failures >= 2)) {
        /* A model that runs but cannot be captured (or a shape whose
         * captures keep needing allocations): plain runs. */
        if (di->capture_retry) {
          entry->warm = 0;
          unpin(di, entry);
        } else {
          di->graph_failed = 1;
        }
      } else if (!ctx.failed && use_graph && !(entry && entry->failures >= 2)) {
        /* Warm: this run allocated what the shape's capture will use. */
        if (!entry)
          entry = new_entry(inst);
        if (entry && reserve_pins(di, entry)) {
          entry->warm = 1;
          pin_used(di, entry);
        }
      }
    }
    if (entry)
      entry->last_run = ++di->graph_clock;
  }
  for (size_t i = 0; !ctx.failed && i < model->num_outputs; ++i)
    if (!di->output_done[i])
      kiln_rt_fail(&ctx, KILN_STATUS_INTERNAL,
                   "model run did not produce output %zu ('%s')", i,
                   model->outputs[i].name);
  mark(inst, 2);
  copy_outputs_out(&ctx);
  mark(inst, 3);
  if (!views || drv->on_own_stream(di->queue)) {
    r = drv->synchronize(di->queue);
    if (r != 0)
      kiln_dev_fail(&ctx, r, drv->op_names[KILN_DEVICE_OP_SYNCHRONIZE]);
    /* The device checks of this run, now that its kernels are done. */
    if (!ctx.failed)
      kiln_dev_report_checks(&ctx, "");
  }
  drv->end_run(di->queue, ctx.failed);
  if (!replayed)
    kiln_dev_scratch_end_run(di);
  drv->leave(di->queue);

  if (ctx.failed) {
    reset_outputs(inst);
    return kiln_rtc_make_status(ctx.code, "model run failed: %s", ctx.reason);
  }
  for (size_t i = 0; out_outputs && i < model->num_outputs; ++i) {
    out_outputs[i] = inst->outputs[i];
    inst->outputs[i] = NULL;
  }
  return NULL;
}
