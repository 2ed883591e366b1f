//===- CPUMachine.cpp - The CPUs --target=cpu:<chip> names ----------------===//
//
// `host` asks LLVM for this machine's CPU and the features it reports (a
// VM may hide some its CPU name implies); a named architecture takes LLVM's
// feature set for that CPU. Either way the model records the features of
// getCheckedCPUFeatures() its code may use, and the runtime refuses to run
// it on a CPU without one of them (lib/Runtime/Model/CPUFeatures.c).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CPUTarget.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

using namespace mlir;
using namespace mlir::kiln;

ArrayRef<StringRef> mlir::kiln::getCPUChips() {
  static const StringRef kChips[] = {
      "host",    "x86-64-v2",      "x86-64-v3",      "x86-64-v4",
      "haswell", "skylake-avx512", "icelake-server", "sapphirerapids",
      "znver3",  "znver4"};
  return kChips;
}

ArrayRef<StringRef> mlir::kiln::getCheckedCPUFeatures() {
  // Names shared by LLVM's x86 features and the runtime's cpuid check.
  static const StringRef kFeatures[] = {
      "sse4.2",     "popcnt",     "avx",        "avx2",     "fma",
      "f16c",       "bmi",        "bmi2",       "lzcnt",    "movbe",
      "avx512f",    "avx512bw",   "avx512dq",   "avx512vl", "avx512cd",
      "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni",  "amx-tile",
      "amx-int8"};
  return kFeatures;
}

namespace {
/// L1 data and L2 per core of the named chips.
struct ChipCaches {
  StringRef chip;
  int64_t l1, l2;
};
constexpr int64_t KiB = 1024;
const ChipCaches kChipCaches[] = {{"x86-64-v2", 32 * KiB, 256 * KiB},
                                  {"x86-64-v3", 32 * KiB, 256 * KiB},
                                  {"x86-64-v4", 32 * KiB, 1024 * KiB},
                                  {"haswell", 32 * KiB, 256 * KiB},
                                  {"skylake-avx512", 32 * KiB, 1024 * KiB},
                                  {"icelake-server", 48 * KiB, 1280 * KiB},
                                  {"sapphirerapids", 48 * KiB, 2048 * KiB},
                                  {"znver3", 32 * KiB, 512 * KiB},
                                  {"znver4", 32 * KiB, 1024 * KiB}};

/// A cache size of this machine (level 1 data or level 2) from sysfs, or 0.
int64_t hostCacheBytes(int level) {
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](StringRef file) -> std::string {
      // sysfs files say 4096 bytes and hold a line: read to the end.
      auto buffer = llvm::MemoryBuffer::getFileAsStream(dir + "/" + file.str());
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    std::string lvl = read("level"), type = read("type");
    if (lvl.empty())
      break;
    if (lvl != std::to_string(level) || type == "Instruction")
      continue;
    std::string text = read("size");
    StringRef size = text;
    int64_t scale = 1;
    if (size.consume_back("K"))
      scale = KiB;
    else if (size.consume_back("M"))
      scale = KiB * KiB;
    int64_t v = 0;
    if (!size.getAsInteger(10, v) && v > 0)
      return v * scale;
  }
  return 0;
}
} // namespace

CPUMachine mlir::kiln::getCPUMachine(StringRef chip) {
  CPUMachine m;
  if (chip == "host" || chip.empty()) {
    if (int64_t l1 = hostCacheBytes(1))
      m.l1Bytes = l1;
    if (int64_t l2 = hostCacheBytes(2))
      m.l2Bytes = l2;
  } else {
    for (const ChipCaches &c : kChipCaches)
      if (c.chip == chip) {
        m.l1Bytes = c.l1;
        m.l2Bytes = c.l2;
      }
  }
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::StringMap<bool> enabled;
  if (chip == "host" || chip.empty()) {
    m.cpu = llvm::sys::getHostCPUName().str();
    enabled = llvm::sys::getHostCPUFeatures();
    std::string features;
    for (const auto &f : enabled) {
      if (!features.empty())
        features += ",";
      features += (f.second ? "+" : "-") + f.first().str();
    }
    m.features = features;
  } else {
    m.cpu = chip.str();
    SmallVector<StringRef> names;
    llvm::X86::getFeaturesForCPU(chip, names, /*NeedPlus=*/false);
    // The list leaves out features its members imply (avx512bw: avx512f).
    for (StringRef n : names)
      llvm::X86::updateImpliedFeatures(n, /*Enabled=*/true, enabled);
    for (StringRef n : names)
      enabled[n] = true;
  }
  if (!triple.isX86())
    return m;
  auto has = [&](StringRef f) { return enabled.lookup(f); };
  for (StringRef f : getCheckedCPUFeatures())
    if (has(f))
      m.requires_.push_back(f.str());
  m.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  m.f16c = has("f16c");
  m.bf16 = has("avx512bf16");
  m.int8Dot = m.vectorBits == 512 ? has("avx512vnni")
                                  : m.vectorBits == 256 && has("avxvnni");
  m.int8Tiles =
      m.int8Dot && m.vectorBits == 512 && has("amx-tile") && has("amx-int8");
  return m;
}
