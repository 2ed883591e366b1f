/*===- ModelRuntime.c - The runtime linked into every model.so ------------===*
 *
 * Parses the signature the generated code embeds, owns instances (static
 * arena, scratch cache), validates inputs, runs kiln_model_main and
 * implements the kiln_rt_* callbacks of kiln/Runtime/ModelABI.h. Models of
 * the cuda device are handed to CudaRuntime.c after the signature is parsed
 * and inputs are validated. Exposed to the loader through the single
 * exported symbol kiln_model_api_v1 (see ModelAPI.h); everything else is
 * hidden. Plain C, no global mutable state: instances of one model run
 * concurrently on different threads.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*===--------------------------------------------------------------------===*
 * Signature
 *===--------------------------------------------------------------------===*/

static void *meta_alloc(kiln_model_impl *model, size_t bytes) {
  kiln_meta_block *block =
      (kiln_meta_block *)calloc(1, sizeof(kiln_meta_block) + bytes + 1);
  if (!block)
    return NULL;
  block->next = model->meta;
  model->meta = block;
  return block->align;
}

static void model_destroy(kiln_model_impl *model) {
  if (!model)
    return;
  if (model->cuda)
    kiln_cuda_model_destroy(model);
  if (model->weights_map)
    munmap((void *)model->weights_map, model->weights_map_size);
  free(model->weights_path);
  for (kiln_meta_block *block = model->meta; block;) {
    kiln_meta_block *next = block->next;
    free(block);
    block = next;
  }
  free(model);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Decodes %XX escapes of [begin, end) into a new NUL-terminated string;
 * NULL when out of memory or malformed (*malformed set). */
static const char *decode_name(kiln_model_impl *model, const char *begin,
                               const char *end, int *malformed) {
  char *out = (char *)meta_alloc(model, (size_t)(end - begin) + 1);
  *malformed = 0;
  if (!out)
    return NULL;
  size_t n = 0;
  for (const char *p = begin; p < end; ++p) {
    if (*p == '%') {
      if (end - p < 3 || hex_value(p[1]) < 0 || hex_value(p[2]) < 0) {
        *malformed = 1;
        return NULL;
      }
      out[n++] = (char)(hex_value(p[1]) * 16 + hex_value(p[2]));
      p += 2;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
  return out;
}

/* Parses a non-negative decimal integer of [begin, end). */
static int parse_u64(const char *begin, const char *end, uint64_t *out) {
  if (begin == end)
    return 0;
  uint64_t value = 0;
  for (const char *p = begin; p < end; ++p) {
    if (*p < '0' || *p > '9')
      return 0;
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, (uint64_t)(*p - '0'), &value))
      return 0;
  }
  *out = value;
  return 1;
}

typedef struct {
  const char *begin, *end;
} token_t;

/* Splits [begin, end) at spaces into at most `max` tokens; returns the count
 * or max + 1 when there are more. */
static size_t tokenize(const char *begin, const char *end, token_t *tokens,
                       size_t max) {
  size_t n = 0;
  const char *p = begin;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
      ++p;
    if (p == end)
      break;
    const char *start = p;
    while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
      ++p;
    if (n == max)
      return max + 1;
    tokens[n].begin = start;
    tokens[n].end = p;
    ++n;
  }
  return n;
}

static int token_is(token_t token, const char *text) {
  size_t len = strlen(text);
  return (size_t)(token.end - token.begin) == len &&
         memcmp(token.begin, text, len) == 0;
}

#define KILN_MAX_RANK 64
/* `weight <name> <dtype> <rank> <dim>* <offset> <bytes>` is the longest. */
#define KILN_MAX_TOKENS (KILN_MAX_RANK + 6)

static kiln_status_t *signature_error(int line, const char *what) {
  return kiln_rtc_make_status(KILN_STATUS_INCOMPATIBLE,
                              "malformed model signature, line %d: %s", line,
                              what);
}

