/*===- cuda_smoke.c - The CUDA runtime against a real GPU -----------------===*
 *
 *   cuda_smoke STATIC_MODEL.so DYNAMIC_MODEL.so
 *
 * The models are test/Runtime/fake_cuda_model.c built with a real fatbin of
 * cuda_smoke_kernels.cu (run_cuda_smoke.sh). Checks, against a sequential
 * host reference: host runs with CUDA graphs on (plain, captured, replayed
 * with new inputs) and off, a model with symbolic dims and a device read,
 * device-memory runs on the instance's stream and on the caller's, and the
 * statuses of a shape mismatch. Prints one line per failure and a summary;
 * exit 1 on any failure. Uses the public API, plus the driver (dlopen) for
 * the caller's device buffers and stream.
 *===----------------------------------------------------------------------===*/
#include "kiln-c/runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long CUdeviceptr;
static struct {
  int (*retain)(void **ctx, int dev);
  int (*push)(void *ctx);
  int (*pop)(void **ctx);
  int (*alloc)(CUdeviceptr *p, size_t n);
  int (*free)(CUdeviceptr p);
  int (*htod)(CUdeviceptr d, const void *s, size_t n);
  int (*dtoh)(void *d, CUdeviceptr s, size_t n);
  int (*stream_create)(void **s, unsigned flags);
  int (*stream_sync)(void *s);
  int (*stream_destroy)(void *s);
} cu;

static int failures, checks;

/* The static model's count of kiln_model_main runs (NULL when the model
 * does not export it). dlopen of the loaded path returns the same library. */
static int *main_calls;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

/* Takes a status: 1 when OK, else prints it. */
static int ok(kiln_status_t *status, const char *what) {
  ++checks;
  if (!status)
    return 1;
  ++failures;
  printf("FAIL %s: %s\n", what, kiln_status_message(status));
  kiln_status_free(status);
  return 0;
}

static const float kWeight[4] = {0.5f, -1.0f, 10.0f, -100.0f};

typedef struct {
  int64_t n, dims[2];
  float x[64], y[64], pos[64], total;
  int64_t k;
} ref_case;

static void make_case(ref_case *c, int64_t n, float seed) {
  c->n = n;
  c->dims[0] = n;
  c->dims[1] = 4;
  c->total = 0;
  c->k = 0;
  for (int64_t i = 0; i < n * 4; ++i) {
    c->x[i] = seed * (float)(i % 7) - 3.0f + (float)i * 0.25f;
    float t = 2.0f * c->x[i];
    c->y[i] = t + kWeight[i % 4];
    c->total += c->y[i];
    if (c->y[i] > 0)
      c->pos[c->k++] = c->y[i];
  }
}

static void check_floats(const float *got, const float *want, int64_t n,
                         const char *what) {
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != want[i]) {
      CHECK(0, "%s[%lld] is %g, expected %g", what, (long long)i, got[i],
            want[i]);
      return;
    }
  ++checks;
}

static void host_run(kiln_instance_t *inst, const ref_case *c, int outputs) {
  kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, c->dims, c->x};
  kiln_tensor_t *out[3] = {NULL, NULL, NULL};
  if (!ok(kiln_instance_run(inst, &in, 1, out, (size_t)outputs), "run"))
    return;
  check_floats(kiln_tensor_data(out[0]), c->y, c->n * 4, "y");
  CHECK(*(float *)kiln_tensor_data(out[1]) == c->total, "total %g != %g",
        *(float *)kiln_tensor_data(out[1]), c->total);
  if (outputs == 3) {
    CHECK(kiln_tensor_dims(out[2])[0] == c->k, "pos has %lld, expected %lld",
          (long long)kiln_tensor_dims(out[2])[0], (long long)c->k);
    check_floats(kiln_tensor_data(out[2]), c->pos, c->k, "pos");
  }
  for (int i = 0; i < outputs; ++i)
    kiln_tensor_release(out[i]);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Mean host-run time over `runs` runs after 10 warm-up runs. */
