/*===- DeviceCalls.c - Device memory and the device calls of a run -------===*
 *
 * What kiln_rt_input / kiln_rt_output / kiln_rt_arena / kiln_rt_alloc /
 * kiln_rt_external_weight return for a device model, and the device-only
 * calls of generated code (kiln_rt_launch_device, kiln_rt_weight,
 * kiln_rt_read_device, kiln_rt_copy_device): staging buffers, output
 * buffers, the weight cache and the scratch cache of an instance, all
 * through the driver table. See DeviceRuntime.h.
 *===----------------------------------------------------------------------===*/
#include "DeviceRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===--------------------------------------------------------------------===*
 * Device memory of a run
 *===--------------------------------------------------------------------===*/

int kiln_dev_abort_capture(kiln_rt_ctx *ctx, const char *what, int retry) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (!di->capturing)
    return 0;
  di->capture_aborted = 1;
  di->capture_retry |= retry;
  kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "%s during %s capture", what,
               di->drv->graph_name);
  return 1;
}

/* Makes `buffer` hold at least `bytes`; waits for the stream before freeing
 * a smaller one. Returns 0 on failure (recorded in ctx). */
static int reserve(kiln_rt_ctx *ctx, kiln_dev_buffer *buffer, size_t bytes,
                   const char *what) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (buffer->ptr && buffer->capacity >= bytes)
    return 1;
  if (kiln_dev_abort_capture(ctx, "a device allocation", 1))
    return 0;
  if (buffer->ptr) {
    kiln_device_result r = di->drv->synchronize(di->queue);
    if (r != 0) {
      kiln_dev_fail(ctx, r, di->drv->op_names[KILN_DEVICE_OP_SYNCHRONIZE]);
      return 0;
    }
    di->drv->free(di->queue, buffer->ptr);
    buffer->ptr = 0;
    buffer->capacity = 0;
  }
  size_t size = kiln_dev_round(bytes);
  kiln_device_result r = di->drv->alloc(di->queue, size, &buffer->ptr);
  if (r != 0) {
    buffer->ptr = 0;
    char call[192];
    snprintf(call, sizeof(call), "%s of %zu bytes for %s",
             di->drv->op_names[KILN_DEVICE_OP_ALLOC], size, what);
    kiln_dev_fail(ctx, r, call);
    return 0;
  }
  buffer->capacity = size;
  return 1;
}

size_t kiln_dev_view_bytes(kiln_dtype_t dtype, size_t rank,
                           const int64_t *dims) {
  int overflow = 0;
  return kiln_rtc_num_elements(rank, dims, &overflow) *
         kiln_rtc_dtype_size(dtype);
}

/* Sets input_ptr: host inputs are copied into the staging buffers; device
 * inputs are used in place unless the run is staged (graphs) or they are
 * not aligned to KILN_ALIGNMENT bytes, as the model's own buffers are (the
 * kernels read inputs with 16-byte vector loads and bulk tensor copies,
 * which need that much; an element-aligned view of a caller's tensor is
 * copied first). */
void kiln_dev_stage_inputs(kiln_rt_ctx *ctx, int device_inputs) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_dev_instance *di = inst->dev;
  const kiln_device_driver *drv = di->drv;
  for (size_t i = 0; i < inst->model->num_inputs && !ctx->failed; ++i) {
    const kiln_tensor_view_t *view = &ctx->inputs[i];
    size_t bytes = kiln_dev_view_bytes(view->dtype, view->rank, view->dims);
    kiln_device_ptr src = (kiln_device_ptr)(uintptr_t)view->data;
    if (device_inputs && !di->staged && src != 0 && src % KILN_ALIGNMENT == 0) {
      di->input_ptr[i] = src;
      continue;
    }
    char what[160];
    snprintf(what, sizeof(what), "input %zu ('%s')", i,
             inst->model->inputs[i].name);
    if (!reserve(ctx, &di->inputs[i], bytes, what))
      return;
    di->input_ptr[i] = di->inputs[i].ptr;
    if (bytes == 0)
      continue;
    kiln_device_result r =
        device_inputs
            ? drv->copy_device(di->queue, di->inputs[i].ptr, src, bytes)
            : drv->copy_to_device(di->queue, di->inputs[i].ptr, view->data,
                                  bytes);
    if (r != 0) {
      char call[224];
      snprintf(call, sizeof(call), "%s of %s",
               drv->op_names[device_inputs ? KILN_DEVICE_OP_COPY_DEVICE
                                           : KILN_DEVICE_OP_COPY_TO_DEVICE],
               what);
      kiln_dev_fail(ctx, r, call);
    }
  }
}

