/*===- Common.c - Helpers shared by the loader and model runtime ----------===*/
#include "kiln/Runtime/Common.h"
#include "kiln/Runtime/RegularFile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Same layout as struct kiln_status, with room for the message. Never
 * written: kiln_status_free skips it (is_static). */
static struct {
  int32_t code;
  int32_t is_static;
  char message[16];
} kOomStatus = {KILN_STATUS_RESOURCE_EXHAUSTED, 1, "out of memory"};

kiln_status_t *kiln_rtc_oom_status(void) {
  return (kiln_status_t *)(void *)&kOomStatus;
}

kiln_status_t *kiln_rtc_make_status_v(kiln_status_code_t code,
                                      const char *format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int len = vsnprintf(NULL, 0, format, copy);
  va_end(copy);
  if (len < 0)
    len = 0;
  kiln_status_t *status =
      (kiln_status_t *)malloc(sizeof(kiln_status_t) + (size_t)len + 1);
  if (!status)
    return kiln_rtc_oom_status();
  status->code = code == KILN_STATUS_OK ? KILN_STATUS_INTERNAL : code;
  status->is_static = 0;
  vsnprintf(status->message, (size_t)len + 1, format, args);
  return status;
}

kiln_status_t *kiln_rtc_make_status(kiln_status_code_t code, const char *format,
                                    ...) {
  va_list args;
  va_start(args, format);
  kiln_status_t *status = kiln_rtc_make_status_v(code, format, args);
  va_end(args);
  return status;
}

static const struct {
  const char *name;
  size_t size;
} kDtypes[] = {
    {"invalid", 0}, {"f16", 2},        {"bf16", 2},     {"f32", 4},
    {"f64", 8},     {"i8", 1},         {"i16", 2},      {"i32", 4},
    {"i64", 8},     {"u8", 1},         {"u16", 2},      {"u32", 4},
    {"u64", 8},     {"bool", 1},       {"f8e4m3fn", 1}, {"f8e4m3fnuz", 1},
    {"f8e5m2", 1},  {"f8e5m2fnuz", 1},
};
#define KILN_NUM_DTYPES (sizeof(kDtypes) / sizeof(kDtypes[0]))

const char *kiln_rtc_dtype_name(kiln_dtype_t dtype) {
  if ((unsigned)dtype >= KILN_NUM_DTYPES)
    return "invalid";
  return kDtypes[dtype].name;
}

size_t kiln_rtc_dtype_size(kiln_dtype_t dtype) {
  if ((unsigned)dtype >= KILN_NUM_DTYPES)
    return 0;
  return kDtypes[dtype].size;
}

kiln_dtype_t kiln_rtc_dtype_from_name(const char *name, size_t len) {
  for (unsigned i = 1; i < KILN_NUM_DTYPES; ++i)
    if (strlen(kDtypes[i].name) == len &&
        memcmp(kDtypes[i].name, name, len) == 0)
      return (kiln_dtype_t)i;
  return KILN_DTYPE_INVALID;
}

size_t kiln_rtc_num_elements(size_t rank, const int64_t *dims, int *overflow) {
  size_t n = 1;
  *overflow = 0;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0 || __builtin_mul_overflow(n, (size_t)dims[i], &n)) {
      *overflow = 1;
      return 0;
    }
  }
  return n;
}

void *kiln_rtc_aligned_alloc(size_t bytes) {
  if (bytes > ((size_t)1 << 62))
    return NULL;
  bytes = (bytes + KILN_ALIGNMENT - 1) & ~(size_t)(KILN_ALIGNMENT - 1);
  if (bytes == 0)
    bytes = KILN_ALIGNMENT;
  void *ptr = NULL;
  if (posix_memalign(&ptr, KILN_ALIGNMENT, bytes) != 0)
    return NULL;
  return ptr;
}

kiln_tensor_t *kiln_rtc_tensor_create(kiln_dtype_t dtype, size_t rank,
                                      const int64_t *dims,
                                      kiln_status_t **out_status) {
  return kiln_rtc_tensor_create_named(dtype, rank, dims, NULL, out_status);
}

