//===- KernelCost.h - Estimated work of a kernel ----------------*- C++ -*-===//
//
// The compile report prints it per kernel; kiln-remat weighs the bytes a
// recomputation saves against it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_KERNELCOST_H
#define KILN_DIALECT_KILN_TRANSFORMS_KERNELCOST_H

#include "mlir/IR/Operation.h"

namespace mlir::kiln {

/// Estimated FLOPs of the linalg ops nested in `root` (a kernel function):
/// for each, iterations × arithmetic ops in its body (2 for a matmul); -1
/// when a loop range is dynamic.
int64_t estimateFlops(Operation *root);

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_KERNELCOST_H
