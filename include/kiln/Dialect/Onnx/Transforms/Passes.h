//===- Passes.h - onnx dialect passes ---------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_ONNX_TRANSFORMS_PASSES_H
#define KILN_DIALECT_ONNX_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"

} // namespace mlir::kiln

#endif // KILN_DIALECT_ONNX_TRANSFORMS_PASSES_H
