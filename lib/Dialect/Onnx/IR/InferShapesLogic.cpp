//===- InferShapesLogic.cpp - Comparisons, boolean, bitwise ----------------===//
//
// Shape inference of the Logic family (OnnxFamilies.def): numpy broadcasts of
// operands with one element type; comparisons give i1.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

#define KILN_UNARY(OP)                                                         \
  InferredTypes OP::inferResultTypes() {                                       \
    return SmallVector<Type>{getOperation()->getOperand(0).getType()};         \
  }

KILN_UNARY(NotOp)
KILN_UNARY(BitwiseNotOp)

#undef KILN_UNARY

#define KILN_BROADCAST(OP)                                                     \
  InferredTypes OP::inferResultTypes() { return inferSameElemBroadcast(*this); }

KILN_BROADCAST(AndOp)
KILN_BROADCAST(OrOp)
KILN_BROADCAST(XorOp)
KILN_BROADCAST(BitShiftOp)
KILN_BROADCAST(BitwiseAndOp)
KILN_BROADCAST(BitwiseOrOp)
KILN_BROADCAST(BitwiseXorOp)

#undef KILN_BROADCAST

#define KILN_COMPARE(OP)                                                       \
  InferredTypes OP::inferResultTypes() {                                       \
    return inferSameElemBroadcast(*this, IntegerType::get(getContext(), 1));   \
  }

KILN_COMPARE(EqualOp)
KILN_COMPARE(LessOp)
KILN_COMPARE(GreaterOp)
KILN_COMPARE(LessOrEqualOp)
KILN_COMPARE(GreaterOrEqualOp)

#undef KILN_COMPARE

InferredTypes WhereOp::inferResultTypes() {
  Operation *op = getOperation();
  Type x = getElementTypeOrSelf(op->getOperand(1).getType());
  Type y = getElementTypeOrSelf(op->getOperand(2).getType());
  if (x != y)
    return emitOpError() << "X and Y have different element types: " << x
                         << " and " << y;
  return inferNaryBroadcast(op, op->getOperands(), x);
}
