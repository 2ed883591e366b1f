//===- NN.cpp - Convolution, pooling, BatchNormalization ------------------===//
//
// The NN family (OnnxFamilies.def): Conv, Max/Average/Lp/global pooling and
// BatchNormalization in inference mode, over NC<spatial> tensors.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

struct WindowParams {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  /// auto_pad SAME_* over a dynamic spatial dim: its pads as index values
  /// computed at run time (null where the pads are the static ones).
  SmallVector<Value> dynBegin, dynEnd;

  OpFoldResult begin(OpBuilder &b, int64_t i) const {
    return dynBegin[i] ? OpFoldResult(dynBegin[i])
                       : b.getIndexAttr(padBegin[i]);
  }
  OpFoldResult end(OpBuilder &b, int64_t i) const {
    return dynEnd[i] ? OpFoldResult(dynEnd[i]) : b.getIndexAttr(padEnd[i]);
  }
};

/// Where an op's dims sit: NC<spatial> or, for the channels-last form
/// (onnxops::isChannelsLast), N<spatial>C.
struct DimLayout {
  int64_t rank;
  bool last;
  int64_t channel() const { return last ? rank - 1 : 1; }
  int64_t spatial(int64_t i) const { return (last ? 1 : 2) + i; }
};

/// Reads kernel/strides/dilations/pads/auto_pad of a Conv or pool op with
/// `nSpatial` spatial dims of input type `in` (dims as `dl` places them).
/// auto_pad SAME_* over a dynamic dim computes that dim's pads at `b`.
template <typename OpTy>
FailureOr<WindowParams> getWindowParams(OpTy op, RankedTensorType in,
                                        ArrayRef<int64_t> kernel, bool ceilMode,
                                        DimLayout dl, OpBuilder &b) {
  int64_t ns = kernel.size();
  WindowParams p;
  p.kernel.assign(kernel.begin(), kernel.end());
  p.strides = intsOf(op.getStrides()).value_or(SmallVector<int64_t>(ns, 1));
  p.dilations = intsOf(op.getDilations()).value_or(SmallVector<int64_t>(ns, 1));
  SmallVector<int64_t> pads =
      intsOf(op.getPads()).value_or(SmallVector<int64_t>(2 * ns, 0));
  if (static_cast<int64_t>(p.strides.size()) != ns ||
      static_cast<int64_t>(p.dilations.size()) != ns ||
      static_cast<int64_t>(pads.size()) != 2 * ns)
    return nodeError(op) << "strides, dilations and pads must match the " << ns
                         << " spatial dims",
           failure();
  p.padBegin.assign(pads.begin(), pads.begin() + ns);
  p.padEnd.assign(pads.begin() + ns, pads.end());
  p.dynBegin.assign(ns, Value());
  p.dynEnd.assign(ns, Value());
  std::string autoPad = op.getAutoPad().str();
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < ns; ++i) {
      int64_t size = in.getDimSize(dl.spatial(i));
      if (ShapedType::isDynamic(size)) {
        // out = ceil(size / s); total = max(0, (out - 1) s + window - size),
        // the odd one at the end (SAME_UPPER) or the beginning.
        Location loc = op->getLoc();
        int64_t s = p.strides[i], d = p.dilations[i];
        if (s <= 0 || d <= 0)
          break; // refused below
        Value sizeV = dimValue(b, loc, op->getOperand(0), dl.spatial(i));
        Value out = arith::CeilDivSIOp::create(b, loc, sizeV, idx(b, loc, s));
        Value total = arith::SubIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(
                    b, loc, arith::SubIOp::create(b, loc, out, idx(b, loc, 1)),
                    idx(b, loc, s)),
                idx(b, loc, (kernel[i] - 1) * d + 1)),
            sizeV);
        total = arith::MaxSIOp::create(b, loc, total, idx(b, loc, 0));
        Value small = arith::DivSIOp::create(b, loc, total, idx(b, loc, 2));
        Value large = arith::SubIOp::create(b, loc, total, small);
        p.dynBegin[i] = autoPad == "SAME_UPPER" ? small : large;
        p.dynEnd[i] = autoPad == "SAME_UPPER" ? large : small;
        p.padBegin[i] = p.padEnd[i] = 0;
        continue;
      }
      int64_t out = (size + p.strides[i] - 1) / p.strides[i];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * p.strides[i] + (p.kernel[i] - 1) * p.dilations[i] + 1 -
                 size);
      int64_t small = total / 2, large = total - small;
      p.padBegin[i] = autoPad == "SAME_UPPER" ? small : large;
      p.padEnd[i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad == "VALID") {
    std::fill(p.padBegin.begin(), p.padBegin.end(), 0);
    std::fill(p.padEnd.begin(), p.padEnd.end(), 0);
  } else if (autoPad != "NOTSET") {
    return nodeError(op) << "unknown auto_pad '" << autoPad << "'", failure();
  }
  for (int64_t i = 0; i < ns; ++i)
    if (p.strides[i] <= 0 || p.dilations[i] <= 0 || p.padBegin[i] < 0 ||
        p.padEnd[i] < 0)
      return nodeError(op) << "strides and dilations must be positive and "
                              "pads non-negative",
             failure();
  (void)ceilMode;
  return p;
}

