//===- NN.cpp - Lowering of contractions, convolutions, pooling, norms ----===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

Value addOrMul(OpBuilder &b, Location loc, Value x, Value y, bool add) {
  if (isa<FloatType>(x.getType()))
    return add ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::MulFOp::create(b, loc, x, y).getResult();
  return add ? arith::AddIOp::create(b, loc, x, y).getResult()
             : arith::MulIOp::create(b, loc, x, y).getResult();
}

/// Dynamic sizes of `type` taken from `src` dims given by `srcDim` (one per
/// result dim; -1 for dims that must be static).
SmallVector<Value> dynSizesFrom(OpBuilder &b, Location loc,
                                RankedTensorType type,
                                ArrayRef<std::pair<Value, int64_t>> srcDim) {
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(
          tensor::DimOp::create(b, loc, srcDim[i].first, srcDim[i].second));
  return sizes;
}

//===----------------------------------------------------------------------===//
// MatMul and Gemm
//===----------------------------------------------------------------------===//

/// Y = A·B with numpy semantics (batch broadcasting, 1-D operands), as one
/// contraction. 2-D × 2-D becomes linalg.matmul.
LogicalResult lowerMatMul(Operation *op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ta = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tb = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  Value A = op->getOperand(0), B = op->getOperand(1);
  Type elem = ty->getElementType();
  int64_t ra = ta->getRank(), rb = tb->getRank(), ry = ty->getRank();
  if (ra == 0 || rb == 0)
    return nodeError(op) << "MatMul operands must have rank >= 1", failure();
  // Half-precision products accumulate in f32 and round once at the end
  // ("f16 with f32 accumulation"), as numpy and the GPU tensor cores do.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  TypedAttr zero = scalarAttr(accElem, 0);
  auto finish = [&](Value acc) {
    if (!halfInputs)
      return acc;
    return buildElementwise(
        b, loc, *ty, acc,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, l, elem, a[0]);
        });
  };

  if (ra == 2 && rb == 2) {
    SmallVector<Value> dyn = dynSizesFrom(b, loc, *ty, {{A, 0}, {B, 1}});
    Value init = filledTensor(b, loc, accType, dyn, zero);
    results.push_back(
        finish(linalg::MatmulOp::create(b, loc, TypeRange{accType},
                                        ValueRange{A, B}, ValueRange{init})
                   .getResult(0)));
    return success();
  }

  // General contraction: loops = result dims + k.
  MLIRContext *ctx = b.getContext();
  int64_t nLoops = ry + 1;
  AffineExpr k = getAffineDimExpr(ry, ctx);
  // Result layout: batch..., [m if ra>1], [n if rb>1].
  int64_t batchRank = ry - (ra > 1 ? 1 : 0) - (rb > 1 ? 1 : 0);

  // Size of batch dim `i` of the result: the max of the operands' dynamic
  // batch dims there.
  auto batchSize = [&](int64_t i) -> Value {
    Value size;
    for (auto [v, t, nb] :
         {std::tuple{A, *ta, ra - 2}, std::tuple{B, *tb, rb - 2}}) {
      int64_t j = i - (batchRank - nb);
      if (nb <= 0 || j < 0 || !t.isDynamicDim(j))
        continue;
      Value d = tensor::DimOp::create(b, loc, v, j);
      size = size ? arith::MaxSIOp::create(b, loc, size, d).getResult() : d;
    }
    return size;
  };
  // Batch dims dynamic in both operands may broadcast at run time (one of
  // them 1): expand both operands to the full batch shape first.
  {
    int64_t nbA = std::max<int64_t>(ra - 2, 0),
            nbB = std::max<int64_t>(rb - 2, 0);
    SmallVector<bool> maskA(ra, false), maskB(rb, false);
    bool ambiguous = false;
    for (int64_t i = 0; i < batchRank; ++i) {
      int64_t ja = i - (batchRank - nbA), jb = i - (batchRank - nbB);
      if (ja >= 0 && jb >= 0 && ta->isDynamicDim(ja) && tb->isDynamicDim(jb) &&
          A != B) {
        maskA[ja] = maskB[jb] = true;
        ambiguous = true;
      }
    }
    if (ambiguous) {
      auto expand = [&](Value v, RankedTensorType t, int64_t nb,
                        SmallVector<bool> mask) -> Value {
        SmallVector<int64_t> shape(ty->getShape().take_front(batchRank));
        llvm::append_range(shape, t.getShape().drop_front(nb));
        auto et = RankedTensorType::get(shape, t.getElementType());
        SmallVector<Value> dynS;
        for (int64_t i = 0; i < et.getRank(); ++i)
          if (et.isDynamicDim(i))
            dynS.push_back(i < batchRank ? batchSize(i)
                                         : tensor::DimOp::create(
                                               b, loc, v, i - batchRank + nb)
                                               .getResult());
        return buildBroadcastGeneric(
            b, loc, et, v, dynS, {mask},
            [](OpBuilder &, Location, ValueRange a) { return a[0]; });
      };
      A = expand(A, *ta, nbA, maskA);
      B = expand(B, *tb, nbB, maskB);
      ta = cast<RankedTensorType>(A.getType());
      tb = cast<RankedTensorType>(B.getType());
      ra = ta->getRank();
      rb = tb->getRank();
    }
  }
  AffineExpr m = ra > 1 ? getAffineDimExpr(batchRank, ctx) : AffineExpr();
  AffineExpr n = rb > 1 ? getAffineDimExpr(batchRank + (ra > 1 ? 1 : 0), ctx)
                        : AffineExpr();
  auto batchExprs = [&](RankedTensorType t, int64_t nb) {
    SmallVector<AffineExpr> e;
    for (int64_t j = 0; j < nb; ++j) {
      int64_t i = j + (batchRank - nb);
      if (t.getDimSize(j) == 1 && ty->getDimSize(i) != 1)
        e.push_back(getAffineConstantExpr(0, ctx));
      else
        e.push_back(getAffineDimExpr(i, ctx));
    }
    return e;
  };
  SmallVector<AffineExpr> ea = batchExprs(*ta, std::max<int64_t>(ra - 2, 0));
  if (ra > 1)
    ea.push_back(m);
  ea.push_back(k);
  SmallVector<AffineExpr> eb = batchExprs(*tb, std::max<int64_t>(rb - 2, 0));
  eb.push_back(k);
  if (rb > 1)
    eb.push_back(n);
  SmallVector<AffineExpr> ey;
  for (int64_t i = 0; i < ry; ++i)
    ey.push_back(getAffineDimExpr(i, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, ea, ctx),
                                 AffineMap::get(nLoops, 0, eb, ctx),
                                 AffineMap::get(nLoops, 0, ey, ctx)};
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);

  // Dynamic result sizes: batch from the broadcast of batch dims, m from A,
  // n from B.
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i) {
    if (!ty->isDynamicDim(i))
      continue;
    if (ra > 1 && i == batchRank) {
      dyn.push_back(tensor::DimOp::create(b, loc, A, ra - 2));
    } else if (rb > 1 && i == ry - 1) {
      dyn.push_back(tensor::DimOp::create(b, loc, B, rb - 1));
    } else {
      Value size = batchSize(i);
      if (!size)
        return nodeError(op) << "cannot size dynamic output dim " << i,
               failure();
      dyn.push_back(size);
    }
  }
  Value init = filledTensor(b, loc, accType, dyn, zero);
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, ValueRange{A, B}, ValueRange{init}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value x = a[0], y = a[1];
        if (halfInputs) {
          x = arith::ExtFOp::create(nb, l, accElem, x);
          y = arith::ExtFOp::create(nb, l, accElem, y);
        }
        Value p = addOrMul(nb, l, x, y, /*add=*/false);
        linalg::YieldOp::create(nb, l, addOrMul(nb, l, a[2], p, true));
      });
  results.push_back(finish(g.getResult(0)));
  return success();
}

