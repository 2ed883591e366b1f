//===- PaddedCopy.h - Reads of a zero-padded copy ---------------*- C++ -*-===//
//
// A convolution's padded input bufferizes, inside its kernel, to a scratch
// buffer filled with zeros and a copy of the input into a subview of it.
// The GPU lowerings that can read the input itself, treating the padding as
// zeros (the tiled contractions through bounds-checked loads, the Hopper
// kernels through a tensor map's out-of-bounds fill), match that pattern
// here and drop the fill, the copy and so the scratch buffer.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_GPU_PADDEDCOPY_H
#define KILN_TARGET_GPU_PADDEDCOPY_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::kiln {

/// `padded` (a static identity-layout buffer) holds `src` at `offsets`
/// and zeros elsewhere, written only by `fill` then `copy` (through
/// `view`), all three in `reader`'s block before it.
struct PaddedCopy {
  Value src;
  llvm::SmallVector<int64_t> offsets; // per dim of `padded`
  Operation *fill = nullptr, *view = nullptr, *copy = nullptr;
};

/// Whether `op` writes zeros to all of `buffer`: a linalg.fill, or a
/// linalg.map yielding a constant, of zero (float or integer).
bool zeroFills(Operation *op, Value buffer);

/// The padded copy `reader` reads as `padded`, when `padded`'s only other
/// users are its zero fill and one unit-stride subview that a copy of
/// `src` (same element type and shape, static identity layout) writes,
/// with static offsets.
std::optional<PaddedCopy> matchPaddedCopy(Value padded, Operation *reader);

} // namespace mlir::kiln

#endif // KILN_TARGET_GPU_PADDEDCOPY_H
