//===- Precision.h - Precision marks on lowered ops -------------*- C++ -*-===//
//
// What --precision decides travels in types (f16/bf16 operands extended to an
// f32 accumulator) except for TF32, which keeps f32 storage: its decision is a
// mark on the contraction itself, set when the ONNX op is lowered and read by
// the targets' contraction kernels.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_IR_PRECISION_H
#define KILN_DIALECT_KILN_IR_PRECISION_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::kiln {

/// On each op kiln-mixed-precision decided: "fp16", "bf16", "fp32", or
/// "tf32" (a contraction under --precision=tf32, its storage kept f32).
inline constexpr llvm::StringLiteral kPrecisionAttr = "kiln.precision";

/// Whether kiln-mixed-precision allowed `op` TF32 math.
inline bool isMarkedTF32(Operation *op) {
  auto precision = op->getAttrOfType<StringAttr>(kPrecisionAttr);
  return precision && precision.getValue() == "tf32";
}

/// Unit attribute on a linalg contraction (body `acc + a * b`, a, b and acc
/// f32): its products may round a and b to TF32 (8-bit exponent, 10-bit
/// mantissa) and accumulate in f32. kiln-convert-onnx-to-linalg sets it on
/// the f32 contractions an ONNX op marked `kiln.precision = "tf32"`
/// (kiln-mixed-precision with precision=tf32) lowers to; kiln-fuse-kernels
/// keeps it on the op that replaces a fused contraction; a target without
/// such an instruction ignores it (the product stays exact f32).
inline constexpr llvm::StringLiteral kTF32Attr = "kiln.tf32";

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_IR_PRECISION_H
