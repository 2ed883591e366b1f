//===- MixedPrecision.h - Helpers of kiln-mixed-precision -------*- C++ -*-===//
//
// Constants (range, conversion to the half type at compile time), the casts
// the pass creates, and the cast cleanup (MixedPrecisionCleanup.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_DIALECT_ONNX_TRANSFORMS_MIXEDPRECISION_H
#define KILN_LIB_DIALECT_ONNX_TRANSFORMS_MIXEDPRECISION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cstdint>

namespace mlir::kiln::mixed_precision {

/// Unit attribute on the onnx.Cast ops kiln-mixed-precision creates.
constexpr llvm::StringLiteral kCastMarker = "kiln.cast";

/// True for an f32 tensor produced by arith.constant with readable values.
bool isConstantF32(Value v);
/// Largest finite |x| of an f32 constant (0 when it has none).
double constantAbsMax(Value v);

/// f32 -> IEEE binary16 / bfloat16 bits, round to nearest even (overflow to
/// infinity, NaN kept).
uint16_t f32ToF16Bits(float f);
uint16_t f32ToBF16Bits(float f);

/// An onnx.Cast of tensor `v` to element type `elem`, marked kCastMarker.
Value makeCast(OpBuilder &b, Location loc, Value v, Type elem);

/// Converts f32 constants to the half type once, at compile time (dense
/// attributes stay dense, resource blobs become new resource blobs).
class Converter {
public:
  Converter() = default;
  explicit Converter(FloatType half) : half(half) {}
  /// A constant of the half type with `f32Constant`'s values, placed right
  /// after it; cached per value.
  Value convert(Value f32Constant);
  /// Same for any float constant value to `elem` (cast folding).
  Value convertTo(Value constant, FloatType elem);
  int64_t numConverted = 0;
  int64_t convertedBytes = 0; // bytes of the converted (half) constants

private:
  FloatType half;
  llvm::DenseMap<std::pair<Value, Type>, Value> cache;
};

/// Cast cleanup over `func`: cast-of-cast through an exact middle type,
/// casts hoisted through Reshape/Transpose/Flatten/Squeeze/Unsqueeze/Concat,
/// casts of constants folded.
LogicalResult cleanupCasts(func::FuncOp func, Converter &converter);

} // namespace mlir::kiln::mixed_precision

#endif // KILN_LIB_DIALECT_ONNX_TRANSFORMS_MIXEDPRECISION_H
