//===- NodeKeys.h - Stable names of a function's onnx nodes -----*- C++ -*-===//
//
// kiln-expose-intermediates names the values it exposes and
// kiln-mixed-precision looks calibration ranges up by the same keys: the
// ONNX node name of each top-level onnx op (its NameLoc; the op type when it
// has none), made unique in program order with "#2", "#3", ...; a value is
// its node's key, with ":I" for result I of a node that has several. The
// model's own input and output names are reserved (outputs marked
// `kiln.exposed` are not: they carry keys already).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_DIALECT_ONNX_TRANSFORMS_NODEKEYS_H
#define KILN_LIB_DIALECT_ONNX_TRANSFORMS_NODEKEYS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace mlir::kiln {

struct NodeKeys {
  /// Key of each top-level onnx op (onnx.NoValue excluded).
  llvm::DenseMap<Operation *, std::string> nodes;
  /// Key of each result of those ops and of each function argument (its
  /// input name).
  llvm::DenseMap<Value, std::string> values;
};

NodeKeys computeNodeKeys(func::FuncOp func);

/// The ONNX node name of `op` (the first NameLoc of its location), or "".
std::string onnxNodeName(Operation *op);
/// The ONNX op type of an onnx op ("MatMul"), "" for other dialects.
llvm::StringRef onnxOpType(Operation *op);

} // namespace mlir::kiln

#endif // KILN_LIB_DIALECT_ONNX_TRANSFORMS_NODEKEYS_H
