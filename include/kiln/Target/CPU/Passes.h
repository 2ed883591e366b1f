//===- Passes.h - CPU codegen passes ----------------------------*- C++ -*-===//
#ifndef KILN_TARGET_CPU_PASSES_H
#define KILN_TARGET_CPU_PASSES_H

#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "kiln/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/CPU/Passes.h.inc"

} // namespace mlir::kiln

#endif // KILN_TARGET_CPU_PASSES_H