void *kiln_dev_input(kiln_rt_ctx *ctx, int64_t index) {
  return (void *)(uintptr_t)ctx->instance->dev->input_ptr[index];
}

static void format_dims(char *out, size_t size, size_t rank,
                        const int64_t *dims) {
  size_t n = 0;
  n += (size_t)snprintf(out + n, size - n, "[");
  for (size_t d = 0; d < rank && n < size; ++d)
    n += (size_t)snprintf(out + n, size - n, "%s%lld", d ? ", " : "",
                          (long long)dims[d]);
  if (n < size)
    snprintf(out + n, size - n, "]");
}

kiln_device_ptr kiln_dev_output_in_place(const kiln_rt_ctx *ctx, size_t index) {
  if (!ctx->output_views || ctx->instance->dev->staged)
    return 0;
  kiln_device_ptr dst =
      (kiln_device_ptr)(uintptr_t)ctx->output_views[index].data;
  return dst % KILN_ALIGNMENT == 0 ? dst : 0;
}

void *kiln_dev_output(kiln_rt_ctx *ctx, int64_t index, const int64_t *dims) {
  kiln_instance_impl *inst = ctx->instance;
  kiln_dev_instance *di = inst->dev;
  kiln_model_impl *model = inst->model;
  const kiln_value_sig *sig =
      kiln_rt_check_output(ctx, index, dims,
                           index >= 0 && (uint64_t)index < model->num_outputs &&
                               di->output_done[index]);
  if (!sig)
    return NULL;
  int overflow = 0;
  size_t count = kiln_rtc_num_elements(sig->rank, dims, &overflow);
  size_t bytes = 0;
  if (overflow ||
      __builtin_mul_overflow(count, kiln_rtc_dtype_size(sig->dtype), &bytes)) {
    kiln_rt_fail(ctx, KILN_STATUS_INVALID_ARGUMENT,
                 "output %lld ('%s'): number of elements overflows",
                 (long long)index, sig->name);
    return NULL;
  }
  if (ctx->output_views) {
    const kiln_output_view_t *view = &ctx->output_views[index];
    if (sig->rank > 0 &&
        memcmp(view->dims, dims, sig->rank * sizeof(int64_t)) != 0) {
      char got[256], want[256];
      format_dims(got, sizeof(got), sig->rank, dims);
      format_dims(want, sizeof(want), sig->rank, view->dims);
      kiln_rt_fail(ctx, KILN_STATUS_INVALID_ARGUMENT,
                   "output %lld ('%s'): the model produced dimensions %s, the "
                   "output buffer has %s",
                   (long long)index, sig->name, got, want);
      return NULL;
    }
    kiln_device_ptr dst = kiln_dev_output_in_place(ctx, (size_t)index);
    if (dst) {
      di->output_done[index] = 1;
      di->output_direct[index] = 1;
      di->output_ptr[index] = dst;
      if (sig->rank)
        memcpy(di->output_dims + di->output_dims_at[index], dims,
               sig->rank * sizeof(int64_t));
      return (void *)(uintptr_t)dst;
    }
  } else {
    if (!kiln_rt_create_output(ctx, index, sig, dims))
      return NULL;
  }
  char what[160];
  snprintf(what, sizeof(what), "output %lld ('%s')", (long long)index,
           sig->name);
  if (!reserve(ctx, &di->outputs[index], bytes, what))
    return NULL;
  di->output_done[index] = 1;
  di->output_direct[index] = 0;
  di->output_ptr[index] = di->outputs[index].ptr;
  if (sig->rank) /* a 0-d output may come with no dims array */
    memcpy(di->output_dims + di->output_dims_at[index], dims,
           sig->rank * sizeof(int64_t));
  return (void *)(uintptr_t)di->output_ptr[index];
}

