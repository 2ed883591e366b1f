/*===- kiln-stress.c - Concurrent runs of one model through the C API -----===*
 *
 *   kiln-stress model.so [--threads N] [--iterations K] [--batch B]
 *
 * Fills every input with deterministic values (symbolic dims set to B),
 * computes reference outputs with one instance, then runs K iterations on
 * each of N threads, each thread with its own instance, and checks that every
 * output is bitwise equal to the reference. Prints one summary line; exit 1
 * on any mismatch or error. Uses only the public API (kiln-c/runtime.h).
 *===----------------------------------------------------------------------===*/
#include "kiln-c/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  kiln_model_t *model;
  size_t numIn, numOut;
  kiln_tensor_view_t *inputs;
  kiln_tensor_t **refs;
  int iterations;
  int failures;
  char error[512];
} Shared;

static int fail(kiln_status_t *st, char *buf, size_t n) {
  snprintf(buf, n, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return 1;
}

static void *worker(void *arg) {
  Shared *s = (Shared *)arg;
  kiln_instance_t *inst = NULL;
  kiln_status_t *st = kiln_instance_create(s->model, &inst);
  char err[512] = "";
  int bad = 0;
  if (st) {
    bad = fail(st, err, sizeof(err));
  }
  kiln_tensor_t **outs = calloc(s->numOut, sizeof(*outs));
  for (int it = 0; !bad && it < s->iterations; ++it) {
    st = kiln_instance_run(inst, s->inputs, s->numIn, outs, s->numOut);
    if (st) {
      bad = fail(st, err, sizeof(err));
      break;
    }
    for (size_t o = 0; o < s->numOut; ++o) {
      if (kiln_tensor_byte_size(outs[o]) != kiln_tensor_byte_size(s->refs[o]) ||
          memcmp(kiln_tensor_data(outs[o]), kiln_tensor_data(s->refs[o]),
                 kiln_tensor_byte_size(outs[o])) != 0) {
        snprintf(err, sizeof(err), "output %zu differs from the reference", o);
        bad = 1;
      }
      kiln_tensor_release(outs[o]);
    }
  }
  free(outs);
  if (inst)
    kiln_instance_release(inst);
  if (bad) {
    __atomic_add_fetch(&s->failures, 1, __ATOMIC_SEQ_CST);
    snprintf(s->error, sizeof(s->error), "%s", err);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = 4, iterations = 20;
  int64_t batch = 2;
  const char *path = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
      iterations = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoll(argv[++i]);
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      fprintf(stderr, "kiln-stress: usage: kiln-stress model.so [--threads N] "
                      "[--iterations K] [--batch B]\n");
      return 1;
    }
  }
  if (!path || threads < 1 || threads > 256 || iterations < 1 || batch < 0) {
    fprintf(stderr, "kiln-stress: bad arguments\n");
    return 1;
  }
  Shared s;
  memset(&s, 0, sizeof(s));
  s.iterations = iterations;
  char err[512];
  kiln_status_t *st = kiln_model_load(path, &s.model);
  if (st) {
    fail(st, err, sizeof(err));
    fprintf(stderr, "kiln-stress: %s\n", err);
    return 1;
  }
  s.numIn = kiln_model_num_inputs(s.model);
  s.numOut = kiln_model_num_outputs(s.model);
  s.inputs = calloc(s.numIn ? s.numIn : 1, sizeof(*s.inputs));
  for (size_t i = 0; i < s.numIn; ++i) {
    kiln_value_info_t info;
    if ((st = kiln_model_input_info(s.model, i, &info))) {
      fail(st, err, sizeof(err));
      fprintf(stderr, "kiln-stress: %s\n", err);
      return 1;
    }
    int64_t *dims = calloc(info.rank ? info.rank : 1, sizeof(int64_t));
    size_t n = 1;
    for (size_t d = 0; d < info.rank; ++d) {
      dims[d] = info.dims[d] < 0 ? batch : info.dims[d];
      n *= (size_t)dims[d];
    }
    size_t esize = kiln_dtype_size(info.dtype);
    unsigned char *data = calloc(n ? n : 1, esize);
    for (size_t e = 0; e < n; ++e) {
      if (info.dtype == KILN_DTYPE_F32) {
        float v = (float)((int)((e * 2654435761u) % 2001) - 1000) / 500.0f;
        memcpy(data + e * esize, &v, esize);
      } else if (info.dtype == KILN_DTYPE_I64) {
        int64_t v = (int64_t)(e % 3);
        memcpy(data + e * esize, &v, esize);
      }
    }
    s.inputs[i].dtype = info.dtype;
    s.inputs[i].rank = info.rank;
    s.inputs[i].dims = dims;
    s.inputs[i].data = data;
  }
  s.refs = calloc(s.numOut ? s.numOut : 1, sizeof(*s.refs));
  kiln_instance_t *inst;
  if ((st = kiln_instance_create(s.model, &inst)) ||
      (st = kiln_instance_run(inst, s.inputs, s.numIn, s.refs, s.numOut))) {
    fail(st, err, sizeof(err));
    fprintf(stderr, "kiln-stress: %s\n", err);
    return 1;
  }
  kiln_instance_release(inst);
  pthread_t *tids = calloc((size_t)threads, sizeof(pthread_t));
  for (int t = 0; t < threads; ++t)
    pthread_create(&tids[t], NULL, worker, &s);
  for (int t = 0; t < threads; ++t)
    pthread_join(tids[t], NULL);
  if (s.failures) {
    fprintf(stderr, "kiln-stress: %d thread(s) failed: %s\n", s.failures,
            s.error);
    return 1;
  }
  printf("kiln-stress: %d threads x %d runs: all outputs equal the reference\n",
         threads, iterations);
  for (size_t o = 0; o < s.numOut; ++o)
    kiln_tensor_release(s.refs[o]);
  kiln_model_release(s.model);
  return 0;
}
