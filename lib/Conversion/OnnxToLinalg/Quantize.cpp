//===- Quantize.cpp - Linear quantization ops -----------------------------===//
//
// QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked),
// DynamicQuantizeLinear, MatMulInteger and QLinearMatMul. Unsigned tensors
// (`ui8`, `ui16`) are bitcast to signless integers of the same width for the
// arithmetic (arith works on signless integers) and back for the results;
// their values are widened with zero extension.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// A signless view of an integer tensor (bitcast when unsigned).
Value signless(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  auto it = dyn_cast<IntegerType>(t.getElementType());
  if (!it || it.isSignless())
    return v;
  auto st = t.clone(IntegerType::get(b.getContext(), it.getWidth()));
  return tensor::BitcastOp::create(b, loc, st, v);
}

/// Converts a tensor computed in a signless type to `type` (unsigned or not).
Value toType(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return tensor::BitcastOp::create(b, loc, type, v);
}

bool isUnsigned(Type t) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  return it && it.isUnsigned();
}

/// Scalar `v` (signless integer or float) widened to f32; `isUns` says
/// how an integer is extended.
Value toF32(OpBuilder &b, Location loc, Value v, bool isUns) {
  Type f32 = b.getF32Type();
  Type t = v.getType();
  if (auto ft = dyn_cast<FloatType>(t)) {
    if (ft == f32)
      return v;
    return ft.getWidth() < 32
               ? arith::ExtFOp::create(b, loc, f32, v).getResult()
               : arith::TruncFOp::create(b, loc, f32, v).getResult();
  }
  return isUns ? arith::UIToFPOp::create(b, loc, f32, v).getResult()
               : arith::SIToFPOp::create(b, loc, f32, v).getResult();
}

/// Integer scalar widened to i32 (zero or sign extension).
Value toI32(OpBuilder &b, Location loc, Value v, bool isUns) {
  Type i32 = b.getI32Type();
  unsigned w = v.getType().getIntOrFloatBitWidth();
  if (w == 32)
    return v;
  if (w > 32)
    return arith::TruncIOp::create(b, loc, i32, v);
  return isUns ? arith::ExtUIOp::create(b, loc, i32, v).getResult()
               : arith::ExtSIOp::create(b, loc, i32, v).getResult();
}

/// Rounds f32 `v` half to even (unless `rounded`: it holds an integer
/// already), saturates to the range of the integer type `intTy`
/// (signedness from `isUns`) and converts.
Value saturate(OpBuilder &b, Location loc, Value v, IntegerType intTy,
               bool isUns, bool rounded = false) {
  unsigned w = intTy.getWidth();
  double lo = isUns ? 0.0 : -std::ldexp(1.0, w - 1);
  double hi = isUns ? std::ldexp(1.0, w) - 1 : std::ldexp(1.0, w - 1) - 1;
  Type f32 = b.getF32Type();
  if (!rounded)
    v = math::RoundEvenOp::create(b, loc, v);
  v = arith::MaximumFOp::create(
      b, loc, v, arith::ConstantOp::create(b, loc, FloatAttr::get(f32, lo)));
  v = arith::MinimumFOp::create(
      b, loc, v, arith::ConstantOp::create(b, loc, FloatAttr::get(f32, hi)));
  // Through i64 so unsigned 32-bit maxima fit; narrower types through i32
  // (one vector conversion, then a narrowing).
  Type via = w > 16 ? b.getI64Type() : b.getI32Type();
  Value i = arith::FPToSIOp::create(b, loc, via, v);
  return w == via.getIntOrFloatBitWidth()
             ? i
             : arith::TruncIOp::create(b, loc, intTy, i).getResult();
}

/// Reads the scale/zero-point element for output position `iv` of a tensor
/// of rank `rank`: per tensor (one element), per axis (1-D) or blocked (same
/// rank, axis index divided by block size).
Value readParam(OpBuilder &b, Location loc, Value p, ArrayRef<Value> iv,
                int64_t axis, int64_t block) {
  auto t = cast<RankedTensorType>(p.getType());
  SmallVector<Value> ix;
  auto clamp = [&](Value i, int64_t d) {
    return clampIntoRange(b, loc, i, dimValue(b, loc, p, d));
  };
  if (t.getRank() == 0)
    return tensor::ExtractOp::create(b, loc, p, ValueRange{});
  if (t.getRank() == 1 && (int64_t)iv.size() != 1 && t.getDimSize(0) == 1)
    return tensor::ExtractOp::create(b, loc, p, ValueRange{idx(b, loc, 0)});
  if (t.getRank() == 1 && block == 0)
    return tensor::ExtractOp::create(b, loc, p, ValueRange{clamp(iv[axis], 0)});
  for (int64_t d = 0; d < t.getRank(); ++d) {
    Value i = iv[d];
    if (d == axis && block > 0)
      i = arith::DivSIOp::create(b, loc, i, idx(b, loc, block));
    ix.push_back(clamp(i, d));
  }
  return tensor::ExtractOp::create(b, loc, p, ix);
}

Value generate(OpBuilder &b, Location loc, RankedTensorType type, Value like,
               IndexBodyFn body) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, like, i));
  return generateTensor(b, loc, type, dyn, body);
}

bool supportedInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.getWidth() >= 8 && it.getWidth() <= 32;
}

