//===- MixedPrecisionCleanup.cpp - Casts and constants of mixed precision -===//
//
// Compile-time conversion of f32 constants to fp16/bf16 and the cleanup of
// the casts kiln-mixed-precision places at the borders of fp32 islands:
//
//  - Cast(constant) folds into a converted constant (weights are converted
//    once, at compile time);
//  - Cast_{B→C}(Cast_{A→B}(x)) with A→B exact (a widening between floats)
//    becomes Cast_{A→C}(x), or x when C = A: f16→f32→f16 disappears, while
//    f32→f16→f32 (lossy) stays;
//  - Cast(D(x...)) for a single-use data-movement op D (Reshape, Transpose,
//    Flatten, Squeeze, Unsqueeze, Concat) becomes D(Cast(x)...) when the
//    cast narrows (D then moves half the bytes) or when every data input of
//    D is a cast or constant (the casts then meet and fold).
//
//===----------------------------------------------------------------------===//

#include "MixedPrecision.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::mixed_precision;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

uint16_t mixed_precision::f32ToF16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) // infinity or NaN (quiet)
    return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u);
  if (a >= 0x477ff000u) // >= 65520 rounds to infinity
    return sign | 0x7c00u;
  if (a < 0x38800000u) { // below 2^-14: fp16 subnormal or zero
    float v;
    std::memcpy(&v, &a, 4);
    // v·2^24 is exact and below 1024; round to nearest even.
    return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));
  }
  uint32_t mant = a & 0x7fffffu;
  uint32_t h = ((((a >> 23) - 127 + 15) << 10) | (mant >> 13));
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent: still the right encoding
  return sign | static_cast<uint16_t>(h);
}

uint16_t mixed_precision::f32ToBF16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/// The raw bytes of a float constant's attribute when it is a resource blob.
static std::optional<ArrayRef<char>> resourceBytes(Attribute attr) {
  auto r = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!r)
    return std::nullopt;
  AsmResourceBlob *blob = r.getRawHandle().getBlob();
  if (!blob)
    return std::nullopt;
  return blob->getData();
}

/// Calls `fn` on each value of an f32 constant; false if unreadable.
static bool forEachF32(Value v, function_ref<void(float)> fn) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!cst || !type || !type.getElementType().isF32() || !type.hasStaticShape())
    return false;
  Attribute attr = cst.getValue();
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
    if (dense.isSplat()) {
      fn(dense.getSplatValue<float>());
      return true;
    }
    for (float x : dense.getValues<float>())
      fn(x);
    return true;
  }
  std::optional<ArrayRef<char>> bytes = resourceBytes(attr);
  int64_t n = type.getNumElements();
  if (!bytes || static_cast<int64_t>(bytes->size()) < n * 4)
    return false;
  for (int64_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, bytes->data() + i * 4, 4);
    fn(x);
  }
  return true;
}

bool mixed_precision::isConstantF32(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!cst || !type || !type.getElementType().isF32() || !type.hasStaticShape())
    return false;
  Attribute attr = cst.getValue();
  if (isa<DenseFPElementsAttr>(attr))
    return true;
  std::optional<ArrayRef<char>> bytes = resourceBytes(attr);
  return bytes &&
         static_cast<int64_t>(bytes->size()) >= type.getNumElements() * 4;
}

double mixed_precision::constantAbsMax(Value v) {
  double m = 0;
  forEachF32(v, [&](float x) {
    if (std::isfinite(x))
      m = std::max(m, static_cast<double>(std::fabs(x)));
  });
  return m;
}

static int64_t onnxTypeCode(Type t) {
  if (t.isF32())
    return 1;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  if (t.isF64())
    return 11;
  return 0;
}

Value mixed_precision::makeCast(OpBuilder &b, Location loc, Value v,
                                Type elem) {
  auto t = cast<TensorType>(v.getType());
  auto c = onnxops::CastOp::create(b, loc, t.clone(elem), v, "up", 1,
                                   onnxTypeCode(elem));
  c->setAttr(kCastMarker, b.getUnitAttr());
  return c.getResult();
}

