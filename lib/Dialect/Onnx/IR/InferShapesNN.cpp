//===- InferShapesNN.cpp - Convolution, pooling, normalization ------------===//
//
// Shape inference of Conv, MaxPool, AveragePool, GlobalAveragePool and
// BatchNormalization (ONNX spec, latest opset). Layout is NC<spatial>.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static SmallVector<int64_t> toInts(std::optional<ArrayAttr> attr) {
  SmallVector<int64_t> result;
  if (attr)
    for (Attribute a : *attr)
      result.push_back(cast<IntegerAttr>(a).getInt());
  return result;
}

namespace {
/// The spatial window parameters shared by Conv and the pools.
struct Window {
  SmallVector<int64_t> kernel; // kDynamic where unknown (Conv weights).
  SmallVector<int64_t> pads;   // begin..., end...
  SmallVector<int64_t> strides;
  SmallVector<int64_t> dilations;
  StringRef autoPad;
  bool ceilMode = false;
};
} // namespace

/// Checks and defaults the window attributes for `n` spatial dims.
static LogicalResult completeWindow(Operation *op, Window &w, int64_t n) {
  auto checkLen = [&](StringRef name, SmallVector<int64_t> &v, int64_t len,
                      int64_t dflt) -> LogicalResult {
    if (v.empty()) {
      v.assign(len, dflt);
      return success();
    }
    if ((int64_t)v.size() != len)
      return op->emitOpError() << "'" << name << "' has " << v.size()
                               << " values, expected " << len;
    return success();
  };
  if (failed(checkLen("kernel_shape", w.kernel, n, kDynamic)) ||
      failed(checkLen("pads", w.pads, 2 * n, 0)) ||
      failed(checkLen("strides", w.strides, n, 1)) ||
      failed(checkLen("dilations", w.dilations, n, 1)))
    return failure();
  for (int64_t i = 0; i < n; ++i) {
    if (w.strides[i] <= 0 || w.dilations[i] <= 0)
      return op->emitOpError("strides and dilations must be positive");
    if (!ShapedType::isDynamic(w.kernel[i]) && w.kernel[i] <= 0)
      return op->emitOpError("kernel_shape values must be positive");
    if (w.pads[i] < 0 || w.pads[i + n] < 0)
      return op->emitOpError("pads must be non-negative");
  }
  if (w.autoPad != "NOTSET" && w.autoPad != "SAME_UPPER" &&
      w.autoPad != "SAME_LOWER" && w.autoPad != "VALID")
    return op->emitOpError() << "unknown auto_pad '" << w.autoPad << "'";
  return success();
}