static kiln_status_t *parse_value(kiln_model_impl *model, token_t *tokens,
                                  size_t count, int line,
                                  kiln_value_sig *value) {
  if (count < 4)
    return signature_error(line, "expected '<kind> <name> <dtype> <rank>'");
  int malformed = 0;
  value->name = decode_name(model, tokens[1].begin, tokens[1].end, &malformed);
  if (!value->name)
    return malformed ? signature_error(line, "bad %XX escape in name")
                     : kiln_rtc_oom_status();
  value->dtype = kiln_rtc_dtype_from_name(
      tokens[2].begin, (size_t)(tokens[2].end - tokens[2].begin));
  if (value->dtype == KILN_DTYPE_INVALID)
    return signature_error(line, "unknown dtype");
  uint64_t rank = 0;
  if (!parse_u64(tokens[3].begin, tokens[3].end, &rank) || rank > KILN_MAX_RANK)
    return signature_error(line, "bad rank");
  if (count != 4 + rank)
    return signature_error(line, "number of dims differs from the rank");
  value->rank = (size_t)rank;
  value->dims = (int64_t *)meta_alloc(model, sizeof(int64_t) * rank);
  value->dim_symbols = (const char **)meta_alloc(model, sizeof(char *) * rank);
  value->symbol_ids = (int32_t *)meta_alloc(model, sizeof(int32_t) * rank);
  if (!value->dims || !value->dim_symbols || !value->symbol_ids)
    return kiln_rtc_oom_status();
  for (size_t d = 0; d < rank; ++d) {
    token_t tok = tokens[4 + d];
    value->symbol_ids[d] = -1;
    value->dim_symbols[d] = "";
    if (*tok.begin == '?') {
      value->dims[d] = -1;
      if (tok.end - tok.begin == 1)
        continue;
      const char *symbol =
          decode_name(model, tok.begin + 1, tok.end, &malformed);
      if (!symbol)
        return malformed ? signature_error(line, "bad %XX escape in symbol")
                         : kiln_rtc_oom_status();
      size_t id = 0;
      while (id < model->num_symbols && strcmp(model->symbols[id], symbol))
        ++id;
      if (id == model->num_symbols)
        model->symbols[model->num_symbols++] = symbol;
      value->symbol_ids[d] = (int32_t)id;
      value->dim_symbols[d] = model->symbols[id];
      continue;
    }
    uint64_t dim = 0;
    if (!parse_u64(tok.begin, tok.end, &dim) || dim > (uint64_t)INT64_MAX)
      return signature_error(line, "bad dim");
    value->dims[d] = (int64_t)dim;
  }
  return NULL;
}

/* device <kind> [<chip>]: "cpu", or "cuda <chip>". Other kinds are kept
 * (model_create rejects them with a clear status). */
static kiln_status_t *parse_device(kiln_model_impl *model, token_t *tokens,
                                   size_t count, int line) {
  if (count < 2 || count > 3)
    return signature_error(line, "expected 'device <kind> [<chip>]'");
  size_t kind_len = (size_t)(tokens[1].end - tokens[1].begin);
  size_t chip_len = count == 3 ? (size_t)(tokens[2].end - tokens[2].begin) : 0;
  if (kind_len + chip_len + 2 > sizeof(model->device_name) ||
      chip_len + 1 > sizeof(model->chip))
    return signature_error(line, "device name too long");
  memcpy(model->chip, count == 3 ? tokens[2].begin : "", chip_len);
  model->chip[chip_len] = '\0';
  snprintf(model->device_name, sizeof(model->device_name), "%.*s%s%s",
           (int)kind_len, tokens[1].begin, chip_len ? ":" : "", model->chip);
  if (token_is(tokens[1], "cpu")) {
    if (count != 2)
      return signature_error(line, "device 'cpu' takes no chip");
    model->device = KILN_DEVICE_CPU;
  } else if (token_is(tokens[1], "cuda")) {
    if (count != 3)
      return signature_error(line, "device 'cuda' needs a chip (sm_90)");
    model->device = KILN_DEVICE_CUDA;
  } else {
    model->device = (kiln_device_kind)-1; /* unknown: model_create says so */
  }
  return NULL;
}