Value Converter::convert(Value f32Constant) {
  return convertTo(f32Constant, half);
}

Value Converter::convertTo(Value constant, FloatType elem) {
  auto key = std::make_pair(constant, Type(elem));
  if (Value v = cache.lookup(key))
    return v;
  auto cst = constant.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  if (!cst || !type || !type.hasStaticShape())
    return {};
  auto newType = RankedTensorType::get(type.getShape(), elem);
  int64_t n = type.getNumElements();
  unsigned bytes = elem.getWidth() / 8;
  Attribute attr = cst.getValue();
  Attribute result;
  bool toHalf = elem.isF16() || elem.isBF16();
  if (type.getElementType().isF32() && toHalf) {
    // The fast path: weights, possibly tens of millions of values.
    std::vector<uint16_t> bits;
    bits.reserve(n);
    bool ok = forEachF32(constant, [&](float x) {
      bits.push_back(elem.isF16() ? f32ToF16Bits(x) : f32ToBF16Bits(x));
    });
    if (!ok)
      return {};
    ArrayRef<char> raw(reinterpret_cast<const char *>(bits.data()),
                       bits.size() * 2);
    if (auto r = dyn_cast<DenseResourceElementsAttr>(attr)) {
      std::string name =
          (r.getRawHandle().getKey() + "_" + (elem.isF16() ? "f16" : "bf16"))
              .str();
      AsmResourceBlob blob =
          HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t));
      result = DenseResourceElementsAttr::get(newType, name, std::move(blob));
    } else {
      result = DenseElementsAttr::getFromRawBuffer(newType, raw);
    }
  } else {
    // Other float conversions (cast folding of small constants).
    if (n > 4096)
      return {};
    std::optional<SmallVector<double>> vals =
        onnxops::getConstantFloatValues(constant);
    if (!vals || static_cast<int64_t>(vals->size()) != n)
      return {};
    SmallVector<APFloat> out;
    for (double x : *vals) {
      APFloat a(x);
      bool lost;
      a.convert(elem.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back(a);
    }
    result = DenseElementsAttr::get(newType, out);
  }
  OpBuilder b(cst);
  b.setInsertionPointAfter(cst);
  Value v = arith::ConstantOp::create(b, cst.getLoc(), cast<TypedAttr>(result));
  cache[key] = v;
  ++numConverted;
  convertedBytes += n * bytes;
  return v;
}

//===----------------------------------------------------------------------===//
// Cast cleanup
//===----------------------------------------------------------------------===//

static Type elementOf(Value v) {
  auto t = dyn_cast<TensorType>(v.getType());
  return t ? t.getElementType() : Type();
}

/// A → B is exact for every value (a widening between float types).
static bool isExactWidening(Type a, Type b) {
  auto fa = dyn_cast_or_null<FloatType>(a), fb = dyn_cast_or_null<FloatType>(b);
  if (!fa || !fb)
    return false;
  if (fa == fb)
    return true;
  if (fb.isF64())
    return fa.isF32() || fa.isF16() || fa.isBF16();
  if (fb.isF32())
    return fa.isF16() || fa.isBF16();
  return false;
}

static bool isDataMovement(Operation *op) {
  static const llvm::StringSet<> ops = {"onnx.Reshape",   "onnx.Transpose",
                                        "onnx.Flatten",   "onnx.Squeeze",
                                        "onnx.Unsqueeze", "onnx.Concat"};
  return ops.contains(op->getName().getStringRef()) && op->getNumResults() == 1;
}

static StringRef precisionName(Type t) {
  if (t.isF16())
    return "fp16";
  if (t.isBF16())
    return "bf16";
  if (t.isF32())
    return "fp32";
  return "other";
}

