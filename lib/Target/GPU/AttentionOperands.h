//===- AttentionOperands.h - The fused attention's operands -*- C++ -*-===//
//
// For FlashAttention (FlashAttention.cpp): the matrix instruction's operand
// type that kiln.attention's operands ask for, 8-bit operands widened to
// it, and the facts of the instruction's fragment layout the kernel
// relies on (which lanes hold a row, whether the scores can serve as P·V's
// operands in registers).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_GPU_ATTENTIONOPERANDS_H
#define KILN_LIB_TARGET_GPU_ATTENTIONOPERANDS_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::kiln::gpumap {

/// The operands' element types.
struct AttentionOperands {
  /// The matrix instruction's operand type: that of the float operands,
  /// f16 where all three are 8-bit (their q - zp is exact in f16; the
  /// scales fold into the scores' scale and the output).
  Type elem;
  /// Q, and K with V, hold 8-bit integers (`dequant`).
  bool qInt = false, kvInt = false;
  /// Fails (with an error on `op`) where K and V differ in kind: the
  /// kernel stages them alike.
  static FailureOr<AttentionOperands> of(AttentionOp op);
};

/// How K's and V's tiles (`keys` rows) reach shared memory for `threads`
/// threads: asynchronous copies into two buffers of each tile, or
/// register staging into one (FlashAttention.cpp's header says how).
/// 8-bit K and V: asynchronous copies into two 8-bit buffers, widened from
/// there into one buffer of `elem` once a tile has arrived (holding the
/// next tile in registers instead took BERT-base's int8 attention kernel
/// past its 128 registers: 26 spill instructions, 18.9 us against the half
/// kernel's 17.3; H100, 2026-12-07); else register staging, each chunk
/// widened on its way.
struct TileStaging {
  /// K's and V's elements in memory and the elements of one load: 16
  /// bytes (8 for 8-bit heads of 16, whose 16-byte runs would not spread
  /// evenly over the threads).
  Type srcElem;
  int64_t srcBytes = 0, chunk = 0;
  /// Elements of `elem` padding a shared row: 16 bytes, for fragment reads
  /// free of bank conflicts.
  int64_t pad = 0;
  /// Whole loads of K and V: their types show every outer stride and the
  /// offset a multiple of a load and the head dim contiguous (the bases
  /// are: the arena's buffers and staged inputs are 256-byte aligned, as
  /// the bulk tensor copies of the Hopper kernels need them too); else
  /// element loads.
  bool wide = false;
  /// Asynchronous copies (two buffers of 128-wide heads would take 68 KiB:
  /// register staging then); through 8-bit buffers (`widenShared`, whose
  /// shared bytes in all are `widenBytes`).
  bool async = false, widenShared = false;
  int64_t widenBytes = 0;
  /// Buffers of `elem` a tile.
  int64_t stages = 1;
  static TileStaging plan(const AttentionOperands &ops, MemRefType k,
                          MemRefType v, int64_t keys, int64_t threads,
                          bool hasAsyncCopy, int64_t maxSharedBytes);
};

/// 8-bit operand `operand`'s integers (a vector) as `elem`: q - zp,
/// widened exactly through i16 (its zero point and signedness from the
/// op's `dequant`); the scale is applied elsewhere.
Value widenQuantized(OpBuilder &b, Location loc, AttentionOp op,
                     unsigned operand, Value ints, Type elem);

/// The lanes of a warp that hold one row of C: the xor offsets of the
/// butterfly combining them; empty when the layout does not say.
SmallVector<int32_t> rowLaneOffsets(const MMALayout &l, int64_t warp);

/// For each A register of P·V (the k-th key tile, `kPack` elements each),
/// which score accumulator (n-tile, element) holds each of its elements in
/// the same lane; nullopt when C's and A's fragments do not line up (the
/// lane coordinates or the offsets differ).
std::optional<SmallVector<std::pair<int64_t, int64_t>>>
scoreOperandMap(const MMALayout &l);

/// Whether the lane coordinate `c` and offsets `inner` are multiples of
/// `run` for every lane.
bool runAligned(LaneCoord c, int64_t inner, int64_t run);

} // namespace mlir::kiln::gpumap

#endif // KILN_LIB_TARGET_GPU_ATTENTIONOPERANDS_H
