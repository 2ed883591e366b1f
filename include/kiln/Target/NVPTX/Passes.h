//===- Passes.h - NVIDIA codegen passes -------------------------*- C++ -*-===//
#ifndef KILN_TARGET_NVPTX_PASSES_H
#define KILN_TARGET_NVPTX_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::kiln {

#define GEN_PASS_DECL
#include "kiln/Target/NVPTX/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/NVPTX/Passes.h.inc"

} // namespace mlir::kiln

#endif // KILN_TARGET_NVPTX_PASSES_H
