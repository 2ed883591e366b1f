/*===- fake_cuda_model.c - Stand-in for kilnc --target=cuda output --------===*
 *
 * Defines what generated code for a device target defines (ModelABI.h,
 * device section) for
 *   y[n, j] = 2 * x[n, j] + w[j]      (w: a 4-float weight)
 *   total   = sum of y                (reduced into the arena, copied out)
 * with x: f32 [3, 4] (static, graph-capturable). The device image is not a
 * real fatbin: test/Runtime/fake_cuda_driver.c accepts it and runs the
 * kernels named here (scale, add_weight_sum, count_positive,
 * gather_positive) on the host.
 *
 * -DKILN_FAKE_CUDA_TILE_MAP=<rank>: kiln_model_main first asks for the
 *   tile map of x (f32 [3, 4] seen as `rank` dims: 2 is right, 0 and 6 are
 *   bad arguments) and fails the run unless its 128 bytes are the fake
 *   driver's 0xA5.
 * -DKILN_FAKE_CUDA_IM2COL_MAP=<rank>: the same with an im2col map of x as a
 *   [1, 3, 1, 4] channels-last activation (4 is right, 2 a bad rank).
 * -DKILN_FAKE_CUDA_DYNAMIC: x is f32 [?N, 4], not graph-capturable, and a
 *   third output pos f32 [?K] holds the positive values of y, whose count K
 *   the host program reads back with kiln_rt_read_device (as NonZero does).
 * -DKILN_FAKE_CUDA_SYMBOLIC: x is f32 [?N, 4] and the model is
 *   graph-capturable (no host reads): the runtime captures a graph per N.
 * -DKILN_FAKE_CUDA_CHECK: a device check after the kernels (as kilnc makes
 *   of a check of device data, an index range): kernel check_large writes
 *   the check record (kiln_rt_check_record) when some y is above 1000.
 * -DKILN_FAKE_CUDA_RELEASE=1: after the kernels, tmp is released
 *   (kiln_rt_release, as kilnc does when a kernel's launcher returns) and a
 *   scratch buffer of the same size allocated again: the run fails unless
 *   it is tmp's memory; y and total are then computed again through it.
 *   =2: the same, then the second buffer is released twice (an error).
 * -DKILN_FAKE_CUDA_DEPENDENT: the signature has `dependent-launch` (its
 *   kernels wait for the previous one themselves).
 * -DKILN_FAKE_CUDA_NO_IMAGE: no kiln_model_device_image.
 * -DKILN_FAKE_CUDA_IMAGE_KIND="hip": an image of another kind than the
 *   signature's device (the runtime refuses it).
 * -DKILN_FAKE_CUDA_COPY: y = x by a device copy: no kernels, no image.
 * -DKILN_FAKE_CUDA_CHIP="sm_100a": another chip in the signature.
 * -DKILN_FAKE_DEVICE_KIND="rocm" (with -DKILN_FAKE_CUDA_CHIP="gfx942"):
 *   the same model for another device kind (signature and image kind), run
 *   by test/Runtime/fake_hip_driver.c, which knows the same kernels.
 * -DKILN_FAKE_CUDA_IMAGE_HEADER="file.h": a real device image
 *   (test/Runtime/gpu/run_cuda_smoke.sh builds one to run on a GPU).
 *===----------------------------------------------------------------------===*/
#include "kiln/Runtime/ModelABI.h"

#include <stddef.h>

#ifndef KILN_FAKE_CUDA_CHIP
#define KILN_FAKE_CUDA_CHIP "sm_90"
#endif
#ifndef KILN_FAKE_DEVICE_KIND
#define KILN_FAKE_DEVICE_KIND "cuda"
#endif

#if defined(KILN_FAKE_CUDA_COPY)
const char kiln_model_signature[] = "kiln-signature 1\n"
                                    "arena 0\n"
                                    "device " KILN_FAKE_DEVICE_KIND " sm_90\n"
                                    "kernels 0\n"
                                    "weights 0\n"
                                    "graph-capturable\n"
                                    "input x f32 2 3 4\n"
                                    "output y f32 2 3 4\n";
