/*===- Weights.c - External weights (kilnc --external-weights) ------------===*
 *
 * Finds, checks (magic, layout hash, size) and memory-maps the weights file
 * of a model whose signature has a `weights-file` record.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include "kiln/Runtime/RegularFile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KILN_WEIGHTS_HEADER_BYTES 64

/* "f32 [64, 3, 7, 7]" */
static void describe_weight(const kiln_ext_weight *w, char *out, size_t size) {
  size_t n =
      (size_t)snprintf(out, size, "%s [", kiln_rtc_dtype_name(w->sig.dtype));
  for (size_t d = 0; d < w->sig.rank && n < size; ++d)
    n += (size_t)snprintf(out + n, size - n, "%s%lld", d ? ", " : "",
                          (long long)w->sig.dims[d]);
  if (n < size)
    snprintf(out + n, size - n, "]");
}

/* The weights file's path: the one in the options (the caller's or
 * KILN_WEIGHTS), or the recorded basename next to the model. */
static char *weights_file_path(const kiln_model_impl *model,
                               const char *model_path,
                               const kiln_rt_options *options) {
  if (options->weights_path)
    return strdup(options->weights_path);
  size_t dir_len = 0;
  if (model_path) {
    const char *slash = strrchr(model_path, '/');
    if (slash)
      dir_len = (size_t)(slash - model_path) + 1;
  }
  size_t len = dir_len + strlen(model->weights_file);
  char *path = (char *)malloc(len + 1);
  if (!path)
    return NULL;
  if (dir_len)
    memcpy(path, model_path, dir_len);
  memcpy(path + dir_len, model->weights_file, strlen(model->weights_file) + 1);
  return path;
}

void kiln_rt_unmap_weights(kiln_model_impl *model) {
  if (model->weights_map)
    munmap((void *)model->weights_map, model->weights_map_size);
  model->weights_map = NULL;
  model->weights_map_size = 0;
  free(model->weights_path);
  model->weights_path = NULL;
}

kiln_status_t *kiln_rt_map_weights(kiln_model_impl *model,
                                   const char *model_path,
                                   const kiln_rt_options *options) {
  const char *model_name = model_path ? model_path : "(model)";
  if (model->num_ext_weights == 0) {
    /* KILN_WEIGHTS is process-wide: only the caller's path is an error. */
    if (options->weights_given)
      return kiln_rtc_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "model '%s' has no external weights (it was compiled without "
          "--external-weights), but the weights file '%s' was given",
          model_name, options->weights_path);
    return NULL;
  }
  char *path = weights_file_path(model, model_path, options);
  if (!path)
    return kiln_rtc_oom_status();
  model->weights_path = path;
  uint64_t size = 0;
  const char *why = NULL;
  int fd = kiln_open_regular_file(path, &size, &why);
  if (fd == -2)
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "weights file '%s' is %s", path, why);
  if (fd < 0) {
    int err = errno;
    return kiln_rtc_make_status(
        err == ENOENT ? KILN_STATUS_NOT_FOUND : KILN_STATUS_INVALID_ARGUMENT,
        "cannot open the weights file '%s' of model '%s': %s (the model was "
        "compiled with --external-weights; give its weights file as the "
        "weights_path option or in KILN_WEIGHTS)",
        path, model_name, why);
  }
  unsigned char header[KILN_WEIGHTS_HEADER_BYTES];
  memset(header, 0, sizeof(header));
  ssize_t got = size > 0 ? pread(fd, header, sizeof(header), 0) : 0;
  if (got < 0) {
    int err = errno;
    close(fd);
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "cannot read the weights file '%s': %s", path,
                                strerror(err));
  }
  if (got > 0 && memcmp(header, "KILNWTS1", got < 8 ? (size_t)got : 8) != 0) {
    close(fd);
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "'%s' is not a Kiln weights file (it does not start with the magic "
        "'KILNWTS1'; kilnc --external-weights or utils/models/"
        "fill_weights.py --weights write one)",
        path);
  }
  if (got < KILN_WEIGHTS_HEADER_BYTES) {
    close(fd);
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is truncated: it has %llu bytes, less than its "
        "%d-byte header (model '%s' needs %llu bytes)",
        path, (unsigned long long)size, KILN_WEIGHTS_HEADER_BYTES, model_name,
        (unsigned long long)model->weights_file_bytes);
  }
  uint64_t hash = kiln_rtc_load_u64le(header + 8);
  if (hash != model->weights_hash) {
    close(fd);
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' has weight layout %016llx, model '%s' expects "
        "%016llx: it was written for another model (names, dtypes or shapes "
        "differ); write it from this model's manifest (%s.json)",
        path, (unsigned long long)hash, model_name,
        (unsigned long long)model->weights_hash, model->weights_file);
  }
  /* The header's own fields: a file cut short, grown or edited says so
   * here even when its layout hash is intact. */
  uint64_t header_size = kiln_rtc_load_u64le(header + 16);
  uint64_t header_count = kiln_rtc_load_u64le(header + 24);
  if (size >= model->weights_file_bytes &&
      (header_size != size || size != model->weights_file_bytes)) {
    close(fd);
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is damaged: its header gives a size of %llu "
        "bytes, the file has %llu and model '%s' needs %llu",
        path, (unsigned long long)header_size, (unsigned long long)size,
        model_name, (unsigned long long)model->weights_file_bytes);
  }
  if (header_count != model->num_ext_weights) {
    close(fd);
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is damaged: its header counts %llu weights, model "
        "'%s' has %zu",
        path, (unsigned long long)header_count, model_name,
        model->num_ext_weights);
  }
  if (size < model->weights_file_bytes) {
    close(fd);
    for (size_t i = 0; i < model->num_ext_weights; ++i) {
      const kiln_ext_weight *w = &model->ext_weights[i];
      if (w->offset + w->bytes <= size)
        continue;
      char what[256];
      describe_weight(w, what, sizeof(what));
      return kiln_rtc_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "weights file '%s' is truncated: it has %llu bytes, weight %zu "
          "('%s', %s) needs bytes [%llu, %llu)",
          path, (unsigned long long)size, i, w->sig.name, what,
          (unsigned long long)w->offset,
          (unsigned long long)(w->offset + w->bytes));
    }
    return kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is truncated: it has %llu bytes, expected %llu",
        path, (unsigned long long)size,
        (unsigned long long)model->weights_file_bytes);
  }
  if (size > (uint64_t)SIZE_MAX) {
    close(fd);
    return kiln_rtc_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                "weights file '%s' is too large to map", path);
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED)
    return kiln_rtc_make_status(
        err == ENOMEM ? KILN_STATUS_RESOURCE_EXHAUSTED
                      : KILN_STATUS_INVALID_ARGUMENT,
        "cannot map the weights file '%s' (%llu bytes): %s", path,
        (unsigned long long)size, strerror(err));
  model->weights_map = (const unsigned char *)map;
  model->weights_map_size = (size_t)size;
  return NULL;
}
