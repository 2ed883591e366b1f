/*===- ModelRuntime.c - The runtime linked into every model.so ------------===*
 *
 * Owns models (created in Programs.c: the signature, Signature.c; external
 * weights, Weights.c)
 * and instances (static arena, scratch cache), validates inputs, runs
 * kiln_model_main and implements the kiln_rt_* callbacks of
 * kiln/Runtime/ModelABI.h. Device models (a `device` record other than cpu)
 * are handed to DeviceRuntime.c after the signature is parsed and inputs
 * are validated; it reaches the device through a driver table. Exposed to
 * the loader through the exported symbol kiln_model_api_v2 (see
 * kiln/Runtime/ModelAPI.h; kiln_model_api_v1 only answers older loaders);
 * everything else is hidden. Plain C, no global
 * mutable state: instances of one model run concurrently on different
 * threads.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t num_inputs(const kiln_model_impl *model) {
  return model->num_inputs;
}
static size_t num_outputs(const kiln_model_impl *model) {
  return model->num_outputs;
}
static uint64_t arena_size(const kiln_model_impl *model) {
  return model->arena_size;
}
static const char *device_name(const kiln_model_impl *model) {
  return model->device_name;
}
static const char *weights_path(const kiln_model_impl *model) {
  return model->weights_path && model->weights_map ? model->weights_path : "";
}

static void fill_info(const kiln_value_sig *value, kiln_value_info_t *info) {
  info->name = value->name;
  info->dtype = value->dtype;
  info->rank = value->rank;
  info->dims = value->dims;
  info->dim_symbols = value->dim_symbols;
}

static kiln_status_t *input_info(const kiln_model_impl *model, size_t index,
                                 kiln_value_info_t *out_info) {
  if (index >= model->num_inputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "input index %zu out of range (%zu inputs)",
                                index, model->num_inputs);
  fill_info(&model->inputs[index], out_info);
  return NULL;
}

static kiln_status_t *output_info(const kiln_model_impl *model, size_t index,
                                  kiln_value_info_t *out_info) {
  if (index >= model->num_outputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "output index %zu out of range (%zu outputs)",
                                index, model->num_outputs);
  fill_info(&model->outputs[index], out_info);
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * Instances
 *===--------------------------------------------------------------------===*/

static void instance_destroy(kiln_instance_impl *instance) {
  if (!instance)
    return;
  if (instance->dev)
    kiln_dev_instance_destroy(instance);
  kiln_rt_profile_free(instance);
  for (size_t i = 0; i < instance->num_scratch; ++i)
    free(instance->scratch[i].ptr);
  free(instance->scratch);
  free(instance->arena);
  free(instance->bindings);
  free(instance->input_data);
  free(instance->outputs);
  free(instance);
}

static kiln_status_t *instance_create(kiln_model_impl *model,
                                      const kiln_instance_options_t *options,
                                      kiln_instance_impl **out_instance) {
  *out_instance = NULL;
  kiln_status_t *status = kiln_rt_check_options_size(
      "kiln_instance_options", options->struct_size, sizeof(*options));
  if (status)
    return status;
  kiln_rt_options opts;
  status = kiln_rt_options_from_env(
      model->on_device ? model->device_kind : NULL, NULL, options, &opts);
  if (status)
    return status;
  kiln_instance_impl *instance =
      (kiln_instance_impl *)calloc(1, sizeof(*instance));
  if (!instance)
    return kiln_rtc_oom_status();
  instance->model = model;
  if (model->arena_size > ((uint64_t)1 << 62)) {
    instance_destroy(instance);
    return kiln_rtc_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                "arena of %llu bytes is too large",
                                (unsigned long long)model->arena_size);
  }
  /* A device model's arena is device memory (kiln_dev_instance_create). */
  int host_arena = !model->on_device;
  if (host_arena)
    instance->arena = kiln_rtc_aligned_alloc((size_t)model->arena_size);
  instance->bindings =
      (kiln_binding *)calloc(model->num_symbols + 1, sizeof(kiln_binding));
  instance->input_data = (void **)calloc(model->num_inputs + 1, sizeof(void *));
  instance->outputs =
      (kiln_tensor_t **)calloc(model->num_outputs + 1, sizeof(kiln_tensor_t *));
  if ((host_arena && !instance->arena) || !instance->bindings ||
      !instance->input_data || !instance->outputs) {
    int arena_failed = host_arena && !instance->arena;
    instance_destroy(instance);
    if (arena_failed)
      return kiln_rtc_make_status(
          KILN_STATUS_RESOURCE_EXHAUSTED,
          "out of memory allocating the %llu-byte instance arena",
          (unsigned long long)model->arena_size);
    return kiln_rtc_oom_status();
  }
  if (model->on_device) {
    status = kiln_dev_instance_create(instance, &opts);
    if (status) {
      instance_destroy(instance);
      return status;
    }
  }
  *out_instance = instance;
  return NULL;
}