#elif defined(KILN_FAKE_CUDA_DYNAMIC)
const char kiln_model_signature[] =
    "kiln-signature 1\n"
    "arena 64\n"
    "device " KILN_FAKE_DEVICE_KIND " " KILN_FAKE_CUDA_CHIP "\n"
    "kernels 4\n"
    "weights 1\n"
    "input x f32 2 ?N 4\n"
    "output y f32 2 ?N 4\n"
    "output total f32 0\n"
    "output pos f32 1 ?K\n";
#elif defined(KILN_FAKE_CUDA_SYMBOLIC)
const char kiln_model_signature[] =
    "kiln-signature 1\n"
    "arena 64\n"
    "device " KILN_FAKE_DEVICE_KIND " " KILN_FAKE_CUDA_CHIP "\n"
    "kernels 2\n"
    "weights 1\n"
    "graph-capturable\n"
    "input x f32 2 ?N 4\n"
    "output y f32 2 ?N 4\n"
    "output total f32 0\n";
#elif defined(KILN_FAKE_CUDA_CHECK)
const char kiln_model_signature[] =
    "kiln-signature 1\n"
    "arena 64\n"
    "device " KILN_FAKE_DEVICE_KIND " " KILN_FAKE_CUDA_CHIP "\n"
    "kernels 5\n"
    "weights 1\n"
    "graph-capturable\n"
    "input x f32 2 3 4\n"
    "output y f32 2 3 4\n"
    "output total f32 0\n";
#else
const char kiln_model_signature[] =
    "kiln-signature 1\n"
    "arena 64\n"
    "device " KILN_FAKE_DEVICE_KIND " " KILN_FAKE_CUDA_CHIP "\n"
    "kernels 2\n"
    "weights 1\n"
    "graph-capturable\n"
#ifdef KILN_FAKE_CUDA_DEPENDENT
    "dependent-launch\n"
#endif
    "input x f32 2 3 4\n"
    "output y f32 2 3 4\n"
    "output total f32 0\n";
#endif

#if defined(KILN_FAKE_CUDA_IMAGE_HEADER)
/* A real fatbin of test/Runtime/gpu/cuda_smoke_kernels.cu (defines
 * kiln_model_device_image, kiln_model_device_image_size and
 * kiln_model_device_image_kind). */
#include KILN_FAKE_CUDA_IMAGE_HEADER
#elif !defined(KILN_FAKE_CUDA_NO_IMAGE) && !defined(KILN_FAKE_CUDA_COPY)
#ifndef KILN_FAKE_CUDA_IMAGE_KIND
#define KILN_FAKE_CUDA_IMAGE_KIND KILN_FAKE_DEVICE_KIND
#endif
const unsigned char kiln_model_device_image[] =
#ifdef KILN_FAKE_CUDA_CHECK
    "KILNFAKEIMAGE scale add_weight_sum count_positive gather_positive "
    "check_large";
#else
    "KILNFAKEIMAGE scale add_weight_sum count_positive gather_positive";
#endif
const int64_t kiln_model_device_image_size = sizeof(kiln_model_device_image);
const char kiln_model_device_image_kind[] = KILN_FAKE_CUDA_IMAGE_KIND;
#endif

__attribute__((unused)) static const float kWeight[4] = {0.5f, -1.0f, 10.0f,
                                                         -100.0f};

/* A memref expanded to kernel parameters: allocated, aligned, offset,
 * sizes[rank], strides[rank] (all 8 bytes), as kiln_rt_launch_device takes
 * them. */
typedef struct {
  void *allocated, *aligned;
  int64_t offset, shape[4]; /* sizes then strides */
} memref_t;

