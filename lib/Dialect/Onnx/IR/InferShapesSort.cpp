//===- InferShapesSort.cpp - TopK -----------------------------------------===//
//
// Shape inference of the Sort family (OnnxFamilies.def): TopK's two outputs
// have the input's shape with k along the axis (dynamic unless K is a
// constant).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

InferredTypes TopKOp::inferResultTypes() {
  Type elemTy = getElementTypeOrSelf(getX().getType());
  Type i64 = IntegerType::get(getContext(), 64);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(getX());
  if (!in)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy),
                             UnrankedTensorType::get(i64)};
  int64_t axis = getAxis();
  FailureOr<int64_t> n = normalizeAxis(axis, in->size());
  if (failed(n))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << in->size();
  SmallVector<int64_t> out(*in);
  out[*n] = kDynamic;
  if (std::optional<SmallVector<int64_t>> k = getConstantIntValues(getK()))
    if (k->size() == 1 && (*k)[0] >= 0)
      out[*n] = (*k)[0];
  return SmallVector<Type>{RankedTensorType::get(out, elemTy),
                           RankedTensorType::get(out, i64)};
}