void kiln_rt_fail(kiln_rt_ctx *ctx, kiln_status_code_t code, const char *format,
                  ...) {
  if (ctx->failed)
    return; /* keep the first reason */
  ctx->failed = 1;
  ctx->code = code;
  va_list args;
  va_start(args, format);
  vsnprintf(ctx->reason, sizeof(ctx->reason), format, args);
  va_end(args);
}

void kiln_rt_check_failed(kiln_rt_ctx *ctx, const char *message,
                          int64_t num_values, const int64_t *values) {
  char text[sizeof(ctx->reason)];
  size_t n = 0;
  for (const char *p = message; *p && n + 1 < sizeof(text); ++p) {
    /* {i}: value i, when there is one. */
    if (p[0] == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}' &&
        p[1] - '0' < num_values) {
      int len = snprintf(text + n, sizeof(text) - n, "%lld",
                         (long long)values[p[1] - '0']);
      if (len < 0 || (size_t)len >= sizeof(text) - n)
        break;
      n += (size_t)len;
      p += 2;
      continue;
    }
    text[n++] = *p;
  }
  text[n] = '\0';
  kiln_rt_fail(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s", text);
}

kiln_scratch *kiln_rt_scratch_find(kiln_scratch *entries, size_t count,
                                   size_t bytes) {
  kiln_scratch *best = NULL;
  for (size_t i = 0; i < count; ++i) {
    kiln_scratch *s = &entries[i];
    if (s->in_use || s->size < bytes || s->size > 2 * bytes + 65536)
      continue;
    if (!best || s->size < best->size)
      best = s;
  }
  return best;
}

int kiln_rt_scratch_release(kiln_scratch *entries, size_t count, void *ptr) {
  for (size_t i = 0; i < count; ++i) {
    if (entries[i].ptr == ptr && entries[i].in_use) {
      entries[i].in_use = 0;
      return 1;
    }
  }
  return 0;
}

static void *scratch_alloc(kiln_rt_ctx *ctx, size_t bytes) {
  kiln_instance_impl *instance = ctx->instance;
  kiln_scratch *best =
      kiln_rt_scratch_find(instance->scratch, instance->num_scratch, bytes);
  if (best) {
    best->in_use = best->used = 1;
    return best->ptr;
  }
  if (instance->num_scratch == instance->cap_scratch) {
    size_t cap = instance->cap_scratch ? 2 * instance->cap_scratch : 16;
    kiln_scratch *grown =
        (kiln_scratch *)realloc(instance->scratch, cap * sizeof(kiln_scratch));
    if (!grown)
      return NULL;
    instance->scratch = grown;
    instance->cap_scratch = cap;
  }
  size_t size = (bytes + KILN_ALIGNMENT - 1) & ~(size_t)(KILN_ALIGNMENT - 1);
  void *ptr = kiln_rtc_aligned_alloc(size);
  if (!ptr)
    return NULL;
  kiln_scratch *s = &instance->scratch[instance->num_scratch++];
  s->ptr = ptr;
  s->size = size ? size : KILN_ALIGNMENT;
  s->in_use = s->used = 1;
  s->pins = 0;
  return ptr;
}