/// Pads the spatial dims of tensor `x` (placed as `dl` says) by
/// (begin, end + extra) with `value`; an extra known only at run time (a
/// pooling window over a dynamic dim with ceil_mode) is a Value.
/// Whether a window pads anything (statically, or by an amount known at run
/// time).
static bool padsAnything(const WindowParams &p,
                         ArrayRef<OpFoldResult> extraEnd) {
  for (size_t i = 0; i < p.padBegin.size(); ++i)
    if (p.padBegin[i] || p.padEnd[i] || !isZeroInteger(extraEnd[i]) ||
        p.dynBegin[i])
      return true;
  return false;
}

Value padSpatial(OpBuilder &b, Location loc, Value x, const WindowParams &p,
                 ArrayRef<OpFoldResult> extraEnd, Value pad, DimLayout dl) {
  if (!padsAnything(p, extraEnd))
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> lo(t.getRank(), b.getIndexAttr(0)),
      hi(t.getRank(), b.getIndexAttr(0));
  SmallVector<int64_t> shape(t.getShape());
  for (size_t i = 0; i < p.padBegin.size(); ++i) {
    int64_t d = dl.spatial(i);
    lo[d] = p.begin(b, i);
    std::optional<int64_t> extra = getConstantIntValue(extraEnd[i]);
    if (extra && !p.dynEnd[i]) {
      hi[d] = b.getIndexAttr(p.padEnd[i] + *extra);
    } else {
      hi[d] = arith::AddIOp::create(
                  b, loc, getValueOrCreateConstantIndexOp(b, loc, extraEnd[i]),
                  getValueOrCreateConstantIndexOp(b, loc, p.end(b, i)))
                  .getResult();
      shape[d] = ShapedType::kDynamic;
    }
    if (p.dynBegin[i])
      shape[d] = ShapedType::kDynamic;
    if (!ShapedType::isDynamic(shape[d]))
      shape[d] += p.padBegin[i] + p.padEnd[i] + *extra;
  }
  auto type = RankedTensorType::get(shape, t.getElementType());
  return tensor::PadOp::create(b, loc, type, x, lo, hi, pad);
}

Value padSpatial(OpBuilder &b, Location loc, Value x, const WindowParams &p,
                 ArrayRef<OpFoldResult> extraEnd, TypedAttr value,
                 DimLayout dl) {
  if (!padsAnything(p, extraEnd))
    return x;
  return padSpatial(b, loc, x, p, extraEnd,
                    arith::ConstantOp::create(b, loc, value), dl);
}

/// Output spatial size.
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                  int64_t pe, bool ceil) {
  if (ShapedType::isDynamic(in))
    return ShapedType::kDynamic;
  int64_t span = in + pb + pe - ((k - 1) * d + 1);
  if (span < 0)
    return -1;
  return (ceil ? (span + s - 1) / s : span / s) + 1;
}