/// The axis of per-axis or blocked parameters (0 for per-tensor ones), or
/// failure after reporting an axis out of range.
template <typename OpTy> FailureOr<int64_t> paramAxis(OpTy op, int64_t rank) {
  int64_t axis = asInt(op.getAxis());
  FailureOr<int64_t> a = onnxops::normalizeAxis(axis, rank);
  auto ps = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  bool perTensor = ps && (ps.getRank() == 0 ||
                          (ps.hasStaticShape() && ps.getNumElements() == 1));
  if (failed(a) && !perTensor)
    return nodeError(op) << "axis out of range", failure();
  return succeeded(a) ? *a : 0;
}

/// Whether the scale (operand 1) and zero point (operand 2, if any) of a
/// QuantizeLinear or DequantizeLinear hold one element each and it is not
/// blocked: the op is then elementwise with scalar parameters, lowered as a
/// broadcasting generic (which kernel fusion and the CPU codegen's fused
/// epilogues take) instead of an indexed one.
bool isPerTensor(Operation *op, int64_t block) {
  if (block != 0)
    return false;
  for (unsigned i = 1; i < 3; ++i) {
    if (i == 2 && !operandPresent(op, i))
      continue;
    auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!t || !t.hasStaticShape() || t.getNumElements() != 1)
      return false;
  }
  return true;
}

/// The operands of a per-tensor QuantizeLinear or DequantizeLinear, for
/// buildElementwise: x, the scale, the zero point (signless) if present.
SmallVector<Value> perTensorInputs(OpBuilder &b, Location loc, Operation *op,
                                   Value x) {
  SmallVector<Value> ins = {x, op->getOperand(1)};
  if (operandPresent(op, 2))
    ins.push_back(signless(b, loc, op->getOperand(2)));
  return ins;
}

/// DequantizeLinear of 8-bit floats: y = (x - zp) * scale in f32.
LogicalResult lowerDequantizeFloat8(onnxops::DequantizeLinearOp op,
                                    OpBuilder &b, RankedTensorType tx,
                                    RankedTensorType ty,
                                    SmallVectorImpl<Value> &results) {
  FailureOr<int64_t> axis = paramAxis(op, tx.getRank());
  if (failed(axis))
    return failure();
  int64_t block = asInt(op.getBlockSize());
  Location loc = op->getLoc();
  Type xe = tx.getElementType();
  Value x = float8BitsView(b, loc, op->getOperand(0));
  Value scale = op->getOperand(1);
  Value zp = operandPresent(op, 2) ? op->getOperand(2) : Value();
  Type zpe = zp ? getElementTypeOrSelf(zp.getType()) : Type();
  if (zp && !isFloat8(zpe))
    return nodeError(op) << "zero point of type " << zpe
                         << " for an 8-bit float input",
           failure();
  if (zp)
    zp = float8BitsView(b, loc, zp);
  FloatType outF = cast<FloatType>(ty.getElementType());
  results.push_back(generate(
      b, loc, ty, x, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value v =
            float8ToF32(nb, l, tensor::ExtractOp::create(nb, l, x, iv), xe);
        if (zp)
          v = arith::SubFOp::create(
              nb, l, v,
              float8ToF32(nb, l, readParam(nb, l, zp, iv, *axis, block), zpe));
        Value s =
            toF32(nb, l, readParam(nb, l, scale, iv, *axis, block), false);
        Value r = arith::MulFOp::create(nb, l, v, s);
        if (outF.getWidth() < 32)
          r = arith::TruncFOp::create(nb, l, outF, r);
        else if (outF.getWidth() > 32)
          r = arith::ExtFOp::create(nb, l, outF, r);
        return r;
      }));
  return success();
}

/// QuantizeLinear to 8-bit floats: y = cast(x / scale + zp) (round to
/// nearest even; `saturate` as in Cast).
LogicalResult lowerQuantizeFloat8(onnxops::QuantizeLinearOp op, OpBuilder &b,
                                  RankedTensorType tx, RankedTensorType ty,
                                  SmallVectorImpl<Value> &results) {
  FailureOr<int64_t> axis = paramAxis(op, tx.getRank());
  if (failed(axis))
    return failure();
  int64_t block = asInt(op.getBlockSize());
  bool sat = asInt(op.getSaturate()) != 0;
  Location loc = op->getLoc();
  Type ye = ty.getElementType();
  Value x = op->getOperand(0), scale = op->getOperand(1);
  Value zp = operandPresent(op, 2) ? op->getOperand(2) : Value();
  Type zpe = zp ? getElementTypeOrSelf(zp.getType()) : Type();
  if (zp && !isFloat8(zpe))
    return nodeError(op) << "zero point of type " << zpe
                         << " for an 8-bit float output",
           failure();
  if (zp)
    zp = float8BitsView(b, loc, zp);
  Value r = generate(
      b, loc, ty.clone(b.getI8Type()), x,
      [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value v = toF32(nb, l, tensor::ExtractOp::create(nb, l, x, iv), false);
        Value s =
            toF32(nb, l, readParam(nb, l, scale, iv, *axis, block), false);
        v = arith::DivFOp::create(nb, l, v, s);
        if (zp)
          v = arith::AddFOp::create(
              nb, l, v,
              float8ToF32(nb, l, readParam(nb, l, zp, iv, *axis, block), zpe));
        return f32ToFloat8(nb, l, v, ye, sat);
      });
  results.push_back(tensor::BitcastOp::create(b, loc, ty, r));
  return success();
}

