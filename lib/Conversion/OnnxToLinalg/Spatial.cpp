//===- Spatial.cpp - ConvTranspose -----------------------------------------===//
//
// ConvTranspose in gather form: every output element reduces over the input
// channels of its group and the kernel taps whose input position
// (o + pad_begin - k*dilation) / stride is integral and in range (a
// linalg.generic with a guarded tensor.extract of the input).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

LogicalResult lowerConvTranspose(Operation *op, OpBuilder &b,
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
  if (!tw->hasStaticShape() || tx->isDynamicDim(1))
    return nodeError(op) << "weights and input channels must be static",
           failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "ConvTranspose supports float types only",
           failure();
  // Half-precision operands accumulate in f32; the bias is added in f32 and
  // the result rounds once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  int64_t G = getInt(op, "group", 1);
  int64_t C = tx->getDimSize(1), Fg = tw->getDimSize(1), F = Fg * G;
  if (G <= 0 || C % G || tw->getDimSize(0) != C)
    return nodeError(op) << "group " << G << " does not divide input channels "
                         << C << " (weight " << *tw << ")",
           failure();
  int64_t Cg = C / G;
  SmallVector<int64_t> kernel(tw->getShape().drop_front(2));
  auto ints = [&](StringRef name, int64_t n, int64_t dflt) {
    return getInts(op, name).value_or(SmallVector<int64_t>(n, dflt));
  };
  SmallVector<int64_t> strides = ints("strides", ns, 1);
  SmallVector<int64_t> dil = ints("dilations", ns, 1);
  SmallVector<int64_t> outPad = ints("output_padding", ns, 0);
  std::optional<SmallVector<int64_t>> pads = getInts(op, "pads");
  std::optional<SmallVector<int64_t>> outShape = getInts(op, "output_shape");
  std::string autoPad = getStr(op, "auto_pad", "NOTSET");
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
  Value x = op->getOperand(0);
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

} // namespace

void lowering::registerSpatialLowerings(llvm::StringMap<LowerFn> &t) {
  t["ConvTranspose"] = lowerConvTranspose;
}
