/* Checks, for one float divisor c, the correctly rounded quotient by a
   constant without a division (docs/int8.md, "a cheaper epilogue"):
     r  = RN(1 / c)                 (computed once, at compile time)
     q0 = RN(x * r)
     q1 = fma(fma(-q0, c, x), r, q0)
   against x / c for every finite float x whose quotient is normal or zero
   (4.2 billion values, about a minute on one core). It prints how many
   differ and the largest quotient among them; with fused multiply-add the
   differences are where the residual fma(-q0, c, x) underflows (quotients
   near the bottom of the normal range).

     gcc -O2 -march=native utils/constant_division_check.c -o check -lm
     ./check 1.41421356237      # GELU's x / sqrt(2)
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIVISOR\n", argv[0]);
    return 2;
  }
  char *end = 0;
  float c = strtof(argv[1], &end);
  if (*end || !isnormal(c)) {
    fprintf(stderr, "%s: '%s' is not a normal float\n", argv[0], argv[1]);
    return 2;
  }
  float r = (float)(1.0 / (double)c);
  uint64_t bad = 0, checked = 0;
  float maxbad = 0;
  for (uint64_t i = 0; i < (1ull << 32); ++i) {
    uint32_t u = (uint32_t)i;
    float x;
    memcpy(&x, &u, 4);
    if (!isfinite(x))
      continue;
    float want = x / c;
    if (!isnormal(want) && want != 0.0f)
      continue;
    float q0 = x * r;
    float q1 = fmaf(fmaf(-q0, c, x), r, q0);
    ++checked;
    if (q1 != want) {
      if (fabsf(want) > maxbad)
        maxbad = fabsf(want);
      ++bad;
    }
  }
  printf("c=%a (%g) r=%a: %llu checked, %llu differ, largest differing "
         "quotient %a\n",
         c, c, r, (unsigned long long)checked, (unsigned long long)bad, maxbad);
  return bad != 0;
}