void *kiln_dev_arena(kiln_rt_ctx *ctx) {
  return (void *)(uintptr_t)ctx->instance->dev->arena;
}

void *kiln_dev_alloc(kiln_rt_ctx *ctx, size_t bytes) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (bytes > ((size_t)1 << 62)) {
    kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED,
                 "out of memory allocating a %zu-byte scratch buffer", bytes);
    return NULL;
  }
  kiln_scratch *best =
      kiln_rt_scratch_find(di->scratch, di->num_scratch, bytes);
  if (best) {
    best->in_use = best->used = 1;
    return best->ptr;
  }
  if (kiln_dev_abort_capture(ctx, "a device allocation", 1))
    return NULL;
  if (di->num_scratch == di->cap_scratch) {
    size_t cap = di->cap_scratch ? 2 * di->cap_scratch : 16;
    kiln_scratch *grown =
        (kiln_scratch *)realloc(di->scratch, cap * sizeof(kiln_scratch));
    if (!grown) {
      kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    di->scratch = grown;
    di->cap_scratch = cap;
  }
  size_t size = kiln_dev_round(bytes);
  kiln_device_ptr ptr = 0;
  kiln_device_result r = di->drv->alloc(di->queue, size, &ptr);
  if (r != 0) {
    char call[128];
    snprintf(call, sizeof(call), "%s of a %zu-byte scratch buffer",
             di->drv->op_names[KILN_DEVICE_OP_ALLOC], bytes);
    kiln_dev_fail(ctx, r, call);
    return NULL;
  }
  kiln_scratch *s = &di->scratch[di->num_scratch++];
  s->ptr = (void *)(uintptr_t)ptr;
  s->size = size;
  s->in_use = s->used = 1;
  s->pins = 0;
  return s->ptr;
}

/* Later allocations of the run may reuse it: the launches that used it are
 * queued before theirs on the instance's stream. */
void kiln_dev_release(kiln_rt_ctx *ctx, void *ptr) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (!kiln_rt_scratch_release(di->scratch, di->num_scratch, ptr))
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_release: %p is not a device scratch buffer held by "
                 "this run",
                 ptr);
}

/* Ends a run: keeps the scratch buffers it used (held at some point, released
 * or not), frees the others (after
 * the stream is done with them). */
void kiln_dev_scratch_end_run(kiln_dev_instance *di) {
  int any_free = 0;
  for (size_t i = 0; i < di->num_scratch; ++i)
    any_free |= !di->scratch[i].used && di->scratch[i].pins == 0;
  if (any_free)
    di->drv->synchronize(di->queue);
  size_t kept = 0;
  for (size_t i = 0; i < di->num_scratch; ++i) {
    kiln_scratch s = di->scratch[i];
    if (!s.used && s.pins == 0) {
      di->drv->free(di->queue, (kiln_device_ptr)(uintptr_t)s.ptr);
      continue;
    }
    s.in_use = s.used = 0;
    di->scratch[kept++] = s;
  }
  di->num_scratch = kept;
}

/*===--------------------------------------------------------------------===*
 * Calls of generated code (ModelABI.h, device targets)
 *===--------------------------------------------------------------------===*/

static int on_device(kiln_rt_ctx *ctx, const char *call) {
  if (ctx->instance->model->on_device)
    return 1;
  kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "%s called by a %s model", call,
               ctx->instance->model->device_name);
  return 0;
}

