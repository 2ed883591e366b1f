//===- MemoryPlan.h - The arena plan of a host program ----------*- C++ -*-===//
//
// Live ranges of the host program's static buffers (with in-place reuse),
// the live bytes at each point of the program, and arena offsets:
// kiln-plan-memory places buffers with it, kiln-remat measures the peak it
// lowers with it, and the compile report prints its timeline.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H
#define KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::kiln {

/// Bytes of a static memref; -1 when dynamic.
int64_t bufferBytes(MemRefType type);

/// The `kiln.buffer` a value is a view of (through reshape/cast views), or
/// null.
BufferOp rootBuffer(Value v);

struct BufferPlan {
  BufferOp op;
  int64_t bytes = 0;
  /// Live range in op positions of the host block (first and last use; a
  /// run-time check reading the buffer extends it to the check).
  int64_t start = 0, end = 0;
  int64_t offset = -1;
  /// Index of the buffer whose slot this one reuses in place, or -1.
  int64_t inPlaceOf = -1;
  /// The ops that touch it (views aside), in program order, each once.
  SmallVector<Operation *> users;
};

/// Buffers that share memory by in-place reuse: one slot, live from the
/// first member's start to the last member's end.
struct SlotPlan {
  SmallVector<unsigned> members;
  int64_t start = INT64_MAX, end = -1, bytes = 0, offset = -1;
};

struct MemoryPlan {
  SmallVector<BufferPlan> buffers;
  SmallVector<SlotPlan> slots;
  /// The ops of the host block; a position indexes this.
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> positions;
  int64_t arenaBytes = 0;
  /// Sum of all static intermediates.
  int64_t totalBytes = 0;
  /// The largest total of slots live at one point of the program.
  int64_t peakLiveBytes = 0;
};

/// Live ranges and in-place slots of the static, non-persistent
/// `kiln.buffer`s of the host program `host` (one block), with totals and
/// the peak; no offsets yet.
MemoryPlan computeLiveRanges(func::FuncOp host, bool inPlace);

/// Bytes of the slots live at each position of `plan.ops`.
SmallVector<int64_t> liveBytesTimeline(const MemoryPlan &plan);

/// Offsets by greedy best fit, largest slots first (sets `arenaBytes`).
void assignArenaOffsets(MemoryPlan &plan, int64_t alignment);

/// Plans the static `kiln.buffer`s of the host program `host` (one block):
/// live ranges, in-place reuse by elementwise kernels, best-fit offsets.
MemoryPlan computeMemoryPlan(func::FuncOp host, int64_t alignment,
                             bool inPlace);

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_MEMORYPLAN_H
