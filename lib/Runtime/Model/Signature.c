/*===- Signature.c - Parses the signature the generated code embeds -------===*
 *
 * kiln_model_signature (kiln/Runtime/ModelABI.h) into the model's value
 * signatures, device records and external-weight records. Every failure is
 * an INCOMPATIBLE status naming the line.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_rt_meta_free(kiln_model_impl *model) {
  for (kiln_meta_block *block = model->meta; block;) {
    kiln_meta_block *next = block->next;
    free(block);
    block = next;
  }
  model->meta = NULL;
}

void *kiln_rt_meta_alloc(kiln_model_impl *model, size_t bytes) {
  kiln_meta_block *block =
      (kiln_meta_block *)calloc(1, sizeof(kiln_meta_block) + bytes + 1);
  if (!block)
    return NULL;
  block->next = model->meta;
  model->meta = block;
  return block->align;
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
  char *out = (char *)kiln_rt_meta_alloc(model, (size_t)(end - begin) + 1);
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
  value->dims = (int64_t *)kiln_rt_meta_alloc(model, sizeof(int64_t) * rank);
  value->dim_symbols =
      (const char **)kiln_rt_meta_alloc(model, sizeof(char *) * rank);
  value->symbol_ids =
      (int32_t *)kiln_rt_meta_alloc(model, sizeof(int32_t) * rank);
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

/* device <kind> [<chip>]: "cpu", or a device kind and its chip. Whether a
 * driver runs the kind is model_create's question (kiln_dev_model_create). */
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
  if (kind_len + 1 > sizeof(model->device_kind))
    return signature_error(line, "device kind too long");
  memcpy(model->device_kind, tokens[1].begin, kind_len);
  model->device_kind[kind_len] = '\0';
  if (token_is(tokens[1], "cpu")) {
    if (count != 2)
      return signature_error(line, "device 'cpu' takes no chip");
    model->on_device = 0;
  } else {
    if (count != 3) {
      char what[64];
      snprintf(what, sizeof(what), "device '%s' needs a chip",
               model->device_kind);
      return signature_error(line, what);
    }
    model->on_device = 1;
  }
  return NULL;
}