/* Ends a run: keeps the buffers this run used for the next one and frees
 * the others, so the cache tracks the latest working set. */
static void scratch_end_run(kiln_instance_impl *instance) {
  size_t kept = 0;
  for (size_t i = 0; i < instance->num_scratch; ++i) {
    kiln_scratch s = instance->scratch[i];
    if (!s.used) {
      free(s.ptr);
      continue;
    }
    s.in_use = s.used = 0;
    instance->scratch[kept++] = s;
  }
  instance->num_scratch = kept;
}

/* INVALID_ARGUMENT "<kind> <index> ('<name>'): <detail>". */
static kiln_status_t *value_error_v(const char *kind, size_t index,
                                    const char *name, const char *format,
                                    va_list args) {
  char detail[384];
  vsnprintf(detail, sizeof(detail), format, args);
  return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s %zu ('%s'): %s",
                              kind, index, name, detail);
}

static kiln_status_t *input_error(kiln_model_impl *model, size_t index,
                                  const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static kiln_status_t *input_error(kiln_model_impl *model, size_t index,
                                  const char *format, ...) {
  va_list args;
  va_start(args, format);
  kiln_status_t *status =
      value_error_v("input", index, model->inputs[index].name, format, args);
  va_end(args);
  return status;
}

static kiln_status_t *validate_inputs(kiln_instance_impl *instance,
                                      const kiln_tensor_view_t *inputs) {
  kiln_model_impl *model = instance->model;
  for (size_t s = 0; s < model->num_symbols; ++s)
    instance->bindings[s].bound = 0;
  for (size_t i = 0; i < model->num_inputs; ++i) {
    const kiln_value_sig *sig = &model->inputs[i];
    const kiln_tensor_view_t *view = &inputs[i];
    if (view->dtype != sig->dtype)
      return input_error(model, i, "dtype is %s, expected %s",
                         kiln_rtc_dtype_name(view->dtype),
                         kiln_rtc_dtype_name(sig->dtype));
    if (view->rank != sig->rank)
      return input_error(model, i, "rank is %zu, expected %zu", view->rank,
                         sig->rank);
    if (view->rank > 0 && !view->dims)
      return input_error(model, i, "dims is NULL");
    for (size_t d = 0; d < sig->rank; ++d) {
      int64_t got = view->dims[d];
      if (got < 0)
        return input_error(model, i,
                           "dimension %zu is %lld, expected a "
                           "non-negative size",
                           d, (long long)got);
      if (sig->dims[d] >= 0 && got != sig->dims[d])
        return input_error(model, i, "dimension %zu is %lld, expected %lld", d,
                           (long long)got, (long long)sig->dims[d]);
      int32_t id = sig->symbol_ids[d];
      if (id < 0)
        continue;
      kiln_binding *b = &instance->bindings[id];
      if (!b->bound) {
        b->bound = 1;
        b->value = got;
        b->input = i;
        b->dim = d;
      } else if (b->value != got) {
        return input_error(
            model, i,
            "dimension %zu is %lld, expected %lld (symbol '%s' is %lld in "
            "input %zu ('%s') dimension %zu)",
            d, (long long)got, (long long)b->value, sig->dim_symbols[d],
            (long long)b->value, b->input, model->inputs[b->input].name,
            b->dim);
      }
    }
    int overflow = 0;
    size_t count = kiln_rtc_num_elements(view->rank, view->dims, &overflow);
    size_t bytes = 0;
    if (overflow ||
        __builtin_mul_overflow(count, kiln_rtc_dtype_size(view->dtype), &bytes))
      return input_error(model, i, "number of elements overflows");
    if (!view->data && count > 0)
      return input_error(model, i, "data is NULL");
  }
  return NULL;
}

/* Points input_data at the caller's buffers, copying those that are not
 * aligned to their element size into scratch buffers. */
static kiln_status_t *prepare_inputs(kiln_rt_ctx *ctx) {
  kiln_instance_impl *instance = ctx->instance;
  for (size_t i = 0; i < instance->model->num_inputs; ++i) {
    const kiln_tensor_view_t *view = &ctx->inputs[i];
    size_t elem = kiln_rtc_dtype_size(view->dtype);
    instance->input_data[i] = (void *)view->data;
    if (!view->data || (uintptr_t)view->data % elem == 0)
      continue;
    int overflow = 0;
    size_t bytes =
        kiln_rtc_num_elements(view->rank, view->dims, &overflow) * elem;
    void *copy = scratch_alloc(ctx, bytes);
    if (!copy)
      return kiln_rtc_make_status(
          KILN_STATUS_RESOURCE_EXHAUSTED,
          "out of memory copying unaligned input %zu ('%s')", i,
          instance->model->inputs[i].name);
    if (bytes)
      memcpy(copy, view->data, bytes);
    instance->input_data[i] = copy;
  }
  return NULL;
}

static void release_outputs(kiln_instance_impl *instance) {
  for (size_t i = 0; i < instance->model->num_outputs; ++i) {
    kiln_rtc_tensor_free(instance->outputs[i]);
    instance->outputs[i] = NULL;
  }
}

/* Checks what every run entry point shares: counts, NULL arrays, and the
 * inputs against the signature. */
static kiln_status_t *check_run(kiln_instance_impl *instance,
                                const kiln_tensor_view_t *inputs,
                                size_t num_inputs, const void *outputs,
                                size_t num_outputs, const char *outputs_name) {
  kiln_model_impl *model = instance->model;
  if (num_inputs != model->num_inputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "expected %zu inputs, got %zu",
                                model->num_inputs, num_inputs);
  if (num_outputs != model->num_outputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "expected %zu outputs, got %zu",
                                model->num_outputs, num_outputs);
  if (num_inputs > 0 && !inputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "inputs is NULL");
  if (num_outputs > 0 && !outputs)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s is NULL",
                                outputs_name);
  return validate_inputs(instance, inputs);
}