/// Conv and ConvInteger of any spatial rank with groups, as one
/// linalg.generic over (n, f, o..., c, k...) (channels-last: (n, o..., f,
/// k..., c) on N<o>F outputs and <k>CF weights) accumulating `arith`'s
/// products into a tensor of its accumulator type.
template <typename OpTy>
FailureOr<Value> buildConvolutionOf(OpTy op, OpBuilder &b, Value xIn, Value w,
                                    const ConvArith &arith) {
  Location loc = op->getLoc();
  auto tx = cast<RankedTensorType>(xIn.getType());
  auto tw = cast<RankedTensorType>(w.getType());
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  int64_t rank = tx.getRank(), ns = rank - 2;
  if (ns < 1 || tw.getRank() != rank)
    return nodeError(op) << "input and weight must have the same rank >= 3",
           failure();
  DimLayout dl{rank, onnxops::isChannelsLast(op)};
  // Channels-last weights: <kernel>CF, or F<kernel>C (filter-first).
  bool filterFirst = onnxops::isFilterFirst(op);
  int64_t fDim = !dl.last || filterFirst ? 0 : rank - 1;
  int64_t cDim = !dl.last ? 1 : filterFirst ? rank - 1 : rank - 2;
  if (!tw.hasStaticShape())
    return nodeError(op) << "the weights must have a static shape", failure();
  // Input channels the shape arithmetic lost: the weights fix them (group x
  // weight channels), checked at run time.
  if (tx.isDynamicDim(dl.channel())) {
    int64_t G0 = asInt(op.getGroup());
    xIn = withStaticDim(b, op, xIn, dl.channel(), G0 * tw.getDimSize(cDim),
                        "the input's channel count");
    tx = cast<RankedTensorType>(xIn.getType());
  }
  Type accElem = arith.accElem;
  int64_t G = asInt(op.getGroup());
  int64_t C = tx.getDimSize(dl.channel());
  int64_t F = tw.getDimSize(fDim);
  int64_t wC = tw.getDimSize(cDim);
  ArrayRef<int64_t> kernelShape = !dl.last      ? tw.getShape().drop_front(2)
                                  : filterFirst ? tw.getShape().slice(1, ns)
                                                : tw.getShape().take_front(ns);
  if (G <= 0 || C % G || F % G || wC != C / G)
    return nodeError(op) << "group " << G << " does not divide input channels "
                         << C << " and filters " << F << " (weight " << tw
                         << ")",
           failure();
  FailureOr<WindowParams> p =
      getWindowParams(op, tx, kernelShape, false, dl, b);
  if (failed(p))
    return failure();
  Value x = padSpatial(b, loc, xIn, *p,
                       SmallVector<OpFoldResult>(ns, b.getIndexAttr(0)),
                       arith.padValue, dl);

  // Output type from the window arithmetic (matches shape inference).
  SmallVector<int64_t> outShape = {ty->getDimSize(0)};
  if (!dl.last)
    outShape.push_back(F);
  for (int64_t i = 0; i < ns; ++i) {
    int64_t o =
        windowOut(tx.getDimSize(dl.spatial(i)), p->kernel[i], p->strides[i],
                  p->dilations[i], p->padBegin[i], p->padEnd[i], false);
    if (o == -1)
      return nodeError(op) << "the kernel is larger than the padded input",
             failure();
    outShape.push_back(o);
  }
  if (dl.last)
    outShape.push_back(F);
  auto accType = RankedTensorType::get(outShape, accElem);
  SmallVector<Value> dyn;
  if (accType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, x, 0));
  for (int64_t i = 0; i < ns; ++i)
    if (accType.isDynamicDim(dl.spatial(i))) {
      // (in + pads - (k-1)*d - 1) / s + 1, with the padded input (x is
      // padded already) at least the dilated kernel.
      Value in = tensor::DimOp::create(b, loc, x, dl.spatial(i));
      Value window = arith::ConstantIndexOp::create(
          b, loc, (p->kernel[i] - 1) * p->dilations[i] + 1);
      checkAtRunTime(
          b, op, cmpI(b, loc, arith::CmpIPredicate::sge, in, window),
          "spatial dim {0} of the padded input has {1} elements, fewer than "
          "the dilated kernel's {2}",
          {arith::ConstantIndexOp::create(b, loc, i), in, window});
      Value span = arith::SubIOp::create(b, loc, in, window);
      Value q = arith::DivSIOp::create(
          b, loc, span, arith::ConstantIndexOp::create(b, loc, p->strides[i]));
      dyn.push_back(arith::AddIOp::create(
          b, loc, q, arith::ConstantIndexOp::create(b, loc, 1)));
    }
  Value init = filledTensor(b, loc, accType, dyn, scalarAttr(accElem, 0));

  // Loops: n, f, o_0..o_{ns-1}, c, k_0..k_{ns-1} (channels-last: n,
  // o..., f, k..., c); f = g*Fg + fo is folded into one loop over F with c
  // ranging over C/G: the input channel is (f floordiv Fg)*Cg + c.
  MLIRContext *ctx = b.getContext();
  int64_t Fg = F / G, Cg = C / G;
  // Channels-last with one input channel per group (a depthwise
  // convolution): no loop over it, every operand innermost along f.
  bool oneChannel = dl.last && Cg == 1 && !filterFirst;
  int64_t nLoops = 2 + ns + (oneChannel ? 0 : 1) + ns;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineExpr nE = d(0), fE = d(dl.last ? 1 + ns : 1),
             cE = oneChannel ? zero : d(dl.last ? nLoops - 1 : 2 + ns);
  auto oE = [&](int64_t i) { return d(dl.last ? 1 + i : 2 + i); };
  auto kE = [&](int64_t i) { return d(dl.last ? 2 + ns + i : 3 + ns + i); };
  AffineExpr xc = G == 1 ? cE : (fE.floorDiv(Fg)) * Cg + cE;
  SmallVector<AffineExpr> xe = {nE}, we, ye = {nE};
  if (!dl.last) {
    xe.push_back(xc);
    we = {fE, cE};
    ye.push_back(fE);
  } else if (filterFirst) {
    we.push_back(fE);
  }
  for (int64_t i = 0; i < ns; ++i) {
    xe.push_back(oE(i) * p->strides[i] + kE(i) * p->dilations[i]);
    we.push_back(kE(i));
    ye.push_back(oE(i));
  }
  // One input channel per group: the weights as <k>F (their size-1
  // channel dim folded away).
  if (dl.last) {
    xe.push_back(xc);
    if (!oneChannel)
      we.push_back(cE);
    if (!filterFirst)
      we.push_back(fE);
    ye.push_back(fE);
  }
  if (oneChannel) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < ns; ++i)
      groups.push_back({i});
    groups.push_back({ns, ns + 1});
    w = tensor::CollapseShapeOp::create(b, loc, w, groups);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, xe, ctx),
                                 AffineMap::get(nLoops, 0, we, ctx),
                                 AffineMap::get(nLoops, 0, ye, ctx)};
  SmallVector<IteratorType> iters(2 + ns, IteratorType::parallel);
  iters.append(nLoops - 2 - ns, IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{accType}, ValueRange{x, w}, ValueRange{init},
             maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l,
                                       arith.body(nb, l, a[0], a[1], a[2]));
             })
      .getResult(0);
}