kiln_tensor_t *kiln_rtc_tensor_create_named(kiln_dtype_t dtype, size_t rank,
                                            const int64_t *dims,
                                            const char *name,
                                            kiln_status_t **out_status) {
  size_t elem = kiln_rtc_dtype_size(dtype);
  if (elem == 0) {
    *out_status = kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                       "invalid dtype %d", (int)dtype);
    return NULL;
  }
  if (rank > 0 && !dims) {
    *out_status = kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                       "dims is NULL for rank %zu", rank);
    return NULL;
  }
  if (rank > 4096) {
    *out_status = kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                       "rank %zu is too large", rank);
    return NULL;
  }
  int overflow = 0;
  size_t count = kiln_rtc_num_elements(rank, dims, &overflow);
  size_t bytes = 0;
  if (overflow || __builtin_mul_overflow(count, elem, &bytes)) {
    *out_status = kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "tensor dims are negative or their product overflows");
    return NULL;
  }
  size_t name_len = name ? strlen(name) : 0;
  kiln_tensor_t *tensor = (kiln_tensor_t *)malloc(
      sizeof(kiln_tensor_t) + rank * sizeof(int64_t) + name_len + 1);
  if (!tensor) {
    *out_status = kiln_rtc_oom_status();
    return NULL;
  }
  tensor->data = kiln_rtc_aligned_alloc(bytes);
  if (!tensor->data) {
    free(tensor);
    *out_status = kiln_rtc_make_status(
        KILN_STATUS_RESOURCE_EXHAUSTED,
        "out of memory allocating a %zu-byte tensor", bytes);
    return NULL;
  }
  tensor->dtype = dtype;
  tensor->rank = rank;
  tensor->dims = (int64_t *)(tensor + 1);
  if (rank)
    memcpy(tensor->dims, dims, rank * sizeof(int64_t));
  char *name_copy = (char *)(tensor->dims + rank);
  if (name_len)
    memcpy(name_copy, name, name_len);
  name_copy[name_len] = '\0';
  tensor->name = name_copy;
  tensor->num_elements = count;
  tensor->byte_size = bytes;
  *out_status = NULL;
  return tensor;
}

void kiln_rtc_tensor_free(kiln_tensor_t *tensor) {
  if (!tensor)
    return;
  free(tensor->data);
  free(tensor);
}

uint32_t kiln_rtc_crc32(uint32_t crc, const void *bytes, size_t size) {
  static uint32_t table[256];
  static int ready;
  if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
    /* Idempotent: racing threads write the same values. */
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      __atomic_store_n(&table[i], c, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
  }
  const unsigned char *p = (const unsigned char *)bytes;
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint64_t kiln_rtc_load_u64le(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

/* The header (docs/runtime.md, "External weights"): magic, layout hash,
 * file size, weight count, CRC-32 of bytes [64, size), flags (bit 0: the
 * CRC is present). */
kiln_status_t *kiln_rtc_verify_weights_file(const char *path) {
  enum { kHeader = 64 };
  uint64_t size = 0;
  const char *why = NULL;
  int fd = kiln_open_regular_file(path, &size, &why);
  if (fd < 0)
    return kiln_rtc_make_status(
        fd == -1 && errno == ENOENT ? KILN_STATUS_NOT_FOUND
                                    : KILN_STATUS_INVALID_ARGUMENT,
        "cannot verify weights file '%s': %s", path, why);
  unsigned char header[kHeader];
  kiln_status_t *status = NULL;
  if (size < kHeader || kiln_read_file_range(fd, 0, kHeader, header, &why)) {
    status = kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is truncated: %llu bytes, less than its header",
        path, (unsigned long long)size);
  } else if (memcmp(header, "KILNWTS1", 8) != 0) {
    status = kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                  "'%s' is not a Kiln weights file (no "
                                  "magic 'KILNWTS1')",
                                  path);
  } else if (kiln_rtc_load_u64le(header + 16) != size) {
    status = kiln_rtc_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "weights file '%s' is damaged: its header gives a size of %llu "
        "bytes, the file has %llu",
        path, (unsigned long long)kiln_rtc_load_u64le(header + 16),
        (unsigned long long)size);
  } else if (!(header[36] & 1)) {
    status = kiln_rtc_make_status(
        KILN_STATUS_FAILED_PRECONDITION,
        "weights file '%s' has no checksum (written before checksums; "
        "rewrite it with kilnc --external-weights or "
        "utils/models/fill_weights.py)",
        path);
  } else {
    uint32_t want = (uint32_t)header[32] | (uint32_t)header[33] << 8 |
                    (uint32_t)header[34] << 16 | (uint32_t)header[35] << 24;
    uint32_t crc = 0;
    enum { kChunk = 1 << 20 };
    unsigned char *chunk = (unsigned char *)malloc(kChunk);
    if (!chunk)
      status = kiln_rtc_oom_status();
    for (uint64_t at = kHeader; at < size && !status;) {
      uint64_t n = size - at < kChunk ? size - at : kChunk;
      if (kiln_read_file_range(fd, at, n, chunk, &why))
        status = kiln_rtc_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                      "cannot read weights file '%s': %s", path,
                                      why);
      else
        crc = kiln_rtc_crc32(crc, chunk, (size_t)n);
      at += n;
    }
    free(chunk);
    if (!status && crc != want)
      status = kiln_rtc_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "weights file '%s' is corrupt: the CRC-32 of its data is %08x, its "
          "header records %08x",
          path, crc, want);
  }
  close(fd);
  return status;
}
