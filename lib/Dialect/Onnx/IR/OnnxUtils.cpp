//===- OnnxUtils.cpp - Helpers for onnx ops -------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln::onnxops;

bool mlir::kiln::onnxops::isNoValue(Value v) {
  return v && (isa<NoneType>(v.getType()) || v.getDefiningOp<NoValueOp>());
}

bool mlir::kiln::onnxops::movesElements(Operation *op) {
  return isa<SplitOp, SliceOp, ReshapeOp, TransposeOp, SqueezeOp, UnsqueezeOp,
             FlattenOp, IdentityOp>(op);
}

/// The constant attribute behind `v`: arith.constant or onnx.Constant.
static Attribute getConstantAttr(Value v) {
  if (!v)
    return {};
  if (auto cst = v.getDefiningOp<arith::ConstantOp>())
    return cst.getValue();
  if (auto cst = v.getDefiningOp<ConstantOp>())
    return cst.getValueAttr();
  return {};
}

/// Raw little-endian bytes of a dense_resource attribute, if its blob is
/// available.
static std::optional<ArrayRef<char>>
getResourceData(DenseResourceElementsAttr attr) {
  DialectResourceBlobHandle<BuiltinDialect> handle = attr.getRawHandle();
  AsmResourceBlob *blob = handle.getBlob();
  if (!blob)
    return std::nullopt;
  return blob->getData();
}

template <typename T> static T readScalar(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::optional<SmallVector<int64_t>>
mlir::kiln::onnxops::getConstantIntValues(Value v) {
  Attribute attr = getConstantAttr(v);
  auto shaped = dyn_cast_or_null<ShapedType>(
      attr ? cast<TypedAttr>(attr).getType() : Type());
  if (!shaped || !shaped.hasStaticShape())
    return std::nullopt;
  auto intTy = dyn_cast<IntegerType>(shaped.getElementType());
  if (!intTy)
    return std::nullopt;
  bool isUnsigned = intTy.isUnsigned() || intTy.getWidth() == 1;
  SmallVector<int64_t> result;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    result.reserve(shaped.getNumElements());
    for (const APInt &x : dense.getValues<APInt>())
      result.push_back(isUnsigned ? (int64_t)x.getZExtValue()
                                  : x.getSExtValue());
    return result;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return std::nullopt;
  std::optional<ArrayRef<char>> data = getResourceData(resource);
  if (!data)
    return std::nullopt;
  unsigned width = intTy.getWidth();
  unsigned bytes = width == 1 ? 1 : width / 8;
  if ((width != 1 && width % 8 != 0) || width > 64)
    return std::nullopt;
  int64_t n = shaped.getNumElements();
  if ((int64_t)data->size() < n * (int64_t)bytes)
    return std::nullopt;
  result.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const char *p = data->data() + i * bytes;
    uint64_t raw = 0;
    std::memcpy(&raw, p, bytes); // Little-endian host.
    APInt x(width == 1 ? 8 : width, raw);
    result.push_back(isUnsigned ? (int64_t)x.getZExtValue() : x.getSExtValue());
  }
  return result;
}

std::optional<SmallVector<double>>
mlir::kiln::onnxops::getConstantFloatValues(Value v) {
  Attribute attr = getConstantAttr(v);
  auto shaped = dyn_cast_or_null<ShapedType>(
      attr ? cast<TypedAttr>(attr).getType() : Type());
  if (!shaped || !shaped.hasStaticShape())
    return std::nullopt;
  auto floatTy = dyn_cast<FloatType>(shaped.getElementType());
  if (!floatTy)
    return std::nullopt;
  SmallVector<double> result;
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
    result.reserve(shaped.getNumElements());
    for (const APFloat &x : dense.getValues<APFloat>())
      result.push_back(x.convertToDouble());
    return result;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return std::nullopt;
  std::optional<ArrayRef<char>> data = getResourceData(resource);
  if (!data)
    return std::nullopt;
  unsigned width = floatTy.getWidth();
  if (width % 8 != 0 || width > 64)
    return std::nullopt;
  unsigned bytes = width / 8;
  int64_t n = shaped.getNumElements();
  if ((int64_t)data->size() < n * (int64_t)bytes)
    return std::nullopt;
  result.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, data->data() + i * bytes, bytes);
    APFloat x(floatTy.getFloatSemantics(), APInt(width, raw));
    result.push_back(x.convertToDouble());
  }
  return result;
}