/// Y = alpha·op(A)·op(B) + beta·C. Half-precision operands accumulate in
/// f32; alpha, beta and C are applied in f32 and the result rounds once.
LogicalResult lowerGemm(Operation *op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ta = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tb = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  if (ta->getRank() != 2 || tb->getRank() != 2)
    return nodeError(op) << "Gemm operands must be 2-D", failure();
  Value A = op->getOperand(0), B = op->getOperand(1), C = op->getOperand(2);
  bool transA = getInt(op, "transA", 0), transB = getInt(op, "transB", 0);
  double alpha = getFloat(op, "alpha", 1.0), beta = getFloat(op, "beta", 1.0);
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "Gemm supports float types only", failure();
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  MLIRContext *ctx = b.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0,
                     transA ? ArrayRef<AffineExpr>{k, m}
                            : ArrayRef<AffineExpr>{m, k},
                     ctx),
      AffineMap::get(3, 0,
                     transB ? ArrayRef<AffineExpr>{n, k}
                            : ArrayRef<AffineExpr>{k, n},
                     ctx),
      AffineMap::get(3, 0, {m, n}, ctx)};
  SmallVector<Value> dyn =
      dynSizesFrom(b, loc, *ty, {{A, transA ? 1 : 0}, {B, transB ? 0 : 1}});
  Value init = filledTensor(b, loc, accType, dyn, scalarAttr(accElem, 0));
  Value acc;
  if (!transA && !transB) {
    acc = linalg::MatmulOp::create(b, loc, TypeRange{accType}, ValueRange{A, B},
                                   ValueRange{init})
              .getResult(0);
  } else {
    acc = linalg::GenericOp::create(
              b, loc, TypeRange{accType}, ValueRange{A, B}, ValueRange{init},
              maps,
              {IteratorType::parallel, IteratorType::parallel,
               IteratorType::reduction},
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value x = a[0], y = a[1];
                if (halfInputs) {
                  x = arith::ExtFOp::create(nb, l, accElem, x);
                  y = arith::ExtFOp::create(nb, l, accElem, y);
                }
                Value p = arith::MulFOp::create(nb, l, x, y);
                linalg::YieldOp::create(
                    nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
              })
              .getResult(0);
  }
  bool hasC = !onnxops::isNoValue(C) && beta != 0.0;
  if (alpha == 1.0 && !hasC && !halfInputs) {
    results.push_back(acc);
    return success();
  }
  SmallVector<Value> ins = {acc};
  if (hasC) {
    if (!isa<RankedTensorType>(C.getType()))
      return nodeError(op) << "the rank of C is unknown", failure();
    ins.push_back(C);
  }
  results.push_back(buildElementwise(
      b, loc, *ty, ins, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = a[0];
        if (alpha != 1.0)
          v = arith::MulFOp::create(nb, l, v,
                                    scalarConstant(nb, l, accElem, alpha));
        if (hasC) {
          Value c = a[1];
          if (halfInputs)
            c = arith::ExtFOp::create(nb, l, accElem, c);
          if (beta != 1.0)
            c = arith::MulFOp::create(nb, l, c,
                                      scalarConstant(nb, l, accElem, beta));
          v = arith::AddFOp::create(nb, l, v, c);
        }
        if (halfInputs)
          v = arith::TruncFOp::create(nb, l, elem, v);
        return v;
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

struct WindowParams {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
};

/// Reads kernel/strides/dilations/pads/auto_pad of a Conv or pool op with
/// `nSpatial` spatial dims of input type `in`.
FailureOr<WindowParams> getWindowParams(Operation *op, RankedTensorType in,
                                        ArrayRef<int64_t> kernel,
                                        bool ceilMode) {
  int64_t ns = kernel.size();
  WindowParams p;
  p.kernel.assign(kernel.begin(), kernel.end());
  p.strides = getInts(op, "strides").value_or(SmallVector<int64_t>(ns, 1));
  p.dilations = getInts(op, "dilations").value_or(SmallVector<int64_t>(ns, 1));
  SmallVector<int64_t> pads =
      getInts(op, "pads").value_or(SmallVector<int64_t>(2 * ns, 0));
  if (static_cast<int64_t>(p.strides.size()) != ns ||
      static_cast<int64_t>(p.dilations.size()) != ns ||
      static_cast<int64_t>(pads.size()) != 2 * ns)
    return nodeError(op) << "strides, dilations and pads must match the " << ns
                         << " spatial dims",
           failure();
  p.padBegin.assign(pads.begin(), pads.begin() + ns);
  p.padEnd.assign(pads.begin() + ns, pads.end());
  std::string autoPad = getStr(op, "auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < ns; ++i) {
      int64_t size = in.getDimSize(2 + i);
      if (ShapedType::isDynamic(size))
        return nodeError(op)
                   << "auto_pad " << autoPad << " needs static spatial dims",
               failure();
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

/// Pads the spatial dims of NC... tensor `x` by (begin, end + extra) with
/// `value`.
Value padSpatial(OpBuilder &b, Location loc, Value x, const WindowParams &p,
                 ArrayRef<int64_t> extraEnd, TypedAttr value) {
  bool any = false;
  for (size_t i = 0; i < p.padBegin.size(); ++i)
    any |= p.padBegin[i] || p.padEnd[i] || extraEnd[i];
  if (!any)
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> lo(2, 0), hi(2, 0), shape(t.getShape());
  for (size_t i = 0; i < p.padBegin.size(); ++i) {
    lo.push_back(p.padBegin[i]);
    hi.push_back(p.padEnd[i] + extraEnd[i]);
    if (!ShapedType::isDynamic(shape[2 + i]))
      shape[2 + i] += p.padBegin[i] + p.padEnd[i] + extraEnd[i];
  }
  auto type = RankedTensorType::get(shape, t.getElementType());
  Value pad = arith::ConstantOp::create(b, loc, value);
  return tensor::PadOp::create(b, loc, type, x,
                               getAsIndexOpFoldResult(b.getContext(), lo),
                               getAsIndexOpFoldResult(b.getContext(), hi), pad);
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

/// Conv of any spatial rank with groups, as one linalg.generic over
/// (n, g, f, o..., c, k...), plus a bias add.
LogicalResult lowerConv(Operation *op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tw = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tw) || failed(ty))
    return failure();
  int64_t rank = tx->getRank(), ns = rank - 2;
  if (ns < 1 || tw->getRank() != rank)
    return nodeError(op) << "input and weight must have the same rank >= 3",
           failure();
  if (!tw->hasStaticShape() || tx->isDynamicDim(1))
    return nodeError(op) << "weights and input channels must be static",
           failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "Conv supports float types only", failure();
  // Half-precision operands accumulate in f32; the bias is added in f32 and
  // the result rounds once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  int64_t G = getInt(op, "group", 1);
  int64_t C = tx->getDimSize(1), F = tw->getDimSize(0);
  if (G <= 0 || C % G || F % G || tw->getDimSize(1) != C / G)
    return nodeError(op) << "group " << G << " does not divide input channels "
                         << C << " and filters " << F << " (weight " << *tw
                         << ")",
           failure();
  FailureOr<WindowParams> p =
      getWindowParams(op, *tx, tw->getShape().drop_front(2), false);
  if (failed(p))
    return failure();
  Value x = padSpatial(b, loc, op->getOperand(0), *p,
                       SmallVector<int64_t>(ns, 0), scalarAttr(elem, 0));

  // Output type from the window arithmetic (matches shape inference).
  SmallVector<int64_t> outShape = {ty->getDimSize(0), F};
  for (int64_t i = 0; i < ns; ++i) {
    int64_t o = windowOut(tx->getDimSize(2 + i), p->kernel[i], p->strides[i],
                          p->dilations[i], p->padBegin[i], p->padEnd[i], false);
    if (o == -1)
      return nodeError(op) << "the kernel is larger than the padded input",
             failure();
    outShape.push_back(o);
  }
  auto outType = RankedTensorType::get(outShape, elem);
  SmallVector<Value> dyn;
  if (outType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, x, 0));
  for (int64_t i = 0; i < ns; ++i)
    if (outType.isDynamicDim(2 + i)) {
      // (in + pads - (k-1)*d - 1) / s + 1
      Value in = tensor::DimOp::create(b, loc, x, 2 + i);
      Value span = arith::SubIOp::create(
          b, loc, in,
          arith::ConstantIndexOp::create(
              b, loc, (p->kernel[i] - 1) * p->dilations[i] + 1));
      Value q = arith::DivSIOp::create(
          b, loc, span, arith::ConstantIndexOp::create(b, loc, p->strides[i]));
      dyn.push_back(arith::AddIOp::create(
          b, loc, q, arith::ConstantIndexOp::create(b, loc, 1)));
    }
  auto accType = RankedTensorType::get(outShape, accElem);
  Value init = filledTensor(b, loc, accType, dyn, scalarAttr(accElem, 0));

  // Loops: n, f, o_0..o_{ns-1}, c, k_0..k_{ns-1}; f = g*Fg + fo is folded
  // into one loop over F with c ranging over C/G: the input channel is
  // (f floordiv Fg)*Cg + c.
  MLIRContext *ctx = b.getContext();
  int64_t Fg = F / G, Cg = C / G;
  int64_t nLoops = 2 + ns + 1 + ns;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineExpr nE = d(0), fE = d(1), cE = d(2 + ns);
  SmallVector<AffineExpr> xe = {nE, G == 1 ? cE : (fE.floorDiv(Fg)) * Cg + cE};
  SmallVector<AffineExpr> we = {fE, cE};
  SmallVector<AffineExpr> ye = {nE, fE};
  for (int64_t i = 0; i < ns; ++i) {
    AffineExpr o = d(2 + i), k = d(3 + ns + i);
    xe.push_back(o * p->strides[i] + k * p->dilations[i]);
    we.push_back(k);
    ye.push_back(o);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, xe, ctx),
                                 AffineMap::get(nLoops, 0, we, ctx),
                                 AffineMap::get(nLoops, 0, ye, ctx)};
  SmallVector<IteratorType> iters(2 + ns, IteratorType::parallel);
  iters.append(1 + ns, IteratorType::reduction);
  Value conv =
      linalg::GenericOp::create(
          b, loc, TypeRange{accType}, ValueRange{x, op->getOperand(1)},
          ValueRange{init}, maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value xv = a[0], wv = a[1];
            if (halfInputs) {
              xv = arith::ExtFOp::create(nb, l, accElem, xv);
              wv = arith::ExtFOp::create(nb, l, accElem, wv);
            }
            Value m = arith::MulFOp::create(nb, l, xv, wv);
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[2], m).getResult());
          })
          .getResult(0);

  Value bias = op->getOperand(2);
  bool hasBias = !onnxops::isNoValue(bias);
  if (halfInputs) {
    // Bias in f32, then one rounding to the half type.
    SmallVector<Value> ins = {conv};
    if (hasBias) {
      SmallVector<int64_t> bshape(ns + 1, 1);
      bshape[0] = F;
      SmallVector<Value> sizes;
      for (int64_t s : bshape)
        sizes.push_back(arith::ConstantIndexOp::create(b, loc, s));
      ins.push_back(
          reshapeTo(b, loc, bias, RankedTensorType::get(bshape, elem), sizes));
    }
    results.push_back(buildElementwise(
        b, loc, outType, ins,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = a[0];
          if (hasBias)
            v = arith::AddFOp::create(
                nb, l, v, arith::ExtFOp::create(nb, l, accElem, a[1]));
          return arith::TruncFOp::create(nb, l, elem, v);
        }));
    return success();
  }
  if (hasBias) {
    // Bias [F] broadcast along dim 1: view it as [F, 1, ..., 1].
    SmallVector<int64_t> bshape(ns + 1, 1);
    bshape[0] = F;
    auto btype = RankedTensorType::get(bshape, elem);
    SmallVector<Value> sizes;
    for (int64_t s : bshape)
      sizes.push_back(arith::ConstantIndexOp::create(b, loc, s));
    Value b2 = reshapeTo(b, loc, bias, btype, sizes);
    conv =
        buildElementwise(b, loc, outType, {conv, b2},
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, l, a[0], a[1]);
                         });
  }
  results.push_back(conv);
  return success();
}