/* weights-file <file> <hash: 16 hex digits> <bytes> */
static kiln_status_t *parse_weights_file(kiln_model_impl *model,
                                         token_t *tokens, size_t count,
                                         int line) {
  if (model->weights_file)
    return signature_error(line, "second 'weights-file' record");
  if (count != 4 || tokens[2].end - tokens[2].begin != 16 ||
      !parse_u64(tokens[3].begin, tokens[3].end, &model->weights_file_bytes))
    return signature_error(line,
                           "expected 'weights-file <file> <hash> <bytes>'");
  uint64_t hash = 0;
  for (const char *p = tokens[2].begin; p < tokens[2].end; ++p) {
    int v = hex_value(*p);
    if (v < 0)
      return signature_error(line, "bad weights layout hash");
    hash = hash * 16 + (uint64_t)v;
  }
  model->weights_hash = hash;
  int malformed = 0;
  model->weights_file =
      decode_name(model, tokens[1].begin, tokens[1].end, &malformed);
  if (!model->weights_file)
    return malformed ? signature_error(line, "bad %XX escape in file name")
                     : kiln_rtc_oom_status();
  if (!*model->weights_file || strchr(model->weights_file, '/'))
    return signature_error(line, "the weights file must be a plain file name");
  return NULL;
}

/* weight <name> <dtype> <rank> <dim>* <offset> <bytes> */
static kiln_status_t *parse_weight(kiln_model_impl *model, token_t *tokens,
                                   size_t count, int line,
                                   kiln_ext_weight *weight) {
  if (count < 6)
    return signature_error(
        line, "expected 'weight <name> <dtype> <rank> <dim>* <offset> "
              "<bytes>'");
  kiln_status_t *status =
      parse_value(model, tokens, count - 2, line, &weight->sig);
  if (status)
    return status;
  if (!parse_u64(tokens[count - 2].begin, tokens[count - 2].end,
                 &weight->offset) ||
      !parse_u64(tokens[count - 1].begin, tokens[count - 1].end,
                 &weight->bytes))
    return signature_error(line, "bad weight offset or size");
  int overflow = 0;
  for (size_t d = 0; d < weight->sig.rank; ++d)
    if (weight->sig.dims[d] < 0)
      return signature_error(line, "a weight has a symbolic dim");
  size_t count_elems =
      kiln_rtc_num_elements(weight->sig.rank, weight->sig.dims, &overflow);
  size_t bytes = 0;
  if (overflow ||
      __builtin_mul_overflow(count_elems,
                             kiln_rtc_dtype_size(weight->sig.dtype), &bytes) ||
      bytes != weight->bytes)
    return signature_error(line, "weight size differs from its dims");
  if (weight->offset % KILN_ALIGNMENT != 0)
    return signature_error(line, "weight offset is not 64-byte aligned");
  return NULL;
}

