//===- CodeObject.h - What an AMDGPU code object says of its kernels -*- C++ -*-===//
//
// The resources of each kernel of a code object (hsaco), read from its
// AMDGPU metadata note (msgpack, code object v3 and newer: "amdhsa.kernels"),
// and the occupancy they allow on a chip.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_AMDGPU_CODEOBJECT_H
#define KILN_LIB_TARGET_AMDGPU_CODEOBJECT_H

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"

#include <string>

namespace mlir::kiln {

struct KernelResources {
  std::string name;
  int64_t vgprs = 0, agprs = 0, sgprs = 0;
  int64_t vgprSpills = 0, sgprSpills = 0;
  /// Shared memory (LDS) and scratch of one work-group / lane, bytes.
  int64_t ldsBytes = 0, scratchBytes = 0;
  int64_t waveSize = 0, workgroupSize = 0;
};

/// The kernels of `object`; false with `error` set when it is not an
/// AMDGPU code object with a metadata note.
bool readCodeObject(StringRef object, SmallVectorImpl<KernelResources> &out,
                    std::string &error);

/// Waves one SIMD holds of kernel `k` on `chip`, and what limits it
/// ("vgprs", "lds", "sgprs", "workgroup" or "waves").
struct Occupancy {
  int64_t wavesPerSimd = 0;
  const char *limit = "";
};
Occupancy computeOccupancy(const RocmChip &chip, const KernelResources &k);

} // namespace mlir::kiln

#endif // KILN_LIB_TARGET_AMDGPU_CODEOBJECT_H