LogicalResult lowerDequantize(onnxops::DequantizeLinearOp op, OpBuilder &b,
                              SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  Type xe = tx->getElementType();
  if (isFloat8(xe) && isa<FloatType>(ty->getElementType()) &&
      !isFloat8(ty->getElementType()))
    return lowerDequantizeFloat8(op, b, *tx, *ty, results);
  if (!supportedInt(xe) || !isa<FloatType>(ty->getElementType()))
    return nodeError(op) << "dequantization of " << xe << " to "
                         << ty->getElementType() << " is not supported",
           failure();
  int64_t rank = tx->getRank();
  FailureOr<int64_t> axisOr = paramAxis(op, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  int64_t block = asInt(op.getBlockSize());
  bool uns = isUnsigned(xe);
  Value x = signless(b, loc, op->getOperand(0));
  FloatType outF = cast<FloatType>(ty->getElementType());
  if (isPerTensor(op, block)) {
    results.push_back(buildElementwise(
        b, loc, *ty, perTensorInputs(b, loc, op, x),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = toI32(nb, l, a[0], uns);
          if (a.size() > 2)
            v = arith::SubIOp::create(nb, l, v, toI32(nb, l, a[2], uns));
          Value r = arith::MulFOp::create(nb, l, toF32(nb, l, v, false),
                                          toF32(nb, l, a[1], false));
          if (outF.getWidth() < 32)
            r = arith::TruncFOp::create(nb, l, outF, r);
          return r;
        }));
    return success();
  }
  Value scale = op->getOperand(1);
  Value zp =
      operandPresent(op, 2) ? signless(b, loc, op->getOperand(2)) : Value();
  results.push_back(generate(
      b, loc, *ty, x, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value v = toI32(nb, l, tensor::ExtractOp::create(nb, l, x, iv), uns);
        if (zp)
          v = arith::SubIOp::create(
              nb, l, v,
              toI32(nb, l, readParam(nb, l, zp, iv, axis, block), uns));
        Value f = toF32(nb, l, v, false);
        Value s = toF32(nb, l, readParam(nb, l, scale, iv, axis, block), false);
        Value r = arith::MulFOp::create(nb, l, f, s);
        if (outF.getWidth() < 32)
          r = arith::TruncFOp::create(nb, l, outF, r);
        return r;
      }));
  return success();
}

LogicalResult lowerQuantize(onnxops::QuantizeLinearOp op, OpBuilder &b,
                            SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  Type ye = ty->getElementType();
  if (isFloat8(ye) && isa<FloatType>(tx->getElementType()) &&
      !isFloat8(tx->getElementType()))
    return lowerQuantizeFloat8(op, b, *tx, *ty, results);
  if (!supportedInt(ye) || !isa<FloatType>(tx->getElementType()))
    return nodeError(op) << "quantization of " << tx->getElementType() << " to "
                         << ye << " is not supported",
           failure();
  int64_t rank = tx->getRank();
  FailureOr<int64_t> axisOr = paramAxis(op, rank);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  int64_t block = asInt(op.getBlockSize());
  bool uns = isUnsigned(ye);
  auto intTy = IntegerType::get(b.getContext(), ye.getIntOrFloatBitWidth());
  Value x = op->getOperand(0), scale = op->getOperand(1);
  auto st = ty->clone(intTy);
  if (isPerTensor(op, block)) {
    Value r = buildElementwise(
        b, loc, st, perTensorInputs(b, loc, op, x),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = arith::DivFOp::create(nb, l, toF32(nb, l, a[0], false),
                                          toF32(nb, l, a[1], false));
          v = math::RoundEvenOp::create(nb, l, v);
          if (a.size() > 2)
            v = arith::AddFOp::create(nb, l, v, toF32(nb, l, a[2], uns));
          return saturate(nb, l, v, intTy, uns, /*rounded=*/true);
        });
    results.push_back(toType(b, loc, r, *ty));
    return success();
  }
  Value zp =
      operandPresent(op, 2) ? signless(b, loc, op->getOperand(2)) : Value();
  Value r = generate(
      b, loc, st, x, [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
        Value v = toF32(nb, l, tensor::ExtractOp::create(nb, l, x, iv), false);
        Value s = toF32(nb, l, readParam(nb, l, scale, iv, axis, block), false);
        v = arith::DivFOp::create(nb, l, v, s);
        v = math::RoundEvenOp::create(nb, l, v);
        if (zp)
          v = arith::AddFOp::create(
              nb, l, v,
              toF32(nb, l, readParam(nb, l, zp, iv, axis, block), uns));
        return saturate(nb, l, v, intTy, uns);
      });
  results.push_back(toType(b, loc, r, *ty));
  return success();
}

/// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zp = saturate(round(
/// -min / scale)), y = saturate(round(x / scale) + zp), all uint8.
LogicalResult lowerDynamicQuantize(onnxops::DynamicQuantizeLinearOp op,
                                   OpBuilder &b,
                                   SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> ty = rankedResult(op, 0);
  FailureOr<RankedTensorType> ts = rankedResult(op, 1);
  FailureOr<RankedTensorType> tz = rankedResult(op, 2);
  if (failed(tx) || failed(ty) || failed(ts) || failed(tz))
    return failure();
  if (!tx->getElementType().isF32())
    return nodeError(op) << "input must be float32", failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Value x = op->getOperand(0);
  int64_t rank = tx->getRank();
  Type f32 = b.getF32Type();
  auto scalarT = RankedTensorType::get({}, f32);
  auto reduce = [&](bool isMax) {
    Value init = filledTensor(b, loc, scalarT, {}, FloatAttr::get(f32, 0.0));
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   AffineMap::get(rank, 0, {}, ctx)};
    return linalg::GenericOp::create(
               b, loc, TypeRange{scalarT}, ValueRange{x}, ValueRange{init},
               maps, SmallVector<IteratorType>(rank, IteratorType::reduction),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value r = isMax ? arith::MaximumFOp::create(nb, l, a[0], a[1])
                                       .getResult()
                                 : arith::MinimumFOp::create(nb, l, a[0], a[1])
                                       .getResult();
                 linalg::YieldOp::create(nb, l, r);
               })
        .getResult(0);
  };
  // The accumulators start at 0, which also clamps the range to include 0.
  Value mx = reduce(true), mn = reduce(false);
  auto u8 = IntegerType::get(ctx, 8);
  auto params = [&](OpBuilder &nb, Location l) {
    Value hi = tensor::ExtractOp::create(nb, l, mx, ValueRange{});
    Value lo = tensor::ExtractOp::create(nb, l, mn, ValueRange{});
    Value s = arith::DivFOp::create(
        nb, l, arith::SubFOp::create(nb, l, hi, lo),
        arith::ConstantOp::create(nb, l, FloatAttr::get(f32, 255.0)));
    Value zero = arith::CmpFOp::create(
        nb, l, arith::CmpFPredicate::OEQ, s,
        arith::ConstantOp::create(nb, l, FloatAttr::get(f32, 0.0)));
    Value safe = arith::SelectOp::create(
        nb, l, zero, arith::ConstantOp::create(nb, l, FloatAttr::get(f32, 1.0)),
        s);
    Value z =
        arith::DivFOp::create(nb, l, arith::NegFOp::create(nb, l, lo), safe);
    z = saturate(nb, l, z, u8, true);
    return std::make_tuple(s, safe, z);
  };
  Value y =
      generate(b, loc, ty->clone(u8), x,
               [&](OpBuilder &nb, Location l, ArrayRef<Value> iv) {
                 auto [s, safe, z] = params(nb, l);
                 Value v = tensor::ExtractOp::create(nb, l, x, iv);
                 v = arith::DivFOp::create(nb, l, v, safe);
                 v = math::RoundEvenOp::create(nb, l, v);
                 v = arith::AddFOp::create(nb, l, v, toF32(nb, l, z, true));
                 return saturate(nb, l, v, u8, true);
               });
  Value s = generate(b, loc, *ts, Value(),
                     [&](OpBuilder &nb, Location l, ArrayRef<Value>) {
                       return std::get<0>(params(nb, l));
                     });
  Value z = generate(b, loc, tz->clone(u8), Value(),
                     [&](OpBuilder &nb, Location l, ArrayRef<Value>) {
                       return std::get<2>(params(nb, l));
                     });
  results.push_back(toType(b, loc, y, *ty));
  results.push_back(s);
  results.push_back(toType(b, loc, z, *tz));
  return success();
}

/// The values of zero point operand `i` of `op`: {0} when absent, nullopt
/// when not a constant.
std::optional<SmallVector<int64_t>> constantZeroPoints(Operation *op,
                                                       unsigned i) {
  if (!operandPresent(op, i))
    return SmallVector<int64_t>{0};
  return onnxops::getConstantIntValues(op->getOperand(i));
}

/// Constant integer weights with their zero points subtracted at compile
/// time, and per channel their sum (what the zero point of the other
/// operand multiplies).
struct FoldedWeights {
  /// The weights to multiply (signless), and whether they extend as
  /// unsigned.
  Value w;
  bool isUnsigned = false;
  SmallVector<int64_t> sums;
};

