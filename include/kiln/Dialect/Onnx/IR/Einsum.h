//===- Einsum.h - Einsum equations ------------------------------*- C++ -*-===//
//
// The labels of an ONNX Einsum equation, shared by its shape inference
// (InferShapesContraction.cpp) and its lowering (OnnxToLinalg/Contraction.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_ONNX_IR_EINSUM_H
#define KILN_DIALECT_ONNX_IR_EINSUM_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::kiln::onnxops {

/// Labels: 0..51 the letters A-Z, a-z (in ASCII order, which the implicit
/// output sorts by); kEinsumEllipsis + k the k-th dim of the widest
/// ellipsis, counted from its left.
constexpr int kEinsumEllipsis = 100;

struct EinsumLabels {
  /// One label per dim of each input, then of the output.
  SmallVector<SmallVector<int>> inputs;
  SmallVector<int> output;
};

/// Parses `equation` (spaces ignored) for inputs of ranks `ranks`: each term
/// must match its input's rank; without "->" the output is ONNX's implicit
/// one (the ellipsis dims, then the letters that appear once, sorted).
/// Fails with `error` set ("term 'ij' does not match the rank of input 1").
FailureOr<EinsumLabels> parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                                    std::string &error);

} // namespace mlir::kiln::onnxops

#endif // KILN_DIALECT_ONNX_IR_EINSUM_H
