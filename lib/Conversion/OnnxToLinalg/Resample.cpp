//===- Resample.cpp - Resize, GridSample, AffineGrid ----------------------===//
//
// Interpolating ops: each output element computes, per interpolated axis,
// its source coordinate and a fixed number of (index, weight) taps, then sums
// the weighted inputs over the product of the taps (a linalg.generic over the
// output with tensor.extract reads). Source indices are clamped into range
// (edge padding), so no scale, roi or grid value makes a kernel read out of
// bounds. Coordinates follow ONNX's reference implementation.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// Float arithmetic on scalars of one float type, with short names.
struct FB {
  OpBuilder &b;
  Location l;
  FloatType t;
  Value c(double v) {
    return arith::ConstantOp::create(b, l, FloatAttr::get(t, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, l, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, l, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, l, x, y); }
  Value floor(Value x) { return math::FloorOp::create(b, l, x); }
  Value ceil(Value x) { return math::CeilOp::create(b, l, x); }
  Value abs(Value x) { return math::AbsFOp::create(b, l, x); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, l, x, y); }
  Value min(Value x, Value y) { return arith::MinimumFOp::create(b, l, x, y); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, l, p, x, y);
  }
  Value sel(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, l, c, x, y);
  }
  Value fromIndex(Value i) {
    Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), i);
    return arith::SIToFPOp::create(b, l, t, i64);
  }
  /// floor(x) as an index (x is clamped to a safe range first).
  Value toIndex(Value x) {
    x = max(min(x, c(1e15)), c(-1e15));
    Value i64 = arith::FPToSIOp::create(b, l, b.getI64Type(), x);
    return arith::IndexCastOp::create(b, l, b.getIndexType(), i64);
  }
  Value cast(Value x) {
    auto from = cast_(x.getType());
    if (from == t)
      return x;
    return from.getWidth() < t.getWidth()
               ? arith::ExtFOp::create(b, l, t, x).getResult()
               : arith::TruncFOp::create(b, l, t, x).getResult();
  }
  static FloatType cast_(Type ty) { return mlir::cast<FloatType>(ty); }
};

/// Float values of a 1-D operand of static length `n` as f64 scalars, plus
/// the constants when known at compile time.
SmallVector<Value> readFloats(OpBuilder &b, Location loc, Value v, int64_t n,
                              std::optional<SmallVector<double>> &cst) {
  cst = onnxops::getConstantFloatValues(v);
  SmallVector<Value> r;
  FB f{b, loc, b.getF64Type()};
  for (int64_t i = 0; i < n; ++i) {
    if (cst) {
      r.push_back(f.c(i < (int64_t)cst->size() ? (*cst)[i] : 0.0));
      continue;
    }
    Value e = tensor::ExtractOp::create(b, loc, v, ValueRange{idx(b, loc, i)});
    r.push_back(f.cast(e));
  }
  return r;
}

