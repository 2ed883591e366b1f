//===- InferShapesSpatial.cpp - ConvTranspose ------------------------------===//
//
// Shape inference of the Spatial family (OnnxFamilies.def): ConvTranspose.
// Col2Im and MaxUnpool keep the result types the model declares.
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

InferredTypes ConvTransposeOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0), w = op->getOperand(1);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x), ws = getShapeOf(w);
  int64_t group = intAttr(op, "group", 1);
  if (group <= 0)
    return emitOpError() << "group must be positive, got " << group;
  SmallVector<int64_t> kernel = intsAttr(op, "kernel_shape");
  int64_t rank = in               ? (int64_t)in->size()
                 : ws             ? (int64_t)ws->size()
                 : kernel.empty() ? -1
                                  : (int64_t)kernel.size() + 2;
  if (rank < 0)
    return unranked(elem);
  if (rank < 3 || (in && (int64_t)in->size() != rank) ||
      (ws && (int64_t)ws->size() != rank))
    return emitOpError() << "expects input and weights of one rank >= 3, got "
                         << x.getType() << " and " << w.getType();
  int64_t ns = rank - 2;
  if (kernel.empty()) {
    kernel.assign(ns, kDynamic);
    if (ws)
      kernel.assign(ws->begin() + 2, ws->end());
  }
  auto orDefault = [&](StringRef name, int64_t n, int64_t dflt) {
    SmallVector<int64_t> v = intsAttr(op, name);
    if (v.empty())
      v.assign(n, dflt);
    return v;
  };
  SmallVector<int64_t> strides = orDefault("strides", ns, 1);
  SmallVector<int64_t> dil = orDefault("dilations", ns, 1);
  SmallVector<int64_t> outPad = orDefault("output_padding", ns, 0);
  SmallVector<int64_t> pads = orDefault("pads", 2 * ns, 0);
  SmallVector<int64_t> outShape = intsAttr(op, "output_shape");
  StringRef autoPad = strAttr(op, "auto_pad", "NOTSET");
  if ((int64_t)kernel.size() != ns || (int64_t)strides.size() != ns ||
      (int64_t)dil.size() != ns || (int64_t)outPad.size() != ns ||
      (int64_t)pads.size() != 2 * ns ||
      (!outShape.empty() && (int64_t)outShape.size() != ns))
    return emitOpError() << "attributes do not match the " << ns
                         << " spatial dims";
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER" && autoPad != "VALID")
    return emitOpError() << "unknown auto_pad '" << autoPad << "'";
  for (int64_t i = 0; i < ns; ++i)
    if (strides[i] <= 0 || dil[i] <= 0)
      return emitOpError("strides and dilations must be positive");

  SmallVector<int64_t> out(rank, kDynamic);
  if (in)
    out[0] = (*in)[0];
  if (ws && !ShapedType::isDynamic((*ws)[1]))
    out[1] = (*ws)[1] * group;
  if (in && ws && !ShapedType::isDynamic((*in)[1]) &&
      !ShapedType::isDynamic((*ws)[0]) && (*in)[1] != (*ws)[0])
    return emitOpError() << "input channels " << (*in)[1]
                         << " differ from weight dim 0 " << (*ws)[0];
  for (int64_t i = 0; i < ns; ++i) {
    if (!outShape.empty()) {
      out[2 + i] = outShape[i];
      continue;
    }
    int64_t d = in ? (*in)[2 + i] : kDynamic;
    if (ShapedType::isDynamic(d))
      continue;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out[2 + i] = d * strides[i];
      continue;
    }
    if (ShapedType::isDynamic(kernel[i]))
      continue;
    int64_t padSum = autoPad == "VALID" ? 0 : pads[i] + pads[ns + i];
    int64_t o = strides[i] * (d - 1) + outPad[i] + (kernel[i] - 1) * dil[i] +
                1 - padSum;
    if (o < 0)
      return emitOpError() << "spatial output dimension " << i
                           << " would be negative (" << o << ")";
    out[2 + i] = o;
  }
  return ranked(out, elem);
}
