//===- FuseQDQ.cpp - QDQ contractions as integer products -----------------===//
//
// A quantized model in QDQ form (onnxruntime's quantize_static, PyTorch's
// exporter, explicit-QDQ TensorRT models) computes each quantized layer in
// float: DequantizeLinear of the activation and of the weights, the float
// MatMul/Gemm/Conv, then QuantizeLinear of the result. This pass rewrites
// each such layer into an integer product with its rescaling behind it, in
// standard ONNX ops:
//
//   acc = MatMulInteger(x_q, W_q, zx, zw)        (ConvInteger for Conv)
//   acc = Add(acc, bias_q)                       int32 bias, when its scale
//                                                is sx·sw (as quantizers write it)
//   y   = Mul(Cast(acc, float), M)               M = sx·sw[c] / sy (per channel)
//   y   = Add(y, bias / sy)                      a float bias, if any
//   y   = Add(y, DequantizeLinear(r_q, sr / sy, zr))
//                                                a quantized residual, if any
//   y   = Relu(y) | Clip(y, lo / sy, hi / sy)    the activation, if any
//   q   = QuantizeLinear(y, 1, zy)               round half to even, saturate
//
// (without a QuantizeLinear after it: M = sx·sw[c], the float bias and
// bounds as they are, and `y` is the result). The spellings recognized:
//   - the contraction: MatMul (weights [K, N]), Gemm (transA = 0, weights
//     [K, N] or [N, K], alpha, beta·C), Conv (any group, spatial rank);
//   - its operands: DequantizeLinear of an 8-bit activation with one scale
//     and zero point, and of constant 8-bit weights, per tensor or per
//     output channel (the axis of N, or of F for Conv);
//   - a bias: Gemm's C, Conv's B, or an Add of a per-channel constant after
//     the contraction, each a float constant or a DequantizeLinear of one;
//   - then an Add of a DequantizeLinear of an 8-bit tensor of the result's
//     type with one scale and zero point (a residual: ResNet's block ends),
//     whose scale takes the 1 / sy too, so the QuantizeLinear divides by
//     nothing (the division's correction was about a quarter of such an
//     epilogue's instructions);
//   - then Relu or Clip with constant bounds, then QuantizeLinear with one
//     constant scale and zero point.
// Each value of the chain must have one user; the chain stops before a
// value that has more (the fused value is then the float one). Anything
// else (a scale or zero point that is not a constant, a per-channel axis
// other than the output channels', weights that are not constant, blocked
// quantization, a non-f32 float type) is left as it is.
//
// A MaxPool between a DequantizeLinear and a QuantizeLinear of the same
// scale and zero point becomes a MaxPool of the quantized tensor; a Gather
// of a per-tensor DequantizeLinear, the DequantizeLinear of the Gather. A
// LayerNormalization, or a product by a constant, that only a
// QuantizeLinear of one constant scale sy reads takes the 1 / sy into its
// constants (Scale and B; the constant factor), and the QuantizeLinear's
// scale becomes 1: no division an element (the results differ from the
// division's only where a value lies within an f32 rounding of a tie).
//
// The integer product takes unsigned activations and signed weights (what
// x86's VNNI `vpdpbusd` and the GPUs' integer matrix instructions take):
// int8 weights are used as they are, uint8 weights become int8 (w - 128,
// zero point - 128) here; an int8 activation produced by a QuantizeLinear
// is produced as uint8 instead (zero point + 128: the same values shifted,
// exactly). The lowering (lib/Conversion/OnnxToLinalg/Quantize.cpp) turns
// the zero points into compile-time column sums (docs/int8.md).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "ByteConstants.h"
#include "QDQUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>
#include <cstring>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXFUSEQDQ
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::qdq;

namespace {

bool isUnsigned8(Type t) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  return it && it.getWidth() == 8 && it.isUnsigned();
}

bool isInt8(Type t) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  return it && it.getWidth() == 8 && !it.isUnsigned();
}

