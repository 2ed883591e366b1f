//===- KernelCost.cpp - Estimated work of a kernel ------------------------===//

#include "kiln/Dialect/Kiln/Transforms/KernelCost.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

/// FLOPs of a linalg op: iterations × arithmetic ops in its body (-1 when a
/// loop range is dynamic). Conversions are not FLOPs: a half product's body
/// widens both operands before its multiply-add and counts 2, as the f32 one.
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
        !isa<arith::ConstantOp, CastOpInterface>(inner))
      ++perIteration;
  });
  if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    perIteration = 2;
  return iterations * perIteration;
}

/// FLOPs of a fused attention: the two products, 2·B·Hq·S·L·(D + Dv), and
/// the softmax's scale, mask, max, exponential and sum per score, 5·B·Hq·S·L
/// (the whole score matrix, causal or not); -1 when a size is dynamic.
static int64_t attentionFlops(kiln::AttentionOp op) {
  auto dim = [&](Value v, unsigned operand, int64_t d) {
    return cast<ShapedType>(v.getType())
        .getDimSize(op.canonicalDim(operand, d));
  };
  int64_t b = dim(op.getQuery(), 0, 0), h = dim(op.getQuery(), 0, 1),
          s = dim(op.getQuery(), 0, 2), d = dim(op.getQuery(), 0, 3),
          l = dim(op.getKey(), 1, 2), dv = dim(op.getValue(), 2, 3);
  for (int64_t x : {b, h, s, d, l, dv})
    if (ShapedType::isDynamic(x))
      return -1;
  int64_t scores = b * h * s * l;
  return scores * (2 * (d + dv) + 5);
}

int64_t mlir::kiln::estimateFlops(Operation *root) {
  int64_t flops = 0;
  auto add = [&](int64_t f) { flops = (f < 0 || flops < 0) ? -1 : flops + f; };
  root->walk([&](linalg::LinalgOp op) { add(linalgFlops(op)); });
  root->walk([&](kiln::AttentionOp op) { add(attentionFlops(op)); });
  return flops;
}
