//===- InferShapesQuantize.cpp - Quantization ------------------------------===//
//
// Shape inference of the Quantize family (OnnxFamilies.def): QuantizeLinear,
// DequantizeLinear and DynamicQuantizeLinear.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

InferredTypes QuantizeLinearOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = IntegerType::get(getContext(), 8, IntegerType::Unsigned);
  int64_t dt = intAttr(op, "output_dtype", 0);
  if (present(op, 2)) {
    elem = elemOf(op->getOperand(2));
    if (dt != 0 && getElementTypeForOnnxDataType(getContext(), dt) != elem)
      return emitOpError("output_dtype differs from the zero point's type");
  } else if (dt != 0) {
    elem = getElementTypeForOnnxDataType(getContext(), dt);
    if (!elem)
      return emitOpError() << "unsupported output_dtype " << dt;
  }
  return sameShape(op->getOperand(0), elem);
}

InferredTypes DequantizeLinearOp::inferResultTypes() {
  Operation *op = getOperation();
  Type elem = elemOf(op->getOperand(1));
  if (int64_t dt = intAttr(op, "output_dtype", 0)) {
    elem = getElementTypeForOnnxDataType(getContext(), dt);
    if (!elem)
      return emitOpError() << "unsupported output_dtype " << dt;
  }
  return sameShape(op->getOperand(0), elem);
}

InferredTypes DynamicQuantizeLinearOp::inferResultTypes() {
  MLIRContext *ctx = getContext();
  Type u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  Value x = getOperation()->getOperand(0);
  return SmallVector<Type>{makeTensorType(getShapeOf(x), u8),
                           RankedTensorType::get({}, Float32Type::get(ctx)),
                           RankedTensorType::get({}, u8)};
}