/// A DequantizeLinear's 8-bit input and its constant parameters.
struct Dequantized {
  Value q;
  SmallVector<double> scale;
  /// One per scale.
  SmallVector<int64_t> zp;
  /// The axis of per-axis parameters, -1 per tensor.
  int64_t axis = -1;
};

std::optional<Dequantized> matchDequantize(Value v) {
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || dq.getBlockSizeAttr().getInt() != 0)
    return std::nullopt;
  auto qt = dyn_cast<RankedTensorType>(dq.getX().getType());
  auto yt = dyn_cast<RankedTensorType>(dq.getResult().getType());
  if (!qt || !yt || !yt.getElementType().isF32() ||
      (!isUnsigned8(qt) && !isInt8(qt)))
    return std::nullopt;
  std::optional<SmallVector<double>> scale =
      getConstantFloatValues(dq.getXScale());
  if (!scale || scale->empty() ||
      llvm::any_of(*scale, [](double s) { return !(s > 0) || std::isinf(s); }))
    return std::nullopt;
  Dequantized d;
  d.q = dq.getX();
  d.scale = *scale;
  if (scale->size() > 1) {
    auto st = cast<RankedTensorType>(dq.getXScale().getType());
    FailureOr<int64_t> axis =
        normalizeAxis(dq.getAxisAttr().getInt(), qt.getRank());
    if (st.getRank() != 1 || failed(axis) ||
        qt.getDimSize(*axis) != static_cast<int64_t>(scale->size()))
      return std::nullopt;
    d.axis = *axis;
  }
  Value zpValue = dq->getOperand(2);
  if (isNoValue(zpValue)) {
    d.zp.assign(scale->size(), 0);
  } else {
    std::optional<SmallVector<int64_t>> zp = getConstantIntValues(zpValue);
    if (!zp || zp->size() != scale->size())
      return std::nullopt;
    d.zp = *zp;
  }
  return d;
}

/// The values of a per-channel constant operand of an elementwise op on
/// the contraction's result (rank `rank`, channels along `axis`, `channels`
/// of them): its shape broadcasts only along that axis. Float constants
/// and DequantizeLinear of integer constants (with `intScale`, the values
/// before scaling when every scale equals it: an int32 bias in the
/// accumulator's units).
struct ChannelValues {
  SmallVector<double> values;
  /// Integer values whose scale is the accumulator's (sx · sw[c]).
  bool inAccumulatorUnits = false;
};

std::optional<ChannelValues> channelValues(Value v, int64_t rank, int64_t axis,
                                           int64_t channels,
                                           ArrayRef<double> accScale) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || t.getRank() > rank ||
      !t.getElementType().isF32())
    return std::nullopt;
  bool perChannel = false;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t d = t.getDimSize(i), at = rank - t.getRank() + i;
    if (d == 1)
      continue;
    if (at != axis || d != channels)
      return std::nullopt;
    perChannel = true;
  }
  // One value per channel from one, or one per channel.
  auto expand = [&](ArrayRef<double> vals) {
    SmallVector<double> out;
    for (int64_t c = 0; c < channels; ++c)
      out.push_back(vals.size() > 1 ? vals[c] : vals[0]);
    return out;
  };
  ChannelValues r;
  if (std::optional<SmallVector<double>> f = getConstantFloatValues(v)) {
    r.values = expand(*f);
    return r;
  }
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || dq.getBlockSizeAttr().getInt() != 0)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> q = getConstantIntValues(dq.getX());
  std::optional<SmallVector<double>> s = getConstantFloatValues(dq.getXScale());
  if (!q || !s || s->empty())
    return std::nullopt;
  SmallVector<int64_t> zp(s->size(), 0);
  if (!isNoValue(dq->getOperand(2))) {
    std::optional<SmallVector<int64_t>> z =
        getConstantIntValues(dq->getOperand(2));
    if (!z || z->size() != s->size())
      return std::nullopt;
    zp = *z;
  }
  // Per tensor, or per axis along the channels (the only dim above 1).
  if (s->size() > 1 &&
      (!perChannel || static_cast<int64_t>(s->size()) != channels))
    return std::nullopt;
  SmallVector<double> qv = expand(SmallVector<double>(q->begin(), q->end())),
                      sv = expand(*s), zv;
  for (int64_t c = 0; c < channels; ++c)
    zv.push_back(static_cast<double>(zp[s->size() > 1 ? c : 0]));
  // In the accumulator's units: an int32 bias with zero point 0 whose
  // scale is sx · sw[c] (as float32 computes it, within an ulp).
  bool exact = getElementTypeOrSelf(dq.getX().getType()).isInteger(32) &&
               llvm::all_of(zv, [](double z) { return z == 0; });
  for (int64_t c = 0; c < channels && exact; ++c)
    exact = std::abs(sv[c] - accScale[c]) <= 1e-6 * accScale[c];
  for (int64_t c = 0; c < channels; ++c)
    r.values.push_back(exact ? qv[c] : (qv[c] - zv[c]) * sv[c]);
  r.inAccumulatorUnits = exact;
  return r;
}