static kiln_status_t *parse_signature(kiln_model_impl *model,
                                      const char *text) {
  /* First pass: count records and an upper bound of symbols. */
  size_t inputs = 0, outputs = 0, weights = 0, max_symbols = 0;
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    if (strncmp(p, "input ", 6) == 0)
      ++inputs;
    else if (strncmp(p, "output ", 7) == 0)
      ++outputs;
    else if (strncmp(p, "weight ", 7) == 0)
      ++weights;
    for (const char *q = p; q < eol; ++q)
      max_symbols += *q == '?';
    p = *eol ? eol + 1 : eol;
  }
  model->inputs =
      (kiln_value_sig *)meta_alloc(model, sizeof(kiln_value_sig) * inputs);
  model->outputs =
      (kiln_value_sig *)meta_alloc(model, sizeof(kiln_value_sig) * outputs);
  model->symbols =
      (const char **)meta_alloc(model, sizeof(char *) * max_symbols);
  model->ext_weights =
      (kiln_ext_weight *)meta_alloc(model, sizeof(kiln_ext_weight) * weights);
  if (!model->inputs || !model->outputs || !model->symbols ||
      !model->ext_weights)
    return kiln_rtc_oom_status();

  int line = 0, have_header = 0, have_arena = 0, have_device = 0;
  int have_kernels = 0, have_weights = 0;
  token_t tokens[KILN_MAX_TOKENS];
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    ++line;
    size_t count = tokenize(p, eol, tokens, KILN_MAX_TOKENS);
    p = *eol ? eol + 1 : eol;
    if (count == 0)
      continue;
    if (count > KILN_MAX_TOKENS)
      return signature_error(line, "too many fields (rank above 64?)");
    if (!have_header) {
      if (count != 2 || !token_is(tokens[0], "kiln-signature"))
        return signature_error(line, "expected 'kiln-signature <version>'");
      if (!token_is(tokens[1], "1"))
        return kiln_rtc_make_status(
            KILN_STATUS_INCOMPATIBLE,
            "model signature version %.*s is not supported (expected 1)",
            (int)(tokens[1].end - tokens[1].begin), tokens[1].begin);
      have_header = 1;
    } else if (token_is(tokens[0], "arena")) {
      if (count != 2 ||
          !parse_u64(tokens[1].begin, tokens[1].end, &model->arena_size))
        return signature_error(line, "expected 'arena <bytes>'");
      have_arena = 1;
    } else if (token_is(tokens[0], "input")) {
      kiln_status_t *status = parse_value(model, tokens, count, line,
                                          &model->inputs[model->num_inputs]);
      if (status)
        return status;
      ++model->num_inputs;
    } else if (token_is(tokens[0], "output")) {
      kiln_status_t *status = parse_value(model, tokens, count, line,
                                          &model->outputs[model->num_outputs]);
      if (status)
        return status;
      ++model->num_outputs;
    } else if (token_is(tokens[0], "device")) {
      kiln_status_t *status = parse_device(model, tokens, count, line);
      if (status)
        return status;
      if (have_device++)
        return signature_error(line, "second 'device' record");
    } else if (token_is(tokens[0], "kernels") ||
               token_is(tokens[0], "weights")) {
      int kernels = token_is(tokens[0], "kernels");
      uint64_t *value = kernels ? &model->num_kernels : &model->num_weights;
      if (count != 2 || !parse_u64(tokens[1].begin, tokens[1].end, value) ||
          *value > ((uint64_t)1 << 31))
        return signature_error(line, kernels ? "expected 'kernels <count>'"
                                             : "expected 'weights <count>'");
      if ((kernels ? have_kernels++ : have_weights++) != 0)
        return signature_error(line, kernels ? "second 'kernels' record"
                                             : "second 'weights' record");
    } else if (token_is(tokens[0], "weights-file")) {
      kiln_status_t *status = parse_weights_file(model, tokens, count, line);
      if (status)
        return status;
    } else if (token_is(tokens[0], "weight")) {
      kiln_status_t *status =
          parse_weight(model, tokens, count, line,
                       &model->ext_weights[model->num_ext_weights]);
      if (status)
        return status;
      ++model->num_ext_weights;
    } else if (token_is(tokens[0], "graph-capturable")) {
      if (count != 1)
        return signature_error(line, "expected 'graph-capturable'");
      model->graph_capturable = 1;
    } else {
      return signature_error(line, "unknown record");
    }
  }
  if (!have_header)
    return signature_error(line, "missing 'kiln-signature' header");
  (void)have_arena; /* optional: 0 bytes when absent */
  if (model->num_ext_weights > 0 && !model->weights_file)
    return signature_error(line, "'weight' records without 'weights-file'");
  for (size_t i = 0; i < model->num_ext_weights; ++i) {
    const kiln_ext_weight *w = &model->ext_weights[i];
    if (w->offset > model->weights_file_bytes ||
        w->bytes > model->weights_file_bytes - w->offset)
      return kiln_rtc_make_status(
          KILN_STATUS_INCOMPATIBLE,
          "malformed model signature: weight %zu ('%s') lies outside the "
          "weights file",
          i, w->sig.name);
  }
  return NULL;
}

/*===--------------------------------------------------------------------===*
 * External weights (kilnc --external-weights)
 *===--------------------------------------------------------------------===*/

#define KILN_WEIGHTS_HEADER_BYTES 64

