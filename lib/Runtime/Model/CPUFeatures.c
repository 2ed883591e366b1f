/*===- CPUFeatures.c - The CPU features a model's code needs --------------===*
 *
 * kilnc records in the signature's `cpu-features` record the instruction
 * set extensions the model's code may use (lib/Target/CPU/CPUMachine.cpp,
 * the same names); model_create refuses, with an INCOMPATIBLE status naming
 * what is missing, to run it on a CPU (or an OS that does not save the
 * registers) without one of them. Read from cpuid and xgetbv here, not
 * from a compiler's builtins, whose tables differ between compilers;
 * KILN_CPU_DISABLE lists features to treat as absent. AMX's tile data is
 * state Linux saves only for processes that ask for it: checking amx-tile
 * asks (arch_prctl ARCH_REQ_XCOMP_PERM), and a refusal makes it absent.
 *===----------------------------------------------------------------------===*/
#include "ModelRuntime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

typedef struct {
  const char *name;
  unsigned leaf, subleaf;
  int reg; /* 0 eax, 1 ebx, 2 ecx, 3 edx */
  unsigned bit;
  int state; /* 0: none, 1: AVX (ymm) state, 2: AVX-512 (zmm, k) state,
                3: AMX (tile configuration and data) state */
} feature_bit;

static const feature_bit kFeatures[] = {
    {"sse4.2", 1, 0, 2, 20, 0},
    {"popcnt", 1, 0, 2, 23, 0},
    {"avx", 1, 0, 2, 28, 1},
    {"fma", 1, 0, 2, 12, 1},
    {"f16c", 1, 0, 2, 29, 1},
    {"movbe", 1, 0, 2, 22, 0},
    {"avx2", 7, 0, 1, 5, 1},
    {"bmi", 7, 0, 1, 3, 0},
    {"bmi2", 7, 0, 1, 8, 0},
    {"avx512f", 7, 0, 1, 16, 2},
    {"avx512dq", 7, 0, 1, 17, 2},
    {"avx512cd", 7, 0, 1, 28, 2},
    {"avx512bw", 7, 0, 1, 30, 2},
    {"avx512vl", 7, 0, 1, 31, 2},
    {"avx512vnni", 7, 0, 2, 11, 2},
    {"avx512fp16", 7, 0, 3, 23, 2},
    {"avx512bf16", 7, 1, 0, 5, 2},
    {"avxvnni", 7, 1, 0, 4, 1},
    {"amx-tile", 7, 0, 3, 24, 3},
    {"amx-int8", 7, 0, 3, 25, 3},
    {"lzcnt", 0x80000001u, 0, 2, 5, 0},
};

/* Whether this process may use AMX's tile data: enabled in XCR0, and on
 * Linux granted on request (once per process; asking again is harmless). */
static int amx_state(unsigned long long xcr0) {
  if ((xcr0 & 0x60000ull) != 0x60000ull)
    return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
  const long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) != 0)
    return 0;
#endif
  return 1;
}

static unsigned long long xgetbv0(void) {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

/* 1: present, 0: absent, -1: a name this runtime does not know. */
static int has_feature(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof(kFeatures) / sizeof(kFeatures[0]); ++i) {
    const feature_bit *f = &kFeatures[i];
    if (strlen(f->name) != len || memcmp(f->name, name, len) != 0)
      continue;
    unsigned regs[4] = {0, 0, 0, 0};
    unsigned max = __get_cpuid_max(f->leaf & 0x80000000u, NULL);
    if (max < f->leaf || !__get_cpuid_count(f->leaf, f->subleaf, &regs[0],
                                            &regs[1], &regs[2], &regs[3]))
      return 0;
    if (!((regs[f->reg] >> f->bit) & 1))
      return 0;
    if (f->state) {
      unsigned a, b, c, d;
      if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1))
        return 0; /* no OSXSAVE: the OS saves no vector state */
      unsigned long long xcr0 = xgetbv0();
      if ((xcr0 & 0x6) != 0x6)
        return 0;
      if (f->state == 2 && (xcr0 & 0xe0) != 0xe0)
        return 0;
      if (f->state == 3 && !amx_state(xcr0))
        return 0;
    }
    return 1;
  }
  return -1;
}
#else
static int has_feature(const char *name, size_t len) { return -1; }
#endif

/* Whether `name` is listed in KILN_CPU_DISABLE (comma- or space-separated):
 * features to treat as absent, to check a portable build on a machine that
 * has more. */
static int disabled(const char *name, size_t len) {
  const char *list = getenv("KILN_CPU_DISABLE");
  if (!list)
    return 0;
  for (const char *p = list; *p;) {
    while (*p == ',' || *p == ' ')
      ++p;
    const char *begin = p;
    while (*p && *p != ',' && *p != ' ')
      ++p;
    if ((size_t)(p - begin) == len && memcmp(begin, name, len) == 0)
      return 1;
  }
  return 0;
}

kiln_status_t *kiln_rt_check_cpu_features(const kiln_model_impl *model) {
  const char *p = model->cpu_features;
  if (!p)
    return NULL;
  char missing[256] = "";
  size_t used = 0;
  while (*p) {
    while (*p == ' ')
      ++p;
    const char *begin = p;
    while (*p && *p != ' ')
      ++p;
    size_t len = (size_t)(p - begin);
    if (!len)
      continue;
    int has = has_feature(begin, len);
    if (has > 0 && disabled(begin, len))
      has = 0;
    if (has < 0)
      return kiln_rtc_make_status(
          KILN_STATUS_INCOMPATIBLE,
          "the model needs the CPU feature '%.*s', which this runtime "
          "cannot check; recompile it with a matching kilnc",
          (int)len, begin);
    if (!has && used + len + 3 < sizeof(missing)) {
      used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%.*s",
                               used ? ", " : "", (int)len, begin);
    }
  }
  if (used)
    return kiln_rtc_make_status(
        KILN_STATUS_INCOMPATIBLE,
        "the model was compiled for CPU '%s' and needs %s, which this CPU "
        "lacks; recompile it for this machine (kilnc --target=cpu) or for a "
        "portable baseline (--target=cpu:x86-64-v2)",
        model->cpu_name, missing);
  return NULL;
}