/// Output size of spatial dim `i` for input size `in` (static or dynamic).
static FailureOr<int64_t> windowOutputSize(Operation *op, const Window &w,
                                           int64_t i, int64_t in) {
  if (ShapedType::isDynamic(in))
    return kDynamic;
  int64_t n = w.strides.size();
  int64_t s = w.strides[i];
  if (w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER")
    return (in + s - 1) / s;
  if (ShapedType::isDynamic(w.kernel[i]))
    return kDynamic;
  int64_t effKernel = (w.kernel[i] - 1) * w.dilations[i] + 1;
  int64_t padBegin = 0, padTotal = 0;
  if (w.autoPad == "NOTSET") {
    padBegin = w.pads[i];
    padTotal = w.pads[i] + w.pads[i + n];
  }
  int64_t span = in + padTotal - effKernel;
  if (span < 0)
    return op->emitOpError()
           << "spatial dimension " << i << " of size " << in << " (padded "
           << in + padTotal << ") is smaller than the effective kernel size "
           << effKernel;
  int64_t out;
  if (w.ceilMode) {
    out = (span + s - 1) / s + 1;
    // A window that would start in the end padding is dropped.
    if ((out - 1) * s >= in + padBegin)
      --out;
  } else {
    out = span / s + 1;
  }
  return out;
}

/// Spatial output sizes for input shape `x` ([N, C, spatial...]).
static FailureOr<SmallVector<int64_t>>
spatialOutput(Operation *op, const Window &w, ArrayRef<int64_t> x) {
  SmallVector<int64_t> out;
  for (size_t i = 2; i < x.size(); ++i) {
    FailureOr<int64_t> o = windowOutputSize(op, w, i - 2, x[i]);
    if (failed(o))
      return failure();
    out.push_back(*o);
  }
  return out;
}

static bool staticMismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// A channels-last op's (isChannelsLast) operand shape `s` viewed in ONNX's
/// layout through `perm` (kept in `buf`).
static std::optional<ArrayRef<int64_t>>
channelsFirstView(std::optional<ArrayRef<int64_t>> s, bool last,
                  function_ref<SmallVector<int64_t>(int64_t)> perm,
                  SmallVectorImpl<int64_t> &buf) {
  if (!last || !s)
    return s;
  buf = permuteShape(*s, perm(s->size()));
  return ArrayRef<int64_t>(buf);
}

/// The result types inferred in ONNX's layout, back in channels-last form.
static InferredTypes channelsLastResults(InferredTypes types, bool last) {
  if (!last || failed(types))
    return types;
  for (Type &t : *types)
    if (auto r = dyn_cast<RankedTensorType>(t))
      t = r.clone(
          permuteShape(r.getShape(), channelsLastPermutation(r.getRank())));
  return types;
}

static InferredTypes inferConv(ConvOp op, std::optional<ArrayRef<int64_t>> x,
                               std::optional<ArrayRef<int64_t>> wShape);

InferredTypes ConvOp::inferResultTypes() {
  bool last = isChannelsLast(*this);
  SmallVector<int64_t> xBuf, wBuf;
  std::optional<ArrayRef<int64_t>> x = channelsFirstView(
      getShapeOf(getX()), last, channelsFirstPermutation, xBuf);
  std::optional<ArrayRef<int64_t>> wShape = channelsFirstView(
      getShapeOf(getW()), last,
      [](int64_t r) {
        return invertPermutation(kernelLastWeightPermutation(r));
      },
      wBuf);
  return channelsLastResults(inferConv(*this, x, wShape), last);
}

/// Conv in ONNX's layout, from the input and weight shapes.
static InferredTypes inferConv(ConvOp op, std::optional<ArrayRef<int64_t>> x,
                               std::optional<ArrayRef<int64_t>> wShape) {
  Type elemTy = getElementTypeOrSelf(op.getX().getType());
  int64_t group = (int64_t)op.getGroup();
  if (group <= 0)
    return op.emitOpError() << "group must be positive, got " << group;

  int64_t rank = x ? (int64_t)x->size() : wShape ? (int64_t)wShape->size() : -1;
  if (rank < 0) {
    std::optional<ArrayAttr> ks = op.getKernelShape();
    if (!ks)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    rank = ks->size() + 2;
  }
  if (rank < 3)
    return op.emitOpError()
           << "expects input and weights of rank >= 3, got rank " << rank;
  if (x && wShape && x->size() != wShape->size())
    return op.emitOpError()
           << "input " << op.getX().getType() << " and weights "
           << op.getW().getType() << " have different ranks";
  int64_t n = rank - 2;

  Window w;
  w.kernel = toInts(op.getKernelShape());
  w.pads = toInts(op.getPads());
  w.strides = toInts(op.getStrides());
  w.dilations = toInts(op.getDilations());
  w.autoPad = op.getAutoPad();
  if (failed(completeWindow(op, w, n)))
    return failure();

  int64_t m = kDynamic;
  if (wShape) {
    m = (*wShape)[0];
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = (*wShape)[i + 2];
      if (staticMismatch(w.kernel[i], k))
        return op.emitOpError() << "kernel_shape does not match the weights "
                                << op.getW().getType();
      if (ShapedType::isDynamic(w.kernel[i]))
        w.kernel[i] = k;
    }
    if (!ShapedType::isDynamic(m) && m % group != 0)
      return op.emitOpError()
             << "number of output channels (" << m
             << ") is not divisible by group (" << group << ")";
    if (x) {
      int64_t c = (*x)[1], wc = (*wShape)[1];
      if (!ShapedType::isDynamic(c) && !ShapedType::isDynamic(wc) &&
          c != wc * group)
        return op.emitOpError()
               << "input channels (" << c << ") must equal weight channels ("
               << wc << ") times group (" << group << ")";
    }
  }
  if (!isNoValue(op.getB())) {
    if (std::optional<ArrayRef<int64_t>> b = getShapeOf(op.getB())) {
      if (b->size() != 1 || staticMismatch((*b)[0], m))
        return op.emitOpError() << "bias " << op.getB().getType()
                                << " must be 1-D with one value per output "
                                   "channel";
      if (ShapedType::isDynamic(m))
        m = (*b)[0];
    }
  }

  SmallVector<int64_t> inShape =
      x ? SmallVector<int64_t>(*x) : SmallVector<int64_t>(rank, kDynamic);
  FailureOr<SmallVector<int64_t>> spatial = spatialOutput(op, w, inShape);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> out{inShape[0], m};
  out.append(*spatial);
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

template <typename PoolOp>
static InferredTypes inferPoolIn(PoolOp op, Window w, bool last);

/// MaxPool and AveragePool.
template <typename PoolOp> static InferredTypes inferPool(PoolOp op, Window w) {
  bool last = isChannelsLast(op);
  return channelsLastResults(inferPoolIn(op, w, last), last);
}

template <typename PoolOp>
static InferredTypes inferPoolIn(PoolOp op, Window w, bool last) {
  Type elemTy = getElementTypeOrSelf(op.getX().getType());
  int64_t n = w.kernel.size();
  SmallVector<int64_t> xBuf;
  std::optional<ArrayRef<int64_t>> x = channelsFirstView(
      getShapeOf(op.getX()), last, channelsFirstPermutation, xBuf);
  if (x && (int64_t)x->size() != n + 2)
    return op.emitOpError()
           << "input " << op.getX().getType() << " must have rank " << n + 2
           << " (2 + size of kernel_shape)";
  if (failed(completeWindow(op, w, n)))
    return failure();
  SmallVector<int64_t> inShape =
      x ? SmallVector<int64_t>(*x) : SmallVector<int64_t>(n + 2, kDynamic);
  FailureOr<SmallVector<int64_t>> spatial = spatialOutput(op, w, inShape);
  if (failed(spatial))
    return failure();
  SmallVector<int64_t> out{inShape[0], inShape[1]};
  out.append(*spatial);
  SmallVector<Type> types{RankedTensorType::get(out, elemTy)};
  return types;
}

/// The window attributes of MaxPool, AveragePool and LpPool.
template <typename PoolOp> static Window poolWindow(PoolOp op) {
  Window w;
  w.kernel = toInts(op.getKernelShape());
  w.pads = toInts(op.getPads());
  w.strides = toInts(op.getStrides());
  w.dilations = toInts(op.getDilations());
  w.autoPad = op.getAutoPad();
  w.ceilMode = op.getCeilMode() != 0;
  return w;
}

InferredTypes MaxPoolOp::inferResultTypes() {
  InferredTypes types = inferPool(*this, poolWindow(*this));
  if (failed(types))
    return failure();
  // Indices (optional): same shape, i64.
  if (!isa<NoneType>(getIndices().getType()))
    types->push_back(
        RankedTensorType::get(cast<RankedTensorType>(types->front()).getShape(),
                              IntegerType::get(getContext(), 64)));
  return types;
}

InferredTypes AveragePoolOp::inferResultTypes() {
  return inferPool(*this, poolWindow(*this));
}

InferredTypes LpPoolOp::inferResultTypes() {
  return inferPool(*this, poolWindow(*this));
}

/// GlobalAveragePool and GlobalMaxPool: N, C and ones (any
/// spatial rank, 1-D included).
template <typename PoolOp> static InferredTypes inferGlobalPool(PoolOp op) {
  Type elemTy = getElementTypeOrSelf(op.getX().getType());
  std::optional<ArrayRef<int64_t>> x = getShapeOf(op.getX());
  if (!x)
    return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
  if (x->size() < 2)
    return op.emitOpError()
           << "expects an input of rank >= 2, got " << op.getX().getType();
  SmallVector<int64_t> out(x->size(), 1);
  int64_t channel = isChannelsLast(op) ? x->size() - 1 : 1;
  out[0] = (*x)[0];
  out[channel] = (*x)[channel];
  return SmallVector<Type>{RankedTensorType::get(out, elemTy)};
}

InferredTypes GlobalAveragePoolOp::inferResultTypes() {
  return inferGlobalPool(*this);
}
InferredTypes GlobalMaxPoolOp::inferResultTypes() {
  return inferGlobalPool(*this);
}

InferredTypes BatchNormalizationOp::inferResultTypes() {
  std::optional<ArrayRef<int64_t>> x = getShapeOf(getX());
  if (x && x->size() < 2)
    return emitOpError() << "expects an input of rank >= 2, got "
                         << getX().getType();
  int64_t c = x ? (*x)[1] : kDynamic;
  for (Value v : {getScale(), getB(), getInputMean(), getInputVar()}) {
    std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
    if (!s)
      continue;
    if (s->size() != 1 || staticMismatch((*s)[0], c))
      return emitOpError() << "scale, B, mean and var must be 1-D of size C"
                           << " (input " << getX().getType() << "), got "
                           << v.getType();
    if (ShapedType::isDynamic(c))
      c = (*s)[0];
  }
  SmallVector<Type> types{getX().getType()};
  for (Value r : {getRunningMean(), getRunningVar()}) {
    if (isa<NoneType>(r.getType()))
      types.push_back(r.getType());
    else
      types.push_back(
          RankedTensorType::get({c}, getElementTypeOrSelf(r.getType())));
  }
  return types;
}
