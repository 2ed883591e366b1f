//===- Quantization.h - What the quantized lowerings share ------*- C++ -*-===//
//
// Private to lib/Conversion/OnnxToLinalg: the integer helpers of the
// Quantize/Dequantize lowerings (Quantize.cpp) that the integer products
// (IntegerProducts.cpp) use too.
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

} // namespace mlir::kiln::lowering::quant

#endif // KILN_LIB_CONVERSION_ONNXTOLINALG_QUANTIZATION_H