int32_t kiln_rt_run_program(kiln_rt_ctx *ctx) {
  kiln_instance_impl *instance = ctx->instance;
  const kiln_model_program *program = &instance->model->program;
  if (program->init && !instance->initialized) {
    int32_t rc = program->init(ctx);
    if (rc != 0 || ctx->failed)
      return rc != 0 ? rc : 1;
    instance->initialized = 1;
  }
  return program->main(ctx);
}

/* One run of a cpu model; inputs validated. */
static kiln_status_t *cpu_run(kiln_instance_impl *instance,
                              const kiln_tensor_view_t *inputs,
                              kiln_tensor_t **out_outputs) {
  kiln_model_impl *model = instance->model;
  kiln_rt_ctx ctx;
  ctx.instance = instance;
  ctx.inputs = inputs;
  ctx.output_views = NULL;
  ctx.failed = 0;
  ctx.code = KILN_STATUS_OK;
  ctx.reason[0] = '\0';
  ctx.site = -1;
  for (size_t i = 0; i < model->num_outputs; ++i)
    instance->outputs[i] = NULL;

  kiln_status_t *status = prepare_inputs(&ctx);
  if (!status) {
    int32_t rc = kiln_rt_run_program(&ctx);
    if (ctx.failed)
      status =
          kiln_rtc_make_status(ctx.code, "model run failed: %s", ctx.reason);
    else if (rc != 0)
      status = kiln_rtc_make_status(
          KILN_STATUS_INTERNAL, "model run failed: kiln_model_main returned %d",
          (int)rc);
  }
  for (size_t i = 0; !status && i < model->num_outputs; ++i)
    if (!instance->outputs[i])
      status = kiln_rtc_make_status(
          KILN_STATUS_INTERNAL, "model run did not produce output %zu ('%s')",
          i, model->outputs[i].name);
  scratch_end_run(instance);
  if (status) {
    release_outputs(instance);
    return status;
  }
  for (size_t i = 0; i < model->num_outputs; ++i) {
    out_outputs[i] = instance->outputs[i];
    instance->outputs[i] = NULL;
  }
  return NULL;
}

