//===- DataMovement.cpp - Split, Pad, Tile, gathers and scatters ----------===//
//
// Ops that move elements without arithmetic on them: each output element is
// read from a computed input position (a linalg.generic over the output with
// tensor.extract in its body). Positions computed from user data are clamped
// into range, so no input makes a kernel read out of bounds. Scatters are
// written as gathers: every output element reduces over the updates that may
// target it.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <tuple>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// The dynamic entries of `sizes` (one per dim of `type`).
SmallVector<Value> dynOf(RankedTensorType type, ArrayRef<Value> sizes) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(sizes[i]);
  return dyn;
}

//===----------------------------------------------------------------------===//
// Split, Tile, Expand, Pad, CenterCropPad, DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

LogicalResult lowerSplit(onnxops::SplitOp op, OpBuilder &b,
                         SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  if (failed(tx))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), rank);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0);
  int64_t n = op->getNumResults();
  Value dim = dimValue(b, loc, x, *axis);
  SmallVector<Value> sizes;
  if (operandPresent(op, 1)) {
    Value splitV = withStaticLength(b, op, op->getOperand(1), n, "split");
    if (!splitV || staticLength1D(splitV) != n)
      return nodeError(op) << "split must have one entry per output", failure();
    sizes = readHostIndices(b, loc, splitV, n);
    // Non-negative sizes that add up to the dim.
    Value total = idx(b, loc, 0),
          nonNegative = arith::ConstantIntOp::create(b, loc, 1, 1);
    for (Value s : sizes) {
      total = arith::AddIOp::create(b, loc, total, s);
      nonNegative = arith::AndIOp::create(
          b, loc, nonNegative,
          cmpI(b, loc, arith::CmpIPredicate::sge, s, idx(b, loc, 0)));
    }
    checkAtRunTime(b, op,
                   arith::AndIOp::create(
                       b, loc, nonNegative,
                       cmpI(b, loc, arith::CmpIPredicate::eq, total, dim)),
                   "the split sizes add up to {0} (or one is negative), the "
                   "axis has {1}",
                   {total, dim});
  } else {
    // ceil(dim / n) per output, the last ones smaller.
    Value chunk = arith::CeilDivSIOp::create(b, loc, dim, idx(b, loc, n));
    for (int64_t i = 0; i < n; ++i) {
      Value rest = arith::SubIOp::create(
          b, loc, dim, arith::MulIOp::create(b, loc, chunk, idx(b, loc, i)));
      rest = arith::MaxSIOp::create(b, loc, rest, idx(b, loc, 0));
      sizes.push_back(arith::MinSIOp::create(b, loc, rest, chunk));
    }
  }
  Value offset = idx(b, loc, 0);
  for (int64_t i = 0; i < n; ++i) {
    FailureOr<RankedTensorType> ty = rankedResult(op, i);
    if (failed(ty))
      return failure();
    SmallVector<Value> s;
    for (int64_t d = 0; d < rank; ++d)
      s.push_back(d == *axis ? sizes[i] : dimValue(b, loc, x, d));
    Value off = offset;
    results.push_back(generateSized(
        b, loc, *ty, s, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
          SmallVector<Value> ix(iv);
          ix[*axis] = clampIntoRange(
              nb, l, arith::AddIOp::create(nb, l, iv[*axis], off), dim);
          return tensor::ExtractOp::create(nb, l, x, ix).getResult();
        }));
    offset = arith::AddIOp::create(b, loc, offset, sizes[i]);
  }
  return success();
}

