//===- Simplify.cpp - Graph simplification at the onnx level --------------===//
//
//  - constant folding of small tensors, shape arithmetic included
//    (Shape → Gather → Concat → Reshape chains become constants when the
//    shapes are known);
//  - algebraic identities (Identity, inference Dropout, Cast to the same type,
//    identity Transpose/Reshape, Reshape of Reshape, x·1, x+0);
//  - BatchNormalization folded into the Conv or Gemm before it, and a
//    constant per-channel Mul/Add after a Conv folded into its weights and
//    bias (exact in real arithmetic; rounding as in other compilers);
//  - dead code and common subexpressions (the onnx ops are Pure, so the
//    pipeline's CSE and canonicalizer remove them after this pass).
// Folded weights stay resource blobs, never large uniqued attributes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXSIMPLIFY
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using onnxops::isNoValue;

namespace {

/// A small constant tensor being folded: values as double (exact for the
/// integers of shape arithmetic) or int64.
struct Folded {
  SmallVector<int64_t> shape;
  Type elementType;
  SmallVector<double> f;
  SmallVector<int64_t> i;
  bool isInt() const { return !isa<FloatType>(elementType); }
  int64_t size() const { return isInt() ? i.size() : f.size(); }
};

constexpr int64_t kMaxFoldElements = 4096;

std::optional<Folded> readConstant(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldElements)
    return std::nullopt;
  Folded c;
  c.shape.assign(type.getShape().begin(), type.getShape().end());
  c.elementType = type.getElementType();
  if (c.isInt()) {
    if (!c.elementType.isSignlessInteger())
      return std::nullopt;
    auto vals = onnxops::getConstantIntValues(v);
    if (!vals)
      return std::nullopt;
    c.i = *vals;
  } else {
    auto vals = onnxops::getConstantFloatValues(v);
    if (!vals)
      return std::nullopt;
    c.f = *vals;
  }
  if (c.size() != type.getNumElements())
    return std::nullopt;
  return c;
}

Value materialize(OpBuilder &b, Location loc, const Folded &c) {
  auto type = RankedTensorType::get(c.shape, c.elementType);
  DenseElementsAttr attr;
  if (c.isInt()) {
    SmallVector<APInt> vals;
    unsigned width = c.elementType.getIntOrFloatBitWidth();
    for (int64_t x : c.i)
      vals.push_back(
          APInt(width, x, /*isSigned=*/true, /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, vals);
  } else {
    auto ft = cast<FloatType>(c.elementType);
    SmallVector<APFloat> vals;
    for (double x : c.f) {
      APFloat a(x);
      bool lost;
      a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(a);
    }
    attr = DenseElementsAttr::get(type, vals);
  }
  return arith::ConstantOp::create(b, loc, attr);
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Elementwise binary op with numpy broadcasting.
std::optional<Folded> foldBinary(StringRef op, const Folded &a,
                                 const Folded &b) {
  if (a.elementType != b.elementType)
    return std::nullopt;
  FailureOr<SmallVector<int64_t>> shape =
      onnxops::broadcastShapes(a.shape, b.shape);
  if (failed(shape))
    return std::nullopt;
  Folded r;
  r.shape = *shape;
  r.elementType = a.elementType;
  int64_t n = numElements(r.shape), rank = r.shape.size();
  SmallVector<int64_t> rs = stridesOf(r.shape);
  auto index = [&](const Folded &x, int64_t flat) {
    int64_t off = 0, xr = x.shape.size();
    SmallVector<int64_t> xs = stridesOf(x.shape);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t coord = (flat / rs[d]) % r.shape[d];
      int64_t xd = d - (rank - xr);
      if (xd >= 0 && x.shape[xd] != 1)
        off += coord * xs[xd];
    }
    return off;
  };
  for (int64_t k = 0; k < n; ++k) {
    int64_t ia = index(a, k), ib = index(b, k);
    if (r.isInt()) {
      int64_t x = a.i[ia], y = b.i[ib], z;
      if (op == "Add")
        z = x + y;
      else if (op == "Sub")
        z = x - y;
      else if (op == "Mul")
        z = x * y;
      else if (op == "Div") {
        if (y == 0)
          return std::nullopt;
        z = x / y;
      } else if (op == "Max")
        z = std::max(x, y);
      else if (op == "Min")
        z = std::min(x, y);
      else
        return std::nullopt;
      r.i.push_back(z);
    } else {
      double x = a.f[ia], y = b.f[ib], z;
      if (op == "Add")
        z = x + y;
      else if (op == "Sub")
        z = x - y;
      else if (op == "Mul")
        z = x * y;
      else if (op == "Div")
        z = x / y;
      else if (op == "Max")
        z = std::max(x, y);
      else if (op == "Min")
        z = std::min(x, y);
      else
        return std::nullopt;
      r.f.push_back(z);
    }
  }
  return r;
}

int64_t intAttr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return dflt;
}