/// Conv: the float convolution plus a bias add.
LogicalResult lowerConv(onnxops::ConvOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tw = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tw) || failed(ty))
    return failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "Conv supports float types only", failure();
  // Half-precision operands accumulate in f32; the bias is added in f32 and
  // the result rounds once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  ConvArith arith;
  arith.accElem = halfInputs ? Type(b.getF32Type()) : elem;
  arith.padValue =
      arith::ConstantOp::create(b, loc, scalarAttr(tx->getElementType(), 0));
  arith.body = [&](OpBuilder &nb, Location l, Value xv, Value wv, Value acc) {
    if (halfInputs) {
      xv = arith::ExtFOp::create(nb, l, acc.getType(), xv);
      wv = arith::ExtFOp::create(nb, l, acc.getType(), wv);
    }
    Value m = arith::MulFOp::create(nb, l, xv, wv);
    return arith::AddFOp::create(nb, l, acc, m).getResult();
  };
  FailureOr<Value> convOr =
      buildConvolutionOf(op, b, op->getOperand(0), op->getOperand(1), arith);
  if (failed(convOr))
    return failure();
  Value conv = *convOr;
  auto outType = cast<RankedTensorType>(conv.getType()).clone(elem);
  DimLayout dl{outType.getRank(), onnxops::isChannelsLast(op)};
  int64_t ns = outType.getRank() - 2;
  int64_t F = outType.getDimSize(dl.channel());

  // The bias [F] broadcasts against NC<o> as [F, 1, ..., 1]; against N<o>F
  // as it is.
  auto biasView = [&](Value bias) -> Value {
    if (dl.last)
      return bias;
    SmallVector<int64_t> bshape(ns + 1, 1);
    bshape[0] = F;
    SmallVector<Value> sizes;
    for (int64_t s : bshape)
      sizes.push_back(arith::ConstantIndexOp::create(b, loc, s));
    return reshapeTo(b, loc, bias, RankedTensorType::get(bshape, elem), sizes);
  };
  Value bias = op->getOperand(2);
  bool hasBias = !onnxops::isNoValue(bias);
  if (halfInputs) {
    // Bias in f32, then one rounding to the half type.
    SmallVector<Value> ins = {conv};
    if (hasBias)
      ins.push_back(biasView(bias));
    results.push_back(buildElementwise(
        b, loc, outType, ins,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = a[0];
          if (hasBias)
            v = arith::AddFOp::create(
                nb, l, v, arith::ExtFOp::create(nb, l, arith.accElem, a[1]));
          return arith::TruncFOp::create(nb, l, elem, v);
        }));
    return success();
  }
  if (hasBias) {
    conv =
        buildElementwise(b, loc, outType, {conv, biasView(bias)},
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, l, a[0], a[1]);
                         });
  }
  results.push_back(conv);
  return success();
}

} // namespace

FailureOr<Value> lowering::buildConvolution(Operation *op, OpBuilder &b,
                                            Value x, Value w,
                                            const ConvArith &arith) {
  if (auto conv = dyn_cast<onnxops::ConvOp>(op))
    return buildConvolutionOf(conv, b, x, w, arith);
  if (auto conv = dyn_cast<onnxops::ConvIntegerOp>(op))
    return buildConvolutionOf(conv, b, x, w, arith);
  return nodeError(op) << "not a convolution", failure();
}

