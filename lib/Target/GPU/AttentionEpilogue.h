//===- AttentionEpilogue.h - An elementwise op after an attention -*- C++ -*-===//
//
// What FlashAttention (FlashAttention.cpp) applies to the attention's
// output as it stores it: the elementwise op that reads it (an int8
// build's quantization), and how that op's body starts on it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_GPU_ATTENTIONEPILOGUE_H
#define KILN_LIB_TARGET_GPU_ATTENTIONEPILOGUE_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::kiln::gpumap {

/// An elementwise op that reads the attention's output (through reshapes
/// of the whole buffer) and scalars only, and writes a buffer of as many
/// elements (FuseKernels' attention epilogue: the quantization of the
/// output for an int8 product). The kernel applies its body as it stores,
/// into `result` (its output, viewed as the attention's output).
struct OutputEpilogue {
  linalg::GenericOp op;
  OpOperand *input = nullptr;     // the attention's output, as it reads it
  SmallVector<Operation *> views; // from the attention's output to `input`
};
std::optional<OutputEpilogue> outputEpilogue(AttentionOp att);

/// Where an output epilogue's body starts on the attention's output `in`:
/// the f32 value of it (`in` itself, or the result of its one use, an
/// `extf` to f32 undoing the output's half rounding), and a division of
/// that value by a scalar (QuantizeLinear's x / scale: by a scalar operand,
/// or kiln-half-division's corrected product by a constant's reciprocal),
/// if there is one. The kernel then gives the body the f32 row value
/// without the half rounding, and the division's result as the product of
/// the accumulator by the row's 1 / sum divided by the scale, once a row:
/// per element one product instead of a conversion to half and back and
/// the division's four instructions (BERT-base's int8 attention kernel:
/// 1304 instructions against the half kernel's 976).
struct EpilogueEntry {
  Value widened;  // the body's f32 value of the output
  Value quotient; // widened / divisor, or null
  Value divisor;  // a block argument of a scalar operand, or a constant
};
std::optional<EpilogueEntry> epilogueEntry(OutputEpilogue &e);

/// An output epilogue (or none) applied as the kernel stores: its scalar
/// operands loaded once where this is built, each row's 1 / sum divided by
/// the scale (EpilogueEntry's quotient) once a row, and the body cloned on
/// each value.
class EpilogueApplier {
public:
  /// At the builder's insertion point: `epilogue` (or none) on the
  /// attention's output of element type `outElem` into `result`; `inv` the
  /// rows' 1 / sum (f32).
  EpilogueApplier(OpBuilder &b, Location loc,
                  std::optional<OutputEpilogue> &epilogue, Type outElem,
                  Value result, ArrayRef<Value> inv);
  /// The element type the kernel stores.
  Type resultElem() const { return resultElem_; }
  /// The stored value of accumulator `acc` of row `ri` (in the rows of
  /// `inv`): `acc` times the row's 1 / sum, through the body.
  Value apply(OpBuilder &b, Location loc, Value acc, int64_t ri) const;

private:
  std::optional<OutputEpilogue> &epilogue;
  Type outElem, resultElem_;
  SmallVector<Value> inv, invQuotient;
  IRMapping scalars;
  std::optional<EpilogueEntry> entry;
};

} // namespace mlir::kiln::gpumap

#endif // KILN_LIB_TARGET_GPU_ATTENTIONEPILOGUE_H