/// Folds `op` when its inputs are small constants (or, for Shape, when the
/// input's shape is static). Returns the folded results or nullopt.
std::optional<SmallVector<Folded>> tryFold(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (!name.consume_front("onnx."))
    return std::nullopt;
  if (op->getNumResults() == 0)
    return std::nullopt;
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());

  if (name == "Shape") {
    auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!t || !t.hasStaticShape())
      return std::nullopt;
    int64_t rank = t.getRank();
    auto clampAxis = [&](int64_t a) {
      if (a < 0)
        a += rank;
      return std::clamp<int64_t>(a, 0, rank);
    };
    int64_t start = clampAxis(intAttr(op, "start", 0));
    int64_t end = clampAxis(intAttr(op, "end", rank));
    Folded r;
    r.elementType = IntegerType::get(op->getContext(), 64);
    for (int64_t i = start; i < end; ++i)
      r.i.push_back(t.getDimSize(i));
    r.shape = {static_cast<int64_t>(r.i.size())};
    return SmallVector<Folded>{r};
  }
  if (name == "Size") {
    auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!t || !t.hasStaticShape())
      return std::nullopt;
    Folded r;
    r.elementType = IntegerType::get(op->getContext(), 64);
    r.i = {t.getNumElements()};
    return SmallVector<Folded>{r};
  }

  // The rest need every (present) operand constant.
  SmallVector<std::optional<Folded>> in;
  for (Value v : op->getOperands()) {
    if (isNoValue(v)) {
      in.push_back(std::nullopt);
      continue;
    }
    std::optional<Folded> c = readConstant(v);
    if (!c)
      return std::nullopt;
    in.push_back(c);
  }
  if (in.empty() || !in[0] || !resultType || !resultType.hasStaticShape())
    return std::nullopt;
  const Folded &x = *in[0];

  if (name == "Add" || name == "Sub" || name == "Mul" || name == "Div") {
    if (in.size() != 2 || !in[1])
      return std::nullopt;
    auto r = foldBinary(name, x, *in[1]);
    if (!r)
      return std::nullopt;
    return SmallVector<Folded>{*r};
  }
  // Position ids and the like: a small Range of constants is a constant
  // (its consumers' index checks then need no kernel).
  if (name == "Range") {
    if (in.size() != 3 || !in[1] || !in[2] || x.size() != 1 ||
        in[1]->size() != 1 || in[2]->size() != 1 || !x.isInt())
      return std::nullopt;
    int64_t start = x.i[0], delta = in[2]->i[0];
    int64_t count = resultType.getNumElements();
    if (delta == 0)
      return std::nullopt;
    Folded r;
    r.elementType = resultType.getElementType();
    r.shape = {count};
    for (int64_t k = 0; k < count; ++k)
      r.i.push_back(start + k * delta);
    // The static length must be the one the operands give.
    int64_t limit = in[1]->i[0];
    int64_t expect = std::max<int64_t>(
        0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
    if (expect != count)
      return std::nullopt;
    return SmallVector<Folded>{r};
  }
  if (name == "Max" || name == "Min") {
    std::optional<Folded> acc = x;
    for (size_t k = 1; k < in.size() && acc; ++k)
      acc = in[k] ? foldBinary(name, *acc, *in[k]) : std::nullopt;
    if (!acc)
      return std::nullopt;
    return SmallVector<Folded>{*acc};
  }
  if (name == "Equal") {
    // Equal shapes or a one-element side (the conditions of If).
    if (in.size() != 2 || !in[1] || x.isInt() != in[1]->isInt())
      return std::nullopt;
    const Folded &y = *in[1];
    if (x.size() != y.size() && x.size() != 1 && y.size() != 1)
      return std::nullopt;
    Folded r;
    r.elementType = IntegerType::get(op->getContext(), 1);
    r.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    int64_t n = std::max(x.size(), y.size());
    if (numElements(r.shape) != n)
      return std::nullopt;
    for (int64_t k = 0; k < n; ++k) {
      int64_t a = x.size() == 1 ? 0 : k, c = y.size() == 1 ? 0 : k;
      r.i.push_back(x.isInt() ? x.i[a] == y.i[c] : x.f[a] == y.f[c]);
    }
    return SmallVector<Folded>{r};
  }
  if (name == "Neg") {
    Folded r = x;
    for (auto &v : r.i)
      v = -v;
    for (auto &v : r.f)
      v = -v;
    return SmallVector<Folded>{r};
  }
  if (name == "Identity" || name == "Reshape" || name == "Squeeze" ||
      name == "Unsqueeze" || name == "Flatten") {
    // Same data, the result's (inferred, static) shape.
    Folded r = x;
    r.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    if (numElements(r.shape) != r.size())
      return std::nullopt;
    return SmallVector<Folded>{r};
  }
  if (name == "Cast") {
    Folded r;
    r.shape = x.shape;
    r.elementType = resultType.getElementType();
    if (!isa<FloatType>(r.elementType) && !r.elementType.isSignlessInteger())
      return std::nullopt;
    for (int64_t k = 0; k < x.size(); ++k) {
      double v = x.isInt() ? static_cast<double>(x.i[k]) : x.f[k];
      if (r.isInt()) {
        if (!x.isInt() && !std::isfinite(v))
          return std::nullopt;
        int64_t iv = x.isInt() ? x.i[k] : static_cast<int64_t>(v);
        if (r.elementType.isInteger(1))
          iv = iv != 0 || (!x.isInt() && v != 0.0);
        r.i.push_back(iv);
      } else {
        r.f.push_back(v);
      }
    }
    return SmallVector<Folded>{r};
  }
  if (name == "Concat") {
    int64_t rank = x.shape.size();
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    Folded r;
    r.elementType = x.elementType;
    r.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    int64_t outer = numElements(ArrayRef<int64_t>(x.shape).take_front(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (auto &c : in) {
        if (!c || c->elementType != x.elementType)
          return std::nullopt;
        int64_t chunk =
            numElements(ArrayRef<int64_t>(c->shape).drop_front(axis));
        for (int64_t k = 0; k < chunk; ++k) {
          if (r.isInt())
            r.i.push_back(c->i[o * chunk + k]);
          else
            r.f.push_back(c->f[o * chunk + k]);
        }
      }
    if (r.size() != numElements(r.shape))
      return std::nullopt;
    return SmallVector<Folded>{r};
  }
  if (name == "Gather") {
    if (in.size() != 2 || !in[1] || !in[1]->isInt())
      return std::nullopt;
    int64_t rank = x.shape.size();
    int64_t axis = intAttr(op, "axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    const Folded &idx = *in[1];
    int64_t outer = numElements(ArrayRef<int64_t>(x.shape).take_front(axis));
    int64_t inner =
        numElements(ArrayRef<int64_t>(x.shape).drop_front(axis + 1));
    int64_t dim = x.shape[axis];
    Folded r;
    r.elementType = x.elementType;
    r.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : idx.i) {
        if (j < 0)
          j += dim;
        if (j < 0 || j >= dim)
          return std::nullopt; // out of range: leave it to the runtime
        for (int64_t k = 0; k < inner; ++k) {
          int64_t src = (o * dim + j) * inner + k;
          if (r.isInt())
            r.i.push_back(x.i[src]);
          else
            r.f.push_back(x.f[src]);
        }
      }
    if (r.size() != numElements(r.shape))
      return std::nullopt;
    return SmallVector<Folded>{r};
  }
  if (name == "Slice" && x.shape.size() == 1) {
    auto get = [&](size_t k) -> std::optional<int64_t> {
      if (k >= in.size() || !in[k])
        return std::nullopt;
      if (!in[k]->isInt() || in[k]->i.size() != 1)
        return std::nullopt;
      return in[k]->i[0];
    };
    std::optional<int64_t> s = get(1), e = get(2);
    int64_t step = get(4).value_or(1);
    if (!s || !e || step == 0)
      return std::nullopt;
    if (in.size() > 3 && in[3] &&
        (in[3]->i.size() != 1 || (in[3]->i[0] != 0 && in[3]->i[0] != -1)))
      return std::nullopt;
    int64_t n = x.shape[0];
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t st = step > 0 ? clamp(*s, 0, n) : clamp(*s, 0, n - 1);
    int64_t en = step > 0 ? clamp(*e, 0, n) : clamp(*e, -1, n - 1);
    Folded r;
    r.elementType = x.elementType;
    for (int64_t k = st; step > 0 ? k < en : k > en; k += step) {
      if (r.isInt())
        r.i.push_back(x.i[k]);
      else
        r.f.push_back(x.f[k]);
    }
    r.shape = {r.size()};
    if (r.shape != SmallVector<int64_t>(resultType.getShape()))
      return std::nullopt;
    return SmallVector<Folded>{r};
  }
  return std::nullopt;
}

/// A float32 constant as floats (any size), or nullopt.
std::optional<SmallVector<float>> readF32(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.getElementType().isF32() || !t.hasStaticShape())
    return std::nullopt;
  auto vals = onnxops::getConstantFloatValues(v);
  if (!vals || static_cast<int64_t>(vals->size()) != t.getNumElements())
    return std::nullopt;
  return SmallVector<float>(vals->begin(), vals->end());
}

/// A float32 constant of `shape`, as a resource blob when large.
Value makeF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
              ArrayRef<float> values, StringRef hint) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  if (values.size() <= 16)
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, values));
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float)),
      alignof(float));
  return arith::ConstantOp::create(
      b, loc, DenseResourceElementsAttr::get(type, hint, std::move(blob)));
}

