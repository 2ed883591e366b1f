//===- InferShapesUtils.h - Helpers of the InferShapes files ----*- C++ -*-===//
//
// Small helpers shared by the shape inference files of several op families
// (InferShapes<Family>.cpp; the families are listed in OnnxFamilies.def).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_DIALECT_ONNX_IR_INFERSHAPESUTILS_H
#define KILN_LIB_DIALECT_ONNX_IR_INFERSHAPESUTILS_H

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

namespace mlir::kiln::onnxops::infer {

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

inline Type elemOf(Value v) { return getElementTypeOrSelf(v.getType()); }

/// Operand `i` of `op` exists and is not onnx.NoValue.
inline bool present(Operation *op, unsigned i) {
  return i < op->getNumOperands() && !isNoValue(op->getOperand(i));
}

/// The static length of a 1-D operand.
inline std::optional<int64_t> staticLength(Value v) {
  std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
  if (!s || s->size() != 1 || ShapedType::isDynamic((*s)[0]))
    return std::nullopt;
  return (*s)[0];
}

inline SmallVector<int64_t> intsAttr(Operation *op, StringRef name) {
  SmallVector<int64_t> r;
  if (auto a = op->getAttrOfType<ArrayAttr>(name))
    for (Attribute e : a)
      r.push_back(cast<IntegerAttr>(e).getInt());
  return r;
}

inline int64_t intAttr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return dflt;
}

inline StringRef strAttr(Operation *op, StringRef name, StringRef dflt) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.getValue();
  return dflt;
}

inline InferredTypes one(Type t) { return SmallVector<Type>{t}; }

inline InferredTypes unranked(Type elem) {
  return one(UnrankedTensorType::get(elem));
}

inline InferredTypes ranked(ArrayRef<int64_t> shape, Type elem) {
  return one(RankedTensorType::get(shape, elem));
}

/// The input's type with element type `elem`.
inline InferredTypes sameShape(Value v, Type elem) {
  return one(makeTensorType(getShapeOf(v), elem));
}

/// Normalized `axes` for `rank`, no repeats; failure (with an error) else.
inline FailureOr<SmallVector<int64_t>>
normalizeAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> r;
  for (int64_t a : axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank);
    if (failed(n))
      return op->emitOpError()
             << "axis " << a << " is out of range for rank " << rank;
    if (llvm::is_contained(r, *n))
      return op->emitOpError() << "axis " << a << " is repeated";
    r.push_back(*n);
  }
  return r;
}

inline SmallVector<int64_t> allAxes(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}

/// The op's optional `axes` attribute normalized for `rank` (all axes when
/// absent); failure (with an error) for an out-of-range or repeated axis.
inline FailureOr<SmallVector<int64_t>> axesAttrOrAll(Operation *op,
                                                     int64_t rank) {
  if (!op->hasAttr("axes"))
    return allAxes(rank);
  return normalizeAxes(op, intsAttr(op, "axes"), rank);
}

inline int64_t mulDim(int64_t d, int64_t f) {
  return ShapedType::isDynamic(d) ? kDynamic : d * f;
}

/// Numpy matmul of shapes (1-D operands promoted and the added dim dropped).
inline FailureOr<SmallVector<int64_t>>
matmulShape(Operation *op, ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.empty() || b.empty())
    return op->emitOpError("matrix operands must have rank >= 1");
  SmallVector<int64_t> aS(a), bS(b);
  bool aVec = aS.size() == 1, bVec = bS.size() == 1;
  if (aVec)
    aS.insert(aS.begin(), 1);
  if (bVec)
    bS.push_back(1);
  int64_t k1 = aS.back(), k2 = bS[bS.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return op->emitOpError()
           << "inner dimensions mismatch: " << k1 << " and " << k2;
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef(aS).drop_back(2), ArrayRef(bS).drop_back(2));
  if (failed(batch))
    return op->emitOpError("batch dimensions are not broadcast-compatible");
  SmallVector<int64_t> out(*batch);
  if (!aVec)
    out.push_back(aS[aS.size() - 2]);
  if (!bVec)
    out.push_back(bS.back());
  return out;
}

/// Numpy broadcast of the present `operands`; the result has element type
/// `elemTy` (unranked when a rank is unknown).
inline InferredTypes inferNaryBroadcast(Operation *op, ValueRange operands,
                                        Type elemTy) {
  std::optional<SmallVector<int64_t>> shape = SmallVector<int64_t>{};
  for (Value v : operands) {
    if (isNoValue(v))
      continue;
    std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
    if (!s)
      return SmallVector<Type>{UnrankedTensorType::get(elemTy)};
    FailureOr<SmallVector<int64_t>> b = broadcastShapes(*shape, *s);
    if (failed(b))
      return op->emitOpError()
             << "operands are not broadcast-compatible: " << v.getType();
    shape = *b;
  }
  return SmallVector<Type>{RankedTensorType::get(*shape, elemTy)};
}

/// Broadcast of all operands with a common element type.
inline InferredTypes inferSameElemBroadcast(Operation *op,
                                            Type resultElem = {}) {
  Type elem;
  for (Value v : op->getOperands()) {
    if (isNoValue(v))
      continue;
    Type e = getElementTypeOrSelf(v.getType());
    if (elem && e != elem)
      return op->emitOpError()
             << "operands have different element types: " << elem << " and "
             << e;
    elem = e;
  }
  return inferNaryBroadcast(op, op->getOperands(),
                            resultElem ? resultElem : elem);
}

inline Type withElem(Type t, Type elem) {
  if (auto r = dyn_cast<RankedTensorType>(t))
    return RankedTensorType::get(r.getShape(), elem);
  return UnrankedTensorType::get(elem);
}

} // namespace mlir::kiln::onnxops::infer

#endif // KILN_LIB_DIALECT_ONNX_IR_INFERSHAPESUTILS_H
