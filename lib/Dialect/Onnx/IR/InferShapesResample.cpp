//===- InferShapesResample.cpp - Resize, GridSample, AffineGrid ------------===//
//
// Shape inference of the Resample family (OnnxFamilies.def): Resize (scales
// or sizes, constant or not), GridSample and AffineGrid.
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

InferredTypes ResizeOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return unranked(elem);
  int64_t rank = in->size();
  FailureOr<SmallVector<int64_t>> normalized = axesAttrOrAll(op, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> axes = *normalized;
  int64_t na = axes.size();
  SmallVector<int64_t> out(*in);
  auto allDynamic = [&]() {
    for (int64_t d : axes)
      out[d] = kDynamic;
    return ranked(out, elem);
  };
  // Scales, when given with a non-zero length, take precedence over sizes.
  std::optional<int64_t> scalesLen =
      present(op, 2) ? staticLength(op->getOperand(2)) : 0;
  if (!scalesLen)
    return allDynamic();
  if (*scalesLen != 0) {
    if (*scalesLen != na)
      return emitOpError() << "scales has " << *scalesLen
                           << " entries, expected " << na;
    std::optional<SmallVector<double>> scales =
        getConstantFloatValues(op->getOperand(2));
    for (int64_t k = 0; k < na; ++k) {
      int64_t d = axes[k];
      if (!scales || ShapedType::isDynamic(out[d])) {
        out[d] = kDynamic;
        continue;
      }
      if ((*scales)[k] <= 0)
        return emitOpError() << "scales must be positive";
      out[d] = (int64_t)std::floor((double)out[d] * (*scales)[k]);
    }
    return ranked(out, elem);
  }
  if (!present(op, 3))
    return emitOpError("one of scales and sizes must be given");
  Value sizesV = op->getOperand(3);
  if (std::optional<int64_t> len = staticLength(sizesV); len && *len != na)
    return emitOpError() << "sizes has " << *len << " entries, expected " << na;
  std::optional<SmallVector<int64_t>> sizes = getConstantIntValues(sizesV);
  StringRef policy = strAttr(op, "keep_aspect_ratio_policy", "stretch");
  if (!sizes) {
    // Sizes from shape arithmetic (Concat(Shape(x)[0:2], computed H, W)):
    // the entries it knows are the output's dims under "stretch".
    std::optional<SmallVector<ShapeElement>> elements =
        evaluateShapeValue(sizesV);
    if (!elements || policy != "stretch" || (int64_t)elements->size() != na)
      return allDynamic();
    for (int64_t k = 0; k < na; ++k)
      out[axes[k]] = (*elements)[k].value && *(*elements)[k].value >= 0
                         ? *(*elements)[k].value
                         : kDynamic;
    return ranked(out, elem);
  }
  if (policy == "stretch") {
    for (int64_t k = 0; k < na; ++k)
      out[axes[k]] = (*sizes)[k];
    return ranked(out, elem);
  }
  // not_larger / not_smaller: one scale for all axes, the min/max of the
  // per-axis ratios (computed in double precision like the lowering).
  std::optional<double> m;
  for (int64_t k = 0; k < na; ++k) {
    int64_t d = (*in)[axes[k]];
    if (ShapedType::isDynamic(d))
      return allDynamic();
    double s = (double)(*sizes)[k] / (double)d;
    m = !m ? s : policy == "not_larger" ? std::min(*m, s) : std::max(*m, s);
  }
  for (int64_t k = 0; k < na; ++k)
    out[axes[k]] = (int64_t)std::floor(*m * (double)(*in)[axes[k]] + 0.5);
  return ranked(out, elem);
}

InferredTypes GridSampleOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0), grid = op->getOperand(1);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x), g = getShapeOf(grid);
  if (!in && !g)
    return unranked(elem);
  int64_t rank = in ? in->size() : g->size();
  if (rank < 3 || (g && (int64_t)g->size() != rank))
    return emitOpError() << "expects X [N, C, D1..Dr] and grid [N, D1..Dr, r], "
                            "got "
                         << x.getType() << " and " << grid.getType();
  if (g && !ShapedType::isDynamic(g->back()) && g->back() != rank - 2)
    return emitOpError() << "the last dim of grid must be " << rank - 2;
  SmallVector<int64_t> out(rank, kDynamic);
  if (in) {
    out[0] = (*in)[0];
    out[1] = (*in)[1];
  }
  if (g) {
    if (ShapedType::isDynamic(out[0]))
      out[0] = (*g)[0];
    for (int64_t d = 1; d < rank - 1; ++d)
      out[d + 1] = (*g)[d];
  }
  return ranked(out, elem);
}

InferredTypes AffineGridOp::inferResultTypes() {
  Operation *op = getOperation();
  Value theta = op->getOperand(0), size = op->getOperand(1);
  Type elem = elemOf(theta);
  std::optional<ArrayRef<int64_t>> t = getShapeOf(theta);
  if (t && t->size() != 3)
    return emitOpError() << "theta must be 3-D, got " << theta.getType();
  std::optional<int64_t> len = staticLength(size);
  if (!len)
    return unranked(elem);
  int64_t ns = *len - 2;
  if (ns != 2 && ns != 3)
    return emitOpError() << "size must have 4 or 5 entries, got " << *len;
  // [N, C, D1..Dn] -> [N, D1..Dn, n].
  SmallVector<int64_t> out(ns + 2, kDynamic);
  out.back() = ns;
  if (t)
    out[0] = (*t)[0];
  if (auto s = getConstantIntValues(size)) {
    out[0] = (*s)[0];
    for (int64_t i = 0; i < ns; ++i)
      out[1 + i] = (*s)[2 + i];
  }
  return ranked(out, elem);
}