void kiln_rt_launch_device(kiln_rt_ctx *ctx, int64_t kernel, const char *name,
                           int64_t grid_x, int64_t grid_y, int64_t grid_z,
                           int64_t block_x, int64_t block_y, int64_t block_z,
                           int64_t shared_bytes, void **params) {
  if (ctx->failed || !on_device(ctx, "kiln_rt_launch_device"))
    return;
  kiln_model_impl *model = ctx->instance->model;
  kiln_dev_instance *di = ctx->instance->dev;
  if (kernel < 0 || (uint64_t)kernel >= model->num_kernels || !name) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_launch_device: no kernel %lld ('%s'; the model has "
                 "%llu)",
                 (long long)kernel, name ? name : "(null)",
                 (unsigned long long)model->num_kernels);
    return;
  }
  const int64_t dims[6] = {grid_x, grid_y, grid_z, block_x, block_y, block_z};
  for (int d = 0; d < 6; ++d) {
    if (dims[d] < (d < 3 ? 0 : 1) || dims[d] > (int64_t)UINT32_MAX ||
        shared_bytes < 0 || shared_bytes > (int64_t)INT32_MAX) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "kiln_rt_launch_device: kernel %lld ('%s') launched with "
                   "grid %lldx%lldx%lld, block %lldx%lldx%lld, %lld shared "
                   "bytes",
                   (long long)kernel, name, (long long)grid_x,
                   (long long)grid_y, (long long)grid_z, (long long)block_x,
                   (long long)block_y, (long long)block_z,
                   (long long)shared_bytes);
      return;
    }
  }
  /* An empty grid (a zero-sized tensor) has nothing to do. */
  if (grid_x == 0 || grid_y == 0 || grid_z == 0)
    return;
  kiln_device_launch launch;
  launch.kernel = kernel;
  launch.name = name;
  launch.grid[0] = (uint32_t)grid_x;
  launch.grid[1] = (uint32_t)grid_y;
  launch.grid[2] = (uint32_t)grid_z;
  launch.block[0] = (uint32_t)block_x;
  launch.block[1] = (uint32_t)block_y;
  launch.block[2] = (uint32_t)block_z;
  launch.shared_bytes = (uint32_t)shared_bytes;
  launch.flags = di->dependent_launch ? KILN_DEVICE_LAUNCH_DEPENDENT : 0;
  launch.params = params;
  char call[224] = "";
  kiln_device_result r =
      di->drv->launch(di->queue, &launch, call, sizeof(call));
  if (r != 0)
    kiln_dev_fail(ctx, r, call);
  else if (ctx->instance->profile_kernels)
    kiln_rt_profile_device_launch(ctx);
}

/* Checks the dims and strides of a tile or im2col map (`fn` names it in
 * failures) and fills `map`'s common fields; 0 on failure (ctx failed). */
static int map_view(kiln_rt_ctx *ctx, const char *fn, kiln_device_tile_map *map,
                    void *out, int64_t dtype, int64_t rank, void *base,
                    const int64_t *dims, const int64_t *strides,
                    int64_t swizzle, int64_t min_rank) {
  if (out)
    memset(out, 0, KILN_DEVICE_TILE_MAP_BYTES);
  if (ctx->failed || !on_device(ctx, fn))
    return 0;
  if (!out || ((uintptr_t)out % 64) != 0 || rank < min_rank || rank > 5 ||
      !dims || !strides ||
      !(swizzle == 0 || swizzle == 32 || swizzle == 64 || swizzle == 128)) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "%s: bad arguments (rank %lld, swizzle %lld)", fn,
                 (long long)rank, (long long)swizzle);
    return 0;
  }
  memset(map, 0, sizeof(*map));
  map->dtype = (int32_t)dtype;
  map->rank = (int32_t)rank;
  map->base = (kiln_device_ptr)(uintptr_t)base;
  map->swizzle = (int32_t)swizzle;
  for (int64_t d = 0; d < rank; ++d) {
    if (dims[d] < 1 || (d > 0 && (strides[d] < 16 || strides[d] % 16 != 0))) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "%s: dim %lld has %lld elements and a stride of %lld bytes",
                   fn, (long long)d, (long long)dims[d], (long long)strides[d]);
      return 0;
    }
    map->dims[d] = (uint64_t)dims[d];
    map->strides[d] = (uint64_t)strides[d];
  }
  return 1;
}