namespace {

/// MaxPool and AveragePool of any spatial rank.
/// MaxPool, AveragePool and (with `lpP` > 0) LpPool: (sum |x|^p)^(1/p).
template <typename OpTy>
LogicalResult lowerPool(OpTy op, OpBuilder &b, SmallVectorImpl<Value> &results,
                        bool isMax, int64_t lpP = 0) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Type elem = ty->getElementType();
  // MaxPool also takes 8- to 32-bit integers (a quantized tensor's pool:
  // kiln-onnx-fuse-qdq folds DequantizeLinear/QuantizeLinear around it),
  // padded with the type's minimum.
  auto intElem = dyn_cast<IntegerType>(elem);
  bool intMax = isMax && !lpP && intElem && intElem.getWidth() >= 8 &&
                intElem.getWidth() <= 32;
  if (!isa<FloatType>(elem) && !intMax)
    return nodeError(op) << "pooling supports float types only", failure();
  Type resultElem = elem;
  if (intMax)
    elem = signlessType(elem);
  if (isMax && op->getNumResults() > 1 && !op->getResult(1).use_empty())
    return nodeError(op) << "the Indices output of MaxPool is not supported",
           failure();
  if constexpr (std::is_same_v<OpTy, onnxops::MaxPoolOp>)
    if (asInt(op.getStorageOrder()) != 0)
      return nodeError(op) << "storage_order=1 is not supported", failure();
  std::optional<SmallVector<int64_t>> kernel = intsOf(op.getKernelShape());
  int64_t ns = tx->getRank() - 2;
  DimLayout dl{tx->getRank(), onnxops::isChannelsLast(op)};
  if (!kernel || static_cast<int64_t>(kernel->size()) != ns)
    return nodeError(op) << "kernel_shape must give " << ns << " sizes",
           failure();
  bool ceil = asInt(op.getCeilMode());
  FailureOr<WindowParams> p = getWindowParams(op, *tx, *kernel, ceil, dl, b);
  if (failed(p))
    return failure();
  bool countPad = false;
  if constexpr (std::is_same_v<OpTy, onnxops::AveragePoolOp>)
    countPad = asInt(op.getCountIncludePad());
  if (lpP < 0)
    return nodeError(op) << "p must be positive", failure();