/// One quantized layer, as matched.
struct Layer {
  Operation *contraction = nullptr;
  Dequantized x, w;
  /// Output rank, channel axis and count.
  int64_t rank = 0, axis = 0, channels = 0;
  /// The weights' channel axis (N of [K, N] or [N, K], F of Conv's).
  int64_t weightAxis = 0;
  bool transposeWeights = false;
  double alpha = 1.0;
  /// Per channel: sx · sw[c] in float32, the bias in accumulator units
  /// (int32) and in float.
  SmallVector<double> accScale;
  SmallVector<double> intBias, floatBias;
  /// A quantized residual added after the bias (per tensor).
  std::optional<Dequantized> residual;
  enum class Act { None, Relu, Clip } act = Act::None;
  double lo = 0, hi = 0;
  /// The last float value of the chain, and the QuantizeLinear after it.
  Value end;
  QuantizeLinearOp out;
  double outScale = 1.0;
  int64_t outZp = 0;
};

/// Adds a per-channel bias to `layer` (scaled by `factor`); `v` has
/// `rank` dims, its channels along `axis`.
bool addBias(Layer &layer, Value v, double factor, int64_t rank, int64_t axis) {
  std::optional<ChannelValues> c =
      channelValues(v, rank, axis, layer.channels, layer.accScale);
  if (!c)
    return false;
  // Gemm's alpha scales the product, not C.
  SmallVector<double> &dst =
      c->inAccumulatorUnits && factor == 1.0 && layer.alpha == 1.0
          ? layer.intBias
          : layer.floatBias;
  if (dst.empty())
    dst.assign(layer.channels, 0.0);
  for (int64_t i = 0; i < layer.channels; ++i) {
    double v = c->values[i];
    if (c->inAccumulatorUnits && &dst == &layer.floatBias)
      v *= layer.accScale[i];
    dst[i] += v * factor;
  }
  return true;
}