/* Encodes `map` through the driver; `call` describes it in failures. */
static void encode_map(kiln_rt_ctx *ctx, const char *fn,
                       const kiln_device_tile_map *map, void *out,
                       kiln_device_op op, const char *call) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (!di->drv->encode_tile_map) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "%s: the %s driver has no tile maps", fn, di->drv->kind);
    return;
  }
  kiln_device_result r = di->drv->encode_tile_map(di->queue, map, out);
  if (r != 0) {
    memset(out, 0, KILN_DEVICE_TILE_MAP_BYTES);
    char what[192];
    snprintf(what, sizeof(what), "%s(%s)", di->drv->op_names[op], call);
    kiln_dev_fail(ctx, r, what);
  }
}

void kiln_rt_tile_map(kiln_rt_ctx *ctx, void *out, int64_t dtype, int64_t rank,
                      void *base, const int64_t *dims, const int64_t *strides,
                      const int64_t *box, int64_t swizzle) {
  kiln_device_tile_map map;
  if (!map_view(ctx, "kiln_rt_tile_map", &map, out, dtype, rank, base, dims,
                strides, swizzle, 1))
    return;
  for (int64_t d = 0; d < rank; ++d) {
    if (!box || box[d] < 1 || box[d] > 256) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "kiln_rt_tile_map: dim %lld has %lld elements, a box of "
                   "%lld and a stride of %lld bytes",
                   (long long)d, (long long)dims[d],
                   (long long)(box ? box[d] : 0), (long long)strides[d]);
      return;
    }
    map.box[d] = (uint32_t)box[d];
    map.element_strides[d] = 1;
  }
  char call[96];
  snprintf(call, sizeof(call), "rank %lld, dtype %lld, %lldx%lld box",
           (long long)rank, (long long)dtype, (long long)box[0],
           (long long)(rank > 1 ? box[1] : 1));
  encode_map(ctx, "kiln_rt_tile_map", &map, out, KILN_DEVICE_OP_TILE_MAP, call);
}

void kiln_rt_im2col_map(kiln_rt_ctx *ctx, void *out, int64_t dtype,
                        int64_t rank, void *base, const int64_t *dims,
                        const int64_t *strides, const int64_t *lower,
                        const int64_t *upper, const int64_t *element_strides,
                        int64_t channels, int64_t pixels, int64_t swizzle) {
  const char *fn = "kiln_rt_im2col_map";
  kiln_device_tile_map map;
  if (!map_view(ctx, fn, &map, out, dtype, rank, base, dims, strides, swizzle,
                3))
    return;
  if (!lower || !upper || !element_strides || channels < 1 || channels > 256 ||
      pixels < 1 || pixels > 1024) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "%s: bad arguments (%lld channels, %lld pixels)", fn,
                 (long long)channels, (long long)pixels);
    return;
  }
  map.im2col = 1;
  map.channels = (uint32_t)channels;
  map.pixels = (uint32_t)pixels;
  for (int64_t d = 0; d < rank; ++d) {
    if (element_strides[d] < 1 || element_strides[d] > 8) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "%s: dim %lld has an element stride of %lld", fn,
                   (long long)d, (long long)element_strides[d]);
      return;
    }
    map.element_strides[d] = (uint32_t)element_strides[d];
  }
  for (int64_t i = 0; i < rank - 2; ++i) {
    if (lower[i] < -32768 || lower[i] > 32767 || upper[i] < -32768 ||
        upper[i] > 32767) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "%s: spatial dim %lld has a window of [%lld, %lld]", fn,
                   (long long)i, (long long)lower[i], (long long)upper[i]);
      return;
    }
    map.lower[i] = (int32_t)lower[i];
    map.upper[i] = (int32_t)upper[i];
  }
  char call[96];
  snprintf(call, sizeof(call), "rank %lld, dtype %lld, %lld pixels x %lld",
           (long long)rank, (long long)dtype, (long long)pixels,
           (long long)channels);
  encode_map(ctx, fn, &map, out, KILN_DEVICE_OP_IM2COL_MAP, call);
}

