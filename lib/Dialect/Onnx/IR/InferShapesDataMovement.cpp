//===- InferShapesDataMovement.cpp - Split, Pad, gathers, scatters ---------===//
//
// Shape inference of the DataMovement family (OnnxFamilies.def): Split, Tile,
// Expand, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, ReverseSequence,
// the gathers and scatters, Compress and NonZero (ONNX spec, latest opset).
//
// A size that depends on run-time data is dynamic; a size computed from a
// constant operand is static and matches what the lowering computes. Only
// what the spec forbids is an error (the importer reports it naming the node).
//
//===----------------------------------------------------------------------===//

#include "InferShapesUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"
#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::onnxops::infer;

//===----------------------------------------------------------------------===//
// Split, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, ReverseSequence
//===----------------------------------------------------------------------===//

InferredTypes SplitOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  int64_t n = op->getNumResults();
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return SmallVector<Type>(n, UnrankedTensorType::get(elem));
  int64_t rank = in->size();
  int64_t axisAttr = intAttr(op, "axis", 0);
  FailureOr<int64_t> axis = normalizeAxis(axisAttr, rank);
  if (failed(axis))
    return emitOpError() << "axis " << axisAttr << " is out of range for rank "
                         << rank;
  int64_t dim = (*in)[*axis];
  SmallVector<int64_t> sizes(n, kDynamic);
  if (present(op, 1)) {
    if (std::optional<int64_t> len = staticLength(op->getOperand(1));
        len && *len != n)
      return emitOpError() << "split has " << *len << " entries for " << n
                           << " outputs";
    if (auto split = getConstantIntValues(op->getOperand(1))) {
      int64_t sum = 0;
      for (int64_t s : *split) {
        if (s < 0)
          return emitOpError() << "negative split size " << s;
        sum += s;
      }
      if (!ShapedType::isDynamic(dim) && sum != dim)
        return emitOpError()
               << "split sizes sum to " << sum << ", the axis has " << dim;
      sizes.assign(split->begin(), split->end());
    }
  } else {
    if (auto num = op->getAttrOfType<IntegerAttr>("num_outputs");
        num && num.getInt() != n)
      return emitOpError() << "num_outputs is " << num.getInt()
                           << " but the op has " << n << " outputs";
    if (n <= 0)
      return emitOpError("needs at least one output");
    // ceil(dim / n) per output, the last ones smaller.
    if (!ShapedType::isDynamic(dim)) {
      int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes[i] = std::min(chunk, std::max<int64_t>(0, dim - chunk * i));
    }
  }
  SmallVector<Type> types;
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<int64_t> s(*in);
    s[*axis] = sizes[i];
    types.push_back(RankedTensorType::get(s, elem));
  }
  return types;
}

InferredTypes PadOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return unranked(elem);
  int64_t rank = in->size();
  StringRef mode = strAttr(op, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return emitOpError() << "unknown mode '" << mode << "'";
  SmallVector<int64_t> out(*in);
  // Axes: all dims, constant ones, or unknown (every dim may be padded).
  std::optional<SmallVector<int64_t>> axes;
  if (!present(op, 3)) {
    axes = allAxes(rank);
  } else if (auto a = getConstantIntValues(op->getOperand(3))) {
    FailureOr<SmallVector<int64_t>> n = normalizeAxes(op, *a, rank);
    if (failed(n))
      return failure();
    axes = *n;
  }
  if (!axes)
    return ranked(SmallVector<int64_t>(rank, kDynamic), elem);
  int64_t na = axes->size();
  if (std::optional<int64_t> len = staticLength(op->getOperand(1));
      len && *len != 2 * na)
    return emitOpError() << "pads has " << *len << " entries, expected "
                         << 2 * na;
  std::optional<SmallVector<int64_t>> pads =
      getConstantIntValues(op->getOperand(1));
  for (int64_t k = 0; k < na; ++k) {
    int64_t d = (*axes)[k];
    if (!pads || ShapedType::isDynamic(out[d])) {
      out[d] = kDynamic;
      continue;
    }
    out[d] = std::max<int64_t>(0, out[d] + (*pads)[k] + (*pads)[na + k]);
  }
  return ranked(out, elem);
}

InferredTypes CenterCropPadOp::inferResultTypes() {
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
  Value shape = op->getOperand(1);
  if (std::optional<int64_t> len = staticLength(shape); len && *len != na)
    return emitOpError() << "shape has " << *len << " entries, expected " << na;
  std::optional<SmallVector<int64_t>> want = getConstantIntValues(shape);
  SmallVector<int64_t> out(*in);
  for (int64_t k = 0; k < na; ++k)
    out[axes[k]] = want ? std::max<int64_t>(0, (*want)[k]) : kDynamic;
  return ranked(out, elem);
}

/// DepthToSpace (`toSpace`) and SpaceToDepth on NCHW.
static InferredTypes inferDepthSpace(Operation *op, bool toSpace) {
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  int64_t bs = intAttr(op, "blocksize", 0);
  if (bs <= 0)
    return op->emitOpError() << "blocksize must be positive, got " << bs;
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return ranked(SmallVector<int64_t>(4, kDynamic), elem);
  if (in->size() != 4)
    return op->emitOpError() << "input must be 4-D, got " << x.getType();
  SmallVector<int64_t> out(*in);
  auto divDim = [&](int64_t d, int64_t f) -> FailureOr<int64_t> {
    if (ShapedType::isDynamic(d))
      return kDynamic;
    if (d % f)
      return op->emitOpError()
             << "dimension " << d << " is not a multiple of " << f;
    return d / f;
  };
  if (toSpace) {
    FailureOr<int64_t> c = divDim((*in)[1], bs * bs);
    if (failed(c))
      return failure();
    out = {(*in)[0], *c, mulDim((*in)[2], bs), mulDim((*in)[3], bs)};
  } else {
    FailureOr<int64_t> h = divDim((*in)[2], bs), w = divDim((*in)[3], bs);
    if (failed(h) || failed(w))
      return failure();
    out = {(*in)[0], mulDim((*in)[1], bs * bs), *h, *w};
  }
  return ranked(out, elem);
}

