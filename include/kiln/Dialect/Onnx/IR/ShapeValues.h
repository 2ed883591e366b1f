//===- ShapeValues.h - What shape arithmetic computes ------------*- C++ -*-===//
//
// Shape inference of the ops that take a shape as a tensor (Reshape, Expand,
// ConstantOfShape, Tile, Resize's sizes, ...) reads that tensor through the
// shape arithmetic that computed it: Shape → Gather / Slice / Concat /
// Unsqueeze / Squeeze / Cast → Add / Sub / Mul / Div / Max / Min (and the
// comparisons Equal / Greater / Less / And / Or / Not of conditions). Each
// element is then a known integer (a static dim, a constant, or arithmetic on
// those), the dynamic dim `axis` of a value, or unknown. So a static channel
// count survives `Reshape(x, Concat(Shape(x)[0:1], [64], Shape(x)[2:]))` and a
// -1 resolves when the dynamic dims it leaves cancel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_ONNX_IR_SHAPEVALUES_H
#define KILN_DIALECT_ONNX_IR_SHAPEVALUES_H

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::kiln::onnxops {

/// One element of a shape tensor as shape inference knows it.
struct ShapeElement {
  /// The element's value when known at compile time.
  std::optional<int64_t> value;
  /// Otherwise, when set: the element is dim `axis` of `source` (dynamic).
  Value source;
  int64_t axis = -1;

  static ShapeElement known(int64_t v) { return {v, Value(), -1}; }
  static ShapeElement dimOf(Value source, int64_t axis) {
    return {std::nullopt, source, axis};
  }
  static ShapeElement unknown() { return {}; }
  bool isDimOf() const { return !value && source; }
  bool operator==(const ShapeElement &o) const {
    return value == o.value && source == o.source && axis == o.axis;
  }
};

/// The elements of `v`, a 0-D or 1-D integer tensor of static length, as far
/// as the shape arithmetic that computed it is known; std::nullopt when its
/// length is not static (or it is not such a tensor).
std::optional<SmallVector<ShapeElement>> evaluateShapeValue(Value v);

/// The value of a one-element boolean or integer condition computed from
/// shapes (If(Not(Equal(Size(Shape(x)), 3))), torch's "is batched" test),
/// when known at compile time.
std::optional<bool> evaluateCondition(Value cond);

/// Static dims from shape elements (the known values; dynamic otherwise);
/// negative known values stay as they are (callers give them meaning).
SmallVector<int64_t> staticDimsOf(ArrayRef<ShapeElement> elements);

} // namespace mlir::kiln::onnxops

#endif // KILN_DIALECT_ONNX_IR_SHAPEVALUES_H