/* The device copy in weight cache slot `slot` of `bytes` bytes from `host`:
 * uploaded on first use, then reused for the instance's lifetime. `what`
 * names the weight in failures. */
static void *cached_weight(kiln_rt_ctx *ctx, size_t slot, const void *host,
                           int64_t bytes, const char *what) {
  kiln_dev_instance *di = ctx->instance->dev;
  kiln_dev_buffer *w = &di->weights[slot];
  if (w->ptr) {
    if (w->capacity != (size_t)bytes) {
      kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                   "kiln_rt_weight: %s is %lld bytes, it was %zu", what,
                   (long long)bytes, w->capacity);
      return NULL;
    }
    return (void *)(uintptr_t)w->ptr;
  }
  if (kiln_dev_abort_capture(ctx, "a weight upload", 1))
    return NULL;
  const kiln_device_driver *drv = di->drv;
  char call[384];
  kiln_device_ptr ptr = 0;
  kiln_device_result r =
      drv->alloc(di->queue, kiln_dev_round((size_t)bytes), &ptr);
  if (r != 0) {
    snprintf(call, sizeof(call), "%s of %s (%lld bytes)",
             drv->op_names[KILN_DEVICE_OP_ALLOC], what, (long long)bytes);
    kiln_dev_fail(ctx, r, call);
    return NULL;
  }
  if (bytes > 0) {
    r = drv->upload(di->queue, ptr, host, (size_t)bytes);
    if (r != 0) {
      drv->free(di->queue, ptr);
      snprintf(call, sizeof(call), "%s of %s (%lld bytes)",
               drv->op_names[KILN_DEVICE_OP_UPLOAD], what, (long long)bytes);
      kiln_dev_fail(ctx, r, call);
      return NULL;
    }
  }
  w->ptr = ptr;
  w->capacity = (size_t)bytes;
  return (void *)(uintptr_t)ptr;
}

void *kiln_rt_weight(kiln_rt_ctx *ctx, int64_t index, const void *host,
                     int64_t bytes) {
  if (ctx->failed || !on_device(ctx, "kiln_rt_weight"))
    return NULL;
  kiln_model_impl *model = ctx->instance->model;
  if (index < 0 || (uint64_t)index >= model->num_weights || bytes < 0 ||
      (bytes > 0 && !host)) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "kiln_rt_weight: bad weight %lld (%lld bytes; the model has "
                 "%llu weights)",
                 (long long)index, (long long)bytes,
                 (unsigned long long)model->num_weights);
    return NULL;
  }
  char what[64];
  snprintf(what, sizeof(what), "weight %lld", (long long)index);
  return cached_weight(ctx, (size_t)index, host, bytes, what);
}

void *kiln_dev_external_weight(kiln_rt_ctx *ctx, int64_t index) {
  if (ctx->failed)
    return NULL;
  const void *host = kiln_rt_ext_weight_host(ctx, index);
  if (!host)
    return NULL;
  kiln_model_impl *model = ctx->instance->model;
  const kiln_ext_weight *w = &model->ext_weights[index];
  char what[320];
  snprintf(what, sizeof(what), "external weight %lld ('%s')", (long long)index,
           w->sig.name);
  return cached_weight(ctx, (size_t)model->num_weights + (size_t)index, host,
                       (int64_t)w->bytes, what);
}

