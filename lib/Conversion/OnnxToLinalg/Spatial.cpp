//===- Spatial.cpp - ConvTranspose, Col2Im, MaxUnpool ----------------------===//
//
// The Spatial family (OnnxFamilies.def): the ops that scatter back into an
// image, written in gather form so that no kernel writes out of bounds
// whatever the indices say. ConvTranspose: every output element reduces over
// the input channels of its group and the kernel taps whose input position
// (o + pad_begin - k*dilation) / stride is integral and in range (a
// linalg.generic with a guarded tensor.extract of the input). Col2Im and
// MaxUnpool: each output element reduces over the inputs that land on it.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

LogicalResult lowerConvTranspose(onnxops::ConvTransposeOp op, OpBuilder &b,
                                 SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tw = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tw) || failed(ty))
    return failure();
  int64_t rank = tx->getRank(), ns = rank - 2;
  if (ns < 1 || tw->getRank() != rank || ty->getRank() != rank)
    return nodeError(op) << "input, weight and output must have the same "
                            "rank >= 3",
           failure();
  if (!tw->hasStaticShape())
    return nodeError(op) << "the weights must have a static shape", failure();
  // Input channels the shape arithmetic lost: the weights' first dim,
  // checked at run time.
  Value xIn = withStaticDim(b, op, op->getOperand(0), 1, tw->getDimSize(0),
                            "the input's channel count");
  tx = cast<RankedTensorType>(xIn.getType());
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "ConvTranspose supports float types only",
           failure();
  // Half-precision operands accumulate in f32; the bias is added in f32 and
  // the result rounds once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  int64_t G = asInt(op.getGroup());
  int64_t C = tx->getDimSize(1), Fg = tw->getDimSize(1), F = Fg * G;
  if (G <= 0 || C % G || tw->getDimSize(0) != C)
    return nodeError(op) << "group " << G << " does not divide input channels "
                         << C << " (weight " << *tw << ")",
           failure();
  int64_t Cg = C / G;
  SmallVector<int64_t> kernel(tw->getShape().drop_front(2));
  auto ints = [&](std::optional<ArrayAttr> attr, int64_t n, int64_t dflt) {
    return intsOf(attr).value_or(SmallVector<int64_t>(n, dflt));
  };
  SmallVector<int64_t> strides = ints(op.getStrides(), ns, 1);
  SmallVector<int64_t> dil = ints(op.getDilations(), ns, 1);
  SmallVector<int64_t> outPad = ints(op.getOutputPadding(), ns, 0);
  std::optional<SmallVector<int64_t>> pads = intsOf(op.getPads());
  std::optional<SmallVector<int64_t>> outShape = intsOf(op.getOutputShape());
  std::string autoPad = op.getAutoPad().str();
  if ((int64_t)strides.size() != ns || (int64_t)dil.size() != ns ||
      (int64_t)outPad.size() < ns ||
      (pads && (int64_t)pads->size() != 2 * ns) ||
      (outShape && (int64_t)outShape->size() != ns))
    return nodeError(op) << "attributes do not match the " << ns
                         << " spatial dims",
           failure();
  for (int64_t i = 0; i < ns; ++i)
    if (strides[i] <= 0 || dil[i] <= 0)
      return nodeError(op) << "strides and dilations must be positive",
             failure();
  SmallVector<int64_t> padBegin(ns, 0);
  if (pads) {
    for (int64_t i = 0; i < ns; ++i)
      padBegin[i] = (*pads)[i];
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < ns; ++i) {
      int64_t in = tx->getDimSize(2 + i);
      if (ShapedType::isDynamic(in))
        return nodeError(op) << "auto_pad needs static spatial dims", failure();
      int64_t want = outShape ? (*outShape)[i] : in * strides[i];
      int64_t total = strides[i] * (in - 1) + outPad[i] +
                      (kernel[i] - 1) * dil[i] + 1 - want;
      padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  }
  // Output sizes: declared, else s*(in-1) + output_padding + (k-1)*d + 1 -
  // pads (or output_shape).
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < rank; ++i) {
    if (!ty->isDynamicDim(i))
      continue;
    if (i == 0) {
      dyn.push_back(dimValue(b, loc, op->getOperand(0), 0));
      continue;
    }
    if (i == 1)
      return nodeError(op) << "unexpected dynamic channel dim", failure();
    int64_t s = i - 2;
    if (outShape) {
      dyn.push_back(idx(b, loc, (*outShape)[s]));
      continue;
    }
    int64_t padSum = pads ? (*pads)[s] + (*pads)[ns + s] : 0;
    Value in = dimValue(b, loc, op->getOperand(0), i);
    Value v = arith::MulIOp::create(
        b, loc, arith::SubIOp::create(b, loc, in, idx(b, loc, 1)),
        idx(b, loc, strides[s]));
    v = arith::AddIOp::create(
        b, loc, v,
        idx(b, loc, outPad[s] + (kernel[s] - 1) * dil[s] + 1 - padSum));
    dyn.push_back(v);
  }
  Value init = filledTensor(b, loc, accType, dyn, scalarAttr(accElem, 0));
  if (ty->getDimSize(1) != F)
    return nodeError(op) << "output channels differ from group * weight dim 1",
           failure();

  // Loops: n, f, o_0..o_{ns-1} (parallel), c, k_0..k_{ns-1} (reduction).
  MLIRContext *ctx = b.getContext();
  int64_t nl = 2 + ns + 1 + ns;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineExpr fE = d(1), cE = d(2 + ns);
  SmallVector<AffineExpr> we = {G == 1 ? cE : fE.floorDiv(Fg) * Cg + cE,
                                G == 1 ? fE : fE % Fg};
  SmallVector<AffineExpr> ye = {d(0), fE};
  for (int64_t i = 0; i < ns; ++i) {
    we.push_back(d(3 + ns + i));
    ye.push_back(d(2 + i));
  }
  Value x = xIn;
  SmallVector<Value> inDims;
  for (int64_t i = 0; i < rank; ++i)
    inDims.push_back(dimValue(b, loc, x, i));
  SmallVector<IteratorType> iters(2 + ns, IteratorType::parallel);
  iters.append(1 + ns, IteratorType::reduction);
  // The channel loop's bound (c appears only in a compound weight index
  // when grouped): a [Cg] shaper operand.
  Value shaper =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{Cg}, b.getI1Type());
  Value y =
      linalg::GenericOp::create(
          b, loc, TypeRange{accType}, ValueRange{op->getOperand(1), shaper},
          ValueRange{init},
          {AffineMap::get(nl, 0, we, ctx), AffineMap::get(nl, 0, {cE}, ctx),
           AffineMap::get(nl, 0, ye, ctx)},
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value n = linalg::IndexOp::create(nb, l, 0);
            Value f = linalg::IndexOp::create(nb, l, 1);
            Value c = linalg::IndexOp::create(nb, l, 2 + ns);
            Value ch =
                G == 1
                    ? c
                    : arith::AddIOp::create(
                          nb, l,
                          arith::MulIOp::create(
                              nb, l,
                              arith::DivUIOp::create(nb, l, f, idx(nb, l, Fg)),
                              idx(nb, l, Cg)),
                          c)
                          .getResult();
            SmallVector<Value> ix = {n, ch};
            Value ok;
            for (int64_t i = 0; i < ns; ++i) {
              Value o = linalg::IndexOp::create(nb, l, 2 + i);
              Value k = linalg::IndexOp::create(nb, l, 3 + ns + i);
              // t = o + pb - k*d; valid when t >= 0, t % s == 0, t/s < in.
              Value t = arith::SubIOp::create(
                  nb, l,
                  arith::AddIOp::create(nb, l, o, idx(nb, l, padBegin[i])),
                  arith::MulIOp::create(nb, l, k, idx(nb, l, dil[i])));
              Value nonNeg = arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::sge, t, idx(nb, l, 0));
              Value tc = arith::MaxSIOp::create(nb, l, t, idx(nb, l, 0));
              Value q =
                  arith::DivUIOp::create(nb, l, tc, idx(nb, l, strides[i]));
              Value r =
                  arith::RemUIOp::create(nb, l, tc, idx(nb, l, strides[i]));
              Value exact = arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::eq, r, idx(nb, l, 0));
              Value inb = arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::slt, q, inDims[2 + i]);
              Value v = arith::AndIOp::create(
                  nb, l, nonNeg, arith::AndIOp::create(nb, l, exact, inb));
              ok = ok ? arith::AndIOp::create(nb, l, ok, v).getResult() : v;
              ix.push_back(clampIntoRange(nb, l, q, inDims[2 + i]));
            }
            Value xv = tensor::ExtractOp::create(nb, l, x, ix);
            Value wv = a[0];
            if (halfInputs) {
              xv = arith::ExtFOp::create(nb, l, accElem, xv);
              wv = arith::ExtFOp::create(nb, l, accElem, wv);
            }
            Value m = arith::MulFOp::create(nb, l, xv, wv);
            Value sum = arith::AddFOp::create(nb, l, a[2], m);
            linalg::YieldOp::create(
                nb, l,
                arith::SelectOp::create(nb, l, ok, sum, a[2]).getResult());
          })
          .getResult(0);

  Value bias = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  bool hasBias = bias && !onnxops::isNoValue(bias);
  SmallVector<Value> ins = {y};
  if (hasBias) {
    SmallVector<int64_t> bshape(ns + 1, 1);
    bshape[0] = F;
    auto btype = RankedTensorType::get(bshape, elem);
    SmallVector<Value> sizes;
    for (int64_t s : bshape)
      sizes.push_back(idx(b, loc, s));
    ins.push_back(reshapeTo(b, loc, bias, btype, sizes));
  }
  if (hasBias || halfInputs)
    y = buildElementwise(
        b, loc, *ty, ins,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = a[0];
          if (hasBias)
            v = arith::AddFOp::create(
                nb, l, v,
                halfInputs
                    ? arith::ExtFOp::create(nb, l, accElem, a[1]).getResult()
                    : a[1]);
          return halfInputs
                     ? arith::TruncFOp::create(nb, l, elem, v).getResult()
                     : v;
        });
  results.push_back(y);
  return success();
}

