//===- Passes.h - Kiln kernel and host-program passes -----------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_PASSES_H
#define KILN_DIALECT_KILN_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <utility>

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"

/// When `quotient` is kiln-half-division's correctly rounded f32 `x / c`
/// (q0 = x * r, select(|q0| == inf, q0, fma(fma(-q0, c, x), r, q0))), x
/// and the divisor c, a constant (HalfDivision.cpp builds the form).
std::optional<std::pair<Value, Value>>
matchCorrectedF32Division(Value quotient);

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_PASSES_H
