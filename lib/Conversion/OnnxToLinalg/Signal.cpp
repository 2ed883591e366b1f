//===- Signal.cpp - Window functions, Col2Im, MaxUnpool -------------------===//
//
// Window generators (HannWindow, HammingWindow, BlackmanWindow) and the two
// "scatter back into an image" ops, Col2Im and MaxUnpool. The scatters are
// written in gather form: each output element reduces over the inputs that
// land on it, so no kernel writes out of bounds whatever the indices say.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

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

Value andAll(OpBuilder &b, Location loc, ArrayRef<Value> v) {
  Value r = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (Value x : v)
    r = arith::AndIOp::create(b, loc, r, x);
  return r;
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
// Windows
//===----------------------------------------------------------------------===//

/// A window of length `size` (input 0): w[n] = sum_k a_k cos(2 pi k n / D)
/// with D = size when periodic, size - 1 otherwise; computed in f64.
LowerFn window(SmallVector<double> coeffs) {
  return [coeffs](Operation *op, OpBuilder &b,
                  SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> ty = rankedResult(op);
    FailureOr<RankedTensorType> ts = rankedOperand(op, 0);
    if (failed(ty) || failed(ts))
      return failure();
    if (ty->getRank() != 1 || ts->getRank() > 1 ||
        !ts->getElementType().isInteger())
      return nodeError(op) << "expects an integer scalar size and a 1-D result",
             failure();
    Type elem = ty->getElementType();
    if (!isa<FloatType>(elem) && !elem.isSignlessInteger())
      return nodeError(op) << "output type " << elem << " is not supported",
             failure();
    Location loc = op->getLoc();
    Value size = maxIdx(b, loc, extractIndex(b, loc, op->getOperand(0), 0), 0);
    bool periodic = getInt(op, "periodic", 1) != 0;
    Value den =
        periodic ? size : arith::SubIOp::create(b, loc, size, idx(b, loc, 1));
    Type f64 = b.getF64Type();
    Value denF = arith::SIToFPOp::create(
        b, loc, f64, arith::IndexCastOp::create(b, loc, b.getI64Type(), den));
    SmallVector<Value> dyn;
    if (ty->isDynamicDim(0))
      dyn.push_back(size);
    Value init = emptyTensor(b, loc, *ty, dyn);
    MLIRContext *ctx = b.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
    results.push_back(
        linalg::GenericOp::create(
            b, loc, TypeRange{*ty}, ValueRange{}, ValueRange{init},
            ArrayRef<AffineMap>{id},
            ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange) {
              Value i = linalg::IndexOp::create(nb, l, 0);
              Value n = arith::SIToFPOp::create(
                  nb, l, f64,
                  arith::IndexCastOp::create(nb, l, nb.getI64Type(), i));
              Value phase = arith::DivFOp::create(
                  nb, l,
                  arith::MulFOp::create(
                      nb, l, n,
                      scalarConstant(nb, l, f64, 2 * llvm::numbers::pi)),
                  denF);
              Value w = scalarConstant(nb, l, f64, coeffs[0]);
              for (size_t k = 1; k < coeffs.size(); ++k) {
                Value c = math::CosOp::create(
                    nb, l,
                    arith::MulFOp::create(nb, l, phase,
                                          scalarConstant(nb, l, f64, k)));
                w = arith::AddFOp::create(
                    nb, l, w,
                    arith::MulFOp::create(
                        nb, l, c, scalarConstant(nb, l, f64, coeffs[k])));
              }
              Value r;
              if (auto ft = dyn_cast<FloatType>(elem))
                r = ft.getWidth() == 64
                        ? w
                        : arith::TruncFOp::create(nb, l, elem, w).getResult();
              else
                r = arith::FPToSIOp::create(nb, l, elem, w);
              linalg::YieldOp::create(nb, l, r);
            })
            .getResult(0));
    return success();
  };
}

//===----------------------------------------------------------------------===//
// Col2Im
//===----------------------------------------------------------------------===//

/// Col2Im: input (N, C*prod(block), L) → image (N, C, image...). Each image
/// element sums the column entries (c*K + k, l) whose block offset k and
/// block position l land on it.
LogicalResult lowerCol2Im(Operation *op, OpBuilder &b,
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
  if (tx->getRank() != 3 || ti->getRank() != 1 || ti->isDynamicDim(0) ||
      tb->getRank() != 1 || tb->getShape() != ti->getShape() ||
      ty->getRank() != 2 + ti->getDimSize(0))
    return nodeError(op) << "expects a 3-D input and image_shape and "
                            "block_shape of the same static length",
           failure();
  int64_t s = ti->getDimSize(0);
  Location loc = op->getLoc();
  SmallVector<int64_t> dil =
      getInts(op, "dilations").value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> str =
      getInts(op, "strides").value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> pads =
      getInts(op, "pads").value_or(SmallVector<int64_t>(2 * s, 0));
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
    blk.push_back(
        maxIdx(b, loc, extractIndex(b, loc, op->getOperand(2), i), 1));
    img.push_back(
        ty->isDynamicDim(2 + i)
            ? maxIdx(b, loc, extractIndex(b, loc, op->getOperand(1), i), 0)
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
LogicalResult lowerMaxUnpool(Operation *op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  int64_t rank = tx->getRank(), s = rank - 2;
  std::optional<SmallVector<int64_t>> kernel = getInts(op, "kernel_shape");
  if (rank < 3 || ti->getRank() != rank || ty->getRank() != rank || !kernel ||
      static_cast<int64_t>(kernel->size()) != s)
    return nodeError(op) << "expects X and I of the same rank (at least 3) "
                            "and kernel_shape per spatial dim",
           failure();
  SmallVector<int64_t> str =
      getInts(op, "strides").value_or(SmallVector<int64_t>(s, 1));
  SmallVector<int64_t> pads =
      getInts(op, "pads").value_or(SmallVector<int64_t>(2 * s, 0));
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

void lowering::registerSignalLowerings(llvm::StringMap<LowerFn> &t) {
  t["HannWindow"] = window({0.5, -0.5});
  t["HammingWindow"] = window({25.0 / 46.0, -(1.0 - 25.0 / 46.0)});
  t["BlackmanWindow"] = window({0.42, -0.5, 0.08});
  t["Col2Im"] = lowerCol2Im;
  t["MaxUnpool"] = lowerMaxUnpool;
}
