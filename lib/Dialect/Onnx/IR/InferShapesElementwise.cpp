//===- InferShapesElementwise.cpp - Elementwise onnx ops ------------------===//
//
// Shape inference of unary elementwise ops (same type as the input) and of
// numpy-broadcasting binary ops.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

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

//===----------------------------------------------------------------------===//
// Math, activations, variadic ops, Dropout
//===----------------------------------------------------------------------===//

#define KILN_UNARY_OPERAND0(OP)                                                \
  InferredTypes OP::inferResultTypes() {                                       \
    return SmallVector<Type>{getOperation()->getOperand(0).getType()};         \
  }

KILN_UNARY_OPERAND0(RoundOp)
KILN_UNARY_OPERAND0(FloorOp)
KILN_UNARY_OPERAND0(CeilOp)
KILN_UNARY_OPERAND0(SignOp)
KILN_UNARY_OPERAND0(ReciprocalOp)
KILN_UNARY_OPERAND0(SinOp)
KILN_UNARY_OPERAND0(CosOp)
KILN_UNARY_OPERAND0(TanOp)
KILN_UNARY_OPERAND0(AsinOp)
KILN_UNARY_OPERAND0(AcosOp)
KILN_UNARY_OPERAND0(AtanOp)
KILN_UNARY_OPERAND0(SinhOp)
KILN_UNARY_OPERAND0(CoshOp)
KILN_UNARY_OPERAND0(AsinhOp)
KILN_UNARY_OPERAND0(AcoshOp)
KILN_UNARY_OPERAND0(AtanhOp)
KILN_UNARY_OPERAND0(ErfOp)
KILN_UNARY_OPERAND0(GeluOp)
KILN_UNARY_OPERAND0(EluOp)
KILN_UNARY_OPERAND0(SeluOp)
KILN_UNARY_OPERAND0(CeluOp)
KILN_UNARY_OPERAND0(SoftplusOp)
KILN_UNARY_OPERAND0(SoftsignOp)
KILN_UNARY_OPERAND0(ThresholdedReluOp)
KILN_UNARY_OPERAND0(MishOp)
KILN_UNARY_OPERAND0(HardSwishOp)
KILN_UNARY_OPERAND0(SwishOp)

#undef KILN_UNARY_OPERAND0

#define KILN_TO_BOOL(OP)                                                       \
  InferredTypes OP::inferResultTypes() {                                       \
    Type t = getOperation()->getOperand(0).getType();                          \
    return SmallVector<Type>{withElem(t, IntegerType::get(getContext(), 1))};  \
  }

KILN_TO_BOOL(IsNaNOp)
KILN_TO_BOOL(IsInfOp)

#undef KILN_TO_BOOL

#define KILN_BROADCAST(OP)                                                     \
  InferredTypes OP::inferResultTypes() { return inferSameElemBroadcast(*this); }

KILN_BROADCAST(MaxOp)
KILN_BROADCAST(MinOp)
KILN_BROADCAST(SumOp)
KILN_BROADCAST(MeanOp)
KILN_BROADCAST(ModOp)

#undef KILN_BROADCAST

InferredTypes PReluOp::inferResultTypes() {
  // The slope broadcasts to X (unidirectionally).
  Operation *op = getOperation();
  return inferNaryBroadcast(op, op->getOperands(),
                            getElementTypeOrSelf(op->getOperand(0).getType()));
}

InferredTypes DropoutOp::inferResultTypes() {
  Operation *op = getOperation();
  Type data = op->getOperand(0).getType();
  SmallVector<Type> types{data};
  if (op->getNumResults() > 1 && !isa<NoneType>(op->getResult(1).getType()))
    types.push_back(withElem(data, IntegerType::get(getContext(), 1)));
  return types;
}
