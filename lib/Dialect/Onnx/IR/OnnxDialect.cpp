//===- OnnxDialect.cpp - The onnx dialect ---------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

#include "kiln/Dialect/Onnx/IR/OnnxDialect.cpp.inc"

void OnnxDialect::initialize() {
  // The op definitions are sharded (see include/.../IR/CMakeLists.txt).
  registerOnnxDialectOperations(this);
}