/// Keys' cubic convolution kernel at distance |x| with parameter A.
Value cubicWeight(FB &f, Value x, double A) {
  x = f.abs(x);
  Value x2 = f.mul(x, x), x3 = f.mul(x2, x);
  // |x| <= 1: (A+2)x^3 - (A+3)x^2 + 1
  Value near =
      f.add(f.sub(f.mul(f.c(A + 2), x3), f.mul(f.c(A + 3), x2)), f.c(1));
  // 1 < |x| < 2: A x^3 - 5A x^2 + 8A x - 4A
  Value far = f.sub(f.add(f.sub(f.mul(f.c(A), x3), f.mul(f.c(5 * A), x2)),
                          f.mul(f.c(8 * A), x)),
                    f.c(4 * A));
  Value r = f.sel(f.cmp(arith::CmpFPredicate::OLE, x, f.c(1)), near, far);
  return f.sel(f.cmp(arith::CmpFPredicate::OLT, x, f.c(2)), r, f.c(0));
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

LogicalResult lowerResize(onnxops::ResizeOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank();
  Value x = op->getOperand(0);
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "Resize supports float types only", failure();
  std::string mode = op.getMode().str();
  std::string ctm = op.getCoordinateTransformationMode().str();
  std::string nearestMode = op.getNearestMode().str();
  std::string policy = op.getKeepAspectRatioPolicy().str();
  double cubicA = asDouble(op.getCubicCoeffA());
  bool exclude = asInt(op.getExcludeOutside());
  bool antialias = asInt(op.getAntialias()) && mode != "nearest";
  double extrapolation = asDouble(op.getExtrapolationValue());
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return nodeError(op) << "unknown mode '" << mode << "'", failure();
  static const char *ctms[] = {"half_pixel",         "half_pixel_symmetric",
                               "pytorch_half_pixel", "align_corners",
                               "asymmetric",         "tf_crop_and_resize"};
  if (!llvm::is_contained(ctms, ctm))
    return nodeError(op) << "unknown coordinate_transformation_mode '" << ctm
                         << "'",
           failure();
  if (nearestMode != "round_prefer_floor" &&
      nearestMode != "round_prefer_ceil" && nearestMode != "floor" &&
      nearestMode != "ceil")
    return nodeError(op) << "unknown nearest_mode '" << nearestMode << "'",
           failure();
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return nodeError(op) << "unknown keep_aspect_ratio_policy '" << policy
                         << "'",
           failure();

  SmallVector<int64_t> axes;
  if (auto a = intsOf(op.getAxes())) {
    for (int64_t v : *a) {
      FailureOr<int64_t> n = onnxops::normalizeAxis(v, rank);
      if (failed(n) || llvm::is_contained(axes, *n))
        return nodeError(op) << "bad axis " << v, failure();
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  int64_t na = axes.size();

  FB f{b, loc, b.getF64Type()};
  SmallVector<Value> inDims, inF;
  for (int64_t d = 0; d < rank; ++d) {
    inDims.push_back(dimValue(b, loc, x, d));
    inF.push_back(f.fromIndex(inDims[d]));
  }
  // Per dim: scale (f64), whether it is known to be exactly 1, output size.
  SmallVector<Value> scale(rank, f.c(1.0)), outDims(inDims);
  SmallVector<std::optional<double>> cscale(rank, 1.0);
  // scales and sizes of unknown length: scales must be empty when sizes are
  // given, else they hold one entry per axis (checked at run time).
  Value scalesV = operandPresent(op, 2) ? op->getOperand(2) : Value();
  Value sizesV = operandPresent(op, 3) ? op->getOperand(3) : Value();
  if (scalesV && staticLength1D(scalesV) < 0) {
    if (sizesV) {
      scalesV = withStaticLength(b, op, scalesV, 0, "scales (sizes given)");
    } else {
      scalesV = withStaticLength(b, op, scalesV, na, "scales");
    }
  }
  if (sizesV && staticLength1D(sizesV) < 0)
    sizesV = withStaticLength(b, op, sizesV, na, "sizes");
  bool useScales = scalesV && staticLength1D(scalesV) != 0;
  if (useScales) {
    if (staticLength1D(scalesV) != na)
      return nodeError(op) << "scales must have one entry per axis", failure();
    std::optional<SmallVector<double>> cst;
    SmallVector<Value> s = readFloats(b, loc, scalesV, na, cst);
    for (int64_t k = 0; k < na; ++k) {
      int64_t d = axes[k];
      // Positive scales only (NaN included in what is refused): at compile
      // time when constant, else before anything is sized by them.
      if (cst && !((*cst)[k] > 0))
        return nodeError(op) << "scales[" << k << "] is " << (*cst)[k]
                             << "; scales must be positive",
               failure();
      if (!cst)
        checkAtRunTime(b, op,
                       arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             s[k], f.c(0.0)),
                       "scales[{0}] is not positive (zero, negative or NaN)",
                       {idx(b, loc, k)});
      scale[d] = s[k];
      cscale[d] = cst ? std::optional<double>((*cst)[k]) : std::nullopt;
      outDims[d] = f.toIndex(f.floor(f.mul(inF[d], s[k])));
    }
  } else {
    if (!sizesV || staticLength1D(sizesV) != na)
      return nodeError(op) << "one of scales and sizes must be given, with one "
                              "entry per axis",
             failure();
    auto csizes = onnxops::getConstantIntValues(sizesV);
    SmallVector<Value> req;
    for (int64_t k = 0; k < na; ++k) {
      if (csizes) {
        req.push_back(f.c((double)(*csizes)[k]));
      } else {
        Value e = tensor::ExtractOp::create(b, loc, sizesV,
                                            ValueRange{idx(b, loc, k)});
        req.push_back(arith::SIToFPOp::create(b, loc, b.getF64Type(), e));
      }
    }
    SmallVector<Value> s;
    SmallVector<std::optional<double>> cs;
    for (int64_t k = 0; k < na; ++k) {
      int64_t d = axes[k];
      s.push_back(f.div(req[k], inF[d]));
      if (csizes && !tx->isDynamicDim(d))
        cs.push_back((double)(*csizes)[k] / (double)tx->getDimSize(d));
      else
        cs.push_back(std::nullopt);
    }
    if (policy != "stretch") {
      Value m = s[0];
      std::optional<double> cm = cs[0];
      for (int64_t k = 1; k < na; ++k) {
        m = policy == "not_larger" ? f.min(m, s[k]) : f.max(m, s[k]);
        if (cm && cs[k])
          cm = policy == "not_larger" ? std::min(*cm, *cs[k])
                                      : std::max(*cm, *cs[k]);
        else
          cm = std::nullopt;
      }
      for (int64_t k = 0; k < na; ++k) {
        int64_t d = axes[k];
        scale[d] = m;
        cscale[d] = cm;
        outDims[d] = f.toIndex(f.floor(f.add(f.mul(m, inF[d]), f.c(0.5))));
      }
    } else {
      for (int64_t k = 0; k < na; ++k) {
        int64_t d = axes[k];
        scale[d] = s[k];
        cscale[d] = cs[k];
        outDims[d] = f.toIndex(req[k]);
      }
    }
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!ty->isDynamicDim(d))
      outDims[d] = idx(b, loc, ty->getDimSize(d));

  // Region of interest (tf_crop_and_resize only).
  SmallVector<Value> roiStart(rank, f.c(0.0)), roiEnd(rank, f.c(1.0));
  bool crop = ctm == "tf_crop_and_resize";
  if (crop) {
    Value roiV = operandPresent(op, 1)
                     ? withStaticLength(b, op, op->getOperand(1), 2 * na, "roi")
                     : Value();
    if (!roiV || staticLength1D(roiV) != 2 * na)
      return nodeError(op) << "roi must have 2 entries per axis", failure();
    std::optional<SmallVector<double>> cst;
    SmallVector<Value> r = readFloats(b, loc, roiV, 2 * na, cst);
    for (int64_t k = 0; k < na; ++k) {
      roiStart[axes[k]] = r[k];
      roiEnd[axes[k]] = r[na + k];
    }
  }

  // Taps per interpolated dim: k in [start, start + n), at index base + k.
  struct Axis {
    bool identity;
    int64_t start = 0, n = 1;
    double aa = 1.0;        // antialias factor min(scale, 1)
    bool runtimeAA = false; // the factor is min(scale, 1) read at run time
  };
  SmallVector<Axis> ax(rank);
  for (int64_t d = 0; d < rank; ++d) {
    bool inAxes = llvm::is_contained(axes, d);
    ax[d].identity = !crop && (!inAxes || (cscale[d] && *cscale[d] == 1.0));
    if (ax[d].identity || mode == "nearest")
      continue;
    double support = mode == "linear" ? 1.0 : 2.0;
    if (antialias) {
      // The tap count needs a lower bound of the scale: the constant, or
      // out/in from static sizes (floor(in * scale) = out implies scale >=
      // out/in). Extra taps beyond the filter's support weigh 0.
      std::optional<double> lower = cscale[d];
      if (!lower && !tx->isDynamicDim(d) && !ty->isDynamicDim(d) &&
          tx->getDimSize(d) > 0)
        lower = (double)ty->getDimSize(d) / (double)tx->getDimSize(d);
      if (!lower)
        return nodeError(op) << "antialias needs constant scales or static "
                                "sizes",
               failure();
      ax[d].aa = std::min(*lower, 1.0);
      ax[d].runtimeAA = !cscale[d];
      if (ax[d].aa <= 0)
        return nodeError(op) << "scales must be positive", failure();
    }
    ax[d].start = (int64_t)std::floor(-support / ax[d].aa) + 1;
    ax[d].n = 2 - 2 * ax[d].start;
    if (ax[d].n > 64)
      return nodeError(op) << "antialiasing scale too small", failure();
  }

  FloatType elemF = cast<FloatType>(elem);
  results.push_back(generateSized(
      b, loc, *ty, outDims, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        FB g{nb, l, nb.getF64Type()};
        // Per dim: list of (index, weight); outside flag for tf_crop.
        SmallVector<SmallVector<std::pair<Value, Value>>> taps(rank);
        Value outside;
        for (int64_t d = 0; d < rank; ++d) {
          if (ax[d].identity) {
            taps[d].push_back(
                {clampIntoRange(nb, l, iv[d], inDims[d]), Value()});
            continue;
          }
          Value xr = g.fromIndex(iv[d]);
          Value s = scale[d], lin = inF[d];
          Value lout = g.mul(s, lin); // float output length
          Value one = g.c(1.0), half = g.c(0.5);
          Value lo1 = g.cmp(arith::CmpFPredicate::OEQ, lout, one);
          Value xo;
          Value hp = g.sub(g.div(g.add(xr, half), s), half);
          if (ctm == "half_pixel") {
            xo = hp;
          } else if (ctm == "half_pixel_symmetric") {
            Value adj = g.div(g.fromIndex(outDims[d]), lout);
            Value off = g.mul(g.div(lin, g.c(2.0)), g.sub(one, adj));
            xo = g.add(off, hp);
          } else if (ctm == "pytorch_half_pixel") {
            xo = g.sel(lo1, g.c(-0.5), hp);
          } else if (ctm == "align_corners") {
            xo = g.sel(lo1, g.c(0.0),
                       g.div(g.mul(xr, g.sub(lin, one)), g.sub(lout, one)));
          } else if (ctm == "asymmetric") {
            xo = g.div(xr, s);
          } else {
            Value span = g.sub(roiEnd[d], roiStart[d]);
            Value lm1 = g.sub(lin, one);
            Value single = g.div(g.mul(span, lm1), g.c(2.0));
            Value many = g.div(g.mul(g.mul(xr, span), lm1), g.sub(lout, one));
            xo = g.add(g.sel(lo1, single, many), g.mul(roiStart[d], lm1));
            Value o = arith::OrIOp::create(
                nb, l, g.cmp(arith::CmpFPredicate::OLT, xo, g.c(0.0)),
                g.cmp(arith::CmpFPredicate::OGT, xo, lm1));
            outside = outside
                          ? arith::OrIOp::create(nb, l, outside, o).getResult()
                          : o;
          }
          // base = ceil(x) - 1, ratio = x - base in (0, 1].
          Value base = g.sub(g.ceil(xo), one);
          Value ratio = g.sub(xo, base);
          Value bi = g.toIndex(base);
          if (mode == "nearest") {
            Value up;
            if (nearestMode == "round_prefer_floor")
              up = g.cmp(arith::CmpFPredicate::OGT, ratio, half);
            else if (nearestMode == "round_prefer_ceil")
              up = g.cmp(arith::CmpFPredicate::OGE, ratio, half);
            else if (nearestMode == "floor")
              up = g.cmp(arith::CmpFPredicate::OEQ, ratio, one);
            else
              up = arith::ConstantIntOp::create(nb, l, 1, 1);
            Value i = arith::SelectOp::create(
                nb, l, up, arith::AddIOp::create(nb, l, bi, idx(nb, l, 1)), bi);
            taps[d].push_back({clampIntoRange(nb, l, i, inDims[d]), Value()});
            continue;
          }
          SmallVector<Value> ws, is;
          Value sum = g.c(0.0);
          for (int64_t t = 0; t < ax[d].n; ++t) {
            int64_t k = ax[d].start + t;
            Value aa = ax[d].runtimeAA ? g.min(s, one) : g.c(ax[d].aa);
            Value dist = g.mul(g.sub(g.c((double)k), ratio), aa);
            Value w = mode == "linear"
                          ? g.max(g.sub(one, g.abs(dist)), g.c(0.0))
                          : cubicWeight(g, dist, cubicA);
            Value i = arith::AddIOp::create(nb, l, bi, idx(nb, l, k));
            if (exclude)
              w = g.sel(indexInRange(nb, l, i, inDims[d]), w, g.c(0.0));
            ws.push_back(w);
            is.push_back(clampIntoRange(nb, l, i, inDims[d]));
            sum = g.add(sum, w);
          }
          bool normalize = exclude || antialias;
          if (normalize) {
            Value zero = g.cmp(arith::CmpFPredicate::OEQ, sum, g.c(0.0));
            sum = g.sel(zero, one, sum);
          }
          for (int64_t t = 0; t < ax[d].n; ++t)
            taps[d].push_back({is[t], normalize ? g.div(ws[t], sum) : ws[t]});
        }
        // Sum over the product of the taps.
        Value acc = g.c(0.0);
        SmallVector<Value> ix(rank);
        std::function<void(int64_t, Value)> rec = [&](int64_t d, Value w) {
          if (d == rank) {
            Value v = g.cast(tensor::ExtractOp::create(nb, l, x, ix));
            acc = g.add(acc, w ? g.mul(w, v) : v);
            return;
          }
          for (auto &[i, wt] : taps[d]) {
            ix[d] = i;
            Value nw = !wt ? w : (w ? g.mul(w, wt) : wt);
            rec(d + 1, nw);
          }
        };
        rec(0, Value());
        if (outside)
          acc = g.sel(outside, g.c(extrapolation), acc);
        FB e{nb, l, elemF};
        return e.cast(acc);
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

/// Reflects `x` into [lo, hi] (the reference's _gs_reflect).
Value reflect(FB &f, Value x, Value lo, Value hi) {
  Value rng = f.sub(hi, lo);
  Value safe =
      f.sel(f.cmp(arith::CmpFPredicate::OEQ, rng, f.c(0)), f.c(1), rng);
  auto fold = [&](Value dx, Value from, Value to) {
    // n = trunc(dx / rng) (dx >= 0), r = dx - n*rng; even n: from ± r.
    Value n = f.floor(f.div(dx, safe));
    Value r = f.sub(dx, f.mul(n, safe));
    Value half = f.mul(n, f.c(0.5));
    Value even = f.cmp(arith::CmpFPredicate::OEQ, f.floor(half), half);
    return std::make_pair(even, r);
  };
  auto [evenLo, rLo] = fold(f.sub(lo, x), lo, hi);
  Value belowV = f.sel(evenLo, f.add(lo, rLo), f.sub(hi, rLo));
  auto [evenHi, rHi] = fold(f.sub(x, hi), hi, lo);
  Value aboveV = f.sel(evenHi, f.sub(hi, rHi), f.add(lo, rHi));
  Value r = f.sel(f.cmp(arith::CmpFPredicate::OLT, x, lo), belowV,
                  f.sel(f.cmp(arith::CmpFPredicate::OGT, x, hi), aboveV, x));
  return f.sel(f.cmp(arith::CmpFPredicate::OEQ, rng, f.c(0)), lo, r);
}

LogicalResult lowerGridSample(onnxops::GridSampleOp op, OpBuilder &b,
                              SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tg = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tg) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t rank = tx->getRank(), ns = rank - 2;
  if (ns < 1 || tg->getRank() != rank || ty->getRank() != rank ||
      (!tg->isDynamicDim(rank - 1) && tg->getDimSize(rank - 1) != ns) ||
      (!tg->isDynamicDim(0) && !tx->isDynamicDim(0) &&
       tg->getDimSize(0) != tx->getDimSize(0)))
    return nodeError(op) << "grid must be [N, D1..Dr, r] for an input of "
                            "rank r + 2",
           failure();
  // Dims known only at run time: grid's batch and last dim checked there.
  if (tg->isDynamicDim(rank - 1) || tg->isDynamicDim(0) ||
      tx->isDynamicDim(0)) {
    Value gl = dimValue(b, loc, op->getOperand(1), rank - 1);
    Value gn = dimValue(b, loc, op->getOperand(1), 0);
    Value xn = dimValue(b, loc, op->getOperand(0), 0);
    Value ok = arith::AndIOp::create(
        b, loc, cmpI(b, loc, arith::CmpIPredicate::eq, gl, idx(b, loc, ns)),
        cmpI(b, loc, arith::CmpIPredicate::eq, gn, xn));
    checkAtRunTime(b, op, ok,
                   "grid is [{0}, ..., {1}]; expected [{2}, ..., " + Twine(ns) +
                       "] for X of batch {2}",
                   {gn, gl, xn});
  }
  if (!isa<FloatType>(ty->getElementType()))
    return nodeError(op) << "GridSample supports float types only", failure();
  std::string mode = op.getMode().str();
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  std::string padding = op.getPaddingMode().str();
  bool align = asInt(op.getAlignCorners());
  if ((mode != "linear" && mode != "nearest" && mode != "cubic") ||
      (padding != "zeros" && padding != "border" && padding != "reflection"))
    return nodeError(op) << "unknown mode or padding_mode", failure();
  Value x = op->getOperand(0), grid = op->getOperand(1);
  SmallVector<Value> inDims, out;
  for (int64_t d = 0; d < rank; ++d)
    inDims.push_back(dimValue(b, loc, x, d));
  out = {inDims[0], inDims[1]};
  for (int64_t d = 1; d < rank - 1; ++d)
    out.push_back(dimValue(b, loc, grid, d));
  FloatType elemF = cast<FloatType>(ty->getElementType());
  FloatType gridF = cast<FloatType>(tg->getElementType());
  results.push_back(generateSized(
      b, loc, *ty, out, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        FB f{nb, l, nb.getF32Type()};
        (void)gridF;
        SmallVector<Value> gix = {iv[0]};
        for (int64_t d = 2; d < rank; ++d)
          gix.push_back(iv[d]);
        gix.push_back(Value());
        SmallVector<Value> coord(ns), lo(ns), hi(ns), len(ns);
        for (int64_t s = 0; s < ns; ++s) {
          // grid's last dim is in reverse order (x = innermost dim first).
          gix.back() = idx(nb, l, ns - 1 - s);
          Value n = f.cast(tensor::ExtractOp::create(nb, l, grid, gix));
          Value L = f.fromIndex(inDims[2 + s]);
          len[s] = L;
          Value one = f.c(1.0);
          Value c = align
                        ? f.mul(f.div(f.add(n, one), f.c(2.0)), f.sub(L, one))
                        : f.div(f.sub(f.mul(f.add(n, one), L), one), f.c(2.0));
          if (mode == "nearest")
            c = math::RoundEvenOp::create(nb, l, c);
          lo[s] = align ? f.c(0.0) : f.c(-0.5);
          hi[s] = align ? f.sub(L, one) : f.sub(L, f.c(0.5));
          Value outside = arith::OrIOp::create(
              nb, l, f.cmp(arith::CmpFPredicate::OLT, c, lo[s]),
              f.cmp(arith::CmpFPredicate::OGT, c, hi[s]));
          if (padding == "border")
            c = f.sel(outside, f.max(f.min(c, f.sub(L, one)), f.c(0.0)), c);
          else if (padding == "reflection")
            c = f.sel(outside, reflect(f, c, lo[s], hi[s]), c);
          coord[s] = c;
        }
        // Reads one pixel at integer position `p` (per spatial dim) with the
        // padding rule; returns (value, valid).
        auto pixel = [&](ArrayRef<Value> p) -> Value {
          SmallVector<Value> ix = {iv[0], iv[1]};
          Value ok;
          for (int64_t s = 0; s < ns; ++s) {
            Value i = p[s];
            Value n = inDims[2 + s];
            if (padding == "zeros") {
              Value r = indexInRange(nb, l, i, n);
              ok = ok ? arith::AndIOp::create(nb, l, ok, r).getResult() : r;
            } else if (padding == "reflection") {
              Value fi = reflect(f, f.fromIndex(i), lo[s], hi[s]);
              // int() truncates toward zero.
              Value t = f.sel(f.cmp(arith::CmpFPredicate::OLT, fi, f.c(0)),
                              f.ceil(fi), f.floor(fi));
              i = f.toIndex(t);
            }
            ix.push_back(clampIntoRange(nb, l, i, n));
          }
          Value v = f.cast(tensor::ExtractOp::create(nb, l, x, ix));
          if (ok)
            v = f.sel(ok, v, f.c(0.0));
          return v;
        };
        Value result;
        if (mode == "nearest") {
          SmallVector<Value> p;
          for (int64_t s = 0; s < ns; ++s) {
            // astype(int32) truncates toward zero.
            Value c = coord[s];
            Value t = f.sel(f.cmp(arith::CmpFPredicate::OLT, c, f.c(0)),
                            f.ceil(c), f.floor(c));
            p.push_back(f.toIndex(t));
          }
          result = pixel(p);
        } else {
          int64_t n = mode == "linear" ? 2 : 4,
                  first = mode == "linear" ? 0 : -1;
          SmallVector<SmallVector<std::pair<Value, Value>>> taps(ns);
          for (int64_t s = 0; s < ns; ++s) {
            Value x0 = f.floor(coord[s]);
            Value r = f.sub(coord[s], x0);
            Value b0 = f.toIndex(x0);
            for (int64_t t = 0; t < n; ++t) {
              int64_t k = first + t;
              Value w = mode == "linear"
                            ? (k == 0 ? f.sub(f.c(1.0), r) : r)
                            : cubicWeight(f, f.sub(f.c((double)k), r), -0.75);
              taps[s].push_back(
                  {arith::AddIOp::create(nb, l, b0, idx(nb, l, k)), w});
            }
          }
          Value acc = f.c(0.0);
          SmallVector<Value> p(ns);
          std::function<void(int64_t, Value)> rec = [&](int64_t s, Value w) {
            if (s == ns) {
              acc = f.add(acc, f.mul(w, pixel(p)));
              return;
            }
            for (auto &[i, wt] : taps[s]) {
              p[s] = i;
              rec(s + 1, w ? f.mul(w, wt) : wt);
            }
          };
          rec(0, Value());
          result = acc;
        }
        FB e{nb, l, elemF};
        return e.cast(result);
      }));
  return success();
}

//===----------------------------------------------------------------------===//
// AffineGrid
//===----------------------------------------------------------------------===//

LogicalResult lowerAffineGrid(onnxops::AffineGridOp op, OpBuilder &b,
                              SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tt = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tt) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  int64_t ry = ty->getRank(), ns = ry - 2;
  if ((ns != 2 && ns != 3) || staticLength1D(op->getOperand(1)) != ns + 2 ||
      tt->getRank() != 3 || tt->getDimSize(1) != ns ||
      tt->getDimSize(2) != ns + 1 || !isa<FloatType>(ty->getElementType()))
    return nodeError(op) << "AffineGrid supports 2-D and 3-D float grids",
           failure();
  bool align = asInt(op.getAlignCorners());
  Value theta = op->getOperand(0), size = op->getOperand(1);
  SmallVector<Value> sz;
  auto cst = onnxops::getConstantIntValues(size);
  for (int64_t i = 0; i < ns + 2; ++i) {
    if (cst) {
      sz.push_back(idx(b, loc, (*cst)[i]));
      continue;
    }
    Value e =
        tensor::ExtractOp::create(b, loc, size, ValueRange{idx(b, loc, i)});
    sz.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), e));
  }
  SmallVector<Value> out = {sz[0]};
  for (int64_t s = 0; s < ns; ++s)
    out.push_back(sz[2 + s]);
  out.push_back(idx(b, loc, ns));
  FloatType elemF = cast<FloatType>(ty->getElementType());
  results.push_back(generateSized(
      b, loc, *ty, out, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        FB f{nb, l, elemF};
        // Homogeneous base coordinates (x, y[, z], 1): x along the last dim.
        SmallVector<Value> base;
        for (int64_t s = ns - 1; s >= 0; --s) {
          Value L = f.fromIndex(sz[2 + s]);
          Value i = f.fromIndex(iv[1 + s]);
          Value one = f.c(1.0);
          Value v;
          if (align) {
            Value den = f.sub(L, one);
            den =
                f.sel(f.cmp(arith::CmpFPredicate::OEQ, den, f.c(0)), one, den);
            v = f.sub(f.div(f.mul(f.c(2.0), i), den), one);
          } else {
            v = f.sub(f.div(f.add(f.mul(f.c(2.0), i), one), L), one);
          }
          base.push_back(v);
        }
        base.push_back(f.c(1.0));
        Value acc = f.c(0.0);
        Value n = clampIntoRange(nb, l, iv[0], dimValue(nb, l, theta, 0));
        Value j = clampIntoRange(nb, l, iv[ns + 1], idx(nb, l, ns));
        for (int64_t k = 0; k <= ns; ++k) {
          Value t = tensor::ExtractOp::create(nb, l, theta,
                                              ValueRange{n, j, idx(nb, l, k)});
          acc = f.add(acc, f.mul(f.cast(t), base[k]));
        }
        return acc;
      }));
  return success();
}

} // namespace

void lowering::populateResampleLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Resample> t(patterns);
  t.add<onnxops::ResizeOp>(lowerResize);
  t.add<onnxops::GridSampleOp>(lowerGridSample);
  t.add<onnxops::AffineGridOp>(lowerAffineGrid);
}