static double time_runs(kiln_instance_t *inst, int runs) {
  ref_case c;
  make_case(&c, 3, 1.0f);
  kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, c.dims, c.x};
  double start = 0;
  for (int r = 0; r < runs + 10; ++r) {
    if (r == 10)
      start = now_ms();
    kiln_tensor_t *out[2] = {NULL, NULL};
    if (!ok(kiln_instance_run(inst, &in, 1, out, 2), "timed run"))
      return -1;
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
  }
  return (now_ms() - start) / runs;
}

static int load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 0;
#define SYM(field, name) *(void **)&cu.field = dlsym(lib, name)
  SYM(retain, "cuDevicePrimaryCtxRetain");
  SYM(push, "cuCtxPushCurrent_v2");
  SYM(pop, "cuCtxPopCurrent_v2");
  SYM(alloc, "cuMemAlloc_v2");
  SYM(free, "cuMemFree_v2");
  SYM(htod, "cuMemcpyHtoD_v2");
  SYM(dtoh, "cuMemcpyDtoH_v2");
  SYM(stream_create, "cuStreamCreate");
  SYM(stream_sync, "cuStreamSynchronize");
  SYM(stream_destroy, "cuStreamDestroy_v2");
  return cu.retain && cu.push && cu.pop && cu.alloc && cu.free && cu.htod &&
         cu.dtoh && cu.stream_create && cu.stream_sync && cu.stream_destroy;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cuda_smoke STATIC_MODEL.so DYNAMIC_MODEL.so\n");
    return 2;
  }
  kiln_model_t *model = NULL, *dynamic = NULL;
  if (!ok(kiln_model_load(argv[1], &model), "load") ||
      !ok(kiln_model_load(argv[2], &dynamic), "load dynamic"))
    return 1;
  printf("device: %s\n", kiln_model_device(model));
  void *self = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  main_calls = self ? (int *)dlsym(self, "kiln_fake_main_calls") : NULL;
  CHECK(main_calls, "the model does not export kiln_fake_main_calls");

  /* Host runs, graphs on: plain, captured, then replays of new inputs. */
  kiln_instance_t *inst = NULL;
  if (!ok(kiln_instance_create(model, &inst), "instance"))
    return 1;
  for (int r = 0; r < 6; ++r) {
    ref_case c;
    make_case(&c, 3, (float)r - 2.0f);
    host_run(inst, &c, 2);
  }
  /* Run 1 plain, run 2 captured: replays do not run the host program. */
  if (main_calls)
    CHECK(*main_calls == 2,
          "kiln_model_main ran %d times in 6 runs with "
          "graphs, expected 2",
          *main_calls);
  double graph_ms = time_runs(inst, 2000);
  /* Graphs off. */
  ok(kiln_instance_set_graphs(inst, 0), "graphs off");
  for (int r = 0; r < 3; ++r) {
    ref_case c;
    make_case(&c, 3, (float)r * 3.0f);
    host_run(inst, &c, 2);
  }
  if (main_calls)
    CHECK(*main_calls == 5,
          "kiln_model_main ran %d times, expected 5 after "
          "3 runs without graphs",
          *main_calls);
  double plain_ms = time_runs(inst, 2000);
  printf("host run of the 2-kernel model: %.4f ms with a CUDA graph, %.4f ms "
         "without (mean of 2000)\n",
         graph_ms, plain_ms);
  ok(kiln_instance_set_graphs(inst, 1), "graphs on");

  /* Symbolic dims and a device read. */
  kiln_instance_t *dyn = NULL;
  if (!ok(kiln_instance_create(dynamic, &dyn), "dynamic instance"))
    return 1;
  int64_t sizes[] = {2, 5, 0, 16, 1};
  for (int r = 0; r < 5; ++r) {
    ref_case c;
    make_case(&c, sizes[r], sizes[r] == 1 ? -10.0f : 1.0f);
    host_run(dyn, &c, 3);
  }

  /* Device buffers: in place (graphs off), staged (graphs on), caller's
   * stream. */
  if (!load_driver()) {
    CHECK(0, "cannot open libcuda.so.1 for the device-buffer checks");
  } else {
    void *ctx = NULL, *stream = NULL;
    CUdeviceptr x = 0, y = 0, total = 0, pos = 0;
    CHECK(cu.retain(&ctx, 0) == 0 && cu.push(ctx) == 0, "context");
    CHECK(cu.alloc(&x, 4096) == 0 && cu.alloc(&y, 4096) == 0 &&
              cu.alloc(&total, 256) == 0 && cu.alloc(&pos, 4096) == 0 &&
              cu.stream_create(&stream, 1) == 0,
          "device buffers");
    for (int mode = 0; mode < 3; ++mode) {
      /* 0: graphs off, own stream; 1: graphs on; 2: caller's stream. */
      ok(kiln_instance_set_graphs(inst, mode != 0), "graphs");
      ok(kiln_instance_set_stream(inst, mode == 2 ? stream : NULL), "stream");
      for (int r = 0; r < 4; ++r) {
        ref_case c;
        make_case(&c, 3, (float)(r + 10 * mode));
        cu.htod(x, c.x, sizeof(float) * 12);
        int64_t ydims[2] = {3, 4};
        kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, c.dims,
                                 (void *)(uintptr_t)x};
        kiln_output_view_t out[2] = {
            {KILN_DTYPE_F32, 2, ydims, (void *)(uintptr_t)y},
            {KILN_DTYPE_F32, 0, NULL, (void *)(uintptr_t)total}};
        if (!ok(kiln_instance_run_device(inst, &in, 1, out, 2), "run_device"))
          continue;
        if (mode == 2)
          cu.stream_sync(stream);
        float yh[12], th = 0;
        cu.dtoh(yh, y, sizeof(yh));
        cu.dtoh(&th, total, sizeof(th));
        check_floats(yh, c.y, 12, "device y");
        CHECK(th == c.total, "device total %g != %g", th, c.total);
      }
    }
    ok(kiln_instance_set_stream(inst, NULL), "own stream");

    /* A data-dependent output of the wrong size. */
    ref_case c;
    make_case(&c, 2, 1.0f);
    cu.htod(x, c.x, sizeof(float) * 8);
    int64_t ydims[2] = {2, 4}, pdims[1] = {1};
    kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, c.dims, (void *)(uintptr_t)x};
    kiln_output_view_t out[3] = {
        {KILN_DTYPE_F32, 2, ydims, (void *)(uintptr_t)y},
        {KILN_DTYPE_F32, 0, NULL, (void *)(uintptr_t)total},
        {KILN_DTYPE_F32, 1, pdims, (void *)(uintptr_t)pos}};
    kiln_status_t *status = kiln_instance_run_device(dyn, &in, 1, out, 3);
    CHECK(kiln_status_code(status) == KILN_STATUS_INVALID_ARGUMENT,
          "wrong pos size: '%s'", kiln_status_message(status));
    kiln_status_free(status);
    pdims[0] = c.k;
    if (ok(kiln_instance_run_device(dyn, &in, 1, out, 3), "dynamic device")) {
      float ph[64];
      cu.dtoh(ph, pos, sizeof(float) * (size_t)c.k);
      check_floats(ph, c.pos, c.k, "device pos");
    }
    /* The instance still works after the failed run. */
    host_run(dyn, &c, 3);

    cu.free(x);
    cu.free(y);
    cu.free(total);
    cu.free(pos);
    cu.stream_destroy(stream);
    void *popped = NULL;
    cu.pop(&popped);
  }

  kiln_instance_release(dyn);
  kiln_instance_release(inst);
  kiln_model_release(dynamic);
  kiln_model_release(model);
  printf("cuda_smoke: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