/// MaxPool and AveragePool of any spatial rank.
/// MaxPool, AveragePool and (with `lpP` > 0) LpPool: (sum |x|^p)^(1/p).
LogicalResult lowerPool(Operation *op, OpBuilder &b,
                        SmallVectorImpl<Value> &results, bool isMax,
                        int64_t lpP = 0) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "pooling supports float types only", failure();
  if (isMax && op->getNumResults() > 1 && !op->getResult(1).use_empty())
    return nodeError(op) << "the Indices output of MaxPool is not supported",
           failure();
  if (isMax && getInt(op, "storage_order", 0) != 0)
    return nodeError(op) << "storage_order=1 is not supported", failure();
  std::optional<SmallVector<int64_t>> kernel = getInts(op, "kernel_shape");
  int64_t ns = tx->getRank() - 2;
  if (!kernel || static_cast<int64_t>(kernel->size()) != ns)
    return nodeError(op) << "kernel_shape must give " << ns << " sizes",
           failure();
  bool ceil = getInt(op, "ceil_mode", 0);
  FailureOr<WindowParams> p = getWindowParams(op, *tx, *kernel, ceil);
  if (failed(p))
    return failure();
  bool countPad = getInt(op, "count_include_pad", 0);
  if (lpP < 0)
    return nodeError(op) << "p must be positive", failure();

  SmallVector<int64_t> outShape(tx->getShape().take_front(2));
  SmallVector<int64_t> extra(ns, 0);
  for (int64_t i = 0; i < ns; ++i) {
    int64_t in = tx->getDimSize(2 + i);
    int64_t o = windowOut(in, p->kernel[i], p->strides[i], p->dilations[i],
                          p->padBegin[i], p->padEnd[i], ceil);
    if (o == -1)
      return nodeError(op) << "the window is larger than the padded input",
             failure();
    if (ShapedType::isDynamic(o))
      return nodeError(op) << "pooling needs static spatial dims", failure();
    // ONNX: with ceil_mode the last window must start inside the input or
    // the begin padding.
    if (ceil && (o - 1) * p->strides[i] >= in + p->padBegin[i])
      --o;
    int64_t need =
        (o - 1) * p->strides[i] + (p->kernel[i] - 1) * p->dilations[i] + 1;
    extra[i] =
        std::max<int64_t>(0, need - (in + p->padBegin[i] + p->padEnd[i]));
    outShape.push_back(o);
  }
  auto outType = RankedTensorType::get(outShape, elem);
  double padValue = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Value x = padSpatial(b, loc, op->getOperand(0), *p, extra,
                       scalarAttr(elem, padValue));
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < 2; ++i)
    if (outType.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  Value init = filledTensor(b, loc, outType, dyn, scalarAttr(elem, padValue));
  Value window = tensor::EmptyOp::create(b, loc, p->kernel, elem);

  MLIRContext *ctx = b.getContext();
  int64_t nLoops = 2 + 2 * ns;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> xe = {d(0), d(1)}, we, ye = {d(0), d(1)};
  for (int64_t i = 0; i < ns; ++i) {
    xe.push_back(d(2 + i) * p->strides[i] + d(2 + ns + i) * p->dilations[i]);
    we.push_back(d(2 + ns + i));
    ye.push_back(d(2 + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, xe, ctx),
                                 AffineMap::get(nLoops, 0, we, ctx),
                                 AffineMap::get(nLoops, 0, ye, ctx)};
  SmallVector<IteratorType> iters(2 + ns, IteratorType::parallel);
  iters.append(ns, IteratorType::reduction);
  Value pooled =
      linalg::GenericOp::create(
          b, loc, TypeRange{outType}, ValueRange{x, window}, ValueRange{init},
          maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value v = a[0];
            if (lpP) {
              v = math::AbsFOp::create(nb, l, v);
              if (lpP == 2)
                v = arith::MulFOp::create(nb, l, v, v);
              else if (lpP != 1)
                v = math::PowFOp::create(nb, l, v,
                                         scalarConstant(nb, l, elem, lpP));
            }
            Value r =
                isMax ? arith::MaximumFOp::create(nb, l, a[2], v).getResult()
                      : arith::AddFOp::create(nb, l, a[2], v).getResult();
            linalg::YieldOp::create(nb, l, r);
          })
          .getResult(0);
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
  SmallVector<int64_t> inSize;
  for (int64_t i = 0; i < ns; ++i)
    inSize.push_back(tx->getDimSize(2 + i));
  WindowParams params = *p;
  results.push_back(buildElementwise(
      b, loc, outType, pooled,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value count = arith::ConstantIndexOp::create(nb, l, 1);
        for (int64_t i = 0; i < ns; ++i) {
          Value o = linalg::IndexOp::create(nb, l, 2 + i);
          int64_t lo = countPad ? 0 : params.padBegin[i];
          int64_t hiLimit =
              countPad ? inSize[i] + params.padBegin[i] + params.padEnd[i]
                       : inSize[i] + params.padBegin[i];
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
            Value ge = arith::CmpIOp::create(
                nb, l, arith::CmpIPredicate::sge, pos,
                arith::ConstantIndexOp::create(nb, l, lo));
            Value lt = arith::CmpIOp::create(
                nb, l, arith::CmpIPredicate::slt, pos,
                arith::ConstantIndexOp::create(nb, l, hiLimit));
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

enum class ReduceKind { Sum, Mean, Max };

/// Reduces `x` over `axes` (sorted, normalized) keeping them as size-1 dims
/// in `keptType`; combines with `kind`. Returns the keepdims result.
Value reduceKeepDims(OpBuilder &b, Location loc, Value x,
                     ArrayRef<int64_t> axes, ReduceKind kind) {
  auto tx = cast<RankedTensorType>(x.getType());
  int64_t rank = tx.getRank();
  Type elem = tx.getElementType();
  SmallVector<int64_t> shape(tx.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  auto keptType = RankedTensorType::get(shape, elem);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < rank; ++i)
    if (keptType.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, x, i));
  double initVal =
      kind == ReduceKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  if (kind == ReduceKind::Max && !isa<FloatType>(elem))
    initVal = static_cast<double>(std::numeric_limits<int64_t>::min());
  Value init = filledTensor(b, loc, keptType, dyn, scalarAttr(elem, initVal));
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
  return linalg::GenericOp::create(
             b, loc, TypeRange{keptType}, ValueRange{x}, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value r;
               if (kind == ReduceKind::Max)
                 r = isa<FloatType>(elem)
                         ? arith::MaximumFOp::create(nb, l, a[1], a[0])
                               .getResult()
                         : arith::MaxSIOp::create(nb, l, a[1], a[0])
                               .getResult();
               else
                 r = addOrMul(nb, l, a[1], a[0], /*add=*/true);
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

/// Number of elements reduced, as an index value.
Value reducedCount(OpBuilder &b, Location loc, Value x,
                   ArrayRef<int64_t> axes) {
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t a : axes)
    n = arith::MulIOp::create(b, loc, n, dimValue(b, loc, x, a));
  return n;
}

LogicalResult lowerGlobalAveragePool(Operation *op, OpBuilder &b,
                                     SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx) || failed(rankedResult(op)))
    return failure();
  if (!isa<FloatType>(tx->getElementType()))
    return nodeError(op) << "float types only", failure();
  Location loc = op->getLoc();
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < tx->getRank(); ++i)
    axes.push_back(i);
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

/// Softmax over one axis (opset 13 semantics; older opsets are normalized by
/// the importer): max, exp(x - max), sum, divide.
LogicalResult lowerSoftmax(Operation *op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  if (!isa<FloatType>(tx->getElementType()))
    return nodeError(op) << "float types only", failure();
  FailureOr<int64_t> axis =
      onnxops::normalizeAxis(getInt(op, "axis", -1), tx->getRank());
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0);
  Value mx = reduceKeepDims(b, loc, x, {*axis}, ReduceKind::Max);
  Value e =
      buildElementwise(b, loc, *tx, {x, mx},
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value s = arith::SubFOp::create(nb, l, a[0], a[1]);
                         return math::ExpOp::create(nb, l, s);
                       });
  Value sum = reduceKeepDims(b, loc, e, {*axis}, ReduceKind::Sum);
  results.push_back(
      buildElementwise(b, loc, *tx, {e, sum},
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::DivFOp::create(nb, l, a[0], a[1]);
                       }));
  return success();
}

