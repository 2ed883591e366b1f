//===- ConvertLayout.cpp - Channels-last convolutions and pools -----------===//
//
// The target's layout choice (Target::getPreferredLayout, docs/layout.md)
// applied to the graph. Every Conv becomes its channels-last form
// (onnxops::kChannelsLastAttr: N<spatial>C activations, <kernel>CF weights)
// between two transposes; the weights are permuted here when they are
// constants (raw bytes, any element type) and by a Transpose the host stage
// hoists into the load-time step when they are external. Then the
// transposes back to NC<spatial> sink through what does not care about the
// layout (elementwise ops, with their broadcast operands permuted or
// reshaped; Concat along the permuted axis), pools and global pools fed by
// one become channels-last too, and a transpose meeting the next
// convolution's transpose cancels. What is left are the transposes at the
// model's inputs and outputs (its interface keeps ONNX's layout) and where
// a value reaches an op that needs NC<spatial>.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXCONVERTLAYOUT
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;

namespace {

/// Ops that compute each element from the elements at the same (numpy
/// broadcast) position: the Elementwise and Logic families and Cast.
const llvm::StringSet<> &layoutFreeOps() {
  static const llvm::StringSet<> kOps = [] {
    llvm::StringSet<> s;
#define KILN_ONNX_OP(FAMILY, OP, INFER)                                        \
  if (StringRef(#FAMILY) == "Elementwise" || StringRef(#FAMILY) == "Logic")    \
    s.insert("onnx." #OP);
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"
#undef KILN_ONNX_OP
    // Dropout's mask and Shrink (no inference) stay out; Cast goes in.
    s.erase("onnx.Dropout");
    s.erase("onnx.Shrink");
    s.insert("onnx.Cast");
    return s;
  }();
  return kOps;
}

/// QuantizeLinear and DequantizeLinear with one scale and zero point: an
/// elementwise op of their first operand.
bool isPerTensorQDQ(Operation *op) {
  if (!isa<QuantizeLinearOp, DequantizeLinearOp>(op))
    return false;
  for (unsigned i = 1; i < op->getNumOperands(); ++i) {
    auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    if (!isNoValue(op->getOperand(i)) &&
        (!t || !t.hasStaticShape() || t.getNumElements() != 1))
      return false;
  }
  return true;
}

bool isPool(Operation *op) {
  return isa<MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp, GlobalMaxPoolOp>(
      op);
}

SmallVector<int64_t> permOf(TransposeOp t) {
  SmallVector<int64_t> perm;
  if (std::optional<ArrayAttr> p = t.getPerm())
    for (Attribute a : *p)
      perm.push_back(cast<IntegerAttr>(a).getInt());
  return perm;
}

bool isIdentity(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return false;
  return true;
}

/// True when `perm` moves only size-1 dims of `shape` (static): the
/// transpose is a reshape.
bool movesOnlyUnitDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return false;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

Type permuteType(Type t, ArrayRef<int64_t> perm) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || r.getRank() != static_cast<int64_t>(perm.size()))
    return t;
  return r.clone(permuteShape(r.getShape(), perm));
}

/// The constant attribute behind `v` (arith.constant or onnx.Constant).
ElementsAttr constantOf(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    return dyn_cast<ElementsAttr>(c.getValue());
  if (auto c = v.getDefiningOp<onnxops::ConstantOp>())
    return dyn_cast_or_null<ElementsAttr>(c.getValueAttr());
  return {};
}

/// `attr` (static shape `from`, byte-sized elements) as a constant of
/// `shape` holding the elements permuted by `perm`; `from` may have fewer
/// dims than `perm` (size-1 dims are prepended). Null when the bytes are
/// not at hand.
Value permuteConstant(OpBuilder &b, Location loc, ElementsAttr attr,
                      ArrayRef<int64_t> perm, StringRef hint) {
  auto type = cast<ShapedType>(attr.getType());
  Type elem = type.getElementType();
  if (!type.hasStaticShape() || !elem.isIntOrFloat() ||
      elem.getIntOrFloatBitWidth() % 8 != 0)
    return {};
  int64_t rank = perm.size();
  SmallVector<int64_t> from(rank - type.getRank(), 1);
  llvm::append_range(from, type.getShape());
  SmallVector<int64_t> to = permuteShape(from, perm);
  auto newType = RankedTensorType::get(to, elem);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat())
    return arith::ConstantOp::create(b, loc, dense.resizeSplat(newType));
  ArrayRef<char> data;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    data = dense.getRawData();
  } else if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return {};
    data = blob->getData();
  } else {
    return {};
  }
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t n = type.getNumElements();
  if (static_cast<int64_t>(data.size()) < n * bytes)
    return {};
  // Strides of the source dims, read in the order of the result's.
  SmallVector<int64_t> stride(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    stride[i] = stride[i + 1] * from[i + 1];
  std::vector<char> out(n * bytes);
  SmallVector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t src = 0;
    for (int64_t i = 0; i < rank; ++i)
      src += idx[i] * stride[perm[i]];
    std::memcpy(out.data() + o * bytes, data.data() + src * bytes, bytes);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < to[i])
        break;
      idx[i] = 0;
    }
  }
  if (n <= 16)
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::getFromRawBuffer(newType, out));
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      out, std::max<int64_t>(bytes, alignof(float)));
  return arith::ConstantOp::create(
      b, loc, DenseResourceElementsAttr::get(newType, hint, std::move(blob)));
}