void kiln_rt_read_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes) {
  if (bytes <= 0)
    return;
  if (!ctx->failed && on_device(ctx, "kiln_rt_read_device") &&
      !kiln_dev_abort_capture(ctx, "a read of device memory", 0)) {
    kiln_dev_instance *di = ctx->instance->dev;
    kiln_device_result r = di->drv->copy_to_host(
        di->queue, dst, (kiln_device_ptr)(uintptr_t)src, (size_t)bytes);
    if (r == 0)
      r = di->drv->synchronize(di->queue);
    if (r == 0)
      return;
    char call[96];
    snprintf(call, sizeof(call), "kiln_rt_read_device of %lld bytes",
             (long long)bytes);
    kiln_dev_fail(ctx, r, call);
  }
  memset(dst, 0, (size_t)bytes);
}

void kiln_rt_copy_device(kiln_rt_ctx *ctx, void *dst, const void *src,
                         int64_t bytes) {
  if (bytes <= 0 || ctx->failed || !on_device(ctx, "kiln_rt_copy_device"))
    return;
  kiln_dev_instance *di = ctx->instance->dev;
  kiln_device_result r =
      di->drv->copy_device(di->queue, (kiln_device_ptr)(uintptr_t)dst,
                           (kiln_device_ptr)(uintptr_t)src, (size_t)bytes);
  if (r != 0) {
    char call[128];
    snprintf(call, sizeof(call), "%s of %lld bytes",
             di->drv->op_names[KILN_DEVICE_OP_COPY_DEVICE], (long long)bytes);
    kiln_dev_fail(ctx, r, call);
  }
}

/*===--------------------------------------------------------------------===*
 * Checks of device data
 *===--------------------------------------------------------------------===*/

void *kiln_rt_check_record(kiln_rt_ctx *ctx, const char *messages,
                           int64_t count) {
  if (ctx->failed || !on_device(ctx, "kiln_rt_check_record"))
    return NULL;
  kiln_dev_instance *di = ctx->instance->dev;
  if (!di->check_record) {
    /* The first run allocates it; a capture (a later run) never does. */
    if (kiln_dev_abort_capture(ctx, "the allocation of the check record", 1))
      return NULL;
    void *host = NULL;
    kiln_device_ptr ptr = 0;
    kiln_device_result r = di->drv->host_alloc_mapped(
        di->queue, KILN_CHECK_RECORD_SIZE * sizeof(int64_t), &host, &ptr);
    if (r != 0) {
      char call[128];
      snprintf(call, sizeof(call), "%s of the %zu-byte check record",
               di->drv->op_names[KILN_DEVICE_OP_HOST_ALLOC],
               (size_t)(KILN_CHECK_RECORD_SIZE * sizeof(int64_t)));
      kiln_dev_fail(ctx, r, call);
      return NULL;
    }
    di->check_record = (volatile int64_t *)host;
    di->check_record_ptr = ptr;
  }
  di->check_messages = messages;
  di->num_checks = count;
  return (void *)(uintptr_t)di->check_record_ptr;
}

void kiln_dev_report_checks(kiln_rt_ctx *ctx, const char *what) {
  kiln_dev_instance *di = ctx->instance->dev;
  if (!di->check_record || di->check_record[0] == 0)
    return;
  int64_t record[KILN_CHECK_RECORD_SIZE];
  for (int i = 0; i < KILN_CHECK_RECORD_SIZE; ++i) {
    record[i] = di->check_record[i];
    di->check_record[i] = 0;
  }
  int64_t index = record[0] - 1, count = record[1];
  if (index < 0 || index >= di->num_checks || count < 0 ||
      count > KILN_CHECK_RECORD_SIZE - 2 || !di->check_messages) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL,
                 "%sa device check wrote a damaged record (check %lld of "
                 "%lld, %lld values)",
                 what, (long long)record[0], (long long)di->num_checks,
                 (long long)count);
    return;
  }
  const char *message = di->check_messages;
  for (int64_t i = 0; i < index; ++i)
    message += strlen(message) + 1;
  kiln_rt_ctx formatted;
  memset(&formatted, 0, sizeof(formatted));
  formatted.instance = ctx->instance;
  kiln_rt_check_failed(&formatted, message, count, record + 2);
  kiln_rt_fail(ctx, formatted.code, "%s%s", what, formatted.reason);
}
