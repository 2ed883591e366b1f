//===- Quantization.h - What the quantized lowerings share ------*- C++ -*-===//
//
// Private to lib/Conversion/OnnxToLinalg: the integer helpers of the
// Quantize/Dequantize lowerings (Quantize.cpp) that the integer products
// (IntegerProducts.cpp) and the fused attention (Attention.cpp) use too.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_ONNXTOLINALG_QUANTIZATION_H
#define KILN_LIB_CONVERSION_ONNXTOLINALG_QUANTIZATION_H

#include "Lowering.h"

namespace mlir::kiln::lowering::quant {

/// A signless view of an integer tensor (bitcast when unsigned).
Value signless(OpBuilder &b, Location loc, Value v);
/// Converts a tensor computed in a signless type to `type` (unsigned or not).
Value toType(OpBuilder &b, Location loc, Value v, RankedTensorType type);
/// Whether `t` (or its elements) is an unsigned integer type.
bool isUnsigned(Type t);
/// Scalar `v` (signless integer or float) widened to f32; `isUns` says
/// how an integer is extended.
Value toF32(OpBuilder &b, Location loc, Value v, bool isUns);
/// Integer scalar widened to i32 (zero or sign extension).
Value toI32(OpBuilder &b, Location loc, Value v, bool isUns);
/// Rounds f32 `v` half to even (unless `rounded`: it holds an integer
/// already), saturates to the range of the integer type `intTy`
/// (signedness from `isUns`) and converts.
Value saturate(OpBuilder &b, Location loc, Value v, IntegerType intTy,
               bool isUns, bool rounded = false);
/// Integers of 8 to 32 bits.
bool supportedInt(Type t);

/// On the generic of a per-tensor DequantizeLinear of 8-bit integers with
/// constant parameters: {scale, zero_point, unsigned} (its input 0 is the
/// signless integer tensor). The fused attention reads through it
/// (dequantizedInput).
constexpr llvm::StringLiteral kDequantizeAttr = "kiln.dequantize";

/// 8-bit integers and how they dequantize.
struct Dequantized {
  Value ints;
  double scale = 1.0;
  int64_t zeroPoint = 0;
  bool isUnsigned = false;
};
/// The 8-bit integers behind lowered value `x` when it is their per-tensor
/// DequantizeLinear (kDequantizeAttr), through a float Cast (mixed
/// precision's conversion to half), as a signless tensor read through the
/// same views as `x` (so that a kernel reading in place still can).
std::optional<Dequantized> dequantizedInput(OpBuilder &b, Value x);

} // namespace mlir::kiln::lowering::quant

#endif // KILN_LIB_CONVERSION_ONNXTOLINALG_QUANTIZATION_H