/// The contraction, its operands and its own bias; false when it is not a
/// quantized layer this pass takes.
bool matchContraction(Operation *op, Layer &layer) {
  auto yt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!yt || !yt.getElementType().isF32())
    return false;
  std::optional<Dequantized> x = matchDequantize(op->getOperand(0));
  std::optional<Dequantized> w = matchDequantize(op->getOperand(1));
  if (!x || !w || x->scale.size() != 1 ||
      !getConstantIntValues(w->q).has_value())
    return false;
  auto wt = cast<RankedTensorType>(w->q.getType());
  if (!wt.hasStaticShape())
    return false;
  layer.contraction = op;
  layer.x = *x;
  layer.w = *w;
  layer.rank = yt.getRank();
  Value bias;
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    (void)mm;
    auto xt = cast<RankedTensorType>(x->q.getType());
    if (wt.getRank() != 2 || xt.getRank() < 2)
      return false;
    layer.weightAxis = 1;
    layer.axis = layer.rank - 1;
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (wt.getRank() != 2 || gemm.getTransAAttr().getInt() != 0 ||
        cast<RankedTensorType>(x->q.getType()).getRank() != 2)
      return false;
    layer.transposeWeights = gemm.getTransBAttr().getInt() != 0;
    layer.weightAxis = layer.transposeWeights ? 0 : 1;
    layer.axis = 1;
    layer.alpha = gemm.getAlphaAttr().getValueAsDouble();
    if (!isNoValue(gemm.getC()))
      bias = gemm.getC();
  } else if (auto conv = dyn_cast<ConvOp>(op)) {
    if (isChannelsLast(conv) || wt.getRank() != layer.rank)
      return false;
    layer.weightAxis = 0;
    layer.axis = 1;
    if (!isNoValue(conv.getB()))
      bias = conv.getB();
  } else {
    return false;
  }
  layer.channels = wt.getDimSize(layer.weightAxis);
  if (yt.getDimSize(layer.axis) != layer.channels)
    return false;
  // Per-channel weights along anything but the output channels do not
  // factor out of the sum.
  if (w->scale.size() > 1 && w->axis != layer.weightAxis)
    return false;
  float sx = static_cast<float>(x->scale[0]);
  for (int64_t c = 0; c < layer.channels; ++c)
    layer.accScale.push_back(
        sx * static_cast<float>(w->scale[w->scale.size() > 1 ? c : 0]));
  if (bias) {
    double factor = 1.0;
    if (auto gemm = dyn_cast<GemmOp>(op))
      factor = gemm.getBetaAttr().getValueAsDouble();
    // Conv's bias is [F] (after the product it would be [F, 1, ...]).
    bool conv = isa<ConvOp>(op);
    if (!addBias(layer, bias, factor, conv ? 1 : layer.rank,
                 conv ? 0 : layer.axis))
      return false;
  }
  return true;
}

/// Extends the layer past its contraction: an Add of a bias, Relu or Clip,
/// QuantizeLinear, each the one user of the value before it.
void matchEpilogue(Layer &layer) {
  layer.end = layer.contraction->getResult(0);
  if (auto add = dyn_cast_or_null<AddOp>(soleUser(layer.end))) {
    Value other = add.getA() == layer.end ? add.getB() : add.getA();
    if (other != layer.end &&
        add.getResult().getType() == layer.end.getType() &&
        addBias(layer, other, 1.0, layer.rank, layer.axis))
      layer.end = add.getResult();
  }
  if (auto add = dyn_cast_or_null<AddOp>(soleUser(layer.end))) {
    Value other = add.getA() == layer.end ? add.getB() : add.getA();
    std::optional<Dequantized> r = matchDequantize(other);
    if (other != layer.end && r && r->scale.size() == 1 &&
        other.getType() == layer.end.getType() &&
        add.getResult().getType() == layer.end.getType()) {
      layer.residual = std::move(r);
      layer.end = add.getResult();
    }
  }
  Operation *user = soleUser(layer.end);
  if (auto relu = dyn_cast_or_null<ReluOp>(user)) {
    layer.act = Layer::Act::Relu;
    layer.end = relu.getResult();
  } else if (auto clip = dyn_cast_or_null<ClipOp>(user)) {
    std::optional<double> lo = isNoValue(clip.getMin())
                                   ? std::optional<double>(-INFINITY)
                                   : scalarOf(clip.getMin());
    std::optional<double> hi = isNoValue(clip.getMax())
                                   ? std::optional<double>(INFINITY)
                                   : scalarOf(clip.getMax());
    if (lo && hi && *lo <= *hi) {
      layer.act = Layer::Act::Clip;
      layer.lo = *lo;
      layer.hi = *hi;
      layer.end = clip.getResult();
    }
  }
  auto q = dyn_cast_or_null<QuantizeLinearOp>(soleUser(layer.end));
  if (!q || q.getBlockSizeAttr().getInt() != 0)
    return;
  auto qt = dyn_cast<RankedTensorType>(q.getResult().getType());
  std::optional<double> s = scalarOf(q.getYScale());
  if (!qt || !s || !(*s > 0) || std::isinf(*s) ||
      (!isUnsigned8(qt) && !isInt8(qt)))
    return;
  int64_t zp = 0;
  if (!isNoValue(q->getOperand(2))) {
    std::optional<SmallVector<int64_t>> z =
        getConstantIntValues(q->getOperand(2));
    if (!z || z->size() != 1)
      return;
    zp = z->front();
  }
  layer.out = q;
  layer.outScale = *s;
  layer.outZp = zp;
}

/// DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale, zero
/// point and type on both sides (how quantizers write a quantized pool) is
/// MaxPool of the quantized tensor: max commutes with the monotone
/// dequantization, and quantizing a dequantized value gives it back.
bool foldMaxPool(MaxPoolOp pool) {
  std::optional<Dequantized> x = matchDequantize(pool.getX());
  if (!x || x->scale.size() != 1 || pool->getNumResults() < 1 ||
      (pool->getNumResults() > 1 && !pool->getResult(1).use_empty()))
    return false;
  auto q = dyn_cast_or_null<QuantizeLinearOp>(soleUser(pool->getResult(0)));
  if (!q || q.getBlockSizeAttr().getInt() != 0 ||
      getElementTypeOrSelf(q.getResult().getType()) !=
          getElementTypeOrSelf(x->q.getType()))
    return false;
  std::optional<double> s = scalarOf(q.getYScale());
  int64_t zp = 0;
  if (!isNoValue(q->getOperand(2))) {
    std::optional<SmallVector<int64_t>> z =
        getConstantIntValues(q->getOperand(2));
    if (!z || z->size() != 1)
      return false;
    zp = z->front();
  }
  if (!s || static_cast<float>(*s) != static_cast<float>(x->scale[0]) ||
      zp != x->zp[0])
    return false;
  OpBuilder b(pool);
  Operation *folded = b.clone(*pool);
  folded->setOperand(0, x->q);
  folded->getResult(0).setType(q.getResult().getType());
  q.getResult().replaceAllUsesWith(folded->getResult(0));
  return true;
}

/// Gather of a per-tensor DequantizeLinear (an embedding table quantized
/// like a weight) is the DequantizeLinear of the Gather: only the gathered
/// rows are dequantized, not the whole table on every run.
bool foldGather(GatherOp gather) {
  auto dq = gather.getData().getDefiningOp<DequantizeLinearOp>();
  std::optional<Dequantized> x = matchDequantize(gather.getData());
  auto yt = dyn_cast<RankedTensorType>(gather.getResult().getType());
  if (!dq || !x || x->scale.size() != 1 || !yt)
    return false;
  OpBuilder b(gather);
  Location loc = gather.getLoc();
  auto qt = yt.clone(getElementTypeOrSelf(x->q.getType()));
  Value q = GatherOp::create(b, loc, qt, x->q, gather.getIndices(),
                             gather.getAxisAttr());
  Value y = DequantizeLinearOp::create(b, dq.getLoc(), yt, q, dq.getXScale(),
                                       dq->getOperand(2), dq.getAxisAttr());
  gather.getResult().replaceAllUsesWith(y);
  return true;
}

struct FuseQDQPass : public kiln::impl::KilnOnnxFuseQDQBase<FuseQDQPass> {
  /// The uint8 twin of an int8 QuantizeLinear (zero point + 128).
  llvm::DenseMap<Operation *, Value> twins;

