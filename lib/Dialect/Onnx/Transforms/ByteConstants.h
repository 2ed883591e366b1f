//===- ByteConstants.h - Constants from raw bytes ---------------*- C++ -*-===//
//
// The quantization passes (kiln-onnx-insert-qdq, kiln-onnx-fuse-qdq) compute
// new constants at compile time (scales, zero points, int8 weights, column
// sums) as raw little-endian bytes: small ones become inline dense
// attributes, larger ones resource blobs (never large uniqued attributes).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_DIALECT_ONNX_TRANSFORMS_BYTECONSTANTS_H
#define KILN_LIB_DIALECT_ONNX_TRANSFORMS_BYTECONSTANTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace mlir::kiln {

/// Constants of more elements than this are resource blobs.
constexpr int64_t kInlineConstantElements = 16;

/// `bytes` (row-major, little-endian) as an arith.constant of `type`; a
/// resource blob named after `hint` when it has more than
/// kInlineConstantElements elements.
inline Value makeBytesConstant(OpBuilder &b, Location loc,
                               RankedTensorType type, ArrayRef<char> bytes,
                               StringRef hint) {
  if (type.getNumElements() <= kInlineConstantElements)
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::getFromRawBuffer(type, bytes));
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(int64_t));
  return arith::ConstantOp::create(
      b, loc, DenseResourceElementsAttr::get(type, hint, std::move(blob)));
}

} // namespace mlir::kiln

#endif // KILN_LIB_DIALECT_ONNX_TRANSFORMS_BYTECONSTANTS_H