__attribute__((unused)) static memref_t memref(void *ptr, int64_t rank,
                                               const int64_t *sizes) {
  memref_t m = {ptr, ptr, 0, {0, 0, 0, 0}};
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    m.shape[d] = sizes[d];
    m.shape[rank + d] = stride;
    stride *= sizes[d];
  }
  return m;
}

/* Appends the parameter pointers of `m` (3 + 2 * rank) to params. */
__attribute__((unused)) static int expand(void **params, int at, memref_t *m,
                                          int64_t rank) {
  params[at++] = &m->allocated;
  params[at++] = &m->aligned;
  params[at++] = &m->offset;
  for (int64_t i = 0; i < 2 * rank; ++i)
    params[at++] = &m->shape[i];
  return at;
}

/* tmp = scale(x), y = tmp + w, arena[0] = sum of y, copied into total. */
__attribute__((unused)) static void scale_add_sum(kiln_rt_ctx *ctx, int64_t n,
                                                  memref_t *xm, memref_t *tm,
                                                  memref_t *wm, memref_t *ym,
                                                  memref_t *am, void *total) {
  void *params[32];
  int count = expand(params, 0, xm, 2);
  count = expand(params, count, tm, 2);
  kiln_rt_launch_device(ctx, 0, "scale", (n * 4 + 63) / 64, 1, 1, 64, 1, 1, 0,
                        params);
  count = expand(params, 0, tm, 2);
  count = expand(params, count, wm, 1);
  count = expand(params, count, ym, 2);
  count = expand(params, count, am, 0);
  kiln_rt_launch_device(ctx, 1, "add_weight_sum", 1, 1, 1, 64, 1, 1, 0, params);
  kiln_rt_copy_device(ctx, total, am->aligned, sizeof(float));
}

/* Runs of kiln_model_main: run_cuda_smoke.sh exports it to check that CUDA
 * graph replays skip the host program (hidden by the usual version script).
 */
int kiln_fake_main_calls;

