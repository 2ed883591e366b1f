//===- Passes.h - Kiln conversions ------------------------------*- C++ -*-===//
#ifndef KILN_CONVERSION_PASSES_H
#define KILN_CONVERSION_PASSES_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;
namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Conversion/Passes.h.inc"

/// Patterns lowering onnx ops to linalg/tensor/arith/math: one typed pattern
/// per op of every family of kiln/Dialect/Onnx/IR/OnnxFamilies.def
/// (populate<Family>LoweringPatterns). `kiln-convert-onnx-to-linalg` applies
/// them in program order, one per op, and lowers the regions of If, Loop and
/// Scan with the ops that own them.
void populateOnnxToLinalgPatterns(RewritePatternSet &patterns);

/// Whether the onnx → linalg lowering has a lowering for ONNX operator
/// `opType` (e.g. "Conv"): whether OnnxFamilies.def lists it.
bool isOnnxOpLowered(StringRef opType);

} // namespace kiln
} // namespace mlir

#endif // KILN_CONVERSION_PASSES_H
