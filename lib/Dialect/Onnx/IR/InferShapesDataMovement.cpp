//===- InferShapesDataMovement.cpp - Split, Pad, Resize, quantize ... -----===//
//
// Shape inference of the ops lowered in OnnxToLinalg's DataMovement.cpp,
// Resample.cpp, Quantize.cpp and Spatial.cpp: Split, Pad, CenterCropPad,
// DepthToSpace, SpaceToDepth, ReverseSequence, the gathers and scatters,
// Compress, NonZero, Resize, GridSample, AffineGrid, ConvTranspose, the
// (de)quantizations and the integer matmuls (ONNX spec, latest opset).
//
// A size that depends on run-time data is dynamic; a size computed from a
// constant operand is static and matches what the lowering computes. Only
// what the spec forbids is an error (the importer reports it naming the node).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

namespace {

Type elemOf(Value v) { return getElementTypeOrSelf(v.getType()); }

/// Operand `i` of `op` exists and is not onnx.NoValue.
bool present(Operation *op, unsigned i) {
  return i < op->getNumOperands() && !isNoValue(op->getOperand(i));
}

/// The static length of a 1-D operand.
std::optional<int64_t> staticLength(Value v) {
  std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
  if (!s || s->size() != 1 || ShapedType::isDynamic((*s)[0]))
    return std::nullopt;
  return (*s)[0];
}

SmallVector<int64_t> intsAttr(Operation *op, StringRef name) {
  SmallVector<int64_t> r;
  if (auto a = op->getAttrOfType<ArrayAttr>(name))
    for (Attribute e : a)
      r.push_back(cast<IntegerAttr>(e).getInt());
  return r;
}

int64_t intAttr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return dflt;
}

StringRef strAttr(Operation *op, StringRef name, StringRef dflt) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.getValue();
  return dflt;
}

InferredTypes one(Type t) { return SmallVector<Type>{t}; }

InferredTypes unranked(Type elem) { return one(UnrankedTensorType::get(elem)); }

InferredTypes ranked(ArrayRef<int64_t> shape, Type elem) {
  return one(RankedTensorType::get(shape, elem));
}

/// The input's type with element type `elem`.
InferredTypes sameShape(Value v, Type elem) {
  return one(makeTensorType(getShapeOf(v), elem));
}

/// Normalized `axes` for `rank`, no repeats; failure (with an error) else.
FailureOr<SmallVector<int64_t>>
normalizeAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> r;
  for (int64_t a : axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank);
    if (failed(n))
      return op->emitOpError()
             << "axis " << a << " is out of range for rank " << rank;
    if (llvm::is_contained(r, *n))
      return op->emitOpError() << "axis " << a << " is repeated";
    r.push_back(*n);
  }
  return r;
}

SmallVector<int64_t> allAxes(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}

int64_t mulDim(int64_t d, int64_t f) {
  return ShapedType::isDynamic(d) ? kDynamic : d * f;
}

/// Numpy matmul of shapes (1-D operands promoted and the added dim dropped).
FailureOr<SmallVector<int64_t>> matmulShape(Operation *op, ArrayRef<int64_t> a,
                                            ArrayRef<int64_t> b) {
  if (a.empty() || b.empty())
    return op->emitOpError("matrix operands must have rank >= 1");
  SmallVector<int64_t> aS(a), bS(b);
  bool aVec = aS.size() == 1, bVec = bS.size() == 1;
  if (aVec)
    aS.insert(aS.begin(), 1);
  if (bVec)
    bS.push_back(1);
  int64_t k1 = aS.back(), k2 = bS[bS.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return op->emitOpError()
           << "inner dimensions mismatch: " << k1 << " and " << k2;
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef(aS).drop_back(2), ArrayRef(bS).drop_back(2));
  if (failed(batch))
    return op->emitOpError("batch dimensions are not broadcast-compatible");
  SmallVector<int64_t> out(*batch);
  if (!aVec)
    out.push_back(aS[aS.size() - 2]);
  if (!bVec)
    out.push_back(bS.back());
  return out;
}

} // namespace

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
  SmallVector<int64_t> axes = allAxes(rank);
  if (op->hasAttr("axes")) {
    FailureOr<SmallVector<int64_t>> n =
        normalizeAxes(op, intsAttr(op, "axes"), rank);
    if (failed(n))
      return failure();
    axes = *n;
  }
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
// Resize, GridSample, AffineGrid
//===----------------------------------------------------------------------===//

InferredTypes ResizeOp::inferResultTypes() {
  Operation *op = getOperation();
  Value x = op->getOperand(0);
  Type elem = elemOf(x);
  std::optional<ArrayRef<int64_t>> in = getShapeOf(x);
  if (!in)
    return unranked(elem);
  int64_t rank = in->size();
  SmallVector<int64_t> axes = allAxes(rank);
  if (op->hasAttr("axes")) {
    FailureOr<SmallVector<int64_t>> n =
        normalizeAxes(op, intsAttr(op, "axes"), rank);
    if (failed(n))
      return failure();
    axes = *n;
  }
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
  if (!sizes)
    return allDynamic();
  StringRef policy = strAttr(op, "keep_aspect_ratio_policy", "stretch");
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

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

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

/// MatMulInteger (i32 result) and QLinearMatMul (the type of y_zero_point).
static InferredTypes inferIntMatMul(Operation *op, Value a, Value b,
                                    Type elem) {
  std::optional<ArrayRef<int64_t>> sa = getShapeOf(a), sb = getShapeOf(b);
  if (!sa || !sb)
    return unranked(elem);
  FailureOr<SmallVector<int64_t>> out = matmulShape(op, *sa, *sb);
  if (failed(out))
    return failure();
  return ranked(*out, elem);
}

InferredTypes MatMulIntegerOp::inferResultTypes() {
  Operation *op = getOperation();
  return inferIntMatMul(op, op->getOperand(0), op->getOperand(1),
                        IntegerType::get(getContext(), 32));
}

InferredTypes QLinearMatMulOp::inferResultTypes() {
  Operation *op = getOperation();
  return inferIntMatMul(op, op->getOperand(0), op->getOperand(3),
                        elemOf(op->getOperand(7)));
}
