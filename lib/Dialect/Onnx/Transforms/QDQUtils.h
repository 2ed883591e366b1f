//===- QDQUtils.h - Helpers of kiln-onnx-fuse-qdq -----------------*- C++ -*-===//
//
// Constants, single users and names that FuseQDQ.cpp and its scale folds
// (FoldQuantizeScales.cpp) share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_ONNX_TRANSFORMS_QDQUTILS_H
#define KILN_LIB_DIALECT_ONNX_TRANSFORMS_QDQUTILS_H

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace mlir::kiln::qdq {

/// `values` as a constant of `shape` and element type `elem` (8- or 32-bit
/// integers, or f32).
Value valuesConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                     Type elem, ArrayRef<double> values, StringRef hint);

/// The one user of `v`, if it has exactly one.
Operation *soleUser(Value v);

/// A scalar float constant.
std::optional<double> scalarOf(Value v);

/// The name a new constant of `op`'s takes: its node's, and `suffix`.
std::string hintOf(Operation *op, StringRef suffix);

/// A LayerNormalization whose result only a QuantizeLinear of one constant
/// scale reads: Scale and B take the 1 / scale, the QuantizeLinear's scale
/// becomes 1 (FoldQuantizeScales.cpp).
void foldLayerNormScale(onnxops::LayerNormalizationOp ln);

/// A product by a constant that only such a QuantizeLinear reads: the
/// constant takes the 1 / scale, the QuantizeLinear's scale becomes 1.
void foldProductScale(onnxops::MulOp mul);

} // namespace mlir::kiln::qdq

#endif // KILN_LIB_DIALECT_ONNX_TRANSFORMS_QDQUTILS_H