LogicalResult mixed_precision::cleanupCasts(func::FuncOp func,
                                            Converter &converter) {
  Block &body = func.getBody().front();
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    SmallVector<onnxops::CastOp> casts;
    for (Operation &op : body)
      if (auto c = dyn_cast<onnxops::CastOp>(op))
        casts.push_back(c);
    llvm::SmallPtrSet<Operation *, 16> erased;
    for (onnxops::CastOp c : casts) {
      if (erased.count(c))
        continue;
      Value x = c.getInput();
      auto to = dyn_cast_or_null<FloatType>(elementOf(c.getResult()));
      auto from = dyn_cast_or_null<FloatType>(elementOf(x));
      if (!to || !from || !isa<RankedTensorType>(x.getType()))
        continue;
      OpBuilder b(c);
      // Cast of a constant: convert at compile time.
      if (x.getDefiningOp<arith::ConstantOp>()) {
        if (Value v = converter.convertTo(x, to)) {
          c.getResult().replaceAllUsesWith(v);
          erased.insert(c);
          c.erase();
          changed = true;
        }
        continue;
      }
      // Cast of a cast through an exact middle type.
      if (auto inner = x.getDefiningOp<onnxops::CastOp>()) {
        Value y = inner.getInput();
        if (isExactWidening(elementOf(y), from)) {
          Value r = elementOf(y) == to ? y : makeCast(b, c.getLoc(), y, to);
          c.getResult().replaceAllUsesWith(r);
          erased.insert(c);
          c.erase();
          if (inner->use_empty()) {
            erased.insert(inner);
            inner.erase();
          }
          changed = true;
        }
        continue;
      }
      // Hoist through a single-use data-movement op.
      Operation *d = x.getDefiningOp();
      if (!d || !isDataMovement(d) || !x.hasOneUse())
        continue;
      bool concat = isa<onnxops::ConcatOp>(d);
      SmallVector<unsigned> data;
      for (unsigned i = 0; i < (concat ? d->getNumOperands() : 1u); ++i)
        data.push_back(i);
      bool narrowing = to.getWidth() < from.getWidth();
      bool meets = llvm::all_of(data, [&](unsigned i) {
        Value o = d->getOperand(i);
        if (o.getDefiningOp<arith::ConstantOp>())
          return true;
        auto ic = o.getDefiningOp<onnxops::CastOp>();
        return ic && isExactWidening(elementOf(ic.getInput()), from) &&
               elementOf(ic.getInput()) == Type(to);
      });
      if (!narrowing && !meets)
        continue;
      if (llvm::any_of(data, [&](unsigned i) {
            return elementOf(d->getOperand(i)) != Type(from);
          }))
        continue;
      OpBuilder bd(d);
      SmallVector<Value> operands(d->getOperands());
      bool ok = true;
      for (unsigned i : data) {
        Value o = operands[i];
        Value nv;
        if (o.getDefiningOp<arith::ConstantOp>())
          nv = converter.convertTo(o, to);
        if (!nv)
          nv = makeCast(bd, c.getLoc(), o, to);
        ok &= static_cast<bool>(nv);
        operands[i] = nv;
      }
      if (!ok)
        continue;
      Operation *nd = bd.clone(*d);
      nd->setOperands(operands);
      nd->getResult(0).setType(
          cast<TensorType>(d->getResult(0).getType()).clone(to));
      if (d->hasAttr("kiln.precision")) {
        nd->setAttr("kiln.precision", bd.getStringAttr(precisionName(to)));
        if (to.isF32())
          nd->setAttr("kiln.fp32_reason",
                      bd.getStringAttr("inputs: follows its fp32 inputs"));
        else
          nd->removeAttr("kiln.fp32_reason");
      }
      c.getResult().replaceAllUsesWith(nd->getResult(0));
      erased.insert(c);
      c.erase();
      d->erase();
      changed = true;
    }
    // Casts left without users.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<onnxops::CastOp>(op) && op.hasAttr(kCastMarker) && op.use_empty())
        op.erase();
    if (!changed)
      break;
  }
  return success();
}