struct SimplifyPass : public kiln::impl::KilnOnnxSimplifyBase<SimplifyPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Forward sweeps in program order: each op first gets its shapes from
    // its (already simplified) operands, then is simplified, so a chain of
    // shape computations folds in one sweep. Sweeps repeat until nothing
    // changes (a rewrite may expose more upstream, e.g. an inlined If).
    bool changed = true, failedInference = false;
    int rounds = 0;
    while (changed && !failedInference && rounds++ < 32) {
      changed = false;
      func.walk<WalkOrder::PostOrder>([&](Operation *op) {
        if (!op->getName().getStringRef().starts_with("onnx."))
          return WalkResult::advance();
        if (auto infer = dyn_cast<onnxops::InferShapesOpInterface>(op))
          if (failed(infer.inferShapes())) {
            failedInference = true;
            return WalkResult::interrupt();
          }
        // Each rewrite erases at most this op and ops before it, which a
        // post-order walk allows.
        if (inlineConstantIf(op) || simplifyIdentity(op) || foldConstants(op) ||
            foldIntoConv(op))
          changed = true;
        return WalkResult::advance();
      });
    }
    if (failedInference)
      return signalPassFailure();
    Operation *ret = func.getBody().back().getTerminator();
    func.setFunctionType(FunctionType::get(
        &getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
  }

  static void replace(Operation *op, ValueRange values) {
    for (auto [r, v] : llvm::zip(op->getResults(), values)) {
      if (r.getType() != v.getType()) {
        OpBuilder b(op);
        if (!isa<RankedTensorType>(v.getType()) ||
            !isa<TensorType>(r.getType()))
          return;
        v = tensor::CastOp::create(b, op->getLoc(), r.getType(), v);
      }
      r.replaceAllUsesWith(v);
    }
    if (op->use_empty())
      op->erase();
  }

  bool foldConstants(Operation *op) {
    if (op->getNumResults() != 1)
      return false;
    std::optional<SmallVector<Folded>> folded = tryFold(op);
    if (!folded)
      return false;
    OpBuilder b(op);
    SmallVector<Value> vals;
    for (const Folded &f : *folded)
      vals.push_back(materialize(b, op->getLoc(), f));
    replace(op, vals);
    return true;
  }

  /// An If whose condition is a constant becomes its taken branch: the
  /// branch's ops move before it, so shape inference and folding see them.
  bool inlineConstantIf(Operation *op) {
    if (!isa<onnxops::IfOp>(op))
      return false;
    std::optional<SmallVector<int64_t>> c =
        onnxops::getConstantIntValues(op->getOperand(0));
    if (!c || c->size() != 1)
      return false;
    Block &block = op->getRegion((*c)[0] ? 0 : 1).front();
    Operation *yield = block.getTerminator();
    if (yield->getNumOperands() != op->getNumResults())
      return false;
    SmallVector<Value> values(yield->getOperands());
    op->getBlock()->getOperations().splice(Block::iterator(op),
                                           block.getOperations(), block.begin(),
                                           Block::iterator(yield));
    OpBuilder b(op);
    for (auto [r, v] : llvm::zip(op->getResults(), values)) {
      // onnx users take the branch's value (shape inference refines them);
      // others (the return) keep the declared type through a cast.
      Value declared = v;
      if (r.getType() != v.getType() && isa<TensorType>(v.getType()) &&
          isa<TensorType>(r.getType()))
        declared = tensor::CastOp::create(b, op->getLoc(), r.getType(), v);
      r.replaceUsesWithIf(v, [&](OpOperand &use) {
        return use.getOwner()->getName().getStringRef().starts_with("onnx.");
      });
      r.replaceAllUsesWith(declared);
      if (declared != v && declared.use_empty())
        declared.getDefiningOp()->erase();
    }
    op->erase();
    return true;
  }

  bool simplifyIdentity(Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (op->getNumResults() == 0 || op->getNumOperands() == 0)
      return false;
    Value x = op->getOperand(0);
    Value r = op->getResult(0);
    bool sameType = x.getType() == r.getType();
    auto passThrough = [&]() {
      r.replaceAllUsesWith(x);
      if (op->use_empty())
        op->erase();
      return true;
    };
    if (name == "onnx.Identity" && sameType)
      return passThrough();
    if (name == "onnx.Dropout" && sameType) {
      // Inference: identity unless training_mode is a constant true.
      if (op->getNumOperands() > 2 && !isNoValue(op->getOperand(2))) {
        auto t = onnxops::getConstantIntValues(op->getOperand(2));
        if (!t || (t->size() == 1 && (*t)[0] != 0))
          return false;
      }
      if (op->getNumResults() > 1 && !op->getResult(1).use_empty())
        return false;
      return passThrough();
    }
    if (name == "onnx.Cast" && sameType)
      return passThrough();
    if ((name == "onnx.Reshape" || name == "onnx.Squeeze" ||
         name == "onnx.Unsqueeze" || name == "onnx.Flatten") &&
        sameType && cast<ShapedType>(x.getType()).hasStaticShape())
      return passThrough();
    if (name == "onnx.Transpose" && sameType) {
      auto perm = op->getAttrOfType<ArrayAttr>("perm");
      if (!perm)
        return false;
      for (auto [i, p] : llvm::enumerate(perm))
        if (cast<IntegerAttr>(p).getInt() != static_cast<int64_t>(i))
          return false;
      return passThrough();
    }
    if (name == "onnx.Reshape") {
      // Reshape(Reshape(y)) → Reshape(y).
      if (Operation *def = x.getDefiningOp())
        if (def->getName().getStringRef() == "onnx.Reshape" &&
            intAttr(op, "allowzero", 0) == 0 &&
            intAttr(def, "allowzero", 0) == 0) {
          auto shape = onnxops::getConstantIntValues(op->getOperand(1));
          if (shape &&
              llvm::none_of(*shape, [](int64_t d) { return d == 0; })) {
            op->setOperand(0, def->getOperand(0));
            if (def->use_empty())
              def->erase();
            return true;
          }
        }
    }
    if ((name == "onnx.Mul" || name == "onnx.Add") && sameType) {
      // x * 1 and x + 0 with a splat constant that doesn't broadcast x.
      auto c = readConstant(op->getOperand(1));
      double unit = name == "onnx.Mul" ? 1.0 : 0.0;
      if (c && c->size() > 0) {
        bool all =
            c->isInt()
                ? llvm::all_of(c->i, [&](int64_t v) { return v == unit; })
                : llvm::all_of(c->f, [&](double v) { return v == unit; });
        if (all)
          return passThrough();
      }
    }
    return false;
  }

  /// BatchNormalization (inference) after Conv or Gemm, or a per-channel
  /// constant Mul/Add after Conv: fold into the weights and bias.
  bool foldIntoConv(Operation *op) {
    StringRef name = op->getName().getStringRef();
    bool isBN = name == "onnx.BatchNormalization";
    bool isMul = name == "onnx.Mul", isAdd = name == "onnx.Add";
    if (!isBN && !isMul && !isAdd)
      return false;
    Value x = op->getOperand(0);
    Value constOperand;
    if (isMul || isAdd) {
      // Either operand may be the Conv result; the other is the constant.
      auto isConv = [](Value v) {
        Operation *d = v.getDefiningOp();
        return d && d->getName().getStringRef() == "onnx.Conv";
      };
      if (isConv(op->getOperand(0))) {
        constOperand = op->getOperand(1);
      } else if (isConv(op->getOperand(1))) {
        x = op->getOperand(1);
        constOperand = op->getOperand(0);
      } else {
        return false;
      }
    }
    Operation *producer = x.getDefiningOp();
    if (!producer || !x.hasOneUse())
      return false;
    StringRef pname = producer->getName().getStringRef();
    bool fromConv = pname == "onnx.Conv";
    bool fromGemm = pname == "onnx.Gemm" && isBN;
    if (!fromConv && !fromGemm)
      return false;
    if (isBN) {
      if (intAttr(op, "training_mode", 0) != 0)
        return false;
      for (unsigned i = 1; i < op->getNumResults(); ++i)
        if (!op->getResult(i).use_empty())
          return false;
    }
    auto wType = dyn_cast<RankedTensorType>(producer->getOperand(1).getType());
    if (!wType || !wType.hasStaticShape())
      return false;
    int64_t F = fromConv
                    ? wType.getDimSize(0)
                    : (intAttr(producer, "transB", 0) ? wType.getDimSize(0)
                                                      : wType.getDimSize(1));
    // Per-channel scale and shift: y = x * s + t.
    SmallVector<float> s(F, 1.0f), t(F, 0.0f);
    if (isBN) {
      auto scale = readF32(op->getOperand(1)),
           bias = readF32(op->getOperand(2));
      auto mean = readF32(op->getOperand(3)), var = readF32(op->getOperand(4));
      if (!scale || !bias || !mean || !var || (int64_t)scale->size() != F ||
          (int64_t)bias->size() != F || (int64_t)mean->size() != F ||
          (int64_t)var->size() != F)
        return false;
      double eps = 1e-5;
      if (auto a = op->getAttrOfType<FloatAttr>("epsilon"))
        eps = a.getValueAsDouble();
      for (int64_t c = 0; c < F; ++c) {
        s[c] = (*scale)[c] / std::sqrt((*var)[c] + static_cast<float>(eps));
        t[c] = (*bias)[c] - (*mean)[c] * s[c];
      }
    } else {
      // The constant must broadcast along the channel dim only: shape
      // [F, 1, ..., 1] or [1, F, 1, ..., 1] against NCHW, or a scalar.
      auto ct = dyn_cast<RankedTensorType>(constOperand.getType());
      auto rt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      auto vals = readF32(constOperand);
      if (!ct || !rt || !vals || !ct.hasStaticShape())
        return false;
      int64_t rank = rt.getRank();
      SmallVector<int64_t> cshape(ct.getShape());
      while ((int64_t)cshape.size() < rank)
        cshape.insert(cshape.begin(), 1);
      bool perChannel = (int64_t)cshape.size() == rank && rank >= 2;
      for (int64_t d = 0; perChannel && d < rank; ++d)
        if (d != 1 && cshape[d] != 1)
          perChannel = false;
      if (!perChannel || (cshape[1] != F && cshape[1] != 1))
        return false;
      for (int64_t c = 0; c < F; ++c) {
        float v = (*vals)[cshape[1] == 1 ? 0 : c];
        if (isMul)
          s[c] = v;
        else
          t[c] = v;
      }
    }
    auto w = readF32(producer->getOperand(1));
    if (!w)
      return false;
    Value biasIn = producer->getOperand(2);
    SmallVector<float> bias(F, 0.0f);
    if (!isNoValue(biasIn)) {
      auto bv = readF32(biasIn);
      if (!bv)
        return false;
      if ((int64_t)bv->size() == F)
        bias = *bv;
      else if (bv->size() == 1)
        bias.assign(F, (*bv)[0]);
      else
        return false; // Gemm C of another shape
    }
    // Scale the weights along the output channel.
    SmallVector<float> w2(*w);
    int64_t n = w2.size();
    if (fromConv) {
      int64_t per = n / F;
      for (int64_t c = 0; c < F; ++c)
        for (int64_t k = 0; k < per; ++k)
          w2[c * per + k] *= s[c];
    } else {
      bool transB = intAttr(producer, "transB", 0);
      int64_t K = n / F;
      for (int64_t c = 0; c < F; ++c)
        for (int64_t k = 0; k < K; ++k)
          w2[transB ? c * K + k : k * F + c] *= s[c];
      double beta = 1.0;
      if (auto a = producer->getAttrOfType<FloatAttr>("beta"))
        beta = a.getValueAsDouble();
      if (!isNoValue(biasIn))
        for (float &v : bias)
          v *= beta;
      producer->setAttr(
          "beta", FloatAttr::get(Float32Type::get(op->getContext()), 1.0));
    }
    SmallVector<float> b2(F);
    for (int64_t c = 0; c < F; ++c)
      b2[c] = bias[c] * s[c] + t[c];
    OpBuilder b(producer);
    Location loc = producer->getLoc();
    std::string hint = "folded_weights";
    if (auto nl = dyn_cast<NameLoc>(loc))
      hint = nl.getName().str() + "_w";
    Value newW = makeF32(b, loc, wType.getShape(), w2, hint);
    Value newB = makeF32(b, loc, {F}, b2, hint + "_bias");
    producer->setOperand(1, newW);
    producer->setOperand(2, newB);
    // The folded op's location joins the producer's (the report names both
    // nodes in one kernel).
    producer->setLoc(
        FusedLoc::get(op->getContext(), {producer->getLoc(), op->getLoc()}));
    Value y = producer->getResult(0);
    op->getResult(0).replaceAllUsesWith(y);
    op->erase();
    return true;
  }
};
} // namespace