  /// `x` as uint8 with its zero point: the twin of its QuantizeLinear when
  /// it is int8 and has one; itself otherwise.
  std::pair<Value, int64_t> unsignedActivation(const Dequantized &x) {
    if (!isInt8(x.q.getType()))
      return {x.q, x.zp[0]};
    auto q = x.q.getDefiningOp<QuantizeLinearOp>();
    if (!q || q.getBlockSizeAttr().getInt() != 0 || !scalarOf(q.getYScale()))
      return {x.q, x.zp[0]};
    int64_t zq = 0;
    if (!isNoValue(q->getOperand(2))) {
      std::optional<SmallVector<int64_t>> z =
          getConstantIntValues(q->getOperand(2));
      if (!z || z->size() != 1)
        return {x.q, x.zp[0]};
      zq = z->front();
    }
    Value &twin = twins[q];
    if (!twin) {
      OpBuilder b(q->getContext());
      b.setInsertionPointAfter(q);
      Location loc = q.getLoc();
      auto u8 = IntegerType::get(q->getContext(), 8, IntegerType::Unsigned);
      Value zp =
          valuesConstant(b, loc, {}, u8, {static_cast<double>(zq + 128)}, "");
      twin = QuantizeLinearOp::create(
          b, loc, cast<RankedTensorType>(q.getResult().getType()).clone(u8),
          q.getX(), q.getYScale(), zp, q.getAxisAttr());
    }
    return {twin, x.zp[0] + 128};
  }

  /// The offset per channel, in accumulator units, that the activation's
  /// zero point zx and an int32 bias add to the product:
  ///   sum_k (x - zx)(w - zw[c]) + bias[c]
  ///     = sum_k x (w - zw[c]) + (bias[c] - zx sum_k (w - zw[c]))
  /// so that the epilogue converts the product as it is and the offset
  /// joins the float bias (one constant, rounded once), instead of an
  /// integer addition per element. Empty (nothing folded) where there is
  /// nothing to fold, where the product without zx may reach 2^24 in
  /// magnitude (bounded from a channel's weights and the range of x: its
  /// f32 conversion would round, and the offset's cancellation could then
  /// show), and for convolutions with padding (a padded position adds
  /// nothing to the product but zx·w to the offset). `w` holds the int8
  /// weights as the product reads them ([K, N], or [F, ...] for Conv).
  static SmallVector<double> foldedOffsets(const Layer &layer, ArrayRef<char> w,
                                           ArrayRef<int64_t> shape,
                                           ArrayRef<double> zw, int64_t zx,
                                           bool unsignedX) {
    if (zx == 0 && layer.intBias.empty())
      return {};
    if (auto conv = dyn_cast<ConvOp>(layer.contraction)) {
      StringRef autoPad = conv.getAutoPad();
      std::optional<ArrayAttr> pads = conv.getPads();
      if ((autoPad != "NOTSET" && autoPad != "VALID") ||
          (pads && llvm::any_of(*pads, [](Attribute a) {
             return cast<IntegerAttr>(a).getInt() != 0;
           })))
        return {};
    }
    const bool conv = isa<ConvOp>(layer.contraction);
    const int64_t channels = layer.channels;
    const int64_t inner = static_cast<int64_t>(w.size()) / channels;
    // Per channel: the sum of w - zw, and of its positive and negative
    // parts (uint8 x in [0, 255] gives |product| <= 255 max(pos, -neg);
    // int8 x in [-128, 127], <= 128 (pos - neg)).
    SmallVector<double> sum(channels, 0.0), pos(channels, 0.0),
        neg(channels, 0.0);
    for (auto [i, byte] : llvm::enumerate(w)) {
      int64_t idx = static_cast<int64_t>(i);
      int64_t c = conv ? idx / inner : idx % shape.back();
      double v = static_cast<double>(static_cast<signed char>(byte)) -
                 zw[zw.size() > 1 ? c : 0];
      sum[c] += v;
      (v > 0 ? pos[c] : neg[c]) += v;
    }
    SmallVector<double> offsets;
    for (int64_t c = 0; c < channels; ++c) {
      double largest = unsignedX ? 255.0 * std::max(pos[c], -neg[c])
                                 : 128.0 * (pos[c] - neg[c]);
      if (largest >= 16777216.0)
        return {};
      offsets.push_back((layer.intBias.empty() ? 0.0 : layer.intBias[c]) -
                        static_cast<double>(zx) * sum[c]);
    }
    return offsets;
  }

