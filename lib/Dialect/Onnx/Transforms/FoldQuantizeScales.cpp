//===- FoldQuantizeScales.cpp - Scales into the ops that feed them --------===//
//
// kiln-onnx-fuse-qdq's scale folds (FuseQDQ.cpp's file comment): a
// LayerNormalization, or a product by a constant, that only a
// QuantizeLinear of one constant scale sy reads takes the 1 / sy into its
// constants, and the QuantizeLinear's scale becomes 1: no division an
// element.
//
//===----------------------------------------------------------------------===//

#include "QDQUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;
using namespace mlir::kiln::qdq;

namespace {

/// The QuantizeLinear of one constant scale sy other than 1 that alone
/// reads `v` (f32), and sy.
std::optional<std::pair<QuantizeLinearOp, double>> soleScaledQuantize(Value v) {
  auto q = dyn_cast_or_null<QuantizeLinearOp>(soleUser(v));
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!q || q.getX() != v || q.getBlockSizeAttr().getInt() != 0 || !t ||
      !t.getElementType().isF32())
    return std::nullopt;
  std::optional<double> sy = scalarOf(q.getYScale());
  if (!sy || !(*sy > 0) || !std::isfinite(*sy) || *sy == 1.0)
    return std::nullopt;
  return std::make_pair(q, *sy);
}

/// A new constant of `v`'s values (an f32 constant) divided by `sy`, each
/// rounded once to f32, before `at`.
std::optional<Value> dividedConstant(Value v, double sy, Operation *at) {
  std::optional<SmallVector<double>> values = getConstantFloatValues(v);
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!values || !t || !t.hasStaticShape() || !t.getElementType().isF32() ||
      static_cast<int64_t>(values->size()) != t.getNumElements())
    return std::nullopt;
  for (double &x : *values) {
    x = static_cast<float>(x / sy);
    if (!std::isfinite(x))
      return std::nullopt;
  }
  OpBuilder b(at);
  return valuesConstant(b, at->getLoc(), t.getShape(), t.getElementType(),
                        *values, hintOf(at, "_quantized"));
}

void setUnitScale(QuantizeLinearOp q) {
  OpBuilder b(q);
  q.getYScaleMutable().assign(
      valuesConstant(b, q.getLoc(), {}, b.getF32Type(), {1.0}, ""));
}

} // namespace

/// A LayerNormalization whose result only a QuantizeLinear of one
/// constant scale sy reads: its constant Scale and B take the 1 / sy, the
/// QuantizeLinear's scale becomes 1, so that the normalization's kernel
/// rounds (x - mean) · rstd · Scale' + B' without a division an element
/// (BERT-base's int8 build: two such LayerNormalizations a layer; the
/// division's correction was 4 of their kernel's 18 instructions an
/// element).
void qdq::foldLayerNormScale(LayerNormalizationOp ln) {
  if (!ln.getMean().use_empty() || !ln.getInvStdDev().use_empty())
    return;
  auto qs = soleScaledQuantize(ln.getY());
  if (!qs)
    return;
  std::optional<Value> scale = dividedConstant(ln.getScale(), qs->second, ln);
  if (!scale)
    return;
  std::optional<Value> bias;
  if (!isNoValue(ln.getB()) &&
      !(bias = dividedConstant(ln.getB(), qs->second, ln)))
    return;
  ln.getScaleMutable().assign(*scale);
  if (bias)
    ln.getBMutable().assign(*bias);
  setUnitScale(qs->first);
}

/// A product by a constant whose result only a QuantizeLinear of one
/// constant scale sy reads: the constant takes the 1 / sy and the
/// QuantizeLinear's scale becomes 1 (GELU's last product by 0.5 before
/// an int8 FFN1's requantization: kiln-erf-complement then folds c / sy
/// into its GELU, one product instead of the division's four
/// instructions an element).
void qdq::foldProductScale(MulOp mul) {
  auto qs = soleScaledQuantize(mul.getResult());
  if (!qs)
    return;
  for (int i = 0; i < 2; ++i) {
    Value c = mul->getOperand(i);
    if (!getConstantFloatValues(c))
      continue;
    std::optional<Value> divided = dividedConstant(c, qs->second, mul);
    if (!divided)
      return;
    mul->setOperand(i, *divided);
    setUnitScale(qs->first);
    return;
  }
}
