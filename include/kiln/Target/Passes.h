//===- Passes.h - Kiln's target codegen passes ------------------*- C++ -*-===//
#ifndef KILN_TARGET_PASSES_H
#define KILN_TARGET_PASSES_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "kiln/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/Passes.h.inc"

} // namespace mlir::kiln

#endif // KILN_TARGET_PASSES_H