/// `w` (constant values `values`, static `shape`) minus its zero points
/// `zp` (one, or one per index of `channelDim`): the 8-bit weights as they
/// are when every zero point is 0, else an i16 constant of the
/// differences. With `padDim` >= 0, that dim is padded to `padTo` with
/// zeros (after the subtraction: the padding adds nothing). With
/// `transposed`, a 2-D [K, N] `w` comes out [N, K] (K-major, for targets
/// whose 8-bit products read B so).
FoldedWeights foldWeights(OpBuilder &b, Location loc, Value w,
                          ArrayRef<int64_t> values, ArrayRef<int64_t> shape,
                          int64_t channelDim, ArrayRef<int64_t> zp,
                          int64_t padDim = -1, int64_t padTo = 0,
                          bool transposed = false) {
  int64_t rank = shape.size();
  int64_t channels = shape[channelDim], inner = 1;
  for (int64_t d = channelDim + 1; d < rank; ++d)
    inner *= shape[d];
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };
  auto zpOf = [&](int64_t c) { return zp.size() == 1 ? zp[0] : zp[c]; };
  FoldedWeights f;
  f.sums.assign(channels, 0);
  bool zero = llvm::all_of(zp, [](int64_t z) { return z == 0; });
  bool pad = padDim >= 0 && padTo > shape[padDim];
  assert((!transposed || (rank == 2 && !pad)) && "a 2-D, unpadded transpose");
  // Whether the values move (a new constant even without zero points).
  bool moved = pad || transposed;
  SmallVector<int64_t> outShape(shape);
  if (pad)
    outShape[padDim] = padTo;
  if (transposed)
    std::swap(outShape[0], outShape[1]);
  // Where element i lands in the (padded or transposed) result.
  int64_t padInner = 1;
  for (int64_t d = padDim + 1; pad && d < rank; ++d)
    padInner *= shape[d];
  auto dest = [&](int64_t i) -> int64_t {
    if (transposed)
      return (i % shape[1]) * shape[0] + i / shape[1];
    if (!pad)
      return i;
    int64_t lo = i % padInner, mid = (i / padInner) % shape[padDim],
            hi = i / padInner / shape[padDim];
    return (hi * padTo + mid) * padInner + lo;
  };
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<int16_t> diff(zero ? 0 : n, 0);
  std::vector<int8_t> raw(zero && moved ? n : 0, 0);
  for (auto [i, v] : llvm::enumerate(values)) {
    int64_t c = channelOf(i), d = v - zpOf(c);
    f.sums[c] += d;
    if (!zero)
      diff[dest(i)] = static_cast<int16_t>(d);
    else if (moved)
      raw[dest(i)] = static_cast<int8_t>(v);
  }
  if (zero && !moved) {
    f.isUnsigned = isUnsigned(w.getType());
    f.w = signless(b, loc, w);
    return f;
  }
  auto make = [&](Type elem, ArrayRef<char> bytes) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(int64_t));
    return arith::ConstantOp::create(
        b, loc,
        DenseResourceElementsAttr::get(RankedTensorType::get(outShape, elem),
                                       transposed ? "weights_k_major"
                                                  : "weights_minus_zero_point",
                                       std::move(blob)));
  };
  if (zero) {
    // The 8-bit values, moved (padded with zeros, or transposed).
    f.isUnsigned = isUnsigned(w.getType());
    f.w = make(
        b.getI8Type(),
        ArrayRef<char>(reinterpret_cast<const char *>(raw.data()), raw.size()));
    return f;
  }
  f.w = make(b.getI16Type(),
             ArrayRef<char>(reinterpret_cast<const char *>(diff.data()),
                            diff.size() * sizeof(int16_t)));
  return f;
}

/// `acc` (i32) plus `c[channel]`, the per-channel constant broadcast along
/// dim `channelDim` of `acc`; `acc` itself when every entry is 0.
Value addPerChannel(OpBuilder &b, Location loc, Value acc, ArrayRef<int64_t> c,
                    int64_t channelDim) {
  if (llvm::all_of(c, [](int64_t v) { return v == 0; }))
    return acc;
  auto t = cast<RankedTensorType>(acc.getType());
  SmallVector<int64_t> shape = {static_cast<int64_t>(c.size())};
  shape.append(t.getRank() - 1 - channelDim, 1);
  SmallVector<int32_t> v32(c.begin(), c.end());
  auto ct = RankedTensorType::get(shape, b.getI32Type());
  Value cv = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(ct, ArrayRef<int32_t>(v32)));
  return buildElementwise(b, loc, t, {acc, cv},
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return arith::AddIOp::create(nb, l, a[0], a[1]);
                          });
}

/// `acc + ext(x) * ext(w)` in i32.
Value mulAddI32(OpBuilder &b, Location loc, Value acc, Value x, bool xUns,
                Value w, bool wUns) {
  Value p = arith::MulIOp::create(b, loc, toI32(b, loc, x, xUns),
                                  toI32(b, loc, w, wUns));
  return arith::AddIOp::create(b, loc, acc, p);
}

/// MatMulInteger with constant weights B ([K, N]) and constant zero points
/// (a_zero_point one value, b_zero_point one or one per column):
///   sum_k (a - za)(b - zb[n]) = sum_k a (b - zb[n]) - za colsum[n]
/// with b - zb[n] and colsum[n] = sum_k (b - zb[n]) computed here. The
/// product is a plain `acc + ext(a) * ext(b)` contraction (the CPU codegen
/// runs uint8 x int8 ones as VNNI dot products); the column term is a
/// per-column constant added after it. Where the target reads 8-bit
/// weights K-major (targetWantsKMajorInt8Weights), the
/// constant is laid out [N, K] here and the product reads it so, instead of
/// a launch transposing it every run. Fails (nothing built) when the
/// operands are not such constants.
FailureOr<Value> lowerMatMulIntegerConstB(Operation *op, OpBuilder &b,
                                          RankedTensorType ta,
                                          RankedTensorType tb,
                                          RankedTensorType ty) {
  std::optional<SmallVector<int64_t>> bv =
      onnxops::getConstantIntValues(op->getOperand(1));
  std::optional<SmallVector<int64_t>> za = constantZeroPoints(op, 2);
  std::optional<SmallVector<int64_t>> zb = constantZeroPoints(op, 3);
  if (!bv || !za || !zb || tb.getRank() != 2 || !tb.hasStaticShape() ||
      za->size() != 1 ||
      (zb->size() != 1 &&
       static_cast<int64_t>(zb->size()) != tb.getDimSize(1)) ||
      getElementTypeOrSelf(tb).getIntOrFloatBitWidth() != 8)
    return failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  const bool kMajor = targetWantsKMajorInt8Weights();
  FoldedWeights w = foldWeights(b, loc, op->getOperand(1), *bv, tb.getShape(),
                                1, *zb, /*padDim=*/-1, /*padTo=*/0, kMajor);
  bool ua = isUnsigned(ta.getElementType());
  Value A = signless(b, loc, op->getOperand(0));
  int64_t ra = ta.getRank(), ry = ty.getRank(), nBatch = ry - 2;
  int64_t nl = ry + 1;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> ae, ye;
  SmallVector<AffineExpr> be =
      kMajor ? SmallVector<AffineExpr>{d(nBatch + 1), d(nBatch + 2)}
             : SmallVector<AffineExpr>{d(nBatch + 2), d(nBatch + 1)};
  for (int64_t i = 0; i < ra - 2; ++i)
    ae.push_back(ta.getDimSize(i) == 1 && ty.getDimSize(i) != 1
                     ? getAffineConstantExpr(0, ctx)
                     : d(i));
  ae.append({d(nBatch), d(nBatch + 2)});
  for (int64_t i = 0; i < ry; ++i)
    ye.push_back(d(i));
  auto accT = ty.clone(b.getI32Type());
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i)
    if (accT.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, A, i));
  Value init =
      filledTensor(b, loc, accT, dyn, IntegerAttr::get(b.getI32Type(), 0));
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  Value acc =
      linalg::GenericOp::create(
          b, loc, TypeRange{accT}, ValueRange{A, w.w}, ValueRange{init},
          {AffineMap::get(nl, 0, ae, ctx), AffineMap::get(nl, 0, be, ctx),
           AffineMap::get(nl, 0, ye, ctx)},
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(
                nb, l, mulAddI32(nb, l, a[2], a[0], ua, a[1], w.isUnsigned));
          })
          .getResult(0);
  SmallVector<int64_t> c;
  for (int64_t s : w.sums)
    c.push_back(-(*za)[0] * s);
  return addPerChannel(b, loc, acc, c, ry - 1);
}

