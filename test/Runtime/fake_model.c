/*===- fake_model.c - Hand-written stand-in for kilnc's output ------------===*
 *
 * Defines what generated code defines (kiln/Runtime/ModelABI.h) for
 *   y[n, j] = 2 * x[n, j] + bias[n],   rows = N
 * with x: f32 [?N, 4], bias: f32 [?N], y: f32 [?N, 4], rows: i64 [].
 * Two kernels with memref-descriptor arguments, a scratch buffer from
 * kiln_rt_alloc and the arena, like generated code. Special batch sizes
 * exercise failure paths: N == 13 runs out of memory after allocating an
 * output, N == 7 fails without recording a reason.
 *
 * -DKILN_FAKE_BAD_SIGNATURE builds a model whose signature has version 2.
 * -DKILN_FAKE_LAUNCH_SITES: the signature names the launch sites (`launch`
 * records with the kernels and their ONNX nodes) and kiln_model_main calls
 * kiln_rt_launch_site before each launch, as profiles want it.
 *===----------------------------------------------------------------------===*/
#include "kiln/Runtime/ModelABI.h"

#include <stddef.h>

#ifdef KILN_FAKE_BAD_SIGNATURE
const char kiln_model_signature[] = "kiln-signature 2\narena 0\n";
#elif defined(KILN_FAKE_LAUNCH_SITES)
const char kiln_model_signature[] = "kiln-signature 1\n"
                                    "arena 128\n"
                                    "input x f32 2 ?N 4\n"
                                    "input bias f32 1 ?N\n"
                                    "output y f32 2 ?N 4\n"
                                    "output n%20rows i64 0\n"
                                    "launch 0 scale_kernel mul%2C2,Identity\n"
                                    "launch 1 add_bias_kernel\n";
#else
const char kiln_model_signature[] = "kiln-signature 1\n"
                                    "arena 128\n"
                                    "input x f32 2 ?N 4\n"
                                    "input bias f32 1 ?N\n"
                                    "output y f32 2 ?N 4\n"
                                    "output n%20rows i64 0\n";
#endif

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} memref1_f32;
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} memref2_f32;

static memref2_f32 make2(void *data, int64_t rows, int64_t cols) {
  memref2_f32 m = {(float *)data, (float *)data, 0, {rows, cols}, {cols, 1}};
  return m;
}

/* args: x (in), tmp (out) */
static void scale_kernel(void **args) {
  memref2_f32 *x = (memref2_f32 *)args[0], *tmp = (memref2_f32 *)args[1];
  for (int64_t i = 0; i < x->sizes[0]; ++i)
    for (int64_t j = 0; j < x->sizes[1]; ++j)
      tmp->aligned[tmp->offset + i * tmp->strides[0] + j * tmp->strides[1]] =
          2.0f * x->aligned[x->offset + i * x->strides[0] + j * x->strides[1]];
}

/* args: tmp (in), bias (in), y (out) */
static void add_bias_kernel(void **args) {
  memref2_f32 *tmp = (memref2_f32 *)args[0], *y = (memref2_f32 *)args[2];
  memref1_f32 *bias = (memref1_f32 *)args[1];
  for (int64_t i = 0; i < tmp->sizes[0]; ++i)
    for (int64_t j = 0; j < tmp->sizes[1]; ++j)
      y->aligned[y->offset + i * y->strides[0] + j * y->strides[1]] =
          tmp->aligned[tmp->offset + i * tmp->strides[0] +
                       j * tmp->strides[1]] +
          bias->aligned[bias->offset + i * bias->strides[0]];
}

int32_t kiln_model_main(kiln_rt_ctx *ctx) {
  int64_t n = kiln_rt_input_dim(ctx, 0, 0);
  int64_t *arena = (int64_t *)kiln_rt_arena(ctx);
  arena[0] = n;
  if (n == 7)
    return 7;

  int64_t ydims[2] = {n, 4};
  void *y = kiln_rt_output(ctx, 0, ydims);
  if (!y)
    return 1;
  if (n == 13 && !kiln_rt_alloc(ctx, (int64_t)1 << 62))
    return 1;
  void *tmp = kiln_rt_alloc(ctx, n * 4 * (int64_t)sizeof(float));
  if (!tmp)
    return 1;

  memref2_f32 xm = make2(kiln_rt_input(ctx, 0), n, 4);
  memref2_f32 tm = make2(tmp, n, 4);
  memref2_f32 ym = make2(y, n, 4);
  float *bias = (float *)kiln_rt_input(ctx, 1);
  memref1_f32 bm = {bias, bias, 0, {n}, {1}};

  void *scale_args[] = {&xm, &tm};
#ifdef KILN_FAKE_LAUNCH_SITES
  kiln_rt_launch_site(ctx, 0);
#endif
  kiln_rt_launch_cpu(ctx, scale_kernel, scale_args);
  void *add_args[] = {&tm, &bm, &ym};
#ifdef KILN_FAKE_LAUNCH_SITES
  kiln_rt_launch_site(ctx, 1);
#endif
  kiln_rt_launch_cpu(ctx, add_bias_kernel, add_args);

  int64_t *rows = (int64_t *)kiln_rt_output(ctx, 1, NULL);
  if (!rows)
    return 1;
  *rows = arena[0];
  return 0;
}