//===----------------------------------------------------------------------===//
// Col2Im and MaxUnpool
//===----------------------------------------------------------------------===//

/// Element `i` of a 1-D integer tensor (or the scalar of a 0-D one) as an
/// index, read on the host.
Value extractIndex(OpBuilder &b, Location loc, Value t, int64_t i) {
  auto tt = cast<RankedTensorType>(t.getType());
  SmallVector<Value> ix;
  if (tt.getRank() == 1)
    ix.push_back(idx(b, loc, i));
  Value v = tensor::ExtractOp::create(b, loc, toSignless(b, loc, t), ix);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value maxIdx(OpBuilder &b, Location loc, Value a, int64_t m) {
  return arith::MaxSIOp::create(b, loc, a, idx(b, loc, m));
}

Value clampIdx(OpBuilder &b, Location loc, Value i, Value size) {
  Value hi =
      arith::SubIOp::create(b, loc, maxIdx(b, loc, size, 1), idx(b, loc, 1));
  return arith::MinSIOp::create(b, loc, maxIdx(b, loc, i, 0), hi);
}

Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate p, Value x,
          Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}

/// A generic over `resultType`'s dims (parallel) plus `redSizes` reduction
/// dims, starting from `init` (filled), combining with `step`.
Value reduceInto(OpBuilder &b, Location loc, RankedTensorType resultType,
                 ArrayRef<Value> dims, ArrayRef<Value> redSizes, TypedAttr init,
                 function_ref<Value(OpBuilder &, Location, Value,
                                    ArrayRef<Value>, ArrayRef<Value>)>
                     step) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < rank; ++d)
    if (resultType.isDynamicDim(d))
      dyn.push_back(dims[d]);
  Value out = filledTensor(b, loc, resultType, dyn, init);
  MLIRContext *ctx = b.getContext();
  int64_t n = rank + static_cast<int64_t>(redSizes.size());
  // An all-zero-sized "shape" tensor carries the reduction extents.
  SmallVector<int64_t> redShape(redSizes.size(), ShapedType::kDynamic);
  Value extents = tensor::EmptyOp::create(b, loc, redShape, b.getI1Type(),
                                          SmallVector<Value>(redSizes));
  SmallVector<AffineExpr> outExprs, redExprs;
  for (int64_t d = 0; d < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  for (int64_t d = rank; d < n; ++d)
    redExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(n, 0, redExprs, ctx),
                                 AffineMap::get(n, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.append(redSizes.size(), utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{extents},
             ValueRange{out}, maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               SmallVector<Value> iv, rv;
               for (int64_t d = 0; d < rank; ++d)
                 iv.push_back(linalg::IndexOp::create(nb, l, d));
               for (int64_t d = rank; d < n; ++d)
                 rv.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, step(nb, l, a[1], iv, rv));
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Col2Im
//===----------------------------------------------------------------------===//

/// Col2Im: input (N, C*prod(block), L) → image (N, C, image...). Each image
/// element sums the column entries (c*K + k, l) whose block offset k and
/// block position l land on it.
LogicalResult lowerCol2Im(onnxops::Col2ImOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> tb = rankedOperand(op, 2);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(tb) || failed(ty))
    return failure();
  Type elem = tx->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "float types only", failure();
  // image_shape and block_shape of run-time length: one entry per spatial
  // dim of the result (checked).
  Value imageShape = op->getOperand(1), blockShape = op->getOperand(2);
  if (ty->getRank() > 2 && ti->getRank() == 1 && tb->getRank() == 1) {
    imageShape =
        withStaticLength(b, op, imageShape, ty->getRank() - 2, "image_shape");
    blockShape =
        withStaticLength(b, op, blockShape, ty->getRank() - 2, "block_shape");
    ti = cast<RankedTensorType>(imageShape.getType());
    tb = cast<RankedTensorType>(blockShape.getType());
  }
  if (tx->getRank() != 3 || ti->getRank() != 1 || ti->isDynamicDim(0) ||
      tb->getRank() != 1 || tb->getShape() != ti->getShape() ||
      ty->getRank() != 2 + ti->getDimSize(0))
    return nodeError(op) << "expects a 3-D input and image_shape and "
                            "block_shape of the same static length",
           failure();
  int64_t s = ti->getDimSize(0);
  Location loc = op->getLoc();
  SmallVector<int64_t> dil =
      intsOf(op.getDilations()).value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> str =
      intsOf(op.getStrides()).value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> pads =
      intsOf(op.getPads()).value_or(SmallVector<int64_t>(2 * s, 0));
  if (static_cast<int64_t>(dil.size()) != s ||
      static_cast<int64_t>(str.size()) != s ||
      static_cast<int64_t>(pads.size()) != 2 * s ||
      llvm::any_of(dil, [](int64_t v) { return v < 1; }) ||
      llvm::any_of(str, [](int64_t v) { return v < 1; }))
    return nodeError(op) << "dilations, strides and pads must have one "
                            "(positive) entry per spatial dim",
           failure();
  Value x = op->getOperand(0);
  // Host side: block sizes, image sizes, the number of blocks per dim.
  SmallVector<Value> blk, img, nblk;
  Value kprod = idx(b, loc, 1), lprod = idx(b, loc, 1);
  for (int64_t i = 0; i < s; ++i) {
    blk.push_back(maxIdx(b, loc, extractIndex(b, loc, blockShape, i), 1));
    img.push_back(ty->isDynamicDim(2 + i)
                      ? maxIdx(b, loc, extractIndex(b, loc, imageShape, i), 0)
                      : idx(b, loc, ty->getDimSize(2 + i)));
    // L_i = (img + pads - (dil*(blk-1)+1)) / stride + 1
    Value ext = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, idx(b, loc, dil[i]),
            arith::SubIOp::create(b, loc, blk[i], idx(b, loc, 1))),
        idx(b, loc, 1));
    Value span = arith::SubIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, img[i],
                              idx(b, loc, pads[i] + pads[s + i])),
        ext);
    // No block fits when span < 0 (arith.floordivsi is avoided: it has no
    // lowering on this path).
    Value n = arith::AddIOp::create(
        b, loc,
        arith::DivSIOp::create(b, loc, maxIdx(b, loc, span, 0),
                               idx(b, loc, str[i])),
        idx(b, loc, 1));
    Value none = cmp(b, loc, arith::CmpIPredicate::slt, span, idx(b, loc, 0));
    nblk.push_back(arith::SelectOp::create(b, loc, none, idx(b, loc, 0), n));
    kprod = arith::MulIOp::create(b, loc, kprod, blk[i]);
    lprod = arith::MulIOp::create(b, loc, lprod, nblk[i]);
  }
  Value cdim = dimValue(b, loc, x, 1), ldim = dimValue(b, loc, x, 2);
  SmallVector<Value> dims = {
      dimValue(b, loc, x, 0),
      ty->isDynamicDim(1)
          ? arith::DivSIOp::create(b, loc, cdim, kprod).getResult()
          : idx(b, loc, ty->getDimSize(1))};
  dims.append(img);
  results.push_back(reduceInto(
      b, loc, *ty, dims, {kprod}, b.getFloatAttr(elem, 0.0),
      [&](OpBuilder &nb, Location l, Value acc, ArrayRef<Value> iv,
          ArrayRef<Value> rv) -> Value {
        // Block offset k → per-dim offsets (row-major over blk).
        SmallVector<Value> koff(s);
        Value rem = rv[0];
        for (int64_t i = s - 1; i >= 0; --i) {
          koff[i] = arith::RemSIOp::create(nb, l, rem, blk[i]);
          rem = arith::DivSIOp::create(nb, l, rem, blk[i]);
        }
        SmallVector<Value> ok;
        Value lin = idx(nb, l, 0);
        for (int64_t i = 0; i < s; ++i) {
          // t = y + pad_begin - k*dil must be a multiple of the stride.
          Value t = arith::SubIOp::create(
              nb, l,
              arith::AddIOp::create(nb, l, iv[2 + i], idx(nb, l, pads[i])),
              arith::MulIOp::create(nb, l, koff[i], idx(nb, l, dil[i])));
          ok.push_back(cmp(nb, l, arith::CmpIPredicate::sge, t, idx(nb, l, 0)));
          Value tc = maxIdx(nb, l, t, 0);
          Value q = arith::DivSIOp::create(nb, l, tc, idx(nb, l, str[i]));
          Value back = arith::MulIOp::create(nb, l, q, idx(nb, l, str[i]));
          ok.push_back(cmp(nb, l, arith::CmpIPredicate::eq, back, tc));
          ok.push_back(cmp(nb, l, arith::CmpIPredicate::slt, q, nblk[i]));
          lin = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, lin, nblk[i]), q);
        }
        Value ch = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, iv[1], kprod), rv[0]);
        ok.push_back(cmp(nb, l, arith::CmpIPredicate::slt, ch, cdim));
        ok.push_back(cmp(nb, l, arith::CmpIPredicate::slt, lin, ldim));
        ok.push_back(cmp(nb, l, arith::CmpIPredicate::eq, lprod, ldim));
        Value v = tensor::ExtractOp::create(
            nb, l, x,
            ValueRange{clampIdx(nb, l, iv[0], dims[0]),
                       clampIdx(nb, l, ch, cdim), clampIdx(nb, l, lin, ldim)});
        Value sum = arith::AddFOp::create(nb, l, acc, v);
        return arith::SelectOp::create(nb, l, andAll(nb, l, ok), sum, acc);
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// MaxUnpool
//===----------------------------------------------------------------------===//