/// MatMulInteger and QLinearMatMul: 2-D or batched (equal batch dims)
/// products of zero-point-shifted integers, accumulated in i32.
LogicalResult lowerIntMatMul(Operation *op, OpBuilder &b,
                             SmallVectorImpl<Value> &results, bool qlinear) {
  unsigned ia = 0, ib = qlinear ? 3 : 1;
  FailureOr<RankedTensorType> ta = rankedOperand(op, ia);
  FailureOr<RankedTensorType> tb = rankedOperand(op, ib);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  int64_t ra = ta->getRank(), rb = tb->getRank(), ry = ty->getRank();
  if (ra < 2 || rb < 2 || ry != std::max(ra, rb) ||
      !supportedInt(ta->getElementType()) ||
      !supportedInt(tb->getElementType()))
    return nodeError(op) << "operands must be integer tensors of rank >= 2",
           failure();
  if (!qlinear) {
    if (ty->getElementType() != b.getI32Type())
      return nodeError(op) << "result must be int32", failure();
    FailureOr<Value> acc = lowerMatMulIntegerConstB(op, b, *ta, *tb, *ty);
    if (succeeded(acc)) {
      results.push_back(*acc);
      return success();
    }
  }
  bool ua = isUnsigned(ta->getElementType()),
       ub = isUnsigned(tb->getElementType());
  Value A = signless(b, loc, op->getOperand(ia));
  Value B = signless(b, loc, op->getOperand(ib));
  Value azp = operandPresent(op, qlinear ? 2 : 2)
                  ? signless(b, loc, op->getOperand(2))
                  : Value();
  Value bzp = operandPresent(op, qlinear ? 5 : 3)
                  ? signless(b, loc, op->getOperand(qlinear ? 5 : 3))
                  : Value();
  // Loops: batch (ry - 2), m, n, k.
  int64_t nb_ = ry - 2, nl = ry + 1;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> ae, be, ye;
  for (int64_t i = 0; i < ra - 2; ++i)
    ae.push_back(ta->getDimSize(i) == 1 ? getAffineConstantExpr(0, ctx)
                                        : d(i + (nb_ - (ra - 2))));
  ae.append({d(nb_), d(nb_ + 2)});
  for (int64_t i = 0; i < rb - 2; ++i)
    be.push_back(tb->getDimSize(i) == 1 ? getAffineConstantExpr(0, ctx)
                                        : d(i + (nb_ - (rb - 2))));
  be.append({d(nb_ + 2), d(nb_ + 1)});
  for (int64_t i = 0; i < ry; ++i)
    ye.push_back(d(i));
  auto i32 = b.getI32Type();
  auto accT = ty->clone(i32);
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i)
    if (accT.isDynamicDim(i)) {
      if (i == ry - 1)
        dyn.push_back(tensor::DimOp::create(b, loc, B, rb - 1));
      else if (i == ry - 2)
        dyn.push_back(tensor::DimOp::create(b, loc, A, ra - 2));
      else
        dyn.push_back(tensor::DimOp::create(b, loc, ra >= rb ? A : B,
                                            i - (ry - (ra >= rb ? ra : rb))));
    }
  Value init = filledTensor(b, loc, accT, dyn, IntegerAttr::get(i32, 0));
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);
  // A parameter with one element, or one per row of A (`dimIdx` = m) or per
  // column of B (n): read at that (clamped) position.
  auto paramAt = [&](OpBuilder &nb, Location l, Value p,
                     int64_t loop) -> Value {
    auto t = cast<RankedTensorType>(p.getType());
    SmallVector<Value> z(t.getRank(), idx(nb, l, 0));
    if (t.getRank() >= 1 && t.getDimSize(t.getRank() - 1) != 1) {
      Value i = linalg::IndexOp::create(nb, l, loop);
      Value n = dimValue(nb, l, p, t.getRank() - 1);
      z.back() = clampIntoRange(nb, l, i, n);
    }
    return tensor::ExtractOp::create(nb, l, p, z);
  };
  auto zpAt = [&](OpBuilder &nb, Location l, Value zp, bool uns,
                  int64_t loop) -> Value {
    if (!zp)
      return arith::ConstantIntOp::create(nb, l, i32, 0);
    return toI32(nb, l, paramAt(nb, l, zp, loop), uns);
  };
  Value acc =
      linalg::GenericOp::create(
          b, loc, TypeRange{accT}, ValueRange{A, B}, ValueRange{init},
          {AffineMap::get(nl, 0, ae, ctx), AffineMap::get(nl, 0, be, ctx),
           AffineMap::get(nl, 0, ye, ctx)},
          iters,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value x = arith::SubIOp::create(nb, l, toI32(nb, l, a[0], ua),
                                            zpAt(nb, l, azp, ua, nb_));
            Value y = arith::SubIOp::create(nb, l, toI32(nb, l, a[1], ub),
                                            zpAt(nb, l, bzp, ub, nb_ + 1));
            linalg::YieldOp::create(
                nb, l,
                arith::AddIOp::create(nb, l, a[2],
                                      arith::MulIOp::create(nb, l, x, y))
                    .getResult());
          })
          .getResult(0);
  if (!qlinear) {
    if (ty->getElementType() != i32)
      return nodeError(op) << "result must be int32", failure();
    results.push_back(acc);
    return success();
  }
  // y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zp).
  Type ye_ = ty->getElementType();
  if (!supportedInt(ye_))
    return nodeError(op) << "result must be an 8-bit integer", failure();
  bool uy = isUnsigned(ye_);
  auto intTy = IntegerType::get(ctx, ye_.getIntOrFloatBitWidth());
  Value as = op->getOperand(1), bs = op->getOperand(4), ys = op->getOperand(6);
  Value yzp =
      operandPresent(op, 7) ? signless(b, loc, op->getOperand(7)) : Value();
  auto first = [&](OpBuilder &nb, Location l, Value v) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<Value> z(t.getRank(), idx(nb, l, 0));
    return tensor::ExtractOp::create(nb, l, v, z);
  };
  auto rt = ty->clone(intTy);
  SmallVector<Value> rdyn;
  for (int64_t i = 0; i < ry; ++i)
    if (rt.isDynamicDim(i))
      rdyn.push_back(tensor::DimOp::create(b, loc, acc, i));
  Value rinit = emptyTensor(b, loc, rt, rdyn);
  Value r =
      linalg::GenericOp::create(
          b, loc, TypeRange{rt}, ValueRange{acc}, ValueRange{rinit},
          {AffineMap::getMultiDimIdentityMap(ry, ctx),
           AffineMap::getMultiDimIdentityMap(ry, ctx)},
          SmallVector<IteratorType>(ry, IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value v = toF32(nb, l, a[0], false);
            Value s = arith::MulFOp::create(
                nb, l, toF32(nb, l, paramAt(nb, l, as, ry - 2), false),
                toF32(nb, l, paramAt(nb, l, bs, ry - 1), false));
            s = arith::DivFOp::create(nb, l, s,
                                      toF32(nb, l, first(nb, l, ys), false));
            v = arith::MulFOp::create(nb, l, v, s);
            v = math::RoundEvenOp::create(nb, l, v);
            if (yzp)
              v = arith::AddFOp::create(
                  nb, l, v,
                  toF32(nb, l, toI32(nb, l, first(nb, l, yzp), uy), false));
            linalg::YieldOp::create(nb, l, saturate(nb, l, v, intTy, uy));
          })
          .getResult(0);
  results.push_back(toType(b, loc, r, *ty));
  return success();
}