#ifdef KILN_FAKE_CUDA_COPY
/* y = x, with no kernel at all. */
int32_t kiln_model_main(kiln_rt_ctx *ctx) {
  __atomic_fetch_add(&kiln_fake_main_calls, 1, __ATOMIC_RELAXED);
  int64_t dims[2] = {3, 4};
  void *y = kiln_rt_output(ctx, 0, dims);
  if (!y)
    return 1;
  kiln_rt_copy_device(ctx, y, kiln_rt_input(ctx, 0), 12 * sizeof(float));
  return 0;
}
#else
int32_t kiln_model_main(kiln_rt_ctx *ctx) {
  __atomic_fetch_add(&kiln_fake_main_calls, 1, __ATOMIC_RELAXED);
  int64_t n = kiln_rt_input_dim(ctx, 0, 0);
  int64_t xdims[2] = {n, 4};
  int64_t wdims[1] = {4};
  float *x = (float *)kiln_rt_input(ctx, 0);
  float *w = (float *)kiln_rt_weight(ctx, 0, kWeight, sizeof(kWeight));
  float *tmp = (float *)kiln_rt_alloc(ctx, n * 4 * (int64_t)sizeof(float));
  float *y = (float *)kiln_rt_output(ctx, 0, xdims);
  float *total = (float *)kiln_rt_output(ctx, 1, NULL);
  float *arena = (float *)kiln_rt_arena(ctx);
  if (!w || !tmp || !y || !total)
    return 1;
#ifdef KILN_FAKE_CUDA_TILE_MAP
  {
    _Alignas(64) unsigned char map[128];
    const int64_t dims[6] = {4, 3, 1, 1, 1, 1}, box[6] = {4, 2, 1, 1, 1, 1};
    const int64_t strides[6] = {4, 16, 48, 48, 48, 48};
    kiln_rt_tile_map(ctx, map, 3 /* KILN_DTYPE_F32 */, KILN_FAKE_CUDA_TILE_MAP,
                     x, dims, strides, box, 0);
    for (int i = 0; i < 128; ++i)
      if (map[i] != 0xA5)
        return 1;
  }
#endif
#ifdef KILN_FAKE_CUDA_IM2COL_MAP
  {
    /* x as a [1, 3, 1, 4] channels-last activation (4 channels), a window
     * of rows [-1, 2 - 1 - 2] for a 3-tall stride-2 filter padded by 1. */
    _Alignas(64) unsigned char map[128];
    const int64_t dims[4] = {4, 1, 3, 1}, strides[4] = {4, 16, 16, 48};
    const int64_t lower[2] = {0, -1}, upper[2] = {0, -2};
    const int64_t element_strides[4] = {1, 1, 2, 1};
    kiln_rt_im2col_map(ctx, map, 3 /* KILN_DTYPE_F32 */,
                       KILN_FAKE_CUDA_IM2COL_MAP, x, dims, strides, lower,
                       upper, element_strides, 4, 2, 0);
    for (int i = 0; i < 128; ++i)
      if (map[i] != 0xA5)
        return 1;
  }
#endif

  memref_t xm = memref(x, 2, xdims), tm = memref(tmp, 2, xdims);
  memref_t wm = memref(w, 1, wdims), ym = memref(y, 2, xdims);
  memref_t am = memref(arena, 0, NULL);
  __attribute__((unused)) void *params[32];
  __attribute__((unused)) int count = 0;
  scale_add_sum(ctx, n, &xm, &tm, &wm, &ym, &am, total);

#ifdef KILN_FAKE_CUDA_RELEASE
  kiln_rt_release(ctx, tmp);
  float *again = (float *)kiln_rt_alloc(ctx, n * 4 * (int64_t)sizeof(float));
  if (again != tmp)
    return 1;
  memref_t am2 = memref(again, 2, xdims);
  scale_add_sum(ctx, n, &xm, &am2, &wm, &ym, &am, total);
  kiln_rt_release(ctx, again);
#if KILN_FAKE_CUDA_RELEASE == 2
  kiln_rt_release(ctx, again);
#endif
#endif

#ifdef KILN_FAKE_CUDA_CHECK
  /* Two device checks; the second is the one the kernel reports. */
  static const char kMessages[] =
      "node 'other' (Gather, opset 17): never reported\0"
      "node 'big' (Check, opset 1): y[{0}, {1}] is {2}, above 1000";
  int64_t *record = (int64_t *)kiln_rt_check_record(ctx, kMessages, 2);
  if (!record)
    return 1;
  int64_t rdims[1] = {10};
  memref_t rm = memref(record, 1, rdims);
  count = expand(params, 0, &ym, 2);
  count = expand(params, count, &rm, 1);
  kiln_rt_launch_device(ctx, 4, "check_large", 1, 1, 1, 1, 1, 1, 0, params);
#endif

#ifdef KILN_FAKE_CUDA_DYNAMIC
  /* pos = y[y > 0]: count on the device, read the count, allocate, fill. */
  int64_t *counter = (int64_t *)(arena + 8); /* bytes 32..39 of 64 */
  memref_t cm = memref(counter, 0, NULL);
  count = expand(params, 0, &ym, 2);
  count = expand(params, count, &cm, 0);
  kiln_rt_launch_device(ctx, 2, "count_positive", 1, 1, 1, 64, 1, 1, 0, params);
  int64_t k = -1;
  kiln_rt_read_device(ctx, &k, counter, sizeof(k));
  if (k < 0)
    return 1;
  int64_t pdims[1] = {k};
  float *pos = (float *)kiln_rt_output(ctx, 2, pdims);
  if (!pos)
    return 1;
  memref_t pm = memref(pos, 1, pdims);
  count = expand(params, 0, &ym, 2);
  count = expand(params, count, &pm, 1);
  kiln_rt_launch_device(ctx, 3, "gather_positive", k == 0 ? 0 : 1, 1, 1, 64, 1,
                        1, 0, params);
#endif
  (void)count;
  return 0;
}
#endif