/// MaxUnpool: Y (zeros of output_shape, or the inferred shape) gets X[j] at
/// the flat position I[j] of the inferred shape (N, C, (in-1)*s - pads + k).
LogicalResult lowerMaxUnpool(onnxops::MaxUnpoolOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  int64_t rank = tx->getRank(), s = rank - 2;
  std::optional<SmallVector<int64_t>> kernel = intsOf(op.getKernelShape());
  if (rank < 3 || ti->getRank() != rank || ty->getRank() != rank || !kernel ||
      static_cast<int64_t>(kernel->size()) != s)
    return nodeError(op) << "expects X and I of the same rank (at least 3) "
                            "and kernel_shape per spatial dim",
           failure();
  SmallVector<int64_t> str =
      intsOf(op.getStrides()).value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> pads =
      intsOf(op.getPads()).value_or(SmallVector<int64_t>(2 * s, 0));
  if (static_cast<int64_t>(str.size()) != s ||
      static_cast<int64_t>(pads.size()) != 2 * s)
    return nodeError(op) << "strides and pads must have one entry per "
                            "spatial dim",
           failure();
  Type elem = tx->getElementType();
  if (!isa<FloatType>(elem) && !elem.isSignlessInteger())
    return nodeError(op) << "element type " << elem << " is not supported",
           failure();
  Location loc = op->getLoc();
  Value x = op->getOperand(0), ind = op->getOperand(1);
  Value outShape = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  if (outShape && onnxops::isNoValue(outShape))
    outShape = Value();
  SmallVector<Value> xdims, idims, inferred, dims;
  for (int64_t d = 0; d < rank; ++d) {
    xdims.push_back(dimValue(b, loc, x, d));
    idims.push_back(dimValue(b, loc, ind, d));
    if (d < 2) {
      inferred.push_back(xdims[d]);
    } else {
      int64_t i = d - 2;
      Value v = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::SubIOp::create(b, loc, xdims[d], idx(b, loc, 1)),
              idx(b, loc, str[i])),
          idx(b, loc, (*kernel)[i] - pads[i] - pads[s + i]));
      inferred.push_back(maxIdx(b, loc, v, 0));
    }
    if (!ty->isDynamicDim(d))
      dims.push_back(idx(b, loc, ty->getDimSize(d)));
    else if (outShape)
      dims.push_back(maxIdx(b, loc, extractIndex(b, loc, outShape, d), 0));
    else
      dims.push_back(inferred[d]);
  }
  // Flat size of the inferred shape (indices normalize against it).
  SmallVector<Value> red;
  for (int64_t d = 2; d < rank; ++d)
    red.push_back(xdims[d]);
  results.push_back(reduceInto(
      b, loc, *ty, dims, red, cast<TypedAttr>(b.getZeroAttr(elem)),
      [&](OpBuilder &nb, Location l, Value acc, ArrayRef<Value> iv,
          ArrayRef<Value> rv) -> Value {
        SmallVector<Value> ok;
        Value flat = idx(nb, l, 0);
        for (int64_t d = 0; d < rank; ++d) {
          ok.push_back(
              cmp(nb, l, arith::CmpIPredicate::slt, iv[d], inferred[d]));
          flat = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, flat, inferred[d]), iv[d]);
        }
        SmallVector<Value> xi = {iv[0], iv[1]}, ii;
        xi.append(rv.begin(), rv.end());
        for (int64_t d = 0; d < rank; ++d) {
          ok.push_back(cmp(nb, l, arith::CmpIPredicate::slt, xi[d], idims[d]));
          ii.push_back(clampIdx(nb, l, xi[d], idims[d]));
        }
        Value i = tensor::ExtractOp::create(nb, l, ind, ii);
        Value iIdx = arith::IndexCastOp::create(nb, l, nb.getIndexType(), i);
        ok.push_back(cmp(nb, l, arith::CmpIPredicate::eq, iIdx, flat));
        for (int64_t d = 0; d < rank; ++d) {
          ok.push_back(cmp(nb, l, arith::CmpIPredicate::slt, xi[d], xdims[d]));
          xi[d] = clampIdx(nb, l, xi[d], xdims[d]);
        }
        Value v = tensor::ExtractOp::create(nb, l, x, xi);
        return arith::SelectOp::create(nb, l, andAll(nb, l, ok), v, acc);
      }));
  return success();
}

} // namespace

void lowering::populateSpatialLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Spatial> t(patterns);
  t.add<onnxops::ConvTransposeOp>(lowerConvTranspose);
  t.add<onnxops::Col2ImOp>(lowerCol2Im);
  t.add<onnxops::MaxUnpoolOp>(lowerMaxUnpool);
}
