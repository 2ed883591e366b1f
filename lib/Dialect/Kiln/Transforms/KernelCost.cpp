//===- KernelCost.cpp - Estimated work of a kernel ------------------------===//

#include "kiln/Dialect/Kiln/Transforms/KernelCost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

/// FLOPs of a linalg op: iterations × arithmetic ops in its body (-1 when a
/// loop range is dynamic).
static int64_t linalgFlops(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t iterations = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return -1;
    iterations *= r;
  }
  int64_t perIteration = 0;
  op->walk([&](Operation *inner) {
    if (inner == op.getOperation())
      return;
    if (isa<arith::ArithDialect, math::MathDialect>(inner->getDialect()) &&
        !isa<arith::ConstantOp, arith::IndexCastOp>(inner))
      ++perIteration;
  });
  if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    perIteration = 2;
  return iterations * perIteration;
}

int64_t mlir::kiln::estimateFlops(Operation *root) {
  int64_t flops = 0;
  root->walk([&](linalg::LinalgOp op) {
    int64_t f = linalgFlops(op);
    flops = (f < 0 || flops < 0) ? -1 : flops + f;
  });
  return flops;
}
