/*===- fake_weights_model.c - Stand-in for kilnc --external-weights -------===*
 *
 * A model whose weights live in a separate file, as kilnc
 * --external-weights compiles one:
 *   y[i, j] = 2 * x[i, j] + w[j] + b[j],   total = sum(y)
 * with x: f32 [3, 4] and the external weights w, b: f32 [4] at offsets 64
 * and 128 of `fake_weights.weights` (layout hash below; ExternalWeightsTest
 * writes the files).
 *
 * -DKILN_FAKE_WEIGHTS_CUDA: the same on the cuda target (graph-capturable),
 *   run by test/Runtime/fake_cuda_driver.c's host kernels `scale` and
 *   `add_weight_sum`.
 * -DKILN_FAKE_WEIGHTS_BAD_RECORD: a `weight` record whose size disagrees
 *   with its dims.
 *===----------------------------------------------------------------------===*/
#include "kiln/Runtime/ModelABI.h"

#include <stddef.h>

#ifdef KILN_FAKE_WEIGHTS_BAD_RECORD
#define KILN_FAKE_B_BYTES "15"
#else
#define KILN_FAKE_B_BYTES "16"
#endif

#ifdef KILN_FAKE_WEIGHTS_CUDA
#define KILN_FAKE_DEVICE                                                       \
  "device cuda sm_90\nkernels 2\nweights 0\n"                                  \
  "graph-capturable\n"
#else
#define KILN_FAKE_DEVICE ""
#endif

const char kiln_model_signature[] =
    "kiln-signature 1\n"
    "arena 64\n"
    "input x f32 2 3 4\n"
    "output y f32 2 3 4\n"
    "output total f32 0\n"
    "weights-file fake_weights.weights 00c0ffee12345678 144\n"
    "weight w f32 1 4 64 16\n"
    "weight b%20bias f32 1 4 128 " KILN_FAKE_B_BYTES "\n" KILN_FAKE_DEVICE;

#ifdef KILN_FAKE_WEIGHTS_CUDA
const unsigned char kiln_model_device_image[] =
    "KILNFAKEIMAGE scale add_weight_sum";
const int64_t kiln_model_device_image_size = sizeof(kiln_model_device_image);
const char kiln_model_device_image_kind[] = "cuda";
#endif

typedef struct {
  void *allocated, *aligned;
  int64_t offset, shape[4]; /* sizes then strides */
} memref_t;

static memref_t memref(void *ptr, int64_t rank, const int64_t *sizes) {
  memref_t m = {ptr, ptr, 0, {0, 0, 0, 0}};
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    m.shape[d] = sizes[d];
    m.shape[rank + d] = stride;
    stride *= sizes[d];
  }
  return m;
}

#ifdef KILN_FAKE_WEIGHTS_CUDA
static int expand(void **params, int at, memref_t *m, int64_t rank) {
  params[at++] = &m->allocated;
  params[at++] = &m->aligned;
  params[at++] = &m->offset;
  for (int64_t i = 0; i < 2 * rank; ++i)
    params[at++] = &m->shape[i];
  return at;
}

int32_t kiln_model_main(kiln_rt_ctx *ctx) {
  int64_t xdims[2] = {3, 4}, wdims[1] = {4};
  float *x = (float *)kiln_rt_input(ctx, 0);
  float *w = (float *)kiln_rt_external_weight(ctx, 0);
  float *b = (float *)kiln_rt_external_weight(ctx, 1);
  float *tmp = (float *)kiln_rt_alloc(ctx, 12 * (int64_t)sizeof(float));
  float *tmp2 = (float *)kiln_rt_alloc(ctx, 12 * (int64_t)sizeof(float));
  float *y = (float *)kiln_rt_output(ctx, 0, xdims);
  float *total = (float *)kiln_rt_output(ctx, 1, NULL);
  float *arena = (float *)kiln_rt_arena(ctx);
  if (!w || !b || !tmp || !tmp2 || !y || !total)
    return 1;
  memref_t xm = memref(x, 2, xdims), tm = memref(tmp, 2, xdims);
  memref_t t2m = memref(tmp2, 2, xdims), ym = memref(y, 2, xdims);
  memref_t wm = memref(w, 1, wdims), bm = memref(b, 1, wdims);
  memref_t am = memref(arena, 0, NULL);
  void *params[32];
  int count = expand(params, 0, &xm, 2);
  count = expand(params, count, &tm, 2);
  kiln_rt_launch_device(ctx, 0, "scale", 1, 1, 1, 64, 1, 1, 0, params);
  count = expand(params, 0, &tm, 2);
  count = expand(params, count, &wm, 1);
  count = expand(params, count, &t2m, 2);
  count = expand(params, count, &am, 0);
  kiln_rt_launch_device(ctx, 1, "add_weight_sum", 1, 1, 1, 64, 1, 1, 0, params);
  count = expand(params, 0, &t2m, 2);
  count = expand(params, count, &bm, 1);
  count = expand(params, count, &ym, 2);
  count = expand(params, count, &am, 0);
  kiln_rt_launch_device(ctx, 1, "add_weight_sum", 1, 1, 1, 64, 1, 1, 0, params);
  kiln_rt_copy_device(ctx, total, arena, sizeof(float));
  (void)count;
  return 0;
}
#else
typedef void (*kernel_fn)(void **args);

/* args: x, w, b (in), y, total (out) */
static void affine_kernel(void **args) {
  memref_t *x = (memref_t *)args[0], *w = (memref_t *)args[1],
           *b = (memref_t *)args[2], *y = (memref_t *)args[3],
           *total = (memref_t *)args[4];
  const float *xv = (const float *)x->aligned, *wv = (const float *)w->aligned,
              *bv = (const float *)b->aligned;
  float *yv = (float *)y->aligned, sum = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      float v = 2.0f * xv[i * 4 + j] + wv[j] + bv[j];
      yv[i * 4 + j] = v;
      sum += v;
    }
  *(float *)total->aligned = sum;
}

int32_t kiln_model_main(kiln_rt_ctx *ctx) {
  int64_t xdims[2] = {3, 4}, wdims[1] = {4};
  void *w = kiln_rt_external_weight(ctx, 0);
  void *b = kiln_rt_external_weight(ctx, 1);
  void *y = kiln_rt_output(ctx, 0, xdims);
  void *total = kiln_rt_output(ctx, 1, NULL);
  if (!w || !b || !y || !total)
    return 1;
  memref_t xm = memref(kiln_rt_input(ctx, 0), 2, xdims);
  memref_t wm = memref(w, 1, wdims), bm = memref(b, 1, wdims);
  memref_t ym = memref(y, 2, xdims), tm = memref(total, 0, NULL);
  void *args[5] = {&xm, &wm, &bm, &ym, &tm};
  kiln_rt_launch_cpu(ctx, affine_kernel, args);
  return 0;
}
#endif
