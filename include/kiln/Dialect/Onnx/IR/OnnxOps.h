//===- OnnxOps.h - Operations of the onnx dialect ---------------*- C++ -*-===//
//
// Ops generated from the ONNX schemas (OnnxOps.td, utils/gen_onnx_ops.py),
// the hand-written onnx.NoValue and onnx.Yield, and the shape inference
// interface.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_ONNX_IR_ONNXOPS_H
#define KILN_DIALECT_ONNX_IR_ONNXOPS_H

#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Onnx/IR/InferShapes.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/Onnx/IR/OnnxOps.h.inc"

#endif // KILN_DIALECT_ONNX_IR_ONNXOPS_H