  void rewrite(Layer &layer) {
    Operation *op = layer.contraction;
    MLIRContext *ctx = op->getContext();
    Location loc = op->getLoc();
    Operation *last =
        layer.out ? layer.out.getOperation() : layer.end.getDefiningOp();
    OpBuilder b(last);
    auto f32 = Float32Type::get(ctx);
    auto i8 = IntegerType::get(ctx, 8);
    auto i32 = IntegerType::get(ctx, 32);

    // Activation: uint8 when it can be.
    auto [xq, zx] = unsignedActivation(layer.x);
    Type xElem = getElementTypeOrSelf(xq.getType());
    Value xzp = zx == 0 ? Value(NoValueOp::create(b, loc, b.getNoneType()))
                        : valuesConstant(b, loc, {}, xElem,
                                         {static_cast<double>(zx)}, "");

    // Weights: int8, [K, N] for the matmuls.
    auto wt = cast<RankedTensorType>(layer.w.q.getType());
    SmallVector<int64_t> wv = *getConstantIntValues(layer.w.q);
    bool fromUnsigned = isUnsigned8(wt);
    SmallVector<int64_t> shape(wt.getShape());
    std::vector<char> bytes(wv.size());
    if (layer.transposeWeights) {
      int64_t n = shape[0], k = shape[1];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j)
          bytes[j * n + i] =
              static_cast<char>(wv[i * k + j] - (fromUnsigned ? 128 : 0));
      shape = {k, n};
    } else {
      for (auto [i, v] : llvm::enumerate(wv))
        bytes[i] = static_cast<char>(v - (fromUnsigned ? 128 : 0));
    }
    Value wq = makeBytesConstant(b, loc, RankedTensorType::get(shape, i8),
                                 bytes, hintOf(op, "_int8"));
    SmallVector<double> zw;
    for (int64_t z : layer.w.zp)
      zw.push_back(static_cast<double>(z - (fromUnsigned ? 128 : 0)));
    Value wzp;
    if (llvm::all_of(zw, [](double z) { return z == 0; }))
      wzp = NoValueOp::create(b, loc, b.getNoneType());
    else if (zw.size() == 1)
      wzp = valuesConstant(b, loc, {}, i8, zw, "");
    else
      wzp = valuesConstant(b, loc, {static_cast<int64_t>(zw.size())}, i8, zw,
                           hintOf(op, "_wzp"));

    // The activation's zero point and an int32 bias in the float bias,
    // where the product's conversion to f32 is exact (foldedOffsets).
    SmallVector<double> offsets =
        foldedOffsets(layer, bytes, shape, zw, zx, isUnsigned8(xq.getType()));
    if (!offsets.empty()) {
      xzp = NoValueOp::create(b, loc, b.getNoneType());
      layer.intBias.clear();
    }

    // The integer product.
    auto yt = cast<RankedTensorType>(op->getResult(0).getType());
    auto accType = yt.clone(i32);
    Value acc;
    if (auto conv = dyn_cast<ConvOp>(op))
      acc = ConvIntegerOp::create(
          b, loc, accType, xq, wq, xzp, wzp, conv.getAutoPadAttr(),
          conv.getDilationsAttr(), conv.getGroupAttr(),
          conv.getKernelShapeAttr(), conv.getPadsAttr(), conv.getStridesAttr());
    else
      acc = MatMulIntegerOp::create(b, loc, accType, xq, wq, xzp, wzp);