FailureOr<SmallVector<int64_t>>
mlir::kiln::onnxops::broadcastShapes(ArrayRef<int64_t> lhs,
                                     ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    bool aDyn = ShapedType::isDynamic(a), bDyn = ShapedType::isDynamic(b);
    if (!aDyn && !bDyn) {
      if (a != b && a != 1 && b != 1)
        return failure();
      result[i] = a == 1 ? b : a;
    } else if (aDyn && bDyn) {
      result[i] = ShapedType::kDynamic;
    } else {
      // One side is dynamic: the static side decides unless it is 1.
      int64_t known = aDyn ? b : a;
      result[i] = known == 1 ? ShapedType::kDynamic : known;
    }
  }
  return result;
}

FailureOr<int64_t> mlir::kiln::onnxops::normalizeAxis(int64_t axis,
                                                      int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

Type mlir::kiln::onnxops::getElementTypeForOnnxDataType(MLIRContext *ctx,
                                                        int64_t dataType) {
  Builder b(ctx);
  auto sint = [&](unsigned w) { return b.getIntegerType(w); };
  auto uint = [&](unsigned w) {
    return IntegerType::get(ctx, w, IntegerType::Unsigned);
  };
  // onnx.TensorProto.DataType.
  switch (dataType) {
  case 1:
    return b.getF32Type();
  case 2:
    return uint(8);
  case 3:
    return sint(8);
  case 4:
    return uint(16);
  case 5:
    return sint(16);
  case 6:
    return sint(32);
  case 7:
    return sint(64);
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return uint(32);
  case 13:
    return uint(64);
  case 14:
    return ComplexType::get(b.getF32Type());
  case 15:
    return ComplexType::get(b.getF64Type());
  case 16:
    return b.getBF16Type();
  case 17:
    return b.getType<Float8E4M3FNType>();
  case 18:
    return b.getType<Float8E4M3FNUZType>();
  case 19:
    return b.getType<Float8E5M2Type>();
  case 20:
    return b.getType<Float8E5M2FNUZType>();
  case 21:
    return uint(4);
  case 22:
    return sint(4);
  case 23:
    return b.getType<Float4E2M1FNType>();
  case 24:
    return b.getType<Float8E8M0FNUType>();
  case 25:
    return uint(2);
  case 26:
    return sint(2);
  default:
    return {}; // 0 UNDEFINED, 8 STRING, unknown.
  }
}

FailureOr<Type> mlir::kiln::onnxops::refineType(Type current, Type inferred) {
  if (!inferred || current == inferred)
    return current;
  auto cur = dyn_cast<TensorType>(current);
  auto inf = dyn_cast<TensorType>(inferred);
  if (!cur || !inf)
    return failure();
  if (cur.getElementType() != inf.getElementType())
    return failure();
  if (!inf.hasRank())
    return current;
  if (!cur.hasRank())
    return inferred;
  auto curR = cast<RankedTensorType>(cur);
  if (curR.getRank() != inf.getRank())
    return failure();
  SmallVector<int64_t> dims;
  for (auto [c, i] : llvm::zip(curR.getShape(), inf.getShape())) {
    if (!ShapedType::isDynamic(c) && !ShapedType::isDynamic(i) && c != i)
      return failure();
    dims.push_back(ShapedType::isDynamic(c) ? i : c);
  }
  return Type(
      RankedTensorType::get(dims, curR.getElementType(), curR.getEncoding()));
}

LogicalResult mlir::kiln::onnxops::refineResultType(Operation *op,
                                                    unsigned index,
                                                    Type inferred) {
  OpResult result = op->getResult(index);
  FailureOr<Type> refined = refineType(result.getType(), inferred);
  if (failed(refined))
    return op->emitOpError()
           << "result #" << index << " of type " << result.getType()
           << " is incompatible with the inferred type " << inferred;
  result.setType(*refined);
  return success();
}

Type mlir::kiln::onnxops::makeTensorType(std::optional<ArrayRef<int64_t>> shape,
                                         Type elementType) {
  if (!shape)
    return UnrankedTensorType::get(elementType);
  return RankedTensorType::get(*shape, elementType);
}

LogicalResult mlir::kiln::onnxops::applyInferredResultTypes(
    Operation *op, FailureOr<SmallVector<Type>> inferred) {
  if (failed(inferred))
    return failure();
  assert(inferred->size() <= op->getNumResults() && "too many inferred types");
  for (auto [i, type] : llvm::enumerate(*inferred))
    if (failed(refineResultType(op, i, type)))
      return failure();
  return success();
}

LogicalResult mlir::kiln::onnxops::verifyInferredResultTypes(
    Operation *op, FailureOr<SmallVector<Type>> inferred) {
  if (failed(inferred))
    return failure();
  for (auto [i, type] : llvm::enumerate(*inferred)) {
    Type current = op->getResult(i).getType();
    if (failed(refineType(current, type)))
      return op->emitOpError()
             << "result #" << i << " of type " << current
             << " is incompatible with the inferred type " << type;
  }
  return success();
}

std::optional<ArrayRef<int64_t>> mlir::kiln::onnxops::getShapeOf(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  if (!shaped || !shaped.hasRank())
    return std::nullopt;
  return shaped.getShape();
}

bool mlir::kiln::onnxops::isChannelsLast(Operation *op) {
  return op->hasAttr(kChannelsLastAttr);
}

bool mlir::kiln::onnxops::isFilterFirst(Operation *op) {
  return isChannelsLast(op) && op->hasAttr(kFilterFirstAttr);
}

SmallVector<int64_t> mlir::kiln::onnxops::permuteShape(ArrayRef<int64_t> shape,
                                                       ArrayRef<int64_t> perm) {
  SmallVector<int64_t> r;
  for (int64_t p : perm)
    r.push_back(shape[p]);
  return r;
}

SmallVector<int64_t>
mlir::kiln::onnxops::invertPermutation(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> r(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    r[p] = i;
  return r;
}

SmallVector<int64_t>
mlir::kiln::onnxops::channelsLastPermutation(int64_t rank) {
  SmallVector<int64_t> r = {0};
  for (int64_t i = 2; i < rank; ++i)
    r.push_back(i);
  r.push_back(1);
  return r;
}

SmallVector<int64_t>
mlir::kiln::onnxops::channelsFirstPermutation(int64_t rank) {
  return invertPermutation(channelsLastPermutation(rank));
}

SmallVector<int64_t>
mlir::kiln::onnxops::kernelLastWeightPermutation(int64_t rank) {
  SmallVector<int64_t> r;
  for (int64_t i = 2; i < rank; ++i)
    r.push_back(i);
  r.push_back(1);
  r.push_back(0);
  return r;
}

std::optional<int64_t> mlir::kiln::onnxops::matchSqueezeIfSizeOne(IfOp op) {
  // cond = Equal(Gather(Shape(x), k), 1), either operand order.
  auto eq = op->getOperand(0).getDefiningOp<EqualOp>();
  if (!eq)
    return std::nullopt;
  Value lhs = eq->getOperand(0), rhs = eq->getOperand(1);
  auto isOne = [](Value v) {
    std::optional<SmallVector<int64_t>> c = getConstantIntValues(v);
    return c && c->size() == 1 && (*c)[0] == 1;
  };
  if (isOne(lhs))
    std::swap(lhs, rhs);
  if (!isOne(rhs))
    return std::nullopt;
  auto gather = lhs.getDefiningOp<GatherOp>();
  if (!gather)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> k =
      getConstantIntValues(gather->getOperand(1));
  auto shape = gather->getOperand(0).getDefiningOp<ShapeOp>();
  if (!k || k->size() != 1 || !shape || shape.getStart() != 0 || shape.getEnd())
    return std::nullopt;
  Value x = shape.getData();
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  if (!xt)
    return std::nullopt;
  FailureOr<int64_t> axis = normalizeAxis((*k)[0], xt.getRank());
  if (failed(axis))
    return std::nullopt;
  // then: Squeeze(x, [k]); else: x or Identity(x).
  auto yielded = [](Region &r) -> Value {
    if (r.empty() || r.front().empty())
      return Value();
    Operation *y = r.front().getTerminator();
    return y->getNumOperands() == 1 ? y->getOperand(0) : Value();
  };
  Value t = yielded(op->getRegion(0)), e = yielded(op->getRegion(1));
  if (!t || !e)
    return std::nullopt;
  auto squeeze = t.getDefiningOp<SqueezeOp>();
  if (!squeeze || squeeze->getOperand(0) != x)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> axes =
      getConstantIntValues(squeeze->getOperand(1));
  if (!axes || axes->size() != 1 ||
      normalizeAxis((*axes)[0], xt.getRank()) != *axis)
    return std::nullopt;
  if (auto id = e.getDefiningOp<IdentityOp>())
    e = id->getOperand(0);
  if (e != x)
    return std::nullopt;
  return *axis;
}

std::optional<bool> mlir::kiln::onnxops::takenBranch(IfOp op) {
  if (auto taken = op->getAttrOfType<IntegerAttr>(kTakenBranchAttr))
    return taken.getInt() == 0;
  return std::nullopt;
}

std::optional<int64_t> mlir::kiln::onnxops::squeezedAxis(IfOp op) {
  if (auto axis = op->getAttrOfType<IntegerAttr>(kSqueezeIfAttr))
    return axis.getInt();
  return std::nullopt;
}