static kiln_status_t *instance_run(kiln_instance_impl *instance,
                                   const kiln_tensor_view_t *inputs,
                                   size_t num_inputs,
                                   kiln_tensor_t **out_outputs,
                                   size_t num_outputs) {
  if (out_outputs)
    for (size_t i = 0; i < num_outputs; ++i)
      out_outputs[i] = NULL;
  kiln_rt_profile_begin(instance);
  kiln_status_t *status = check_run(instance, inputs, num_inputs, out_outputs,
                                    num_outputs, "out_outputs");
  if (!status)
    status = instance->model->on_device
                 ? kiln_dev_run(instance, inputs, NULL, out_outputs)
                 : cpu_run(instance, inputs, out_outputs);
  kiln_rt_profile_end(instance, status != NULL);
  return status;
}

static kiln_status_t *output_view_error(kiln_model_impl *model, size_t index,
                                        const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static kiln_status_t *output_view_error(kiln_model_impl *model, size_t index,
                                        const char *format, ...) {
  va_list args;
  va_start(args, format);
  kiln_status_t *status =
      value_error_v("output", index, model->outputs[index].name, format, args);
  va_end(args);
  return status;
}

/* The caller's output buffers against the signature and the symbols the
 * inputs bound (validate_inputs ran). Dims the run computes are checked
 * again when the model allocates the output. */
static kiln_status_t *validate_output_views(kiln_instance_impl *instance,
                                            const kiln_output_view_t *views) {
  kiln_model_impl *model = instance->model;
  for (size_t i = 0; i < model->num_outputs; ++i) {
    const kiln_value_sig *sig = &model->outputs[i];
    const kiln_output_view_t *view = &views[i];
    if (view->dtype != sig->dtype)
      return output_view_error(model, i, "dtype is %s, expected %s",
                               kiln_rtc_dtype_name(view->dtype),
                               kiln_rtc_dtype_name(sig->dtype));
    if (view->rank != sig->rank)
      return output_view_error(model, i, "rank is %zu, expected %zu",
                               view->rank, sig->rank);
    if (view->rank > 0 && !view->dims)
      return output_view_error(model, i, "dims is NULL");
    for (size_t d = 0; d < sig->rank; ++d) {
      int64_t got = view->dims[d];
      int64_t want = sig->dims[d];
      int32_t id = sig->symbol_ids[d];
      if (want < 0 && id >= 0 && instance->bindings[id].bound)
        want = instance->bindings[id].value;
      if (got < 0)
        return output_view_error(model, i,
                                 "dimension %zu is %lld, expected a "
                                 "non-negative size",
                                 d, (long long)got);
      if (want >= 0 && got != want)
        return output_view_error(model, i,
                                 "dimension %zu is %lld, expected %lld", d,
                                 (long long)got, (long long)want);
    }
    int overflow = 0;
    size_t count = kiln_rtc_num_elements(view->rank, view->dims, &overflow);
    size_t bytes = 0;
    if (overflow ||
        __builtin_mul_overflow(count, kiln_rtc_dtype_size(view->dtype), &bytes))
      return output_view_error(model, i, "number of elements overflows");
    if (!view->data && count > 0)
      return output_view_error(model, i, "data is NULL");
  }
  return NULL;
}

static kiln_status_t *instance_run_device(kiln_instance_impl *instance,
                                          const kiln_tensor_view_t *inputs,
                                          size_t num_inputs,
                                          const kiln_output_view_t *outputs,
                                          size_t num_outputs) {
  kiln_model_impl *model = instance->model;
  if (!model->on_device)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "kiln_instance_run_device: the model runs on the %s, not on a device; "
        "use kiln_instance_run",
        model->device_name);
  kiln_rt_profile_begin(instance);
  kiln_status_t *status =
      check_run(instance, inputs, num_inputs, outputs, num_outputs, "outputs");
  if (!status)
    status = validate_output_views(instance, outputs);
  if (!status)
    status = kiln_dev_run(instance, inputs, outputs, NULL);
  kiln_rt_profile_end(instance, status != NULL);
  return status;
}

