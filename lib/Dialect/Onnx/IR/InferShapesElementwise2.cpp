//===- InferShapesElementwise2.cpp - Math, logic and dtype onnx ops -------===//
//
// Shape inference of the unary math ops, comparisons and logical ops,
// variadic Max/Min/Sum/Mean, Where, casts, and of the generators (Range,
// EyeLike, OneHot, ConstantOfShape) and broadcasting copies (Expand, Tile).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

namespace {

/// Numpy broadcast of the present `operands`; the result has element type
/// `elemTy` (unranked when a rank is unknown).
InferredTypes inferNaryBroadcast(Operation *op, ValueRange operands,
                                 Type elemTy) {
  std::optional<SmallVector<int64_t>> shape = SmallVector<int64_t>{};
  for (Value v : operands) {
    if (isNoValue(v))
      continue;
    std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
    if (!s)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    FailureOr<SmallVector<int64_t>> b = broadcastShapes(*shape, *s);
    if (failed(b))
      return op->emitOpError()
             << "operands are not broadcast-compatible: " << v.getType();
    shape = *b;
  }
  return SmallVector<Type>{RankedTensorType::get(*shape, elemTy)};
}

/// Broadcast of all operands with a common element type.
InferredTypes inferSameElemBroadcast(Operation *op, Type resultElem = {}) {
  Type elem;
  for (Value v : op->getOperands()) {
    if (isNoValue(v))
      continue;
    Type e = getElementTypeOrSelf(v.getType());
    if (elem && e != elem)
      return op->emitOpError()
             << "operands have different element types: " << elem << " and "
             << e;
    elem = e;
  }
  return inferNaryBroadcast(op, op->getOperands(),
                            resultElem ? resultElem : elem);
}

Type withElem(Type t, Type elem) {
  if (auto r = dyn_cast<RankedTensorType>(t))
    return RankedTensorType::get(r.getShape(), elem);
  return UnrankedTensorType::get(elem);
}

/// The length of a 1-D shape operand when static.
std::optional<int64_t> staticLength(Value v) {
  std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
  if (!s || s->size() != 1 || ShapedType::isDynamic((*s)[0]))
    return std::nullopt;
  return (*s)[0];
}

} // namespace

#define KILN_UNARY(OP)                                                         \
  InferredTypes OP::inferResultTypes() {                                       \
    return SmallVector<Type>{getOperation()->getOperand(0).getType()};         \
  }

KILN_UNARY(RoundOp)
KILN_UNARY(FloorOp)
KILN_UNARY(CeilOp)
KILN_UNARY(SignOp)
KILN_UNARY(ReciprocalOp)
KILN_UNARY(SinOp)
KILN_UNARY(CosOp)
KILN_UNARY(TanOp)
KILN_UNARY(AsinOp)
KILN_UNARY(AcosOp)
KILN_UNARY(AtanOp)
KILN_UNARY(SinhOp)
KILN_UNARY(CoshOp)
KILN_UNARY(AsinhOp)
KILN_UNARY(AcoshOp)
KILN_UNARY(AtanhOp)
KILN_UNARY(ErfOp)
KILN_UNARY(GeluOp)
KILN_UNARY(EluOp)
KILN_UNARY(SeluOp)
KILN_UNARY(CeluOp)
KILN_UNARY(SoftplusOp)
KILN_UNARY(SoftsignOp)
KILN_UNARY(ThresholdedReluOp)
KILN_UNARY(MishOp)
KILN_UNARY(HardSwishOp)
KILN_UNARY(SwishOp)
KILN_UNARY(NotOp)
KILN_UNARY(BitwiseNotOp)
KILN_UNARY(TriluOp)

#undef KILN_UNARY

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

KILN_BROADCAST(AndOp)
KILN_BROADCAST(OrOp)
KILN_BROADCAST(XorOp)
KILN_BROADCAST(MaxOp)
KILN_BROADCAST(MinOp)
KILN_BROADCAST(SumOp)
KILN_BROADCAST(MeanOp)
KILN_BROADCAST(ModOp)
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

InferredTypes PReluOp::inferResultTypes() {
  // The slope broadcasts to X (unidirectionally).
  Operation *op = getOperation();
  return inferNaryBroadcast(op, op->getOperands(),
                            getElementTypeOrSelf(op->getOperand(0).getType()));
}

InferredTypes WhereOp::inferResultTypes() {
  Operation *op = getOperation();
  Type x = getElementTypeOrSelf(op->getOperand(1).getType());
  Type y = getElementTypeOrSelf(op->getOperand(2).getType());
  if (x != y)
    return emitOpError() << "X and Y have different element types: " << x
                         << " and " << y;
  return inferNaryBroadcast(op, op->getOperands(), x);
}

InferredTypes CastLikeOp::inferResultTypes() {
  Operation *op = getOperation();
  return SmallVector<Type>{
      withElem(op->getOperand(0).getType(),
               getElementTypeOrSelf(op->getOperand(1).getType()))};
}

InferredTypes DropoutOp::inferResultTypes() {
  Operation *op = getOperation();
  Type data = op->getOperand(0).getType();
  SmallVector<Type> types{data};
  if (op->getNumResults() > 1 && !isa<NoneType>(op->getResult(1).getType()))
    types.push_back(withElem(data, IntegerType::get(getContext(), 1)));
  return types;
}

InferredTypes SizeOp::inferResultTypes() {
  return SmallVector<Type>{
      RankedTensorType::get({}, IntegerType::get(getContext(), 64))};
}

