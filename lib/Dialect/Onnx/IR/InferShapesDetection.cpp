//===- InferShapesDetection.cpp - NonMaxSuppression, Unique ---------------===//
//
// Shape inference of the ops lowered in OnnxToLinalg's Detection.cpp (ONNX
// spec, latest opset). Their output sizes depend on run-time data and are
// dynamic, except Unique's inverse_indices, whose length is that of the
// input (flattened or along the axis).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

InferredTypes NonMaxSuppressionOp::inferResultTypes() {
  Operation *op = getOperation();
  if (auto a = op->getAttrOfType<IntegerAttr>("center_point_box"))
    if (a.getInt() != 0 && a.getInt() != 1)
      return emitOpError("center_point_box must be 0 or 1");
  std::optional<ArrayRef<int64_t>> boxes = getShapeOf(op->getOperand(0));
  std::optional<ArrayRef<int64_t>> scores = getShapeOf(op->getOperand(1));
  if (boxes && (boxes->size() != 3 ||
                (!ShapedType::isDynamic((*boxes)[2]) && (*boxes)[2] != 4)))
    return emitOpError("boxes must have shape [batches, boxes, 4]");
  if (scores && scores->size() != 3)
    return emitOpError("scores must have shape [batches, classes, boxes]");
  return SmallVector<Type>{
      RankedTensorType::get({kDynamic, 3}, IntegerType::get(getContext(), 64))};
}

InferredTypes UniqueOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = getElementTypeOrSelf(x.getType());
  auto i64 = IntegerType::get(getContext(), 64);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  Type y;
  int64_t len = kDynamic;
  if (auto a = op->getAttrOfType<IntegerAttr>("axis")) {
    if (!in) {
      y = UnrankedTensorType::get(elem);
    } else {
      FailureOr<int64_t> axis = normalizeAxis(a.getInt(), in->size());
      if (failed(axis))
        return emitOpError() << "axis " << a.getInt() << " is out of range";
      SmallVector<int64_t> out(*in);
      len = out[*axis];
      out[*axis] = kDynamic;
      y = RankedTensorType::get(out, elem);
    }
  } else {
    y = RankedTensorType::get({kDynamic}, elem);
    if (in && !llvm::any_of(*in, ShapedType::isDynamic)) {
      len = 1;
      for (int64_t d : *in)
        len *= d;
    }
  }
  SmallVector<Type> r{y};
  auto dyn1 = RankedTensorType::get({kDynamic}, i64);
  for (unsigned i = 1; i < op->getNumResults(); ++i) {
    Type t = op->getResult(i).getType();
    r.push_back(isa<NoneType>(t) ? t
                : i == 2         ? Type(RankedTensorType::get({len}, i64))
                                 : Type(dyn1));
  }
  return r;
}