TransposeOp createTranspose(OpBuilder &b, Location loc, Value x,
                            ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, permuteType(x.getType(), perm), x,
                             b.getI64ArrayAttr(perm));
}

/// `v` (static shape) reshaped to `shape`.
Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto shapeType = RankedTensorType::get({static_cast<int64_t>(shape.size())},
                                         b.getI64Type());
  Value s = arith::ConstantOp::create(b, loc,
                                      DenseElementsAttr::get(shapeType, shape));
  auto type = cast<RankedTensorType>(v.getType()).clone(shape);
  return ReshapeOp::create(b, loc, type, v, s, /*allowzero=*/uint64_t(0));
}

struct ConvertLayoutPass
    : public kiln::impl::KilnOnnxConvertLayoutBase<ConvertLayoutPass> {
  using Base::Base;

  /// The transposes this pass made (only these move; the model's own stay
  /// where the exporter put them).
  llvm::SetVector<Operation *> made;

  Value transpose(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
    TransposeOp t = createTranspose(b, loc, x, perm);
    made.insert(t);
    return t;
  }

  /// `x` permuted by `perm`: the constant permuted when it is one, else a
  /// Transpose.
  Value permuteValue(OpBuilder &b, Location loc, Value x,
                     ArrayRef<int64_t> perm, StringRef hint) {
    if (ElementsAttr c = constantOf(x))
      if (Value v = permuteConstant(b, loc, c, perm, hint))
        return v;
    return createTranspose(b, loc, x, perm);
  }

  static std::string hintOf(Operation *op, StringRef suffix) {
    if (auto nl = dyn_cast<NameLoc>(op->getLoc()))
      return (nl.getName().strref() + suffix).str();
    return ("layout" + suffix).str();
  }

  /// Conv → Transpose(channels-first, Conv'(Transpose(channels-last, x),
  /// W permuted)); ConvInteger alike (its zero points are per tensor or
  /// per filter: they stay).
  template <typename OpTy> void convertConv(OpTy op) {
    auto xt = dyn_cast<RankedTensorType>(op.getX().getType());
    auto wt = dyn_cast<RankedTensorType>(op.getW().getType());
    auto yt = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!xt || !wt || !yt || !wt.hasStaticShape() || isChannelsLast(op) ||
        xt.getRank() < 3 || xt.getRank() > 5 || wt.getRank() != xt.getRank() ||
        yt.getRank() != xt.getRank())
      return;
    if (isa<ConvOp>(op) && !isa<FloatType>(yt.getElementType()))
      return;
    int64_t rank = xt.getRank();
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value x = transpose(b, loc, op.getX(), channelsLastPermutation(rank));
    // 8-bit weights K-major where the target asks (its 8-bit matrix
    // instructions read B K-major only): permuted here, at compile time,
    // instead of by a launch every run.
    bool filterFirst = filterFirstInt8 && isa<ConvIntegerOp>(op) &&
                       static_cast<int64_t>(op.getGroup()) == 1;
    Value w =
        filterFirst
            ? permuteValue(b, loc, op.getW(), channelsLastPermutation(rank),
                           hintOf(op, "_w_fhwc"))
            : permuteValue(b, loc, op.getW(), kernelLastWeightPermutation(rank),
                           hintOf(op, "_w_hwcf"));
    Operation *conv = b.clone(*op);
    conv->setOperand(0, x);
    conv->setOperand(1, w);
    conv->setAttr(kChannelsLastAttr, b.getUnitAttr());
    if (filterFirst)
      conv->setAttr(kFilterFirstAttr, b.getUnitAttr());
    conv->getResult(0).setType(permuteType(yt, channelsLastPermutation(rank)));
    Value y =
        transpose(b, loc, conv->getResult(0), channelsFirstPermutation(rank));
    op->getResult(0).replaceAllUsesWith(y);
    op.erase();
  }

  /// An operand of a layout-free op whose result `t` (perm `perm`, rank
  /// `rank`) sinks below it: its value in the pre-transpose layout, or null.
  Value operandBefore(OpBuilder &b, Location loc, Value v,
                      ArrayRef<int64_t> perm, int64_t rank) {
    if (isNoValue(v))
      return v;
    if (auto t = v.getDefiningOp<TransposeOp>())
      if (made.contains(t) && permOf(t) == perm)
        return t.getData();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() > rank)
      return {};
    if (type.getRank() == 0)
      return v;
    SmallVector<int64_t> inv = invertPermutation(perm);
    if (ElementsAttr c = constantOf(v))
      if (Value p = permuteConstant(b, loc, c, inv, "layout_operand"))
        return p;
    if (type.hasStaticShape()) {
      SmallVector<int64_t> full(rank - type.getRank(), 1);
      llvm::append_range(full, type.getShape());
      SmallVector<int64_t> target = permuteShape(full, inv);
      // Numpy broadcasting still lines it up without a change.
      if (ArrayRef<int64_t>(target).take_back(type.getRank()) ==
              type.getShape() &&
          llvm::all_of(ArrayRef<int64_t>(target).drop_back(type.getRank()),
                       [](int64_t d) { return d == 1; }))
        return v;
      if (movesOnlyUnitDims(full, inv))
        return reshape(b, loc, v, target);
    }
    return {};
  }

  /// Moves the transpose `t` (made here) below its users where they allow;
  /// returns the transposes made below.
  SmallVector<Operation *> sink(TransposeOp t) {
    SmallVector<Operation *> below;
    SmallVector<int64_t> perm = permOf(t);
    int64_t rank = perm.size();
    Value x = t.getData();
    llvm::SetVector<Operation *> users(t->getUsers().begin(),
                                       t->getUsers().end());
    for (Operation *user : users) {
      OpBuilder b(user);
      Location loc = user->getLoc();
      if (auto u = dyn_cast<TransposeOp>(user)) {
        // Transpose(q, Transpose(p, x)) = Transpose(p∘q, x).
        SmallVector<int64_t> q = permOf(u);
        if (q.size() != perm.size())
          continue;
        SmallVector<int64_t> composed = permuteShape(perm, q);
        Value r = isIdentity(composed) ? x : transpose(b, loc, x, composed);
        u.getResult().replaceAllUsesWith(r);
        made.remove(u);
        u.erase();
        if (Operation *d = r.getDefiningOp(); d && r != x)
          below.push_back(d);
        continue;
      }
      bool qdq = isPerTensorQDQ(user);
      bool layoutFree =
          qdq || layoutFreeOps().contains(user->getName().getStringRef());
      bool concat = isa<ConcatOp>(user);
      bool pool = isPool(user) && !isChannelsLast(user) &&
                  perm == channelsFirstPermutation(rank);
      // Resize of the transposed data (its scales, sizes and roi per axis
      // stay; the axes they name move with the dims).
      bool resize = isa<ResizeOp>(user) &&
                    user->getOperand(0) == t.getResult() &&
                    llvm::count(user->getOperands(), t.getResult()) == 1;
      if (!layoutFree && !concat && !pool && !resize)
        continue;
      if (llvm::any_of(user->getResultTypes(), [&](Type r) {
            auto rt = dyn_cast<RankedTensorType>(r);
            return !isa<NoneType>(r) && (!rt || rt.getRank() != rank);
          }))
        continue;
      if (isa<MaxPoolOp>(user) && user->getNumResults() > 1 &&
          !user->getResult(1).use_empty())
        continue;
      SmallVector<int64_t> inv = invertPermutation(perm);
      SmallVector<Value> operands;
      if (pool) {
        operands.push_back(x);
      } else if (resize) {
        operands.push_back(x);
        llvm::append_range(operands, user->getOperands().drop_front());
      } else {
        // A Concat moves when at least half of its operands come in the
        // other layout; the others get a transpose of their own (fewer
        // bytes than the one of the whole result it saves; not sunk
        // further, so two concats never trade transposes back and forth).
        int64_t misses = 0;
        for (Value v : user->getOperands()) {
          // A QuantizeLinear's or DequantizeLinear's scale and zero point
          // stay as they are.
          Value before = qdq && !operands.empty()
                             ? v
                             : operandBefore(b, loc, v, perm, rank);
          auto vt = dyn_cast<RankedTensorType>(v.getType());
          if (!before && concat && vt && vt.getRank() == rank &&
              2 * (misses + 1) <=
                  static_cast<int64_t>(user->getNumOperands())) {
            before = createTranspose(b, loc, v, inv);
            ++misses;
          }
          if (!before)
            break;
          operands.push_back(before);
        }
        if (operands.size() != user->getNumOperands()) {
          for (Value v : operands)
            if (auto extra = v.getDefiningOp<TransposeOp>();
                extra && !made.contains(extra) && extra->use_empty())
              extra.erase();
          continue;
        }
      }
      Operation *moved = b.clone(*user);
      moved->setOperands(operands);
      for (OpResult r : moved->getResults())
        r.setType(permuteType(r.getType(), inv));
      if (pool)
        moved->setAttr(kChannelsLastAttr, b.getUnitAttr());
      if (concat) {
        FailureOr<int64_t> axis = normalizeAxis(
            static_cast<int64_t>(cast<ConcatOp>(user).getAxis()), rank);
        if (failed(axis)) {
          moved->erase();
          continue;
        }
        moved->setAttr("axis", b.getI64IntegerAttr(perm[*axis]));
      }
      if (resize) {
        SmallVector<int64_t> axes;
        if (ArrayAttr a = cast<ResizeOp>(user).getAxesAttr()) {
          for (Attribute v : a) {
            FailureOr<int64_t> n =
                normalizeAxis(cast<IntegerAttr>(v).getInt(), rank);
            if (failed(n))
              break;
            axes.push_back(perm[*n]);
          }
          if (static_cast<int64_t>(axes.size()) != (int64_t)a.size()) {
            moved->erase();
            continue;
          }
        } else {
          for (int64_t i = 0; i < rank; ++i)
            axes.push_back(perm[i]);
        }
        moved->setAttr("axes", b.getI64ArrayAttr(axes));
      }
      for (auto [r, m] : llvm::zip(user->getResults(), moved->getResults())) {
        if (isa<NoneType>(r.getType()) || r.use_empty())
          continue;
        Value back = transpose(b, loc, m, perm);
        r.replaceAllUsesWith(back);
        below.push_back(back.getDefiningOp());
      }
      user->erase();
    }
    if (t->use_empty()) {
      made.remove(t);
      t.erase();
    }
    return below;
  }

  void runOnOperation() override {
    if (layout == "nchw")
      return;
    if (layout != "nhwc") {
      getOperation().emitError() << "kiln-onnx-convert-layout: unknown layout '"
                                 << layout << "' (expected nchw or nhwc)";
      return signalPassFailure();
    }
    SmallVector<Operation *> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<ConvOp, ConvIntegerOp>(op))
        convs.push_back(op);
    });
    for (Operation *op : convs) {
      if (auto conv = dyn_cast<ConvOp>(op))
        convertConv(conv);
      else
        convertConv(cast<ConvIntegerOp>(op));
    }
    // Sink until nothing moves; each step removes a transpose or moves one
    // below an op, so this ends.
    SmallVector<Operation *> work(made.begin(), made.end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!made.contains(op))
        continue;
      SmallVector<Operation *> below = sink(cast<TransposeOp>(op));
      work.append(below.begin(), below.end());
    }
    // What stays and moves only size-1 dims is a reshape.
    for (Operation *op : SmallVector<Operation *>(made.begin(), made.end())) {
      auto t = cast<TransposeOp>(op);
      auto in = dyn_cast<RankedTensorType>(t.getData().getType());
      if (!in || !movesOnlyUnitDims(in.getShape(), permOf(t)))
        continue;
      OpBuilder b(t);
      Value r =
          reshape(b, t.getLoc(), t.getData(),
                  cast<RankedTensorType>(t.getResult().getType()).getShape());
      t.getResult().replaceAllUsesWith(r);
      made.remove(t);
      t.erase();
    }
  }
};
} // namespace
