//===- OnnxDialect.h - The onnx dialect -------------------------*- C++ -*-===//
//
// The `onnx` dialect: one op per ai.onnx operator, C++ namespace
// mlir::kiln::onnxops (protobuf owns ::onnx).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_ONNX_IR_ONNXDIALECT_H
#define KILN_DIALECT_ONNX_IR_ONNXDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "kiln/Dialect/Onnx/IR/OnnxDialect.h.inc"

#endif // KILN_DIALECT_ONNX_IR_ONNXDIALECT_H
