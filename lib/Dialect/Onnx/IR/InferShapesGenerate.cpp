//===- InferShapesGenerate.cpp - Generator onnx ops ------------------------===//
//
// Shape inference of the Generate family (OnnxFamilies.def): ConstantOfShape,
// Range, EyeLike, OneHot and Trilu. A size given by a constant operand is
// static; one read at run time is dynamic.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"
#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

InferredTypes ConstantOfShapeOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = Float32Type::get(getContext());
  if (auto v = op->getAttrOfType<ElementsAttr>("value")) {
    if (v.getNumElements() != 1)
      return emitOpError() << "value must have exactly one element";
    elem = v.getElementType();
  }
  Value shape = op->getOperand(0);
  if (std::optional<SmallVector<ShapeElement>> elements =
          evaluateShapeValue(shape)) {
    SmallVector<int64_t> dims = staticDimsOf(*elements);
    for (int64_t d : dims)
      if (!ShapedType::isDynamic(d) && d < 0)
        return emitOpError() << "negative dimension " << d;
    return SmallVector<Type>{RankedTensorType::get(dims, elem)};
  }
  if (std::optional<int64_t> n = staticLength(shape))
    return SmallVector<Type>{RankedTensorType::get(
        SmallVector<int64_t>(*n, ShapedType::kDynamic), elem)};
  return SmallVector<Type>{UnrankedTensorType::get(elem)};
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

InferredTypes TriluOp::inferResultTypes() {
  return SmallVector<Type>{getOperation()->getOperand(0).getType()};
}