LogicalResult lowerTile(onnxops::TileOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  Value x = op->getOperand(0);
  SmallVector<Value> reps = readHostIndices(b, loc, op->getOperand(1), rank);
  SmallVector<Value> dims, out;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(dimValue(b, loc, x, d));
    checkAtRunTime(
        b, op, cmpI(b, loc, arith::CmpIPredicate::sge, reps[d], idx(b, loc, 0)),
        "repeats[{0}] is {1}; repeats must not be negative",
        {idx(b, loc, d), reps[d]});
    Value r = arith::MaxSIOp::create(b, loc, reps[d], idx(b, loc, 0));
    out.push_back(arith::MulIOp::create(b, loc, dims[d], r));
  }
  results.push_back(generateSized(
      b, loc, *ty, resultSizes(b, loc, *ty, out),
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        SmallVector<Value> ix;
        for (int64_t d = 0; d < rank; ++d) {
          Value safe = arith::MaxSIOp::create(nb, l, dims[d], idx(nb, l, 1));
          ix.push_back(arith::RemSIOp::create(nb, l, iv[d], safe));
        }
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

LogicalResult lowerExpand(onnxops::ExpandOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rx = tx->getRank(), ry = ty->getRank();
  Value x = op->getOperand(0);
  auto tshape = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  if (!tshape || tshape.getRank() != 1 || rx > ry)
    return nodeError(op) << "the shape operand must be 1-D", failure();
  Value shapeV = op->getOperand(1);
  int64_t len = staticLength1D(shapeV);
  if (len < 0 && ry > rx)
    shapeV = withStaticLength(b, op, shapeV, len = ry, "shape");
  SmallVector<Value> shape;
  Value lenV; // the shape's length when only known at run time (<= ry)
  if (len >= 0) {
    shape = readHostIndices(b, loc, shapeV, len);
  } else {
    lenV = tensor::DimOp::create(b, loc, shapeV, 0);
    checkAtRunTime(
        b, op, cmpI(b, loc, arith::CmpIPredicate::ule, lenV, idx(b, loc, ry)),
        "shape has {0} entries, more than the output's rank " + Twine(ry),
        {lenV});
  }
  SmallVector<Value> out;
  for (int64_t i = 0; i < ry; ++i) {
    int64_t j = i - (ry - rx), k = i - (ry - len);
    Value s, kV = idx(b, loc, k);
    if (lenV) {
      // Entry i + len - ry of the shape, 1 before its first entry.
      kV = arith::SubIOp::create(
          b, loc, arith::AddIOp::create(b, loc, idx(b, loc, i), lenV),
          idx(b, loc, ry));
      Value in = cmpI(b, loc, arith::CmpIPredicate::sge, kV, idx(b, loc, 0));
      Value safe = select(b, loc, in, kV, idx(b, loc, 0));
      Value e = tensor::ExtractOp::create(b, loc, shapeV, ValueRange{safe});
      e = arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
      s = select(b, loc, in, e, idx(b, loc, 1));
    } else {
      s = k >= 0 ? shape[k] : idx(b, loc, 1);
    }
    if (k >= 0 || lenV)
      checkAtRunTime(b, op,
                     cmpI(b, loc, arith::CmpIPredicate::sge, s, idx(b, loc, 0)),
                     "shape element {0} is {1}", {kV, s});
    if (j >= 0) {
      // The input's dim and the shape's broadcast: equal, or one is 1.
      Value d = dimValue(b, loc, x, j);
      Value one = idx(b, loc, 1);
      Value ok = arith::OrIOp::create(
          b, loc, cmpI(b, loc, arith::CmpIPredicate::eq, s, d),
          arith::OrIOp::create(b, loc,
                               cmpI(b, loc, arith::CmpIPredicate::eq, s, one),
                               cmpI(b, loc, arith::CmpIPredicate::eq, d, one)));
      checkAtRunTime(b, op, ok,
                     "the input's dim " + Twine(j) +
                         " is {0}, the shape asks for {1}: they must match "
                         "or one be 1",
                     {d, s});
      s = arith::MaxSIOp::create(b, loc, s, d);
    }
    out.push_back(s);
  }
  SmallVector<Value> sizes = resultSizes(b, loc, *ty, out);
  results.push_back(generateSized(
      b, loc, *ty, sizes, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        SmallVector<Value> ix;
        for (int64_t j = 0; j < rx; ++j) {
          int64_t i = j + (ry - rx);
          if (tx->getDimSize(j) == 1) {
            ix.push_back(idx(nb, l, 0));
            continue;
          }
          Value n = dimValue(nb, l, x, j);
          Value one = cmpI(nb, l, arith::CmpIPredicate::eq, n, idx(nb, l, 1));
          ix.push_back(clampIntoRange(
              nb, l, select(nb, l, one, idx(nb, l, 0), iv[i]), n));
        }
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

/// Pad (constant, reflect, edge, wrap), with optional axes.
LogicalResult lowerPad(onnxops::PadOp op, OpBuilder &b,
                       SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  Value x = op->getOperand(0);
  std::string mode = op.getMode().str();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return nodeError(op) << "unknown mode '" << mode << "'", failure();
  SmallVector<int64_t> axes;
  SmallVector<Value> axesRT; // axes read at run time
  if (operandPresent(op, 3) &&
      !onnxops::getConstantIntValues(op->getOperand(3))) {
    int64_t len = staticLength1D(op->getOperand(3));
    if (len < 0)
      return nodeError(op) << "axes must have a static length", failure();
    axesRT = readHostIndices(b, loc, op->getOperand(3), len);
    for (Value &a : axesRT) {
      Value neg = cmpI(b, loc, arith::CmpIPredicate::slt, a, idx(b, loc, 0));
      a = select(b, loc, neg,
                 arith::AddIOp::create(b, loc, a, idx(b, loc, rank)), a);
      axes.push_back(-1);
    }
  } else if (operandPresent(op, 3)) {
    auto a = onnxops::getConstantIntValues(op->getOperand(3));
    for (int64_t v : *a) {
      FailureOr<int64_t> n = onnxops::normalizeAxis(v, rank);
      if (failed(n))
        return nodeError(op) << "axis " << v << " out of range", failure();
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  int64_t na = axes.size();
  Value padsV = withStaticLength(b, op, op->getOperand(1), 2 * na, "pads");
  if (!padsV || staticLength1D(padsV) != 2 * na)
    return nodeError(op) << "pads must have 2 entries per padded axis",
           failure();
  SmallVector<Value> pads = readHostIndices(b, loc, padsV, 2 * na);
  SmallVector<Value> begin(rank, idx(b, loc, 0)), dims, out;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(dimValue(b, loc, x, d));
  out = dims;
  for (int64_t k = 0; k < na; ++k) {
    for (int64_t d = 0; d < rank; ++d) {
      if (axesRT.empty() && axes[k] != d)
        continue;
      Value grow = arith::AddIOp::create(b, loc, pads[k], pads[na + k]);
      Value o = arith::AddIOp::create(b, loc, out[d], grow);
      // Negative pads crop, at most the whole dim.
      if (axesRT.empty())
        checkAtRunTime(
            b, op, cmpI(b, loc, arith::CmpIPredicate::sge, o, idx(b, loc, 0)),
            "pads of {0} and {1} leave dim " + Twine(d) +
                " of size {2} with {3} elements",
            {pads[k], pads[na + k], dims[d], o});
      o = arith::MaxSIOp::create(b, loc, o, idx(b, loc, 0));
      Value bg = arith::AddIOp::create(b, loc, begin[d], pads[k]);
      if (axesRT.empty()) {
        begin[d] = bg;
        out[d] = o;
        continue;
      }
      Value is =
          cmpI(b, loc, arith::CmpIPredicate::eq, axesRT[k], idx(b, loc, d));
      begin[d] = select(b, loc, is, bg, begin[d]);
      out[d] = select(b, loc, is, o, out[d]);
    }
  }
  Type elem = ty->getElementType();
  Value cv;
  if (mode == "constant") {
    if (operandPresent(op, 2))
      cv = extractScalarOperand(b, op, op->getOperand(2), "constant_value");
    else
      cv = scalarConstant(b, loc, elem, 0);
  }
  results.push_back(generateSized(
      b, loc, *ty, resultSizes(b, loc, *ty, out),
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        SmallVector<Value> ix, ok;
        for (int64_t d = 0; d < rank; ++d) {
          Value i = arith::SubIOp::create(nb, l, iv[d], begin[d]);
          Value n = dims[d];
          if (mode == "constant") {
            ok.push_back(indexInRange(nb, l, i, n));
          } else if (mode == "reflect") {
            // Period 2(n-1): fold into [0, n).
            Value nm1 = arith::SubIOp::create(nb, l, n, idx(nb, l, 1));
            Value period = arith::MulIOp::create(nb, l, nm1, idx(nb, l, 2));
            period = arith::MaxSIOp::create(nb, l, period, idx(nb, l, 1));
            Value m = arith::RemSIOp::create(nb, l, i, period);
            Value neg =
                cmpI(nb, l, arith::CmpIPredicate::slt, m, idx(nb, l, 0));
            m = select(nb, l, neg, arith::AddIOp::create(nb, l, m, period), m);
            Value hi = cmpI(nb, l, arith::CmpIPredicate::sgt, m, nm1);
            i = select(nb, l, hi, arith::SubIOp::create(nb, l, period, m), m);
          } else if (mode == "wrap") {
            Value safe = arith::MaxSIOp::create(nb, l, n, idx(nb, l, 1));
            Value m = arith::RemSIOp::create(nb, l, i, safe);
            Value neg =
                cmpI(nb, l, arith::CmpIPredicate::slt, m, idx(nb, l, 0));
            i = select(nb, l, neg, arith::AddIOp::create(nb, l, m, safe), m);
          }
          ix.push_back(clampIntoRange(nb, l, i, n));
        }
        Value v = tensor::ExtractOp::create(nb, l, x, ix);
        if (mode == "constant")
          v = select(nb, l, andAll(nb, l, ok), v, cv);
        return v;
      }));
  return success();
}

LogicalResult lowerCenterCropPad(onnxops::CenterCropPadOp op, OpBuilder &b,
                                 SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  Value x = op->getOperand(0);
  SmallVector<int64_t> axes;
  if (auto a = intsOf(op.getAxes())) {
    for (int64_t v : *a) {
      FailureOr<int64_t> n = onnxops::normalizeAxis(v, rank);
      if (failed(n))
        return nodeError(op) << "axis " << v << " out of range", failure();
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  int64_t na = axes.size();
  Value shapeV = withStaticLength(b, op, op->getOperand(1), na, "shape");
  if (!shapeV || staticLength1D(shapeV) != na)
    return nodeError(op) << "shape must have one entry per axis", failure();
  SmallVector<Value> shape = readHostIndices(b, loc, shapeV, na);
  SmallVector<Value> dims, out, off(rank, idx(b, loc, 0));
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(dimValue(b, loc, x, d));
  out = dims;
  for (int64_t k = 0; k < na; ++k) {
    int64_t d = axes[k];
    Value want = arith::MaxSIOp::create(b, loc, shape[k], idx(b, loc, 0));
    out[d] = want;
    // Crop: start at (in - out) / 2; pad: place at (out - in) / 2.
    Value diff = arith::SubIOp::create(b, loc, dims[d], want);
    Value crop = arith::DivSIOp::create(b, loc, diff, idx(b, loc, 2));
    Value pad = arith::SubIOp::create(
        b, loc, idx(b, loc, 0),
        arith::DivSIOp::create(b, loc,
                               arith::SubIOp::create(b, loc, want, dims[d]),
                               idx(b, loc, 2)));
    Value isCrop =
        cmpI(b, loc, arith::CmpIPredicate::sge, diff, idx(b, loc, 0));
    off[d] = select(b, loc, isCrop, crop, pad);
  }
  Value zero = scalarConstant(b, loc, ty->getElementType(), 0);
  results.push_back(
      generateSized(b, loc, *ty, resultSizes(b, loc, *ty, out),
                    [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
                      SmallVector<Value> ix, ok;
                      for (int64_t d = 0; d < rank; ++d) {
                        Value i = arith::AddIOp::create(nb, l, iv[d], off[d]);
                        ok.push_back(indexInRange(nb, l, i, dims[d]));
                        ix.push_back(clampIntoRange(nb, l, i, dims[d]));
                      }
                      Value v = tensor::ExtractOp::create(nb, l, x, ix);
                      return select(nb, l, andAll(nb, l, ok), v, zero);
                    }));
  return success();
}

/// DepthToSpace (DCR/CRD) and SpaceToDepth on NCHW.
template <typename OpTy>
LogicalResult lowerDepthSpace(OpTy op, OpBuilder &b,
                              SmallVectorImpl<Value> &results, bool toSpace) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  if (tx->getRank() != 4)
    return nodeError(op) << "input must be 4-D", failure();
  Location loc = op->getLoc();
  int64_t bs = asInt(op.getBlocksize());
  if (bs <= 0)
    return nodeError(op) << "blocksize must be positive", failure();
  bool crd = false;
  if constexpr (std::is_same_v<OpTy, onnxops::DepthToSpaceOp>)
    crd = op.getMode() == "CRD";
  Value x = op->getOperand(0);
  SmallVector<Value> d;
  for (int64_t i = 0; i < 4; ++i)
    d.push_back(dimValue(b, loc, x, i));
  Value B = idx(b, loc, bs), B2 = idx(b, loc, bs * bs);
  SmallVector<Value> out = d;
  if (toSpace) {
    out[1] = arith::DivSIOp::create(b, loc, d[1], B2);
    out[2] = arith::MulIOp::create(b, loc, d[2], B);
    out[3] = arith::MulIOp::create(b, loc, d[3], B);
  } else {
    out[1] = arith::MulIOp::create(b, loc, d[1], B2);
    out[2] = arith::DivSIOp::create(b, loc, d[2], B);
    out[3] = arith::DivSIOp::create(b, loc, d[3], B);
  }
  Value cOut = out[1];
  results.push_back(generateSized(
      b, loc, *ty, resultSizes(b, loc, *ty, out),
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        auto div = [&](Value a, Value c) {
          return arith::DivSIOp::create(nb, l, a, c).getResult();
        };
        auto rem = [&](Value a, Value c) {
          return arith::RemSIOp::create(nb, l, a, c).getResult();
        };
        auto mul = [&](Value a, Value c) {
          return arith::MulIOp::create(nb, l, a, c).getResult();
        };
        auto add = [&](Value a, Value c) {
          return arith::AddIOp::create(nb, l, a, c).getResult();
        };
        SmallVector<Value> ix(4);
        ix[0] = iv[0];
        if (toSpace) {
          Value i = rem(iv[2], B), j = rem(iv[3], B);
          Value blk = add(mul(i, B), j);
          ix[1] = crd ? add(mul(iv[1], B2), blk) : add(mul(blk, cOut), iv[1]);
          ix[2] = div(iv[2], B);
          ix[3] = div(iv[3], B);
        } else {
          // Output channel c = (i*bs + j)*C + c0 (SpaceToDepth is DCR).
          Value c0 = rem(iv[1], d[1]), t = div(iv[1], d[1]);
          Value i = div(t, B), j = rem(t, B);
          ix[1] = c0;
          ix[2] = add(mul(iv[2], B), i);
          ix[3] = add(mul(iv[3], B), j);
        }
        for (int64_t k = 0; k < 4; ++k)
          ix[k] = clampIntoRange(nb, l, ix[k], d[k]);
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

LogicalResult lowerReverseSequence(onnxops::ReverseSequenceOp op, OpBuilder &b,
                                   SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  int64_t ba = asInt(op.getBatchAxis()), ta = asInt(op.getTimeAxis());
  if (rank < 2 || ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta)
    return nodeError(op) << "batch_axis and time_axis must be 0 and 1",
           failure();
  Value x = op->getOperand(0), lens = op->getOperand(1);
  SmallVector<Value> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(dimValue(b, loc, x, d));
  Value nLens = dimValue(b, loc, lens, 0);
  results.push_back(generateSized(
      b, loc, *ty, dims, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value len = tensor::ExtractOp::create(
            nb, l, lens, ValueRange{clampIntoRange(nb, l, iv[ba], nLens)});
        len = arith::IndexCastOp::create(nb, l, nb.getIndexType(), len);
        len = arith::MinSIOp::create(nb, l, len, dims[ta]);
        Value t = iv[ta];
        Value rev = arith::SubIOp::create(
            nb, l, arith::SubIOp::create(nb, l, len, idx(nb, l, 1)), t);
        Value in = cmpI(nb, l, arith::CmpIPredicate::slt, t, len);
        SmallVector<Value> ix(iv);
        ix[ta] = clampIntoRange(nb, l, select(nb, l, in, rev, t), dims[ta]);
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

LogicalResult lowerGatherElements(onnxops::GatherElementsOp op, OpBuilder &b,
                                  SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  if (ti->getRank() != rank)
    return nodeError(op) << "indices must have the rank of data", failure();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), rank);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  Value x = op->getOperand(0), ind = op->getOperand(1);
  SmallVector<Value> dims, out;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(dimValue(b, loc, x, d));
    out.push_back(dimValue(b, loc, ind, d));
  }
  checkIndicesInRange(b, op, ind, {dims[*axis]});
  results.push_back(generateSized(
      b, loc, *ty, out, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value i = tensor::ExtractOp::create(nb, l, ind, iv);
        SmallVector<Value> ix;
        for (int64_t d = 0; d < rank; ++d)
          ix.push_back(d == *axis ? normalizeIndex(nb, l, i, dims[d])
                                  : clampIntoRange(nb, l, iv[d], dims[d]));
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

LogicalResult lowerGatherND(onnxops::GatherNDOp op, OpBuilder &b,
                            SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t r = tx->getRank(), q = ti->getRank();
  int64_t bd = asInt(op.getBatchDims());
  Value x = op->getOperand(0), ind = op->getOperand(1);
  // The index depth k: the last dim of indices, or when only the run knows
  // it, what the result's rank leaves (q - 1 + r - b - k dims; checked).
  if (q >= 1 && ti->isDynamicDim(q - 1)) {
    int64_t depth = q - 1 + r - bd - ty->getRank();
    if (depth >= 0 && depth <= r - bd) {
      ind = withStaticDim(b, op, ind, q - 1, depth,
                          "the last dim of indices (the index depth)");
      ti = cast<RankedTensorType>(ind.getType());
    }
  }
  if (q < 1 || ti->isDynamicDim(q - 1))
    return nodeError(op) << "the last dim of indices must be static", failure();
  int64_t k = ti->getDimSize(q - 1);
  if (bd < 0 || bd >= q || bd + k > r)
    return nodeError(op) << "batch_dims and indices do not fit the data",
           failure();
  SmallVector<Value> dims, out;
  for (int64_t d = 0; d < r; ++d)
    dims.push_back(dimValue(b, loc, x, d));
  for (int64_t d = 0; d < q - 1; ++d)
    out.push_back(dimValue(b, loc, ind, d));
  for (int64_t d = bd + k; d < r; ++d)
    out.push_back(dims[d]);
  if ((int64_t)out.size() != ty->getRank())
    return nodeError(op) << "unexpected result rank", failure();
  if (k > 0)
    checkIndicesInRange(b, op, ind, ArrayRef<Value>(dims).slice(bd, k));
  results.push_back(generateSized(
      b, loc, *ty, out, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        SmallVector<Value> ix;
        for (int64_t d = 0; d < bd; ++d)
          ix.push_back(clampIntoRange(nb, l, iv[d], dims[d]));
        SmallVector<Value> ii(iv.begin(), iv.begin() + (q - 1));
        ii.push_back(Value());
        for (int64_t t = 0; t < k; ++t) {
          ii.back() = idx(nb, l, t);
          Value v = tensor::ExtractOp::create(nb, l, ind, ii);
          ix.push_back(normalizeIndex(nb, l, v, dims[bd + t]));
        }
        for (int64_t d = bd + k; d < r; ++d)
          ix.push_back(iv[q - 1 + (d - bd - k)]);
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

Value combine(OpBuilder &b, Location loc, StringRef red, Value acc, Value u) {
  bool f = isa<FloatType>(acc.getType());
  if (red == "add")
    return f ? arith::AddFOp::create(b, loc, acc, u).getResult()
             : arith::AddIOp::create(b, loc, acc, u).getResult();
  if (red == "mul")
    return f ? arith::MulFOp::create(b, loc, acc, u).getResult()
             : arith::MulIOp::create(b, loc, acc, u).getResult();
  if (red == "max")
    return f ? arith::MaximumFOp::create(b, loc, acc, u).getResult()
             : arith::MaxSIOp::create(b, loc, acc, u).getResult();
  if (red == "min")
    return f ? arith::MinimumFOp::create(b, loc, acc, u).getResult()
             : arith::MinSIOp::create(b, loc, acc, u).getResult();
  return u;
}

/// A generic over the output dims (parallel) and `redSizes` (reduction):
/// the accumulator starts at data[ivs] on the first reduction iteration and
/// `step(acc, ivs, reds)` updates it.
Value scatterGeneric(OpBuilder &b, Location loc, RankedTensorType type,
                     Value data, ArrayRef<Value> outSizes,
                     ArrayRef<Value> redSizes,
                     function_ref<Value(OpBuilder &, Location, Value,
                                        ArrayRef<Value>, ArrayRef<Value>)>
                         step) {
  int64_t rank = type.getRank(), nr = redSizes.size();
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, type, dynOf(type, outSizes));
  // The reduction loop bounds come from a dummy input of shape redSizes.
  SmallVector<int64_t> rshape(nr, ShapedType::kDynamic);
  SmallVector<Value> rdyn(redSizes);
  auto rtype = RankedTensorType::get(rshape, b.getI1Type());
  Value shaper = tensor::EmptyOp::create(b, loc, rtype, rdyn);
  SmallVector<AffineExpr> re;
  for (int64_t i = 0; i < nr; ++i)
    re.push_back(getAffineDimExpr(rank + i, ctx));
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank + nr, 0, re, ctx),
      AffineMap::getMultiDimIdentityMap(rank + nr, ctx).getMajorSubMap(rank)};
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  iters.append(nr, IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{shaper}, ValueRange{init},
             maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               SmallVector<Value> ivs, reds, firsts;
               for (int64_t i = 0; i < rank; ++i)
                 ivs.push_back(linalg::IndexOp::create(nb, l, i));
               for (int64_t i = 0; i < nr; ++i) {
                 reds.push_back(linalg::IndexOp::create(nb, l, rank + i));
                 firsts.push_back(cmpI(nb, l, arith::CmpIPredicate::eq,
                                       reds.back(), idx(nb, l, 0)));
               }
               Value d = tensor::ExtractOp::create(nb, l, data, ivs);
               Value acc = select(nb, l, andAll(nb, l, firsts), d, a[1]);
               linalg::YieldOp::create(nb, l, step(nb, l, acc, ivs, reds));
             })
      .getResult(0);
}

/// ScatterElements: out[i] combines data[i] with every update whose target
/// (its position with the axis coordinate replaced by its index) is i.
LogicalResult lowerScatterElements(onnxops::ScatterElementsOp op, OpBuilder &b,
                                   SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  if (ti->getRank() != rank)
    return nodeError(op) << "indices must have the rank of data", failure();
  FailureOr<int64_t> axis = onnxops::normalizeAxis(asInt(op.getAxis()), rank);
  if (failed(axis))
    return nodeError(op) << "axis out of range", failure();
  std::string red = op.getReduction().str();
  Value x = op->getOperand(0), ind = op->getOperand(1), upd = op->getOperand(2);
  SmallVector<Value> dims, udims;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(dimValue(b, loc, x, d));
    udims.push_back(dimValue(b, loc, ind, d));
  }
  if (ti->getDimSize(*axis) == 0) {
    results.push_back(x);
    return success();
  }
  checkIndicesInRange(b, op, ind, {dims[*axis]});
  results.push_back(scatterGeneric(
      b, loc, *ty, x, dims, {udims[*axis]},
      [&](OpBuilder &nb, Location l, Value acc, ArrayRef<Value> iv,
          ArrayRef<Value> k) {
        SmallVector<Value> ok, uix;
        for (int64_t d = 0; d < rank; ++d) {
          Value p = d == *axis ? k[0] : iv[d];
          if (d != *axis)
            ok.push_back(cmpI(nb, l, arith::CmpIPredicate::slt, p, udims[d]));
          uix.push_back(clampIntoRange(nb, l, p, udims[d]));
        }
        Value i = tensor::ExtractOp::create(nb, l, ind, uix);
        Value target = normalizeIndex(nb, l, i, dims[*axis]);
        ok.push_back(cmpI(nb, l, arith::CmpIPredicate::eq, target, iv[*axis]));
        Value u = tensor::ExtractOp::create(nb, l, upd, uix);
        return select(nb, l, andAll(nb, l, ok), combine(nb, l, red, acc, u),
                      acc);
      }));
  return success();
}

/// ScatterND: out[i] combines data[i] with updates[j, i[k:]] for every j
/// whose index tuple indices[j] equals i[:k].
LogicalResult lowerScatterND(onnxops::ScatterNDOp op, OpBuilder &b,
                             SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ti = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ti) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t r = tx->getRank(), q = ti->getRank();
  Value x = op->getOperand(0), ind = op->getOperand(1), upd = op->getOperand(2);
  // The index depth k when only the run knows it: updates have rank
  // q - 1 + r - k (checked).
  if (auto tu0 = dyn_cast<RankedTensorType>(upd.getType());
      tu0 && q >= 1 && ti->isDynamicDim(q - 1)) {
    int64_t depth = q - 1 + r - tu0.getRank();
    if (depth >= 0 && depth <= r) {
      ind = withStaticDim(b, op, ind, q - 1, depth,
                          "the last dim of indices (the index depth)");
      ti = cast<RankedTensorType>(ind.getType());
    }
  }
  if (q < 1 || ti->isDynamicDim(q - 1) || ti->getDimSize(q - 1) > r)
    return nodeError(op) << "the last dim of indices must be static and at "
                            "most the rank of data",
           failure();
  int64_t k = ti->getDimSize(q - 1);
  std::string red = op.getReduction().str();
  SmallVector<Value> dims, jdims, updDims;
  for (int64_t d = 0; d < r; ++d)
    dims.push_back(dimValue(b, loc, x, d));
  for (int64_t d = 0; d < q - 1; ++d)
    jdims.push_back(dimValue(b, loc, ind, d));
  auto tu = cast<RankedTensorType>(upd.getType());
  for (int64_t d = 0; d < tu.getRank(); ++d)
    updDims.push_back(dimValue(b, loc, upd, d));
  if (tu.getRank() != q - 1 + r - k)
    return nodeError(op) << "updates have the wrong rank", failure();
  if (k > 0)
    checkIndicesInRange(b, op, ind, ArrayRef<Value>(dims).take_front(k));
  auto step = [&](OpBuilder &nb, Location l, Value acc, ArrayRef<Value> iv,
                  ArrayRef<Value> j) {
    SmallVector<Value> ok, ii(j);
    ii.push_back(Value());
    for (int64_t t = 0; t < k; ++t) {
      ii.back() = idx(nb, l, t);
      Value v = tensor::ExtractOp::create(nb, l, ind, ii);
      ok.push_back(cmpI(nb, l, arith::CmpIPredicate::eq,
                        normalizeIndex(nb, l, v, dims[t]), iv[t]));
    }
    SmallVector<Value> uix;
    for (int64_t d = 0; d < q - 1; ++d)
      uix.push_back(clampIntoRange(nb, l, j[d], updDims[d]));
    for (int64_t d = k; d < r; ++d)
      uix.push_back(clampIntoRange(nb, l, iv[d], updDims[q - 1 + d - k]));
    Value u = tensor::ExtractOp::create(nb, l, upd, uix);
    return select(nb, l, andAll(nb, l, ok), combine(nb, l, red, acc, u), acc);
  };
  if (q == 1) {
    results.push_back(generateSized(
        b, loc, *ty, dims, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
          Value acc = tensor::ExtractOp::create(nb, l, x, iv);
          return step(nb, l, acc, iv, {});
        }));
    return success();
  }
  results.push_back(scatterGeneric(b, loc, *ty, x, dims, jdims, step));
  return success();
}

//===----------------------------------------------------------------------===//
// Data-dependent sizes: Compress, NonZero
//===----------------------------------------------------------------------===//

/// For a 1-D i1/int condition tensor `cond` of length n: the position of the
/// j-th true element, for j in [0, count): counts, per j, the positions whose
/// inclusive prefix count is <= j. Returns (positions [count], count).
std::pair<Value, Value> truePositions(OpBuilder &b, Location loc, Value cond,
                                      Value n, Value countHint) {
  MLIRContext *ctx = b.getContext();
  auto i64 = b.getI64Type();
  auto t1 = RankedTensorType::get({ShapedType::kDynamic}, i64);
  Value zero64 = arith::ConstantIntOp::create(b, loc, i64, 0);
  auto asInt = [&](OpBuilder &nb, Location l, Value c) -> Value {
    Type ct = c.getType();
    Value nz;
    if (isa<FloatType>(ct))
      nz = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE, c,
                                 scalarConstant(nb, l, ct, 0));
    else if (ct.isInteger(1))
      nz = c;
    else
      nz = cmpI(nb, l, arith::CmpIPredicate::ne, c,
                scalarConstant(nb, l, ct, 0));
    return arith::ExtUIOp::create(nb, l, i64, nz);
  };
  // prefix[k] = sum_{m <= k} cond[m], as a (k, m) reduction.
  Value pinit = emptyTensor(b, loc, t1, {n});
  pinit = linalg::FillOp::create(b, loc, zero64, pinit).getResult(0);
  Value shaper = tensor::EmptyOp::create(b, loc, t1, ValueRange{n});
  auto d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
  Value prefix =
      linalg::GenericOp::create(
          b, loc, TypeRange{t1}, ValueRange{shaper}, ValueRange{pinit},
          {AffineMap::get(2, 0, {d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
          {IteratorType::parallel, IteratorType::reduction},
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value k = linalg::IndexOp::create(nb, l, 0);
            Value m = linalg::IndexOp::create(nb, l, 1);
            Value c = asInt(
                nb, l, tensor::ExtractOp::create(nb, l, cond, ValueRange{m}));
            Value le = cmpI(nb, l, arith::CmpIPredicate::ule, m, k);
            Value add = arith::AddIOp::create(nb, l, a[1], c);
            linalg::YieldOp::create(nb, l, select(nb, l, le, add, a[1]));
          })
          .getResult(0);
  // The count, read on the host.
  Value count = countHint;
  if (!count) {
    Value nm1 = arith::SubIOp::create(b, loc, n, idx(b, loc, 1));
    Value nonEmpty = cmpI(b, loc, arith::CmpIPredicate::sgt, n, idx(b, loc, 0));
    Value last = tensor::ExtractOp::create(
        b, loc, prefix,
        ValueRange{arith::MaxSIOp::create(b, loc, nm1, idx(b, loc, 0))});
    count = arith::IndexCastOp::create(b, loc, b.getIndexType(), last);
    count = select(b, loc, nonEmpty, count, idx(b, loc, 0));
  }
  Value cinit = emptyTensor(b, loc, t1, {count});
  cinit = linalg::FillOp::create(b, loc, zero64, cinit).getResult(0);
  Value pos =
      linalg::GenericOp::create(
          b, loc, TypeRange{t1}, ValueRange{prefix}, ValueRange{cinit},
          {AffineMap::get(2, 0, {d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
          {IteratorType::parallel, IteratorType::reduction},
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value j = arith::IndexCastOp::create(
                nb, l, i64, linalg::IndexOp::create(nb, l, 0));
            Value le = cmpI(nb, l, arith::CmpIPredicate::sle, a[0], j);
            Value add = arith::AddIOp::create(
                nb, l, a[1], arith::ConstantIntOp::create(nb, l, i64, 1));
            linalg::YieldOp::create(nb, l, select(nb, l, le, add, a[1]));
          })
          .getResult(0);
  return {pos, count};
}

LogicalResult lowerCompress(onnxops::CompressOp op, OpBuilder &b,
                            SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  Value x = op->getOperand(0), cond = op->getOperand(1);
  int64_t rank = tx->getRank();
  std::optional<int64_t> axis;
  if (std::optional<int64_t> a = asInt(op.getAxis())) {
    FailureOr<int64_t> n = onnxops::normalizeAxis(*a, rank);
    if (failed(n))
      return nodeError(op) << "axis out of range", failure();
    axis = *n;
  }
  if (!axis) {
    // Flatten first.
    Value total = idx(b, loc, 1);
    for (int64_t d = 0; d < rank; ++d)
      total = arith::MulIOp::create(b, loc, total, dimValue(b, loc, x, d));
    auto flat = RankedTensorType::get(
        {tx->hasStaticShape() ? tx->getNumElements() : ShapedType::kDynamic},
        tx->getElementType());
    x = reshapeTo(b, loc, x, flat, {total});
    axis = 0;
    rank = 1;
  }
  Value dim = dimValue(b, loc, x, *axis);
  Value n = arith::MinSIOp::create(b, loc, dimValue(b, loc, cond, 0), dim);
  Value pos, count;
  std::tie(pos, count) = truePositions(b, loc, cond, n, Value());
  SmallVector<Value> out;
  for (int64_t d = 0; d < rank; ++d)
    out.push_back(d == *axis ? count : dimValue(b, loc, x, d));
  if (ty->getRank() != rank)
    return nodeError(op) << "unexpected result rank", failure();
  results.push_back(generateSized(
      b, loc, *ty, resultSizes(b, loc, *ty, out),
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        SmallVector<Value> ix(iv);
        Value p = tensor::ExtractOp::create(
            nb, l, pos, ValueRange{clampIntoRange(nb, l, iv[*axis], count)});
        ix[*axis] = clampIntoRange(
            nb, l, arith::IndexCastOp::create(nb, l, nb.getIndexType(), p),
            dim);
        return tensor::ExtractOp::create(nb, l, x, ix).getResult();
      }));
  return success();
}

LogicalResult lowerNonZero(onnxops::NonZeroOp op, OpBuilder &b,
                           SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  int64_t rank = tx->getRank();
  SmallVector<Value> dims;
  Value total = idx(b, loc, 1);
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(dimValue(b, loc, x, d));
    total = arith::MulIOp::create(b, loc, total, dims[d]);
  }
  auto flat = RankedTensorType::get(
      {tx->hasStaticShape() ? tx->getNumElements() : ShapedType::kDynamic},
      tx->getElementType());
  Value fx = reshapeTo(b, loc, x, flat, {total});
  Value pos, count;
  std::tie(pos, count) = truePositions(b, loc, fx, total, Value());
  if (ty->getRank() != 2)
    return nodeError(op) << "unexpected result rank", failure();
  results.push_back(generateSized(
      b, loc, *ty, resultSizes(b, loc, *ty, {idx(b, loc, rank), count}),
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value p = tensor::ExtractOp::create(
            nb, l, pos, ValueRange{clampIntoRange(nb, l, iv[1], count)});
        // Coordinate iv[0] of flat position p: (p / stride) % dim.
        Value stride = arith::ConstantIntOp::create(nb, l, nb.getI64Type(), 1);
        Value coord = arith::ConstantIntOp::create(nb, l, nb.getI64Type(), 0);
        for (int64_t d = rank - 1; d >= 0; --d) {
          Value n64 =
              arith::IndexCastOp::create(nb, l, nb.getI64Type(), dims[d]);
          Value safe = arith::MaxSIOp::create(
              nb, l, n64,
              arith::ConstantIntOp::create(nb, l, nb.getI64Type(), 1));
          Value c = arith::RemSIOp::create(
              nb, l, arith::DivSIOp::create(nb, l, p, stride), safe);
          Value isD =
              cmpI(nb, l, arith::CmpIPredicate::eq, iv[0], idx(nb, l, d));
          coord = select(nb, l, isD, c, coord);
          stride = arith::MulIOp::create(nb, l, stride, safe);
        }
        return coord;
      }));
  return success();
}

} // namespace

void lowering::populateDataMovementLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::DataMovement> t(patterns);
  t.add<onnxops::SplitOp>(lowerSplit);
  t.add<onnxops::TileOp>(lowerTile);
  t.add<onnxops::ExpandOp>(lowerExpand);
  t.add<onnxops::PadOp>(lowerPad);
  t.add<onnxops::CenterCropPadOp>(lowerCenterCropPad);
  t.add<onnxops::DepthToSpaceOp>(
      [](onnxops::DepthToSpaceOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerDepthSpace(op, b, r, /*toSpace=*/true);
      });
  t.add<onnxops::SpaceToDepthOp>(
      [](onnxops::SpaceToDepthOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerDepthSpace(op, b, r, /*toSpace=*/false);
      });
  t.add<onnxops::ReverseSequenceOp>(lowerReverseSequence);
  t.add<onnxops::GatherElementsOp>(lowerGatherElements);
  t.add<onnxops::GatherNDOp>(lowerGatherND);
  t.add<onnxops::ScatterElementsOp>(lowerScatterElements);
  t.add<onnxops::ScatterNDOp>(lowerScatterND);
  t.add<onnxops::CompressOp>(lowerCompress);
  t.add<onnxops::NonZeroOp>(lowerNonZero);
}