InferredTypes DepthToSpaceOp::inferResultTypes() {
  return inferDepthSpace(getOperation(), /*toSpace=*/true);
}

InferredTypes SpaceToDepthOp::inferResultTypes() {
  return inferDepthSpace(getOperation(), /*toSpace=*/false);
}

InferredTypes ReverseSequenceOp::inferResultTypes() {
  Value x = getOperation()->getOperand(0);
  if (auto in = getShapeOf(x); in && in->size() < 2)
    return emitOpError() << "input must have rank >= 2, got " << x.getType();
  return one(x.getType());
}

//===----------------------------------------------------------------------===//
// Gathers, scatters, Compress, NonZero
//===----------------------------------------------------------------------===//

InferredTypes GatherElementsOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0), ind = op->getOperand(1);
  std::optional<ArrayRef<int64_t>> d = getShapeOf(x), i = getShapeOf(ind);
  if (d && i && d->size() != i->size())
    return emitOpError() << "indices must have the rank of data: "
                         << x.getType() << " and " << ind.getType();
  if (d) {
    int64_t axis = intAttr(op, "axis", 0);
    if (failed(normalizeAxis(axis, d->size())))
      return emitOpError() << "axis " << axis << " is out of range";
  }
  return sameShape(ind, elemOf(x));
}

InferredTypes GatherNDOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0), ind = op->getOperand(1);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> d = getShapeOf(x), i = getShapeOf(ind);
  if (!d || !i || i->empty() || ShapedType::isDynamic(i->back()))
    return unranked(elem);
  int64_t r = d->size(), q = i->size(), k = i->back();
  int64_t bd = intAttr(op, "batch_dims", 0);
  if (bd < 0 || bd >= std::min(r, q) || bd + k > r || k < 1)
    return emitOpError() << "batch_dims " << bd << " and index length " << k
                         << " do not fit data of rank " << r
                         << " and indices of rank " << q;
  SmallVector<int64_t> out(i->drop_back());
  for (int64_t j = 0; j < bd; ++j)
    if (ShapedType::isDynamic(out[j]))
      out[j] = (*d)[j];
  out.append(d->begin() + bd + k, d->end());
  return ranked(out, elem);
}

InferredTypes ScatterElementsOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  std::optional<ArrayRef<int64_t>> d = getShapeOf(x),
                                   i = getShapeOf(op->getOperand(1)),
                                   u = getShapeOf(op->getOperand(2));
  if ((d && i && d->size() != i->size()) || (i && u && i->size() != u->size()))
    return emitOpError("data, indices and updates must have one rank");
  if (elemOf(op->getOperand(2)) != elemOf(x))
    return emitOpError("updates must have the element type of data");
  return one(x.getType());
}

InferredTypes ScatterNDOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  if (elemOf(op->getOperand(2)) != elemOf(x))
    return emitOpError("updates must have the element type of data");
  return one(x.getType());
}

InferredTypes CompressOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  auto a = op->getAttrOfType<IntegerAttr>("axis");
  if (!a)
    return ranked({kDynamic}, elem);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return unranked(elem);
  FailureOr<int64_t> axis = normalizeAxis(a.getInt(), in->size());
  if (failed(axis))
    return emitOpError() << "axis " << a.getInt() << " is out of range";
  SmallVector<int64_t> out(*in);
  out[*axis] = kDynamic;
  return ranked(out, elem);
}

InferredTypes NonZeroOp::inferResultTypes() {
  std::optional<ArrayRef<int64_t>> in =
      getShapeOf(getOperation()->getOperand(0));
  return ranked({in ? (int64_t)in->size() : kDynamic, kDynamic},
                IntegerType::get(getContext(), 64));
}

//===----------------------------------------------------------------------===//
// Expand, Tile
//===----------------------------------------------------------------------===//

InferredTypes ExpandOp::inferResultTypes() {
  Operation *op = getOperation();
  Value input = op->getOperand(0), shape = op->getOperand(1);
  Type elem = getElementTypeOrSelf(input.getType());
  std::optional<ArrayRef<int64_t>> in = getShapeOf(input);
  std::optional<SmallVector<ShapeElement>> elements = evaluateShapeValue(shape);
  if (in && elements) {
    SmallVector<int64_t> req;
    for (int64_t d : staticDimsOf(*elements)) {
      if (!ShapedType::isDynamic(d) && d < 0)
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
  std::optional<SmallVector<ShapeElement>> elements =
      evaluateShapeValue(op->getOperand(1));
  std::optional<SmallVector<int64_t>> reps;
  if (elements)
    reps = staticDimsOf(*elements);
  if (reps && reps->size() != in->size())
    return emitOpError() << "repeats must have one value per input dim";
  SmallVector<int64_t> dims;
  for (auto [i, d] : llvm::enumerate(*in)) {
    if (!reps || ShapedType::isDynamic(d) ||
        ShapedType::isDynamic((*reps)[i])) {
      dims.push_back(reps && (*reps)[i] == 0 ? 0 : ShapedType::kDynamic);
      continue;
    }
    if ((*reps)[i] < 0)
      return emitOpError() << "negative repeat " << (*reps)[i];
    dims.push_back(d * (*reps)[i]);
  }
  return SmallVector<Type>{RankedTensorType::get(dims, elem)};
}