static uint64_t read_u64le(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

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

/* The weights file's path: the caller's, KILN_WEIGHTS, or the recorded
 * basename next to the model. */
static char *weights_file_path(const kiln_model_impl *model,
                               const char *model_path,
                               const char *weights_path) {
  const char *chosen = weights_path && *weights_path ? weights_path : NULL;
  if (!chosen) {
    const char *env = getenv("KILN_WEIGHTS");
    if (env && *env)
      chosen = env;
  }
  if (chosen)
    return strdup(chosen);
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
  memcpy(path, model_path, dir_len);
  memcpy(path + dir_len, model->weights_file, strlen(model->weights_file) + 1);
  return path;
}

/* Opens, checks and maps the weights file. */
static kiln_status_t *map_weights(kiln_model_impl *model,
                                  const char *model_path,
                                  const char *weights_path) {
  const char *model_name = model_path ? model_path : "(model)";
  if (model->num_ext_weights == 0) {
    if (weights_path && *weights_path)
      return kiln_rtc_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "model '%s' has no external weights (it was compiled without "
          "--external-weights), but the weights file '%s' was given",
          model_name, weights_path);
    return NULL;
  }
  char *path = weights_file_path(model, model_path, weights_path);
  if (!path)
    return kiln_rtc_oom_status();
  model->weights_path = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return kiln_rtc_make_status(
        err == ENOENT ? KILN_STATUS_NOT_FOUND : KILN_STATUS_INVALID_ARGUMENT,
        "cannot open the weights file '%s' of model '%s': %s (the model was "
        "compiled with --external-weights; point KILN_WEIGHTS or "
        "kiln_model_load_with_weights at its weights file)",
        path, model_name, strerror(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "weights file '%s' is not a regular file",
                                path);
  }
  uint64_t size = (uint64_t)st.st_size;
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
  uint64_t hash = read_u64le(header + 8);
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

static kiln_status_t *model_create(const char *model_path,
                                   const char *weights_path,
                                   kiln_model_impl **out_model) {
  *out_model = NULL;
  kiln_model_impl *model = (kiln_model_impl *)calloc(1, sizeof(*model));
  if (!model)
    return kiln_rtc_oom_status();
  snprintf(model->device_name, sizeof(model->device_name), "cpu");
  kiln_status_t *status = parse_signature(model, kiln_model_signature);
  if (!status)
    status = map_weights(model, model_path, weights_path);
  if (!status && model->device != KILN_DEVICE_CPU &&
      model->device != KILN_DEVICE_CUDA)
    status = kiln_rtc_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "model compiled for device '%s': this runtime runs cpu and cuda "
        "models",
        model->device_name);
  if (!status && model->device == KILN_DEVICE_CUDA)
    status = kiln_cuda_model_create(model);
  if (status) {
    model_destroy(model);
    return status;
  }
  *out_model = model;
  return NULL;
}

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
  if (instance->cuda)
    kiln_cuda_instance_destroy(instance);
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
                                      kiln_instance_impl **out_instance) {
  *out_instance = NULL;
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
  /* A cuda model's arena is device memory (kiln_cuda_instance_create). */
  int host_arena = model->device == KILN_DEVICE_CPU;
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
  if (model->device == KILN_DEVICE_CUDA) {
    kiln_status_t *status = kiln_cuda_instance_create(instance);
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

static void *scratch_alloc(kiln_rt_ctx *ctx, size_t bytes) {
  kiln_instance_impl *instance = ctx->instance;
  kiln_scratch *best =
      kiln_rt_scratch_find(instance->scratch, instance->num_scratch, bytes);
  if (best) {
    best->in_use = 1;
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
  s->in_use = 1;
  return ptr;
}

/* Ends a run: keeps the buffers this run used for the next one and frees
 * the others, so the cache tracks the latest working set. */
static void scratch_end_run(kiln_instance_impl *instance) {
  size_t kept = 0;
  for (size_t i = 0; i < instance->num_scratch; ++i) {
    kiln_scratch s = instance->scratch[i];
    if (!s.in_use) {
      free(s.ptr);
      continue;
    }
    s.in_use = 0;
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

/* Defined by generated code when kiln-hoist-weight-kernels moved kernels
 * that depend only on weights out of kiln_model_main (ModelABI.h). */
extern int32_t kiln_model_init(kiln_rt_ctx *ctx)
    __attribute__((weak, visibility("hidden")));

int32_t kiln_rt_run_program(kiln_rt_ctx *ctx) {
  kiln_instance_impl *instance = ctx->instance;
  if (kiln_model_init && !instance->initialized) {
    int32_t rc = kiln_model_init(ctx);
    if (rc != 0 || ctx->failed)
      return rc != 0 ? rc : 1;
    instance->initialized = 1;
  }
  return kiln_model_main(ctx);
}

static kiln_status_t *instance_run(kiln_instance_impl *instance,
                                   const kiln_tensor_view_t *inputs,
                                   size_t num_inputs,
                                   kiln_tensor_t **out_outputs,
                                   size_t num_outputs) {
  kiln_model_impl *model = instance->model;
  if (out_outputs)
    for (size_t i = 0; i < num_outputs; ++i)
      out_outputs[i] = NULL;
  kiln_status_t *status = check_run(instance, inputs, num_inputs, out_outputs,
                                    num_outputs, "out_outputs");
  if (status)
    return status;
  if (model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_run(instance, inputs, NULL, out_outputs);

  kiln_rt_ctx ctx;
  ctx.instance = instance;
  ctx.inputs = inputs;
  ctx.output_views = NULL;
  ctx.failed = 0;
  ctx.code = KILN_STATUS_OK;
  ctx.reason[0] = '\0';
  for (size_t i = 0; i < model->num_outputs; ++i)
    instance->outputs[i] = NULL;

  status = prepare_inputs(&ctx);
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
  for (size_t i = 0; i < num_outputs; ++i) {
    out_outputs[i] = instance->outputs[i];
    instance->outputs[i] = NULL;
  }
  return NULL;
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
  if (model->device != KILN_DEVICE_CUDA)
    return kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "kiln_instance_run_device: the model runs on the %s, not on a device; "
        "use kiln_instance_run",
        model->device_name);
  kiln_status_t *status =
      check_run(instance, inputs, num_inputs, outputs, num_outputs, "outputs");
  if (!status)
    status = validate_output_views(instance, outputs);
  if (status)
    return status;
  return kiln_cuda_run(instance, inputs, outputs, NULL);
}

static kiln_status_t *not_cuda(kiln_instance_impl *instance, const char *call) {
  return kiln_rtc_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "%s: the model runs on the %s, not on a CUDA "
                              "device",
                              call, instance->model->device_name);
}

static kiln_status_t *instance_set_cuda_stream(kiln_instance_impl *instance,
                                               void *stream) {
  if (instance->model->device != KILN_DEVICE_CUDA)
    return not_cuda(instance, "kiln_instance_set_cuda_stream");
  return kiln_cuda_set_stream(instance, stream);
}

static kiln_status_t *instance_set_cuda_graphs(kiln_instance_impl *instance,
                                               int enable) {
  if (instance->model->device != KILN_DEVICE_CUDA)
    return not_cuda(instance, "kiln_instance_set_cuda_graphs");
  return kiln_cuda_set_graphs(instance, enable);
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
  if (ctx->instance->model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_input(ctx, index);
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
  if (instance->model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_output(ctx, index, dims);
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
  if (ctx->instance->model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_arena(ctx);
  return ctx->instance->arena;
}

void *kiln_rt_alloc(kiln_rt_ctx *ctx, int64_t bytes) {
  if (bytes < 0) {
    kiln_rt_fail(ctx, KILN_STATUS_INTERNAL, "kiln_rt_alloc: negative size %lld",
                 (long long)bytes);
    return NULL;
  }
  if (ctx->instance->model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_alloc(ctx, (size_t)bytes);
  void *ptr = (uint64_t)bytes > ((uint64_t)1 << 62)
                  ? NULL
                  : scratch_alloc(ctx, (size_t)bytes);
  if (!ptr)
    kiln_rt_fail(ctx, KILN_STATUS_RESOURCE_EXHAUSTED,
                 "out of memory allocating a %lld-byte scratch buffer",
                 (long long)bytes);
  return ptr;
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
  if (ctx->instance->model->device == KILN_DEVICE_CUDA)
    return kiln_cuda_external_weight(ctx, index);
  /* Kernels only read weights; the mapping is read-only. */
  return (void *)kiln_rt_ext_weight_host(ctx, index);
}

void kiln_rt_launch_cpu(kiln_rt_ctx *ctx, void (*kernel)(void **args),
                        void **args) {
  /* After a failure a buffer may be NULL: skip the remaining kernels. */
  if (ctx->failed)
    return;
  kernel(args);
}

/*===--------------------------------------------------------------------===*
 * The exported table
 *===--------------------------------------------------------------------===*/

static const kiln_model_api_v1_table kApiTable = {
    KILN_MODEL_ABI_VERSION,
    sizeof(kiln_model_api_v1_table),
    model_create,
    model_destroy,
    num_inputs,
    num_outputs,
    input_info,
    output_info,
    arena_size,
    instance_create,
    instance_destroy,
    instance_run,
    device_name,
    instance_set_cuda_stream,
    instance_set_cuda_graphs,
    instance_run_device,
    weights_path,
};

__attribute__((visibility("default"))) const kiln_model_api_v1_table *
kiln_model_api_v1(void) {
  return &kApiTable;
}
