/*===- DeviceRuntime.c - Device models and instances ----------------------===*
 *
 * A device model finds the driver of its signature's device kind in
 * kiln_device_drivers, checks its device image and opens the driver (which
 * dlopens its library and checks the device) when it is created; each
 * instance gets a queue from the driver (context, stream, loaded image) and
 * allocates its arena. See DeviceRuntime.h.
 *===----------------------------------------------------------------------===*/
#include "DeviceRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defined by generated code for a device target only (ModelABI.h); weak
 * and hidden so a cpu model links without them (they are then NULL). */
extern const unsigned char kiln_model_device_image[]
    __attribute__((weak, visibility("hidden")));
extern const int64_t kiln_model_device_image_size
    __attribute__((weak, visibility("hidden")));
extern const char kiln_model_device_image_kind[]
    __attribute__((weak, visibility("hidden")));

void kiln_dev_fail(kiln_rt_ctx *ctx, kiln_device_result result,
                   const char *call) {
  const kiln_dev_instance *di = ctx->instance->dev;
  char text[160];
  di->drv->error_text(di->device, result, text, sizeof(text));
  kiln_rt_fail(ctx,
               di->drv->is_out_of_memory(result)
                   ? KILN_STATUS_RESOURCE_EXHAUSTED
                   : KILN_STATUS_INTERNAL,
               "%s failed: %s", call, text);
}

kiln_status_t *kiln_dev_status(const kiln_dev_instance *di,
                               kiln_status_code_t code,
                               kiln_device_result result, const char *what) {
  char text[160];
  di->drv->error_text(di->device, result, text, sizeof(text));
  if (di->drv->is_out_of_memory(result))
    code = KILN_STATUS_RESOURCE_EXHAUSTED;
  return kiln_rtc_make_status(code, "%s failed: %s", what, text);
}

size_t kiln_dev_round(size_t bytes) {
  if (bytes == 0)
    return KILN_DEVICE_ALIGNMENT;
  return (bytes + KILN_DEVICE_ALIGNMENT - 1) &
         ~(size_t)(KILN_DEVICE_ALIGNMENT - 1);
}

/*===--------------------------------------------------------------------===*
 * Models
 *===--------------------------------------------------------------------===*/

void kiln_dev_single_image(kiln_model_program *program) {
  program->image = kiln_model_device_image;
  program->image_size =
      &kiln_model_device_image_size ? &kiln_model_device_image_size : NULL;
  program->image_kind = kiln_model_device_image_kind;
}

kiln_status_t *kiln_dev_model_create(kiln_model_impl *model,
                                     const kiln_rt_options *opts) {
  const kiln_device_driver *drv = NULL;
  char kinds[128] = "";
  size_t n = 0;
  for (const kiln_device_driver *const *d = kiln_device_drivers; *d; ++d) {
    if (strcmp((*d)->kind, model->device_kind) == 0)
      drv = *d;
    if (n < sizeof(kinds))
      n += (size_t)snprintf(kinds + n, sizeof(kinds) - n, ", %s", (*d)->kind);
  }
  if (!drv)
    return kiln_rtc_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "model compiled for device '%s': this runtime runs cpu%s models",
        model->device_name, kinds);
  /* A model without kernels (only copies) needs no device image. */
  const kiln_model_program *program = &model->program;
  int has_image =
      program->image && program->image_size && *program->image_size > 0;
  if (model->num_kernels > 0 && !has_image)
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "model compiled for %s %s has %llu kernels but no device image "
        "(kiln_model_device_image)",
        model->device_kind, model->chip,
        (unsigned long long)model->num_kernels);
  if (model->num_kernels > 0) {
    const char *image_kind = program->image_kind ? program->image_kind : "";
    if (strcmp(image_kind, drv->kind) != 0)
      return kiln_rtc_make_status(
          KILN_STATUS_INCOMPATIBLE,
          "model compiled for %s %s: its device image is of kind '%s' "
          "(kiln_model_device_image_kind), the %s driver loads '%s' images",
          model->device_kind, model->chip, image_kind, drv->kind, drv->kind);
  }
  kiln_dev_model *dm = (kiln_dev_model *)calloc(1, sizeof(*dm));
  if (!dm)
    return kiln_rtc_oom_status();
  model->dev = dm;
  model->driver = drv;
  dm->driver = drv;
  if (model->num_kernels > 0) {
    dm->image = program->image;
    dm->image_size = *program->image_size;
  }
  kiln_device_open_args args;
  args.chip = model->chip;
  args.library = opts->driver_path;
  args.ordinal = opts->device_ordinal;
  args.ordinal_source = opts->ordinal_source;
  return drv->open(&args, &dm->device);
}

void kiln_dev_model_destroy(kiln_model_impl *model) {
  kiln_dev_model *dm = model->dev;
  if (!dm)
    return;
  dm->driver->close(dm->device);
  free(dm);
  model->dev = NULL;
}

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

static void free_buffer(kiln_dev_instance *di, kiln_dev_buffer *buffer) {
  if (buffer->ptr)
    di->drv->free(di->queue, buffer->ptr);
  buffer->ptr = 0;
  buffer->capacity = 0;
}

