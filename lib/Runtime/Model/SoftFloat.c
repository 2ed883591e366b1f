/*===- SoftFloat.c - f16/bf16 conversion helpers for model.so -------------===*
 *
 * LLVM lowers conversions to and from half and bfloat on x86-64-v2 (no F16C)
 * to calls of compiler-rt's helpers; model.so links only libc, so they are
 * provided here: round to nearest even, NaNs stay NaNs (quiet, sign and the
 * top payload bits kept), overflow gives infinity, underflow subnormals/zero.
 * Bits are moved with memcpy; no float arithmetic is involved.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <string.h>

/* Narrows the IEEE double with bits `a` to a 16-bit float with `eb`
 * exponent and `mb` mantissa bits. */
static uint16_t narrow(uint64_t a, int eb, int mb) {
  uint16_t sign = (uint16_t)((a >> 63) << (eb + mb));
  uint64_t exp = (a >> 52) & 0x7ff;
  uint64_t man = a & ((UINT64_C(1) << 52) - 1);
  uint16_t inf = (uint16_t)(((1u << eb) - 1) << mb);
  if (exp == 0x7ff) {
    if (man == 0)
      return sign | inf;
    return sign | inf | (uint16_t)(1u << (mb - 1)) |
           (uint16_t)(man >> (52 - mb));
  }
  if (exp == 0) /* zero or a double subnormal: far below the target's range */
    return sign;
  int64_t bias = (1 << (eb - 1)) - 1;
  int64_t e = (int64_t)exp - 1023 + bias; /* target biased exponent */
  uint64_t full = man | (UINT64_C(1) << 52);
  int64_t shift = 52 - mb;
  if (e < 1) { /* subnormal result */
    shift += 1 - e;
    e = 0;
  }
  if (shift > 62)
    return sign;
  uint64_t kept = full >> shift;
  uint64_t rem = full & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (kept & 1)))
    ++kept;
  /* For normals `kept` holds the implicit bit at `mb`: adding (e - 1) << mb
   * places the exponent, and a rounding carry bumps it. */
  uint64_t r = e > 0 ? ((uint64_t)(e - 1) << mb) + kept : kept;
  if (r >= inf)
    return sign | inf;
  return sign | (uint16_t)r;
}

static uint64_t bitsOfDouble(double d) {
  uint64_t a;
  memcpy(&a, &d, sizeof a);
  return a;
}

static uint64_t bitsOfFloat(float f) {
  /* float -> double is exact (NaN payload kept in the top bits). */
  uint32_t a;
  memcpy(&a, &f, sizeof a);
  uint64_t sign = (uint64_t)(a >> 31) << 63;
  uint32_t exp = (a >> 23) & 0xff, man = a & 0x7fffff;
  if (exp == 0xff)
    return sign | (UINT64_C(0x7ff) << 52) | ((uint64_t)man << 29);
  if (exp == 0) {
    if (man == 0)
      return sign;
    /* Normalize the float subnormal. */
    int e = -126;
    while (!(man & 0x800000)) {
      man <<= 1;
      --e;
    }
    man &= 0x7fffff;
    return sign | ((uint64_t)(e + 1023) << 52) | ((uint64_t)man << 29);
  }
  return sign | ((uint64_t)(exp - 127 + 1023) << 52) | ((uint64_t)man << 29);
}

static float floatOfBits(uint32_t a) {
  float f;
  memcpy(&f, &a, sizeof f);
  return f;
}

static _Float16 halfOf(uint16_t h) {
  _Float16 r;
  memcpy(&r, &h, sizeof r);
  return r;
}

static __bf16 bfloatOf(uint16_t h) {
  __bf16 r;
  memcpy(&r, &h, sizeof r);
  return r;
}

_Float16 __truncsfhf2(float a) { return halfOf(narrow(bitsOfFloat(a), 5, 10)); }
_Float16 __truncdfhf2(double a) {
  return halfOf(narrow(bitsOfDouble(a), 5, 10));
}
__bf16 __truncsfbf2(float a) { return bfloatOf(narrow(bitsOfFloat(a), 8, 7)); }
__bf16 __truncdfbf2(double a) {
  return bfloatOf(narrow(bitsOfDouble(a), 8, 7));
}

/* half -> float is exact. */
float __extendhfsf2(_Float16 a) {
  uint16_t h;
  memcpy(&h, &a, sizeof h);
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f)
    return floatOfBits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return floatOfBits(sign);
    int e = -14;
    while (!(man & 0x400)) {
      man <<= 1;
      --e;
    }
    man &= 0x3ff;
    return floatOfBits(sign | ((uint32_t)(e + 127) << 23) | (man << 13));
  }
  return floatOfBits(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

double __extendhfdf2(_Float16 a) { return (double)__extendhfsf2(a); }

/* Some LLVM versions spell the f32 -> f16 helper this way. */
uint16_t __gnu_f2h_ieee(float a) { return narrow(bitsOfFloat(a), 5, 10); }
float __gnu_h2f_ieee(uint16_t a) { return __extendhfsf2(halfOf(a)); }
