//===- CPUTarget.h - Kernels vectorized and threaded on the host -*- C++ -*-===//
//
// The pieces of the `cpu` row of the target table (lib/Target/Registry.cpp):
// its chips (`host`, the default, and the named architectures of
// CPUMachine.cpp's table), the machine each one means (LLVM's CPU name and
// features, the features the model then needs at run time, the widest
// vector), and the codegen passes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_CPU_CPUTARGET_H
#define KILN_TARGET_CPU_CPUTARGET_H

#include "kiln/Target/Target.h"

#include <string>
#include <vector>

namespace mlir::kiln {

/// What code for one CPU may use.
struct CPUMachine {
  /// LLVM's CPU name ("sapphirerapids", "x86-64-v3").
  std::string cpu;
  /// LLVM's feature string ("+avx2,+fma,-avx512f,...", empty for the CPU's
  /// own).
  std::string features;
  /// The features the code may use that the model runtime checks before it
  /// runs (cpuid names: avx2, fma, f16c, avx512f, avx512bf16, ...).
  std::vector<std::string> requires_;
  /// Widest vector register in bits (128, 256 or 512).
  unsigned vectorBits = 128;
  /// Half conversions in hardware (F16C), bf16 dot products (AVX512-BF16).
  bool f16c = false, bf16 = false;
  /// uint8 x int8 dot products at `vectorBits` (`vpdpbusd`: AVX512-VNNI for
  /// 512-bit vectors, AVX-VNNI for 256).
  bool int8Dot = false;
  /// uint8 x int8 tile products (AMX-INT8, `tdpbusd`; with int8Dot).
  bool int8Tiles = false;
  /// Data caches per core, in bytes: this machine's (Linux's
  /// /sys/devices/system/cpu/cpu0/cache) for `host`, the chip's for a
  /// named one (a table in CPUMachine.cpp; the x86-64 levels take sizes
  /// most CPUs of the level have at least).
  int64_t l1Bytes = 32 * 1024, l2Bytes = 1024 * 1024;
};

/// The chips of --target=cpu:<chip>: `host` (this machine's CPU) first.
ArrayRef<StringRef> getCPUChips();
/// The machine of a chip of getCPUChips() (`host`: the CPU this compiler
/// runs on, with the features it reports).
CPUMachine getCPUMachine(StringRef chip);
/// The runtime's feature names (cpuid-based), in the order it checks them.
ArrayRef<StringRef> getCheckedCPUFeatures();

/// `chip` must be one of getCPUChips().
std::unique_ptr<Target> createCPUTarget(StringRef chip,
                                        const GPUCodegenOptions &gpu);
/// The vector dialect and the interfaces kiln-cpu-codegen's tiling needs.
void registerCPUDialects(DialectRegistry &registry);
/// kiln-cpu-codegen.
void registerCPUPasses();

} // namespace mlir::kiln

#endif // KILN_TARGET_CPU_CPUTARGET_H