void kiln_dev_instance_destroy(kiln_instance_impl *inst) {
  kiln_dev_instance *di = inst->dev;
  if (!di)
    return;
  kiln_model_impl *model = inst->model;
  const kiln_device_driver *drv = di->drv;
  if (di->queue && drv->enter(di->queue) == 0) {
    drv->synchronize(di->queue);
    kiln_dev_drop_graph(di);
    for (size_t i = 0; i < di->num_scratch; ++i)
      drv->free(di->queue, (kiln_device_ptr)(uintptr_t)di->scratch[i].ptr);
    for (uint64_t i = 0;
         di->weights && i < model->num_weights + model->num_ext_weights; ++i)
      free_buffer(di, &di->weights[i]);
    for (size_t i = 0; di->inputs && i < model->num_inputs; ++i)
      free_buffer(di, &di->inputs[i]);
    for (size_t i = 0; di->outputs && i < model->num_outputs; ++i)
      free_buffer(di, &di->outputs[i]);
    if (di->arena)
      drv->free(di->queue, di->arena);
    drv->host_free(di->queue, (void *)di->check_record);
    drv->leave(di->queue);
  }
  if (di->queue)
    drv->queue_destroy(di->queue);
  free(di->weights);
  free(di->inputs);
  free(di->outputs);
  free(di->scratch);
  free(di->input_ptr);
  free(di->output_ptr);
  free(di->output_done);
  free(di->output_direct);
  free(di->output_dims);
  free(di->output_dims_at);
  for (size_t i = 0; i < KILN_GRAPH_CACHE; ++i) {
    free(di->graphs[i].key);
    free(di->graphs[i].pins);
  }
  free(di->graph_key);
  free(di);
  inst->dev = NULL;
}

kiln_status_t *kiln_dev_instance_create(kiln_instance_impl *inst,
                                        const kiln_rt_options *opts) {
  kiln_model_impl *model = inst->model;
  kiln_dev_model *dm = model->dev;
  kiln_dev_instance *di = (kiln_dev_instance *)calloc(1, sizeof(*di));
  if (!di)
    return kiln_rtc_oom_status();
  inst->dev = di;
  di->drv = dm->driver;
  di->device = dm->device;
  di->graphs_enabled = opts->graphs;
  di->dependent_launch = model->dependent_launch && opts->dependent_launch;
  di->profiling = opts->profile_path != NULL;
  size_t weights = (size_t)model->num_weights + model->num_ext_weights + 1;
  size_t ins = model->num_inputs + 1, outs = model->num_outputs + 1;
  size_t total_rank = 1;
  for (size_t i = 0; i < model->num_outputs; ++i)
    total_rank += model->outputs[i].rank;
  di->weights = (kiln_dev_buffer *)calloc(weights, sizeof(kiln_dev_buffer));
  di->inputs = (kiln_dev_buffer *)calloc(ins, sizeof(kiln_dev_buffer));
  di->outputs = (kiln_dev_buffer *)calloc(outs, sizeof(kiln_dev_buffer));
  di->input_ptr = (kiln_device_ptr *)calloc(ins, sizeof(kiln_device_ptr));
  di->output_ptr = (kiln_device_ptr *)calloc(outs, sizeof(kiln_device_ptr));
  di->output_done = (char *)calloc(outs, 1);
  di->output_direct = (char *)calloc(outs, 1);
  di->output_dims = (int64_t *)calloc(total_rank, sizeof(int64_t));
  di->output_dims_at = (size_t *)calloc(outs, sizeof(size_t));
  di->graph_key = (int64_t *)calloc(model->num_symbols + 1, sizeof(int64_t));
  if (!di->weights || !di->inputs || !di->outputs || !di->input_ptr ||
      !di->output_ptr || !di->output_done || !di->output_direct ||
      !di->output_dims || !di->output_dims_at || !di->graph_key)
    return kiln_rtc_oom_status();
  for (size_t i = 0, at = 0; i < model->num_outputs; ++i) {
    di->output_dims_at[i] = at;
    at += model->outputs[i].rank;
  }

  const kiln_device_driver *drv = di->drv;
  kiln_status_t *status =
      drv->queue_create(dm->device, dm->image, dm->image_size,
                        model->num_kernels, opts->profile_path, &di->queue);
  if (status)
    return status;
  kiln_device_result r = drv->enter(di->queue);
  if (r != 0)
    return kiln_dev_status(di, KILN_STATUS_FAILED_PRECONDITION, r,
                           drv->op_names[KILN_DEVICE_OP_ENTER]);
  if (model->arena_size > ((uint64_t)1 << 62)) {
    status = kiln_rtc_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                  "arena of %llu bytes is too large",
                                  (unsigned long long)model->arena_size);
  } else {
    r = drv->alloc(di->queue, kiln_dev_round((size_t)model->arena_size),
                   &di->arena);
    if (r != 0) {
      di->arena = 0;
      char what[128];
      snprintf(what, sizeof(what), "%s of the %llu-byte instance arena",
               drv->op_names[KILN_DEVICE_OP_ALLOC],
               (unsigned long long)model->arena_size);
      status = kiln_dev_status(di, KILN_STATUS_RESOURCE_EXHAUSTED, r, what);
    }
  }
  drv->leave(di->queue);
  return status;
}

kiln_status_t *kiln_dev_set_stream(kiln_instance_impl *inst, void *stream) {
  kiln_dev_instance *di = inst->dev;
  return di->drv->set_stream(di->queue, stream);
}

kiln_status_t *kiln_dev_set_graphs(kiln_instance_impl *inst, int enable) {
  kiln_dev_instance *di = inst->dev;
  /* Off: the graphs go; on after a failure: each shape warms up again. */
  if ((!enable || di->graph_failed) && kiln_dev_has_graph(di, 1)) {
    kiln_device_result r = di->drv->enter(di->queue);
    if (r != 0)
      return kiln_dev_status(di, KILN_STATUS_INTERNAL, r,
                             di->drv->op_names[KILN_DEVICE_OP_ENTER]);
    di->drv->synchronize(di->queue);
    kiln_dev_drop_graph(di);
    di->drv->leave(di->queue);
  }
  di->graphs_enabled = enable != 0;
  di->graph_failed = 0;
  di->graph_moves = 0;
  return NULL;
}