static kiln_status_t *not_on_device(kiln_instance_impl *instance,
                                    const char *call) {
  return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "%s: the model runs on the %s, not on a device",
                              call, instance->model->device_name);
}

static kiln_status_t *instance_set_stream(kiln_instance_impl *instance,
                                          void *stream) {
  if (!instance->model->on_device)
    return not_on_device(instance, "kiln_instance_set_stream");
  return kiln_dev_set_stream(instance, stream);
}

static kiln_status_t *instance_set_graphs(kiln_instance_impl *instance,
                                          int enable) {
  if (!instance->model->on_device)
    return not_on_device(instance, "kiln_instance_set_graphs");
  return kiln_dev_set_graphs(instance, enable);
}

/*===--------------------------------------------------------------------===*
 * Callbacks of generated code (ModelABI.h)
 *===--------------------------------------------------------------------===*/

void *kiln_rt_input(kiln_rt_ctx *ctx, int64_t index) {
  if (index < 0 || (uint64_t)index >= ctx->instance->model->num_inputs) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "kiln_rt_input: no input %lld",
                 (long long)index);
    return NULL;
  }
  if (ctx->instance->model->on_device)
    return kiln_dev_input(ctx, index);
  return ctx->instance->input_data[index];
}

int64_t kiln_rt_input_dim(kiln_rt_ctx *ctx, int64_t index, int64_t dim) {
  kiln_model_impl *model = ctx->instance->model;
  if (index < 0 || (uint64_t)index >= model->num_inputs || dim < 0 ||
      (uint64_t)dim >= model->inputs[index].rank) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_input_dim: no dimension %lld of input %lld",
                 (long long)dim, (long long)index);
    return 0;
  }
  return ctx->inputs[index].dims[dim];
}

const kiln_value_sig *kiln_rt_check_output(kiln_rt_ctx *ctx, int64_t index,
                                           const int64_t *dims, int allocated) {
  kiln_model_impl *model = ctx->instance->model;
  if (index < 0 || (uint64_t)index >= model->num_outputs) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "kiln_rt_output: no output %lld",
                 (long long)index);
    return NULL;
  }
  const kiln_value_sig *sig = &model->outputs[index];
  if (allocated) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "output %lld ('%s') was allocated twice", (long long)index,
                 sig->name);
    return NULL;
  }
  if (sig->rank > 0 && !dims) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "kiln_rt_output: dims is NULL");
    return NULL;
  }
  for (size_t d = 0; d < sig->rank; ++d) {
    if (dims[d] < 0 || (sig->dims[d] >= 0 && dims[d] != sig->dims[d])) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "output %lld ('%s'): dimension %zu allocated as %lld, "
                   "signature says %lld",
                   (long long)index, sig->name, d, (long long)dims[d],
                   (long long)sig->dims[d]);
      return NULL;
    }
  }
  return sig;
}

kiln_tensor_t *kiln_rt_create_output(kiln_rt_ctx *ctx, int64_t index,
                                     const kiln_value_sig *sig,
                                     const int64_t *dims) {
  kiln_status_t *status = NULL;
  kiln_tensor_t *tensor =
      kiln_rtc_tensor_create(sig->dtype, sig->rank, dims, &status);
  if (!tensor) {
    kiln_rt_fail(ctx, (kiln_status_code_t)status->code,
                 "output %lld ('%s'): %s", (long long)index, sig->name,
                 status->message);
    if (!status->is_static)
      free(status);
    return NULL;
  }
  ctx->instance->outputs[index] = tensor;
  return tensor;
}

void *kiln_rt_output(kiln_rt_ctx *ctx, int64_t index, const int64_t *dims) {
  kiln_instance_impl *instance = ctx->instance;
  if (instance->model->on_device)
    return kiln_dev_output(ctx, index, dims);
  const kiln_value_sig *sig = kiln_rt_check_output(
      ctx, index, dims,
      index >= 0 && (uint64_t)index < instance->model->num_outputs &&
          instance->outputs[index]);
  if (!sig)
    return NULL;
  kiln_tensor_t *tensor = kiln_rt_create_output(ctx, index, sig, dims);
  return tensor ? tensor->data : NULL;
}

