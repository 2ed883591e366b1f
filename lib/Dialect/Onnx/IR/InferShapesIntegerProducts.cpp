//===- InferShapesIntegerProducts.cpp - Integer matmuls ---------------------===//
//
// Shape inference of the IntegerProducts family (OnnxFamilies.def):
// MatMulInteger and QLinearMatMul (ConvInteger keeps its imported type).
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

/// MatMulInteger (i32 result) and QLinearMatMul (the type of y_zero_point).
static InferredTypes inferIntMatMul(Operation *op, Value a, Value b,
                                    Type elem) {
  std::optional<ArrayRef<int64_t>> sa = getShapeOf(a), sb = getShapeOf(b);
  if (!sa || !sb)
    return unranked(elem);
  FailureOr<SmallVector<int64_t>> out = matmulShape(op, *sa, *sb);
  if (failed(out))
    return failure();
  return ranked(*out, elem);
}

InferredTypes MatMulIntegerOp::inferResultTypes() {
  Operation *op = getOperation();
  return inferIntMatMul(op, op->getOperand(0), op->getOperand(1),
                        IntegerType::get(getContext(), 32));
}

InferredTypes QLinearMatMulOp::inferResultTypes() {
  Operation *op = getOperation();
  return inferIntMatMul(op, op->getOperand(0), op->getOperand(3),
                        elemOf(op->getOperand(7)));
}
