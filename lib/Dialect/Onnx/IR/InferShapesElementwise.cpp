//===- InferShapesElementwise.cpp - Elementwise onnx ops ------------------===//
//
// Shape inference of unary elementwise ops (same type as the input) and of
// numpy-broadcasting binary ops.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

/// Unary elementwise: the result has the operand's type.
static InferredTypes inferSameAsOperand(Value operand) {
  return SmallVector<Type>{operand.getType()};
}

/// Numpy broadcast of `lhs` and `rhs`; the result element type is `elemTy`.
static InferredTypes inferBroadcast(Operation *op, Value lhs, Value rhs,
                                    Type elemTy, bool sameElementType) {
  if (sameElementType && getElementTypeOrSelf(lhs.getType()) !=
                             getElementTypeOrSelf(rhs.getType()))
    return op->emitOpError()
           << "operands have different element types: " << lhs.getType()
           << " and " << rhs.getType();
  std::optional<ArrayRef<int64_t>> a = getShapeOf(lhs), b = getShapeOf(rhs);
  if (!a || !b)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(*a, *b);
  if (failed(shape))
    return op->emitOpError()
           << "operands are not broadcast-compatible: " << lhs.getType()
           << " and " << rhs.getType();
  return SmallVector<Type>{RankedTensorType::get(*shape, elemTy)};
}

#define KILN_UNARY(OP, INPUT)                                                  \
  InferredTypes OP::inferResultTypes() { return inferSameAsOperand(INPUT()); }

KILN_UNARY(AbsOp, getX)
KILN_UNARY(ExpOp, getInput)
KILN_UNARY(HardSigmoidOp, getX)
KILN_UNARY(IdentityOp, getInput)
KILN_UNARY(LeakyReluOp, getX)
KILN_UNARY(LogOp, getInput)
KILN_UNARY(NegOp, getX)
KILN_UNARY(ReluOp, getX)
KILN_UNARY(SigmoidOp, getX)
KILN_UNARY(SqrtOp, getX)
KILN_UNARY(TanhOp, getInput)

#undef KILN_UNARY

#define KILN_BINARY(OP)                                                        \
  InferredTypes OP::inferResultTypes() {                                       \
    return inferBroadcast(*this, getA(), getB(),                               \
                          getElementTypeOrSelf(getA().getType()),              \
                          /*sameElementType=*/true);                           \
  }

KILN_BINARY(AddOp)
KILN_BINARY(SubOp)
KILN_BINARY(MulOp)
KILN_BINARY(DivOp)

#undef KILN_BINARY

InferredTypes PowOp::inferResultTypes() {
  // The exponent may have another element type (T1 vs T).
  return inferBroadcast(*this, getX(), getY(),
                        getElementTypeOrSelf(getX().getType()),
                        /*sameElementType=*/false);
}

InferredTypes ClipOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getInput().getType());
  for (Value bound : {getMin(), getMax()}) {
    if (isNoValue(bound))
      continue;
    if (getElementTypeOrSelf(bound.getType()) != elemTy)
      return emitOpError() << "min/max element type must match the input: "
                           << bound.getType() << " vs " << getInput().getType();
    auto shaped = dyn_cast<ShapedType>(bound.getType());
    if (shaped && shaped.hasStaticShape() && shaped.getNumElements() != 1)
      return emitOpError() << "min/max must be scalars, got "
                           << bound.getType();
  }
  return inferSameAsOperand(getInput());
}