void *kiln_rt_arena(kiln_rt_ctx *ctx) {
  if (ctx->instance->model->on_device)
    return kiln_dev_arena(ctx);
  return ctx->instance->arena;
}

void *kiln_rt_alloc(kiln_rt_ctx *ctx, int64_t bytes) {
  if (bytes < 0) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "kiln_rt_alloc: negative size %lld",
                 (long long)bytes);
    return NULL;
  }
  if (ctx->instance->model->on_device)
    return kiln_dev_alloc(ctx, (size_t)bytes);
  void *ptr = (uint64_t)bytes > ((uint64_t)1 << 62)
                  ? NULL
                  : scratch_alloc(ctx, (size_t)bytes);
  if (!ptr)
    kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED,
                 "out of memory allocating a %lld-byte scratch buffer",
                 (long long)bytes);
  return ptr;
}

void kiln_rt_release(kiln_rt_ctx *ctx, void *ptr) {
  if (ctx->instance->model->on_device) {
    kiln_dev_release(ctx, ptr);
    return;
  }
  if (!kiln_rt_scratch_release(ctx->instance->scratch,
                               ctx->instance->num_scratch, ptr))
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_release: %p is not a scratch buffer held by this "
                 "run",
                 ptr);
}

const void *kiln_rt_ext_weight_host(kiln_rt_ctx *ctx, int64_t index) {
  kiln_model_impl *model = ctx->instance->model;
  if (index < 0 || (uint64_t)index >= model->num_ext_weights ||
      !model->weights_map) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_external_weight: no external weight %lld (the "
                 "model has %zu)",
                 (long long)index, model->num_ext_weights);
    return NULL;
  }
  return model->weights_map + model->ext_weights[index].offset;
}

void *kiln_rt_external_weight(kiln_rt_ctx *ctx, int64_t index) {
  if (ctx->instance->model->on_device)
    return kiln_dev_external_weight(ctx, index);
  /* Kernels only read weights; the mapping is read-only. */
  return (void *)kiln_rt_ext_weight_host(ctx, index);
}

void kiln_rt_launch_cpu(kiln_rt_ctx *ctx, void (*kernel)(void **args),
                        void **args) {
  /* After a failure a buffer may be NULL: skip the remaining kernels. */
  if (ctx->failed)
    return;
  if (ctx->instance->profile_kernels)
    kiln_rt_profile_cpu_kernel(ctx, kernel, args);
  else
    kernel(args);
}

/*===--------------------------------------------------------------------===*
 * The exported table
 *===--------------------------------------------------------------------===*/

static const kiln_model_api_v2_table kApiTable = {
    KILN_MODEL_ABI_VERSION,
    sizeof(kiln_model_api_v2_table),
    kiln_rt_model_create,
    kiln_rt_model_destroy,
    num_inputs,
    num_outputs,
    input_info,
    output_info,
    arena_size,
    instance_create,
    instance_destroy,
    instance_run,
    device_name,
    instance_set_stream,
    instance_set_graphs,
    instance_run_device,
    weights_path,
    kiln_rt_set_thread_pool,
    kiln_rt_set_profiling,
    kiln_rt_last_profile,
};

__attribute__((visibility("default"))) const kiln_model_api_v2_table *
kiln_model_api_v2(void) {
  return &kApiTable;
}

/* For loaders built before ABI version 4, which look up kiln_model_api_v1
 * and check its version before anything else: a table of only the common
 * header, so they refuse this model with INCOMPATIBLE naming version 4
 * instead of calling it "not a Kiln model". */
static const kiln_model_api_header kOldLoaderHeader = {
    KILN_MODEL_ABI_VERSION, sizeof(kiln_model_api_header)};

__attribute__((visibility("default"))) const kiln_model_api_header *
kiln_model_api_v1(void) {
  return &kOldLoaderHeader;
}