    // Per-channel operands broadcast along the output's channel axis:
    // [N] for the matmuls, [F, 1, ..., 1] for convolutions.
    SmallVector<int64_t> channelShape = {layer.channels};
    channelShape.append(layer.rank - 1 - layer.axis, 1);
    auto perChannel = [&](Type elem, ArrayRef<double> values,
                          StringRef suffix) {
      if (llvm::all_equal(values))
        return valuesConstant(b, loc, {}, elem, values.take_front(), "");
      return valuesConstant(b, loc, channelShape, elem, values,
                            hintOf(op, suffix));
    };
    if (!layer.intBias.empty())
      acc = AddOp::create(b, loc, accType, acc,
                          perChannel(i32, layer.intBias, "_bias_q"));
    Value y = CastOp::create(b, loc, yt, acc, "up", 1,
                             /*FLOAT=*/1);
    // Quantized: values in units of the output's scale.
    float sy = layer.out ? static_cast<float>(layer.outScale) : 1.0f;
    SmallVector<double> m;
    for (double s : layer.accScale)
      m.push_back(static_cast<float>(static_cast<float>(s) / sy) *
                  static_cast<float>(layer.alpha));
    y = MulOp::create(b, loc, yt, y, perChannel(f32, m, "_scale"));
    if (!layer.floatBias.empty() || !offsets.empty()) {
      SmallVector<double> fb;
      for (int64_t c = 0; c < layer.channels; ++c)
        fb.push_back(
            (layer.floatBias.empty() ? 0.0 : layer.floatBias[c] / sy) +
            (offsets.empty() ? 0.0 : offsets[c] * static_cast<float>(m[c])));
      y = AddOp::create(b, loc, yt, y, perChannel(f32, fb, "_bias"));
    }
    if (const std::optional<Dequantized> &r = layer.residual) {
      Type rElem = getElementTypeOrSelf(r->q.getType());
      Value rs = valuesConstant(
          b, loc, {}, f32,
          {static_cast<float>(static_cast<float>(r->scale[0]) / sy)}, "");
      Value rz = valuesConstant(b, loc, {}, rElem,
                                {static_cast<double>(r->zp[0])}, "");
      y = AddOp::create(
          b, loc, yt, y,
          DequantizeLinearOp::create(b, loc, yt, r->q, rs, rz, uint64_t(1)));
    }
    if (layer.act == Layer::Act::Relu) {
      y = ReluOp::create(b, loc, yt, y);
    } else if (layer.act == Layer::Act::Clip) {
      auto bound = [&](double v) -> Value {
        if (std::isinf(v))
          return NoValueOp::create(b, loc, b.getNoneType());
        return valuesConstant(b, loc, {}, f32, {v / sy}, "");
      };
      y = ClipOp::create(b, loc, yt, y, bound(layer.lo), bound(layer.hi));
    }
    if (!layer.out) {
      layer.end.replaceAllUsesWith(y);
      return;
    }
    auto qt = cast<RankedTensorType>(layer.out.getResult().getType());
    Value one = valuesConstant(b, loc, {}, f32, {1.0}, "");
    Value zy = valuesConstant(b, loc, {}, qt.getElementType(),
                              {static_cast<double>(layer.outZp)}, "");
    Value q = QuantizeLinearOp::create(b, layer.out.getLoc(), qt, y, one, zy,
                                       layer.out.getAxisAttr());
    layer.out.getResult().replaceAllUsesWith(q);
  }

  /// `fold` on every op of type OpT, collected first (a fold may erase or
  /// create ops).
  template <typename OpT, typename Fold> void foldEach(Fold fold) {
    SmallVector<OpT> ops;
    getOperation().walk([&](OpT op) { ops.push_back(op); });
    for (OpT op : ops)
      fold(op);
  }

  void runOnOperation() override {
    foldEach<LayerNormalizationOp>(foldLayerNormScale);
    foldEach<MulOp>(foldProductScale);
    foldEach<MaxPoolOp>([](MaxPoolOp op) { foldMaxPool(op); });
    foldEach<GatherOp>([](GatherOp op) { foldGather(op); });
    SmallVector<Operation *> contractions;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp, ConvOp>(op))
        contractions.push_back(op);
    });
    for (Operation *op : contractions) {
      Layer layer;
      if (!matchContraction(op, layer))
        continue;
      matchEpilogue(layer);
      rewrite(layer);
    }
    // The float ops left without users are Pure: the pipeline's
    // canonicalizer removes them.
  }
};

} // namespace