  SmallVector<int64_t> outShape(tx->getShape());
  SmallVector<OpFoldResult> extra(ns, b.getIndexAttr(0));
  // Per spatial dim: its output size (a Value when the input's is dynamic)
  // and the input's size, for the average's counts.
  SmallVector<Value> outSizes(ns), inSizes(ns), padBegins(ns), padEnds(ns);
  for (int64_t i = 0; i < ns; ++i) {
    padBegins[i] = getValueOrCreateConstantIndexOp(b, loc, p->begin(b, i));
    padEnds[i] = getValueOrCreateConstantIndexOp(b, loc, p->end(b, i));
  }
  for (int64_t i = 0; i < ns; ++i) {
    int64_t in = tx->getDimSize(dl.spatial(i));
    int64_t window = (p->kernel[i] - 1) * p->dilations[i] + 1;
    int64_t s = p->strides[i], pads = p->padBegin[i] + p->padEnd[i];
    if (ShapedType::isDynamic(in)) {
      // The same arithmetic on index values: the run checks that the
      // window fits the padded input before anything is sized by it.
      Value inV = dimValue(b, loc, op->getOperand(0), dl.spatial(i));
      Value pb = padBegins[i];
      Value padded = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, inV, pb), padEnds[i]);
      checkAtRunTime(
          b, op,
          cmpI(b, loc, arith::CmpIPredicate::sge, padded, idx(b, loc, window)),
          "spatial dim {0} of the padded input has {1} elements, fewer than "
          "the window's {2}",
          {idx(b, loc, i), padded, idx(b, loc, window)});
      Value span = arith::SubIOp::create(b, loc, padded, idx(b, loc, window));
      span = arith::MaxSIOp::create(b, loc, span, idx(b, loc, 0));
      Value o = arith::AddIOp::create(
          b, loc,
          ceil ? arith::CeilDivSIOp::create(b, loc, span, idx(b, loc, s))
                     .getResult()
               : arith::DivSIOp::create(b, loc, span, idx(b, loc, s))
                     .getResult(),
          idx(b, loc, 1));
      Value last = arith::SubIOp::create(b, loc, o, idx(b, loc, 1));
      if (ceil) {
        Value startsPast =
            cmpI(b, loc, arith::CmpIPredicate::sge,
                 arith::MulIOp::create(b, loc, last, idx(b, loc, s)),
                 arith::AddIOp::create(b, loc, inV, pb));
        o = arith::SelectOp::create(b, loc, startsPast, last, o);
        last = arith::SubIOp::create(b, loc, o, idx(b, loc, 1));
      }
      Value need = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, last, idx(b, loc, s)),
          idx(b, loc, window));
      if (ceil)
        extra[i] = arith::MaxSIOp::create(
                       b, loc, arith::SubIOp::create(b, loc, need, padded),
                       idx(b, loc, 0))
                       .getResult();
      outSizes[i] = o;
      inSizes[i] = inV;
      outShape[dl.spatial(i)] = ShapedType::kDynamic;
      continue;
    }
    int64_t o = windowOut(in, p->kernel[i], s, p->dilations[i], p->padBegin[i],
                          p->padEnd[i], ceil);
    if (o == -1)
      return nodeError(op) << "the window is larger than the padded input",
             failure();
    // ONNX: with ceil_mode the last window must start inside the input or
    // the begin padding.
    if (ceil && (o - 1) * s >= in + p->padBegin[i])
      --o;
    int64_t need = (o - 1) * s + window;
    extra[i] = b.getIndexAttr(std::max<int64_t>(0, need - (in + pads)));
    outShape[dl.spatial(i)] = o;
    inSizes[i] = idx(b, loc, in);
  }
  auto outType = RankedTensorType::get(outShape, elem);
  double padValue = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  TypedAttr padAttr = scalarAttr(elem, padValue);
  if (intMax) {
    unsigned w = intElem.getWidth();
    padAttr = IntegerAttr::get(elem, intElem.isUnsigned()
                                         ? APInt::getMinValue(w)
                                         : APInt::getSignedMinValue(w));
  }
  Value input = op->getOperand(0);
  if (intMax)
    input = toSignless(b, loc, input);
  Value x = padSpatial(b, loc, input, *p, extra, padAttr, dl);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < outType.getRank(); ++i) {
    if (!outType.isDynamicDim(i))
      continue;
    bool spatial = false;
    for (int64_t j = 0; j < ns; ++j)
      if (dl.spatial(j) == i) {
        dyn.push_back(outSizes[j]);
        spatial = true;
      }
    if (!spatial)
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  }
  Value init = filledTensor(b, loc, outType, dyn, padAttr);
  Value window = tensor::EmptyOp::create(b, loc, p->kernel, elem);

  MLIRContext *ctx = b.getContext();
  int64_t nLoops = 2 + 2 * ns;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  // Loops: the output's dims in order, then the window's.
  SmallVector<AffineExpr> xe, we, ye;
  for (int64_t i = 0; i < 2 + ns; ++i) {
    xe.push_back(d(i));
    ye.push_back(d(i));
  }
  for (int64_t i = 0; i < ns; ++i) {
    int64_t o = dl.spatial(i);
    xe[o] = d(o) * p->strides[i] + d(2 + ns + i) * p->dilations[i];
    we.push_back(d(2 + ns + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, xe, ctx),
                                 AffineMap::get(nLoops, 0, we, ctx),
                                 AffineMap::get(nLoops, 0, ye, ctx)};
  SmallVector<IteratorType> iters(2 + ns, IteratorType::parallel);
  iters.append(ns, IteratorType::reduction);
  Value pooled = linalg::GenericOp::create(
                     b, loc, TypeRange{outType}, ValueRange{x, window},
                     ValueRange{init}, maps, iters,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value v = a[0];
                       if (lpP) {
                         v = math::AbsFOp::create(nb, l, v);
                         if (lpP == 2)
                           v = arith::MulFOp::create(nb, l, v, v);
                         else if (lpP != 1)
                           v = math::PowFOp::create(
                               nb, l, v, scalarConstant(nb, l, elem, lpP));
                       }
                       Value r;
                       if (intMax && intElem.isUnsigned())
                         r = arith::MaxUIOp::create(nb, l, a[2], v);
                       else if (intMax)
                         r = arith::MaxSIOp::create(nb, l, a[2], v);
                       else if (isMax)
                         r = arith::MaximumFOp::create(nb, l, a[2], v);
                       else
                         r = arith::AddFOp::create(nb, l, a[2], v);
                       linalg::YieldOp::create(nb, l, r);
                     })
                     .getResult(0);
  if (intMax) {
    results.push_back(fromSignless(b, loc, pooled, outType.clone(resultElem)));
    return success();
  }
  if (isMax || lpP == 1) {
    results.push_back(pooled);
    return success();
  }
  if (lpP) {
    results.push_back(buildElementwise(
        b, loc, outType, pooled,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          if (lpP == 2)
            return math::SqrtOp::create(nb, l, a[0]);
          return math::PowFOp::create(nb, l, a[0],
                                      scalarConstant(nb, l, elem, 1.0 / lpP));
        }));
    return success();
  }
  // Average: divide by the number of elements of each window that lie in the
  // input (or in the input and its explicit pads with count_include_pad).
  WindowParams params = *p;
  results.push_back(buildElementwise(
      b, loc, outType, pooled,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value count = arith::ConstantIndexOp::create(nb, l, 1);
        for (int64_t i = 0; i < ns; ++i) {
          Value o = linalg::IndexOp::create(nb, l, dl.spatial(i));
          // The input's size and pads (values from outside the body when
          // dynamic): positions in [lo, hiLimit) count.
          Value lo = countPad ? arith::ConstantIndexOp::create(nb, l, 0)
                              : padBegins[i];
          Value hiLimit =
              arith::AddIOp::create(nb, l, inSizes[i], padBegins[i]);
          if (countPad)
            hiLimit = arith::AddIOp::create(nb, l, hiLimit, padEnds[i]);
          // Positions (in padded coordinates) covered: start + k*d for k in
          // [0, K). Count those in [lo, hiLimit).
          Value start = arith::MulIOp::create(
              nb, l, o,
              arith::ConstantIndexOp::create(nb, l, params.strides[i]));
          Value c = arith::ConstantIndexOp::create(nb, l, 0);
          for (int64_t k = 0; k < params.kernel[i]; ++k) {
            Value pos = arith::AddIOp::create(
                nb, l, start,
                arith::ConstantIndexOp::create(nb, l, k * params.dilations[i]));
            Value ge = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                             pos, lo);
            Value lt = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                             pos, hiLimit);
            Value in = arith::AndIOp::create(nb, l, ge, lt);
            c = arith::AddIOp::create(
                nb, l, c,
                arith::IndexCastOp::create(
                    nb, l, nb.getIndexType(),
                    arith::ExtUIOp::create(nb, l, nb.getI64Type(), in)));
          }
          count = arith::MulIOp::create(nb, l, count, c);
        }
        Value cf = arith::SIToFPOp::create(
            nb, l, a[0].getType(),
            arith::IndexCastOp::create(nb, l, nb.getI64Type(), count));
        return arith::DivFOp::create(nb, l, a[0], cf);
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

} // namespace