InferredTypes EyeLikeOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = getElementTypeOrSelf(op->getOperand(0).getType());
  if (auto dt = op->getAttrOfType<IntegerAttr>("dtype")) {
    elem = getElementTypeForOnnxDataType(getContext(), dt.getInt());
    if (!elem)
      return emitOpError() << "unsupported dtype " << dt.getInt();
  }
  if (auto s = getShapeOf(op->getOperand(0)); s && s->size() != 2)
    return emitOpError() << "input must be 2-D";
  return SmallVector<Type>{withElem(op->getOperand(0).getType(), elem)};
}

InferredTypes ConstantOfShapeOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = Float32Type::get(getContext());
  if (auto v = op->getAttrOfType<ElementsAttr>("value")) {
    if (v.getNumElements() != 1)
      return emitOpError() << "value must have exactly one element";
    elem = v.getElementType();
  }
  Value shape = op->getOperand(0);
  if (std::optional<SmallVector<int64_t>> dims = getConstantIntValues(shape)) {
    for (int64_t d : *dims)
      if (d < 0)
        return emitOpError() << "negative dimension " << d;
    return SmallVector<Type>{RankedTensorType::get(*dims, elem)};
  }
  if (std::optional<int64_t> n = staticLength(shape))
    return SmallVector<Type>{RankedTensorType::get(
        SmallVector<int64_t>(*n, ShapedType::kDynamic), elem)};
  return SmallVector<Type>{UnrankedTensorType::get(elem)};
}

InferredTypes ExpandOp::inferResultTypes() {
  Operation *op = getOperation();
  Value input = op->getOperand(0), shape = op->getOperand(1);
  Type elem = getElementTypeOrSelf(input.getType());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(input);
  std::optional<SmallVector<int64_t>> dims = getConstantIntValues(shape);
  if (in && dims) {
    SmallVector<int64_t> req;
    for (int64_t d : *dims) {
      if (d < 0)
        return emitOpError() << "negative dimension " << d;
      // A requested 1 keeps the input dim; that one may be dynamic.
      req.push_back(d);
    }
    FailureOr<SmallVector<int64_t>> b = broadcastShapes(*in, req);
    if (failed(b))
      return emitOpError()
             << "shape is not broadcast-compatible with the input";
    return SmallVector<Type>{RankedTensorType::get(*b, elem)};
  }
  std::optional<int64_t> n = staticLength(shape);
  if (in && n)
    return SmallVector<Type>{RankedTensorType::get(
        SmallVector<int64_t>(std::max<int64_t>(*n, in->size()),
                             ShapedType::kDynamic),
        elem)};
  return SmallVector<Type>{UnrankedTensorType::get(elem)};
}

InferredTypes TileOp::inferResultTypes() {
  Operation *op = getOperation();
  Value input = op->getOperand(0);
  Type elem = getElementTypeOrSelf(input.getType());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(input);
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elem)};
  std::optional<SmallVector<int64_t>> reps =
      getConstantIntValues(op->getOperand(1));
  if (reps && reps->size() != in->size())
    return emitOpError() << "repeats must have one value per input dim";
  SmallVector<int64_t> dims;
  for (auto [i, d] : llvm::enumerate(*in)) {
    if (!reps || ShapedType::isDynamic(d)) {
      dims.push_back(reps && (*reps)[i] == 0 ? 0 : ShapedType::kDynamic);
      continue;
    }
    if ((*reps)[i] < 0)
      return emitOpError() << "negative repeat " << (*reps)[i];
    dims.push_back(d * (*reps)[i]);
  }
  return SmallVector<Type>{RankedTensorType::get(dims, elem)};
}

InferredTypes RangeOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = getElementTypeOrSelf(op->getOperand(0).getType());
  for (Value v : op->getOperands())
    if (getElementTypeOrSelf(v.getType()) != elem)
      return emitOpError() << "start, limit and delta must have one type";
  int64_t n = ShapedType::kDynamic;
  if (isa<FloatType>(elem)) {
    auto s = getConstantFloatValues(op->getOperand(0));
    auto l = getConstantFloatValues(op->getOperand(1));
    auto d = getConstantFloatValues(op->getOperand(2));
    if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1 &&
        (*d)[0] != 0)
      n = std::max<int64_t>(
          0, static_cast<int64_t>(std::ceil(((*l)[0] - (*s)[0]) / (*d)[0])));
  } else {
    auto s = getConstantIntValues(op->getOperand(0));
    auto l = getConstantIntValues(op->getOperand(1));
    auto d = getConstantIntValues(op->getOperand(2));
    if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1 &&
        (*d)[0] != 0)
      n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(
                                   static_cast<double>((*l)[0] - (*s)[0]) /
                                   static_cast<double>((*d)[0]))));
  }
  return SmallVector<Type>{RankedTensorType::get({n}, elem)};
}

InferredTypes OneHotOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = getElementTypeOrSelf(op->getOperand(2).getType());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(op->getOperand(0));
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elem)};
  int64_t rank = in->size() + 1;
  int64_t axis = -1;
  if (auto a = op->getAttrOfType<IntegerAttr>("axis"))
    axis = a.getInt();
  FailureOr<int64_t> ax = normalizeAxis(axis, rank);
  if (failed(ax))
    return emitOpError() << "axis " << axis << " out of range";
  int64_t depth = ShapedType::kDynamic;
  Value d = op->getOperand(1);
  if (auto iv = getConstantIntValues(d); iv && iv->size() == 1)
    depth = (*iv)[0];
  else if (auto fv = getConstantFloatValues(d); fv && fv->size() == 1)
    depth = static_cast<int64_t>((*fv)[0]);
  if (depth != ShapedType::kDynamic && depth < 0)
    return emitOpError() << "depth must not be negative";
  SmallVector<int64_t> dims(in->begin(), in->end());
  dims.insert(dims.begin() + *ax, depth);
  return SmallVector<Type>{RankedTensorType::get(dims, elem)};
}
