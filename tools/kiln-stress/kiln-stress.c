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
  pthread_mutex_t lock; /* guards failures and error */
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
    pthread_mutex_lock(&s->lock);
    if (s->failures++ == 0)
      snprintf(s->error, sizeof(s->error), "%s", err);
    pthread_mutex_unlock(&s->lock);
  }
  return NULL;
}

/* Frees what main allocated; everything, so LeakSanitizer runs clean. */
static void release_all(Shared *s) {
  for (size_t i = 0; s->inputs && i < s->numIn; ++i) {
    free((void *)s->inputs[i].dims);
    free((void *)s->inputs[i].data);
  }
  free(s->inputs);
  for (size_t o = 0; s->refs && o < s->numOut; ++o)
    if (s->refs[o])
      kiln_tensor_release(s->refs[o]);
  free(s->refs);
  if (s->model)
    kiln_model_release(s->model);
  pthread_mutex_destroy(&s->lock);
}

static int fail_main(Shared *s, kiln_status_t *st) {
  char err[512];
  fail(st, err, sizeof(err));
  fprintf(stderr, "kiln-stress: %s\n", err);
  release_all(s);
  return 1;
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
  pthread_mutex_init(&s.lock, NULL);
  kiln_status_t *st = kiln_model_load(path, &s.model);
  if (st)
    return fail_main(&s, st);
  s.numIn = kiln_model_num_inputs(s.model);
  s.numOut = kiln_model_num_outputs(s.model);
  s.inputs = calloc(s.numIn ? s.numIn : 1, sizeof(*s.inputs));
  for (size_t i = 0; i < s.numIn; ++i) {
    kiln_value_info_t info;
    if ((st = kiln_model_input_info(s.model, i, &info)))
      return fail_main(&s, st);
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
  kiln_instance_t *inst = NULL;
  if ((st = kiln_instance_create(s.model, &inst)) ||
      (st = kiln_instance_run(inst, s.inputs, s.numIn, s.refs, s.numOut))) {
    if (inst)
      kiln_instance_release(inst);
    return fail_main(&s, st);
  }
  kiln_instance_release(inst);
  pthread_t *tids = calloc((size_t)threads, sizeof(pthread_t));
  int started = 0;
  for (; started < threads; ++started)
    if (pthread_create(&tids[started], NULL, worker, &s) != 0)
      break;
  for (int t = 0; t < started; ++t)
    pthread_join(tids[t], NULL);
  free(tids);
  int failures = s.failures;
  if (started < threads) {
    fprintf(stderr, "kiln-stress: could only start %d of %d threads\n", started,
            threads);
    failures = failures ? failures : 1;
  } else if (failures) {
    fprintf(stderr, "kiln-stress: %d thread(s) failed: %s\n", failures,
            s.error);
  } else {
    printf("kiln-stress: %d threads x %d runs: all outputs equal the "
           "reference\n",
           threads, iterations);
  }
  release_all(&s);
  return failures ? 1 : 0;
}