/// Reduces `x` over `axes` (sorted, normalized) keeping them as size-1 dims
/// in `keptType`; combines with `kind`. Returns the keepdims result.
Value lowering::reduceKeepDims(OpBuilder &b, Location loc, Value x,
                               ArrayRef<int64_t> axes, ReduceKind kind) {
  auto tx = cast<RankedTensorType>(x.getType());
  int64_t rank = tx.getRank();
  Type elem = tx.getElementType();
  SmallVector<int64_t> shape(tx.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axes)
    reduced[a] = true;
  // Long f32 sums accumulate in f64 (accumulatesWide).
  Type acc = kind != ReduceKind::Max && accumulatesWide(tx, reduced)
                 ? Type(b.getF64Type())
                 : elem;
  auto keptType = RankedTensorType::get(shape, acc);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < rank; ++i)
    if (keptType.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  double initVal =
      kind == ReduceKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  if (kind == ReduceKind::Max && !isa<FloatType>(elem))
    initVal = static_cast<double>(std::numeric_limits<int64_t>::min());
  Value init = filledTensor(b, loc, keptType, dyn, scalarAttr(acc, initVal));
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> outE;
  SmallVector<IteratorType> iters;
  for (int64_t i = 0; i < rank; ++i) {
    bool red = llvm::is_contained(axes, i);
    outE.push_back(red ? getAffineConstantExpr(0, ctx)
                       : getAffineDimExpr(i, ctx));
    iters.push_back(red ? IteratorType::reduction : IteratorType::parallel);
  }
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outE, ctx)};
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{keptType}, ValueRange{x}, ValueRange{init}, maps,
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value r;
            if (kind == ReduceKind::Max) {
              r = isa<FloatType>(elem)
                      ? arith::MaximumFOp::create(nb, l, a[1], a[0]).getResult()
                      : arith::MaxSIOp::create(nb, l, a[1], a[0]).getResult();
            } else {
              Value v = a[0];
              if (acc != elem)
                v = arith::ExtFOp::create(nb, l, acc, v);
              r = addOrMul(nb, l, a[1], v, /*add=*/true);
            }
            linalg::YieldOp::create(nb, l, r);
          })
          .getResult(0);
  return narrowTo(b, loc, sum, elem);
}

namespace {

/// The spatial dims of a global pool's input.
SmallVector<int64_t> spatialAxes(Operation *op, int64_t rank) {
  DimLayout dl{rank, onnxops::isChannelsLast(op)};
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i + 2 < rank; ++i)
    axes.push_back(dl.spatial(i));
  return axes;
}

/// Number of elements reduced, as an index value.
Value reducedCount(OpBuilder &b, Location loc, Value x,
                   ArrayRef<int64_t> axes) {
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t a : axes)
    n = arith::MulIOp::create(b, loc, n, dimValue(b, loc, x, a));
  return n;
}