/// ConvInteger: the convolution of x - x_zero_point (the padding is the
/// zero point: zero after the subtraction) by w - w_zero_point (per tensor
/// or per filter), accumulated in i32. Constant weights and zero points
/// take the algebra of lowerMatMulIntegerConstB (the product of the raw
/// 8-bit input, the filter sums times the input's zero point subtracted
/// after it); otherwise the zero points are subtracted in the loop body.
LogicalResult lowerConvInteger(onnxops::ConvIntegerOp op, OpBuilder &b,
                               SmallVectorImpl<Value> &results) {
  FailureOr<RankedTensorType> tx = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tw = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(tx) || failed(tw) || failed(ty))
    return failure();
  if (!supportedInt(tx->getElementType()) ||
      tx->getElementType().getIntOrFloatBitWidth() != 8 ||
      !supportedInt(tw->getElementType()) ||
      tw->getElementType().getIntOrFloatBitWidth() != 8 ||
      !ty->getElementType().isInteger(32))
    return nodeError(op) << "ConvInteger takes 8-bit integer input and "
                            "weights and gives int32",
           failure();
  if (!tw->hasStaticShape())
    return nodeError(op) << "the weights must have a static shape", failure();
  Location loc = op->getLoc();
  bool last = onnxops::isChannelsLast(op);
  bool filterFirst = onnxops::isFilterFirst(op);
  int64_t rank = tw->getRank();
  int64_t fDim = last && !filterFirst ? rank - 1 : 0;
  int64_t F = tw->getDimSize(fDim);
  bool ux = isUnsigned(tx->getElementType());
  Value x = signless(b, loc, op->getOperand(0));
  Type xElem = cast<RankedTensorType>(x.getType()).getElementType();
  std::optional<SmallVector<int64_t>> wv =
      onnxops::getConstantIntValues(op->getOperand(1));
  std::optional<SmallVector<int64_t>> zx = constantZeroPoints(op, 2);
  std::optional<SmallVector<int64_t>> zw = constantZeroPoints(op, 3);
  if (zx && zx->size() != 1)
    return nodeError(op) << "x_zero_point must hold one value", failure();
  if (zw && zw->size() != 1 && static_cast<int64_t>(zw->size()) != F)
    return nodeError(op) << "w_zero_point must hold one value or one per "
                            "filter",
           failure();
  ConvArith arith;
  arith.accElem = b.getI32Type();
  if (wv && zx && zw) {
    // Input channels padded to a multiple of 4 (an RGB image's 3): the
    // reduction then groups by four bytes, what int8 dot-product
    // instructions take; the padding is the input's zero point and zero
    // weights, so it adds nothing.
    int64_t cDim = !last ? 1 : filterFirst ? rank - 1 : rank - 2;
    int64_t xc = last ? rank - 1 : 1;
    int64_t C = tw->getDimSize(cDim);
    bool padChannels =
        asInt(op.getGroup()) == 1 && C % 4 != 0 && !tx->isDynamicDim(xc);
    int64_t padTo = padChannels ? (C + 3) / 4 * 4 : 0;
    FoldedWeights w =
        foldWeights(b, loc, op->getOperand(1), *wv, tw->getShape(), fDim, *zw,
                    padChannels ? cDim : -1, padTo);
    arith.padValue = arith::ConstantOp::create(
        b, loc,
        IntegerAttr::get(xElem, APInt(8, (*zx)[0], /*isSigned=*/!ux,
                                      /*implicitTrunc=*/true)));
    if (padChannels) {
      auto xt = cast<RankedTensorType>(x.getType());
      SmallVector<OpFoldResult> lo(rank, b.getIndexAttr(0)),
          hi(rank, b.getIndexAttr(0));
      hi[xc] = b.getIndexAttr(padTo - C);
      SmallVector<int64_t> padded(xt.getShape());
      padded[xc] = padTo;
      x = tensor::PadOp::create(b, loc, xt.clone(padded), x, lo, hi,
                                arith.padValue);
    }

    arith.body = [&](OpBuilder &nb, Location l, Value xv, Value wv_,
                     Value acc) {
      return mulAddI32(nb, l, acc, xv, ux, wv_, w.isUnsigned);
    };
    FailureOr<Value> conv = buildConvolution(op, b, x, w.w, arith);
    if (failed(conv))
      return failure();
    SmallVector<int64_t> c;
    for (int64_t s : w.sums)
      c.push_back(-(*zx)[0] * s);
    results.push_back(addPerChannel(b, loc, *conv, c, last ? rank - 1 : 1));
    return success();
  }
  // Zero points at run time: one each.
  auto scalar = [&](unsigned i) -> Value {
    if (!operandPresent(op, i))
      return Value();
    auto t = cast<RankedTensorType>(op->getOperand(i).getType());
    if (t.hasStaticShape() && t.getNumElements() != 1)
      return Value();
    return extractScalarOperand(b, op, signless(b, loc, op->getOperand(i)),
                                "the zero point");
  };
  if (operandPresent(op, 3) && !scalar(3))
    return nodeError(op) << "a per-filter w_zero_point must be a constant",
           failure();
  Value zxv = scalar(2), zwv = scalar(3);
  bool uw = isUnsigned(tw->getElementType());
  arith.padValue =
      zxv ? zxv : arith::ConstantOp::create(b, loc, IntegerAttr::get(xElem, 0));
  arith.body = [&](OpBuilder &nb, Location l, Value xv, Value wv_, Value acc) {
    Value xi = toI32(nb, l, xv, ux), wi = toI32(nb, l, wv_, uw);
    if (zxv)
      xi = arith::SubIOp::create(nb, l, xi, toI32(nb, l, zxv, ux));
    if (zwv)
      wi = arith::SubIOp::create(nb, l, wi, toI32(nb, l, zwv, uw));
    return arith::AddIOp::create(nb, l, acc,
                                 arith::MulIOp::create(nb, l, xi, wi))
        .getResult();
  };
  FailureOr<Value> conv =
      buildConvolution(op, b, x, signless(b, loc, op->getOperand(1)), arith);
  if (failed(conv))
    return failure();
  results.push_back(*conv);
  return success();
}

} // namespace

void lowering::populateQuantizeLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Quantize> t(patterns);
  t.add<onnxops::DequantizeLinearOp>(lowerDequantize);
  t.add<onnxops::QuantizeLinearOp>(lowerQuantize);
  t.add<onnxops::DynamicQuantizeLinearOp>(lowerDynamicQuantize);
  t.add<onnxops::MatMulIntegerOp>(
      [](onnxops::MatMulIntegerOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerIntMatMul(op, b, r, /*qlinear=*/false);
      });
  t.add<onnxops::ConvIntegerOp>(lowerConvInteger);
  t.add<onnxops::QLinearMatMulOp>(
      [](onnxops::QLinearMatMulOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerIntMatMul(op, b, r, /*qlinear=*/true);
      });
}