/// BatchNormalization in inference mode, per channel (dim 1).
LogicalResult lowerBatchNorm(Operation *op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  if (getInt(op, "training_mode", 0))
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
  double eps = getFloat(op, "epsilon", 1e-5);
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

void lowering::registerNNLowerings(llvm::StringMap<LowerFn> &t) {
  t["MatMul"] = lowerMatMul;
  t["Gemm"] = lowerGemm;
  t["Conv"] = lowerConv;
  t["MaxPool"] = [](Operation *op, OpBuilder &b, SmallVectorImpl<Value> &r) {
    return lowerPool(op, b, r, /*isMax=*/true);
  };
  t["AveragePool"] = [](Operation *op, OpBuilder &b,
                        SmallVectorImpl<Value> &r) {
    return lowerPool(op, b, r, /*isMax=*/false);
  };
  t["GlobalAveragePool"] = lowerGlobalAveragePool;
  t["GlobalMaxPool"] = [](Operation *op, OpBuilder &b,
                          SmallVectorImpl<Value> &r) -> LogicalResult {
    FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
    if (failed(tx))
      return failure();
    if (!isa<FloatType>(tx->getElementType()))
      return nodeError(op) << "float types only", failure();
    SmallVector<int64_t> axes;
    for (int64_t i = 2; i < tx->getRank(); ++i)
      axes.push_back(i);
    r.push_back(reduceKeepDims(b, op->getLoc(), op->getOperand(0), axes,
                               ReduceKind::Max));
    return success();
  };
  t["LpPool"] = [](Operation *op, OpBuilder &b, SmallVectorImpl<Value> &r) {
    int64_t p = getInt(op, "p", 2);
    return lowerPool(op, b, r, /*isMax=*/false, p > 0 ? p : -1);
  };
  t["Softmax"] = lowerSoftmax;
  t["BatchNormalization"] = lowerBatchNorm;
}