LogicalResult lowerGlobalAveragePool(onnxops::GlobalAveragePoolOp op,
                                     OpBuilder &b,
                                     SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(rankedResult(op)))
    return failure();
  if (!isa<FloatType>(tx->getElementType()))
    return nodeError(op) << "float types only", failure();
  Location loc = op->getLoc();
  SmallVector<int64_t> axes = spatialAxes(op, tx->getRank());
  Value x = op->getOperand(0);
  Value r = reduceKeepDims(b, loc, x, axes, ReduceKind::Sum);
  Value count = reducedCount(b, loc, x, axes);
  Type elem = tx->getElementType();
  results.push_back(buildElementwise(
      b, loc, cast<RankedTensorType>(r.getType()), r,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value c = arith::SIToFPOp::create(
            nb, l, elem,
            arith::IndexCastOp::create(nb, l, nb.getI64Type(), count));
        return arith::DivFOp::create(nb, l, a[0], c);
      }));
  return success();
}

/// BatchNormalization in inference mode, per channel (dim 1).
LogicalResult lowerBatchNorm(onnxops::BatchNormalizationOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  if (asInt(op.getTrainingMode()))
    return nodeError(op) << "training_mode=1 is not supported", failure();
  for (unsigned i = 1; i < op->getNumResults(); ++i)
    if (!op->getResult(i).use_empty())
      return nodeError(op) << "running statistics outputs are not supported",
             failure();
  int64_t rank = tx->getRank();
  if (rank < 2)
    return nodeError(op) << "input must have rank >= 2", failure();
  Type elem = tx->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "float types only", failure();
  double eps = asDouble(op.getEpsilon());
  // View each [C] parameter as [C, 1, ..., 1] to broadcast along dim 1.
  SmallVector<Value> params;
  for (unsigned i = 1; i <= 4; ++i) {
    Value v = op->getOperand(i);
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1)
      return nodeError(op) << "input " << i << " must be 1-D", failure();
    SmallVector<int64_t> shape(rank - 1, 1);
    shape[0] = t.getDimSize(0);
    SmallVector<Value> sizes = {dimValue(b, loc, v, 0)};
    for (int64_t j = 1; j < rank - 1; ++j)
      sizes.push_back(arith::ConstantIndexOp::create(b, loc, 1));
    params.push_back(reshapeTo(
        b, loc, v, RankedTensorType::get(shape, t.getElementType()), sizes));
  }
  results.push_back(buildElementwise(
      b, loc, *tx,
      {op->getOperand(0), params[0], params[1], params[2], params[3]},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        // (x - mean) / sqrt(var + eps) * scale + bias
        Value var = arith::AddFOp::create(nb, l, a[4],
                                          scalarConstant(nb, l, elem, eps));
        Value inv =
            arith::DivFOp::create(nb, l, scalarConstant(nb, l, elem, 1.0),
                                  math::SqrtOp::create(nb, l, var));
        Value xc = arith::SubFOp::create(nb, l, a[0], a[3]);
        Value y = arith::MulFOp::create(
            nb, l, xc, arith::MulFOp::create(nb, l, inv, a[1]));
        return arith::AddFOp::create(nb, l, y, a[2]);
      }));
  return success();
}

} // namespace

void lowering::populateNNLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::NN> t(patterns);
  t.add<onnxops::ConvOp>(lowerConv);
  t.add<onnxops::MaxPoolOp>(
      [](onnxops::MaxPoolOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerPool(op, b, r, /*isMax=*/true);
      });
  t.add<onnxops::AveragePoolOp>(
      [](onnxops::AveragePoolOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerPool(op, b, r, /*isMax=*/false);
      });
  t.add<onnxops::GlobalAveragePoolOp>(lowerGlobalAveragePool);
  t.add<onnxops::GlobalMaxPoolOp>(
      [](onnxops::GlobalMaxPoolOp op, OpBuilder &b,
         SmallVectorImpl<Value> &r) -> LogicalResult {
        FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
        if (failed(tx))
          return failure();
        if (!isa<FloatType>(tx->getElementType()))
          return nodeError(op) << "float types only", failure();
        SmallVector<int64_t> axes = spatialAxes(op, tx->getRank());
        r.push_back(reduceKeepDims(b, op->getLoc(), op->getOperand(0), axes,
                                   ReduceKind::Max));
        return success();
      });
  t.add<onnxops::LpPoolOp>(
      [](onnxops::LpPoolOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        int64_t p = asInt(op.getP());
        return lowerPool(op, b, r, /*isMax=*/false, p > 0 ? p : -1);
      });
  t.add<onnxops::BatchNormalizationOp>(lowerBatchNorm);
}
