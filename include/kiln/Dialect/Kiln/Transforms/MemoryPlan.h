//===- MemoryPlan.h - The arena plan of a host program ----------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H
#define KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::kiln {

/// Bytes of a static memref; -1 when dynamic.
int64_t bufferBytes(MemRefType type);

struct BufferPlan {
  BufferOp op;
  int64_t bytes = 0;
  /// Live range in op positions of the host block (first and last use).
  int64_t start = 0, end = 0;
  int64_t offset = -1;
  /// Index of the buffer whose slot this one reuses in place, or -1.
  int64_t inPlaceOf = -1;
};

struct MemoryPlan {
  SmallVector<BufferPlan> buffers;
  int64_t arenaBytes = 0;
  /// Sum of all static intermediates.
  int64_t totalBytes = 0;
  /// The largest total of buffers live at one point of the program.
  int64_t peakLiveBytes = 0;
};

/// Plans the static `kiln.buffer`s of the host program `host` (one block):
/// live ranges, in-place reuse by elementwise kernels, best-fit offsets.
MemoryPlan computeMemoryPlan(func::FuncOp host, int64_t alignment,
                             bool inPlace);

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H