/* launch <site> <kernel> [<node>,<node>...]: site `model->num_sites`. */
static kiln_status_t *parse_launch(kiln_model_impl *model, token_t *tokens,
                                   size_t count, int line) {
  uint64_t site = 0;
  if (count < 3 || count > 4 ||
      !parse_u64(tokens[1].begin, tokens[1].end, &site))
    return signature_error(line, "expected 'launch <site> <kernel> [<nodes>]'");
  if (site != model->num_sites)
    return signature_error(line, "launch sites out of order");
  kiln_launch_site *entry = &model->sites[model->num_sites];
  int malformed = 0;
  entry->kernel =
      decode_name(model, tokens[2].begin, tokens[2].end, &malformed);
  if (!entry->kernel)
    return malformed ? signature_error(line, "bad %XX escape in kernel name")
                     : kiln_rtc_oom_status();
  size_t nodes = 0;
  if (count == 4) {
    nodes = 1;
    for (const char *p = tokens[3].begin; p < tokens[3].end; ++p)
      nodes += *p == ',';
  }
  entry->nodes =
      (const char **)kiln_rt_meta_alloc(model, sizeof(char *) * (nodes + 1));
  if (!entry->nodes)
    return kiln_rtc_oom_status();
  const char *begin = count == 4 ? tokens[3].begin : NULL;
  for (size_t i = 0; i < nodes; ++i) {
    const char *end = begin;
    while (end < tokens[3].end && *end != ',')
      ++end;
    if (end == begin)
      return signature_error(line, "empty node name");
    entry->nodes[i] = decode_name(model, begin, end, &malformed);
    if (!entry->nodes[i])
      return malformed ? signature_error(line, "bad %XX escape in node name")
                       : kiln_rtc_oom_status();
    begin = end + 1;
  }
  entry->num_nodes = nodes;
  ++model->num_sites;
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

kiln_status_t *kiln_rt_parse_signature(kiln_model_impl *model,
                                       const char *text) {
  /* First pass: count records and an upper bound of symbols, with the
   * tokenizer of the second, so both passes see the same records. */
  size_t inputs = 0, outputs = 0, weights = 0, launches = 0, max_symbols = 0;
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    token_t first;
    if (tokenize(p, eol, &first, 1) > 0) {
      inputs += token_is(first, "input");
      outputs += token_is(first, "output");
      weights += token_is(first, "weight");
      launches += token_is(first, "launch");
    }
    for (const char *q = p; q < eol; ++q)
      max_symbols += *q == '?';
    p = *eol ? eol + 1 : eol;
  }
  model->inputs = (kiln_value_sig *)kiln_rt_meta_alloc(
      model, sizeof(kiln_value_sig) * inputs);
  model->outputs = (kiln_value_sig *)kiln_rt_meta_alloc(
      model, sizeof(kiln_value_sig) * outputs);
  model->symbols =
      (const char **)kiln_rt_meta_alloc(model, sizeof(char *) * max_symbols);
  model->ext_weights = (kiln_ext_weight *)kiln_rt_meta_alloc(
      model, sizeof(kiln_ext_weight) * weights);
  model->sites = (kiln_launch_site *)kiln_rt_meta_alloc(
      model, sizeof(kiln_launch_site) * launches);
  if (!model->inputs || !model->outputs || !model->symbols ||
      !model->ext_weights || !model->sites)
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
      if (model->num_inputs == inputs)
        return signature_error(line, "more 'input' records than counted");
      kiln_status_t *status = parse_value(model, tokens, count, line,
                                          &model->inputs[model->num_inputs]);
      if (status)
        return status;
      ++model->num_inputs;
    } else if (token_is(tokens[0], "output")) {
      if (model->num_outputs == outputs)
        return signature_error(line, "more 'output' records than counted");
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
      if (model->num_ext_weights == weights)
        return signature_error(line, "more 'weight' records than counted");
      kiln_status_t *status =
          parse_weight(model, tokens, count, line,
                       &model->ext_weights[model->num_ext_weights]);
      if (status)
        return status;
      ++model->num_ext_weights;
    } else if (token_is(tokens[0], "launch")) {
      if (model->num_sites == launches)
        return signature_error(line, "more 'launch' records than counted");
      kiln_status_t *status = parse_launch(model, tokens, count, line);
      if (status)
        return status;
    } else if (token_is(tokens[0], "cpu")) {
      if (count < 2)
        return signature_error(line, "expected 'cpu <name> <feature>...'");
      if (model->cpu_name)
        return signature_error(line, "second 'cpu' record");
      char *name = (char *)kiln_rt_meta_alloc(
          model, (size_t)(tokens[1].end - tokens[1].begin) + 1);
      const char *rest_begin = count > 2 ? tokens[2].begin : tokens[1].end;
      const char *rest_end = tokens[count - 1].end;
      char *features = (char *)kiln_rt_meta_alloc(
          model, (size_t)(rest_end - rest_begin) + 1);
      if (!name || !features)
        return kiln_rtc_oom_status();
      memcpy(name, tokens[1].begin, (size_t)(tokens[1].end - tokens[1].begin));
      memcpy(features, rest_begin, (size_t)(rest_end - rest_begin));
      model->cpu_name = name;
      model->cpu_features = features;
    } else if (token_is(tokens[0], "graph-capturable")) {
      if (count != 1)
        return signature_error(line, "expected 'graph-capturable'");
      model->graph_capturable = 1;
    } else if (token_is(tokens[0], "dependent-launch")) {
      if (count != 1)
        return signature_error(line, "expected 'dependent-launch'");
      model->dependent_launch = 1;
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
