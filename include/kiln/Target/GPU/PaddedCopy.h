//===- PaddedCopy.h - Reads of a zero-padded copy ---------------*- C++ -*-===//
//
// A convolution's padded input bufferizes, inside its kernel, to a scratch
// buffer filled with zeros and a copy of the input into a subview of it (a
// max pool's, with -inf). The GPU lowerings that can read the input
// itself, treating the padding as the fill (the tiled contractions and the
// reductions through bounds-checked loads, the Hopper kernels through a
// tensor map's out-of-bounds zeros), match that pattern here and drop the
// fill, the copy and so the scratch buffer.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_GPU_PADDEDCOPY_H
#define KILN_TARGET_GPU_PADDEDCOPY_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::kiln {

/// `padded` (a static identity-layout buffer) holds `src` at `offsets`
/// and `fillValue` (a constant) elsewhere, written only by `fill` then
/// `copy` (through `view`), all three in `reader`'s block before it.
struct PaddedCopy {
  Value src;
  llvm::SmallVector<int64_t> offsets; // per dim of `padded`
  Operation *fill = nullptr, *view = nullptr, *copy = nullptr;
  Value fillValue;
};

/// Turns `idx`, indices into the padded buffer `padded`, into indices
/// into `pc.src` (shifted by the offsets; 0 where outside, to keep the
/// load in bounds); returns whether the point is inside the source (i1),
/// or null when no dim is padded.
Value sourceIndices(OpBuilder &b, Location loc, const PaddedCopy &pc,
                    Value padded, llvm::MutableArrayRef<Value> idx);

/// The constant `op` writes to all of `buffer` (a linalg.fill, or a
/// linalg.map yielding a constant), or null.
Value constantFill(Operation *op, Value buffer);

/// The padded copy `reader` reads as `padded`, when `padded`'s only other
/// users are its fill (of zeros; of any constant with `anyFill`: a max
/// pool's -inf) and one unit-stride subview that a copy of `src` (same
/// element type and shape, static identity layout) writes, with static
/// offsets.
std::optional<PaddedCopy> matchPaddedCopy(Value padded, Operation *reader,
                                          bool anyFill = false);

} // namespace mlir::kiln

#endif // KILN_TARGET_GPU_PADDEDCOPY_H
