//===- Quantize.cpp - Linear quantization ops -----------------------------===//
//
// QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked) and
// DynamicQuantizeLinear (the integer products are in IntegerProducts.cpp). Unsigned tensors
// (`ui8`, `ui16`) are bitcast to signless integers of the same width for the
// arithmetic (arith works on signless integers) and back for the results;
// their values are widened with zero extension.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "Quantization.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

Value quant::signless(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  auto it = dyn_cast<IntegerType>(t.getElementType());
  if (!it || it.isSignless())
    return v;
  auto st = t.clone(IntegerType::get(b.getContext(), it.getWidth()));
  // A constant (a zero point) stays one, so that it folds into the
  // elementwise bodies that read it (a bitcast would be a buffer there).
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto d = dyn_cast<DenseIntOrFPElementsAttr>(c.getValue()))
      return arith::ConstantOp::create(b, loc, st,
                                       d.bitcast(st.getElementType()));
  return tensor::BitcastOp::create(b, loc, st, v);
}

Value quant::toType(OpBuilder &b, Location loc, Value v,
                    RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return tensor::BitcastOp::create(b, loc, type, v);
}

bool quant::isUnsigned(Type t) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  return it && it.isUnsigned();
}

namespace {

/// Whether `g` only converts one float type to another (a Cast's generic).
bool isFloatCast(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g.getNumLoops() != g.getNumParallelLoops())
    return false;
  Block &body = g.getRegion().front();
  if (body.getOperations().size() != 2)
    return false;
  Operation &conv = body.front();
  return isa<arith::ExtFOp, arith::TruncFOp>(conv) &&
         conv.getOperand(0) == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == conv.getResult(0);
}

/// `ints` (signless) with its sign's bitcast moved above the views between
/// it and the unsigned tensor it reinterprets (a Split's slices of a uint8
/// product): the kernel then reads the product's buffer through the views
/// (a bitcast of a slice would be a copy kernel of its own).
Value bitcastFirst(OpBuilder &b, Value ints) {
  auto bc = ints.getDefiningOp<tensor::BitcastOp>();
  if (!bc)
    return ints;
  SmallVector<Operation *> views;
  Value base = bc.getSource();
  while (Operation *def = base.getDefiningOp()) {
    if (!isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(def))
      break;
    views.push_back(def);
    base = def->getOperand(0);
  }
  if (views.empty())
    return ints;
  Type elem = bc.getType().getElementType();
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(bc);
  Value x = tensor::BitcastOp::create(
      b, bc.getLoc(), cast<RankedTensorType>(base.getType()).clone(elem), base);
  for (Operation *view : llvm::reverse(views)) {
    IRMapping map;
    map.map(view->getOperand(0), x);
    Operation *copy = b.clone(*view, map);
    copy->getResult(0).setType(
        cast<RankedTensorType>(copy->getResult(0).getType()).clone(elem));
    x = copy->getResult(0);
  }
  return x;
}

} // namespace

std::optional<quant::Dequantized> quant::dequantizedInput(OpBuilder &b,
                                                          Value x) {
  auto g = x.getDefiningOp<linalg::GenericOp>();
  if (g && isFloatCast(g))
    g = g.getDpsInputs()[0].getDefiningOp<linalg::GenericOp>();
  auto attr = g ? g->getAttrOfType<DictionaryAttr>(kDequantizeAttr) : nullptr;
  if (!attr)
    return std::nullopt;
  auto scale = attr.getAs<FloatAttr>("scale");
  auto zp = attr.getAs<IntegerAttr>("zero_point");
  auto uns = attr.getAs<BoolAttr>("unsigned");
  Value ints = g.getDpsInputs()[0];
  auto t = dyn_cast<RankedTensorType>(ints.getType());
  if (!scale || !zp || !uns || !t || !t.getElementType().isSignlessInteger(8) ||
      t != cast<RankedTensorType>(x.getType()).clone(t.getElementType()))
    return std::nullopt;
  return Dequantized{bitcastFirst(b, ints), scale.getValueAsDouble(),
                     zp.getInt(), uns.getValue()};
}

Value quant::toF32(OpBuilder &b, Location loc, Value v, bool isUns) {
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

Value quant::toI32(OpBuilder &b, Location loc, Value v, bool isUns) {
  Type i32 = b.getI32Type();
  unsigned w = v.getType().getIntOrFloatBitWidth();
  if (w == 32)
    return v;
  if (w > 32)
    return arith::TruncIOp::create(b, loc, i32, v);
  return isUns ? arith::ExtUIOp::create(b, loc, i32, v).getResult()
               : arith::ExtSIOp::create(b, loc, i32, v).getResult();
}

Value quant::saturate(OpBuilder &b, Location loc, Value v, IntegerType intTy,
                      bool isUns, bool rounded) {
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

bool quant::supportedInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.getWidth() >= 8 && it.getWidth() <= 32;
}

namespace {

using utils::IteratorType;
using namespace quant;

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
    Value r = buildElementwise(
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
        });
    // An 8-bit input with constant parameters: the attention lowering
    // reads such a generic's input with these instead (kiln.attention's
    // quantized operands).
    std::optional<SmallVector<double>> sv =
        onnxops::getConstantFloatValues(op->getOperand(1));
    std::optional<SmallVector<int64_t>> zv =
        operandPresent(op, 2)
            ? onnxops::getConstantIntValues(op->getOperand(2))
            : std::optional<SmallVector<int64_t>>(SmallVector<int64_t>{0});
    if (cast<IntegerType>(xe).getWidth() == 8 && sv && zv)
      if (Operation *g = r.getDefiningOp())
        g->setAttr(
            kDequantizeAttr,
            b.getDictionaryAttr(
                {b.getNamedAttr("scale", b.getF64FloatAttr(sv->front())),
                 b.getNamedAttr("zero_point", b.getI64IntegerAttr(zv->front())),
                 b.getNamedAttr("unsigned", b.getBoolAttr(uns))}));
    results.push_back(r);
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

} // namespace

void lowering::populateQuantizeLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Quantize> t(patterns);
  t.add<onnxops::DequantizeLinearOp>(lowerDequantize);
  t.add<onnxops::QuantizeLinearOp>(lowerQuantize);
  t.add<onnxops::DynamicQuantizeLinearOp>(lowerDynamicQuantize);
}
