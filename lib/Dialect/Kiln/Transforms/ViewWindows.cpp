//===- ViewWindows.cpp - Read a window copy's source through a view -------===//
//
// A Split or a unit-step Slice lowers to a copy kernel: a generic that
// writes out[i] = x[i + offset] (its indices clamped into x, a clamp that
// never binds when the window lies inside x). Most consumers fuse it as a
// prologue; a kernel that reads its operands in place does not, so the copy
// runs as a launch of its own and its result takes arena memory. BERT's
// fused attention is the case: Q, K and V are three columns of the QKV
// projection, and the three copies cost as much as a third of the attention.
//
// kiln-view-windows gives such a kernel the copy's source instead and
// rebuilds the window inside it as a view (tensor.extract_slice, then the
// host reshapes between the copy and the kernel as expand/collapse_shape):
// bufferization makes it a strided memref.subview of the source. The copy
// kernel goes when nothing else reads it. Only operands whose readers accept
// any strided layout take a view: today kiln.attention's query, key and
// value (lib/Target/GPU/FlashAttention.cpp indexes them through their
// strides and checks 16-byte alignment from the layout).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Matchers.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNVIEWWINDOWS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// An index of a generic's body as `linalg.index dim + offset`, with the
/// range [lo, hi] it takes over the iteration space.
struct Shifted {
  int64_t dim, offset, lo, hi;
};

/// `v` as a shifted loop index of a generic whose static loop ranges are
/// `ranges`, through additions of constants and min/max clamps that never
/// bind over those ranges (checked with the index's range, non-negative);
/// nullopt for anything else.
std::optional<Shifted> shiftedIndex(Value v, ArrayRef<int64_t> ranges,
                                    unsigned depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return std::nullopt;
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    int64_t d = index.getDim();
    if (d >= static_cast<int64_t>(ranges.size()) || ranges[d] <= 0)
      return std::nullopt;
    return Shifted{d, 0, 0, ranges[d] - 1};
  }
  if (def->getNumOperands() != 2)
    return std::nullopt;
  // One operand a constant, the other shifted.
  for (unsigned c = 0; c < 2; ++c) {
    APInt cst;
    if (!matchPattern(def->getOperand(c), m_ConstantInt(&cst)))
      continue;
    int64_t k = cst.getSExtValue();
    std::optional<Shifted> s =
        shiftedIndex(def->getOperand(1 - c), ranges, depth + 1);
    if (!s)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return Shifted{s->dim, s->offset + k, s->lo + k, s->hi + k};
    if (isa<arith::SubIOp>(def) && c == 1)
      return Shifted{s->dim, s->offset - k, s->lo - k, s->hi - k};
    if (isa<arith::MinSIOp, arith::MinUIOp>(def) && s->lo >= 0 && s->hi <= k)
      return s; // never binds
    if (isa<arith::MaxSIOp, arith::MaxUIOp>(def) && s->lo >= k && k >= 0)
      return s;
    return std::nullopt;
  }
  return std::nullopt;
}

/// The window a copy kernel takes from its input: the input's index, and the
/// offsets (the sizes are the result's); nullopt when `k` is anything else.
/// A window copy is one generic without inputs on a static identity space
/// whose body yields `tensor.extract %arg[i0 + o0, ..., in + on]` of a block
/// argument, each index inside the argument.
std::optional<std::pair<unsigned, SmallVector<int64_t>>> windowOf(KernelOp k) {
  if (k->getNumResults() != 1)
    return std::nullopt;
  linalg::GenericOp generic;
  for (Operation &op : k.getBodyBlock().without_terminator()) {
    if (isa<tensor::EmptyOp, arith::ConstantOp>(op))
      continue;
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g || generic)
      return std::nullopt;
    generic = g;
  }
  auto yield = cast<YieldOp>(k.getBodyBlock().getTerminator());
  if (!generic || generic.getNumDpsInputs() != 0 ||
      generic.getNumDpsInits() != 1 || yield.getValues().size() != 1 ||
      yield.getValues()[0] != generic->getResult(0) ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.getIndexingMapsArray()[0].isIdentity())
    return std::nullopt;
  auto outType = dyn_cast<RankedTensorType>(generic->getResult(0).getType());
  if (!outType || !outType.hasStaticShape())
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto bodyYield = cast<linalg::YieldOp>(body.getTerminator());
  auto extract = bodyYield.getValues()[0].getDefiningOp<tensor::ExtractOp>();
  // The output's block argument must be unused (the copy overwrites it).
  if (!extract || !body.getArgument(0).use_empty())
    return std::nullopt;
  auto src = dyn_cast<BlockArgument>(extract.getTensor());
  if (!src || src.getOwner() != &k.getBodyBlock())
    return std::nullopt;
  auto srcType = dyn_cast<RankedTensorType>(src.getType());
  if (!srcType || !srcType.hasStaticShape() ||
      srcType.getRank() != outType.getRank())
    return std::nullopt;
  SmallVector<int64_t> ranges(outType.getShape());
  SmallVector<int64_t> offsets;
  for (auto [d, i] : llvm::enumerate(extract.getIndices())) {
    // A dim of size 1 may read a constant index (its loop index folded).
    APInt cst;
    if (ranges[d] == 1 && matchPattern(i, m_ConstantInt(&cst))) {
      int64_t c = cst.getSExtValue();
      if (c < 0 || c >= srcType.getDimSize(d))
        return std::nullopt;
      offsets.push_back(c);
      continue;
    }
    std::optional<Shifted> s = shiftedIndex(i, ranges);
    if (!s || s->dim != static_cast<int64_t>(d) || s->lo < 0 ||
        s->hi >= srcType.getDimSize(d))
      return std::nullopt;
    offsets.push_back(s->offset);
  }
  return std::make_pair(src.getArgNumber(), offsets);
}

/// Whether every use of `arg` is a query, key or value of kiln.attention
/// (which reads through any strided layout).
bool readInPlace(BlockArgument arg) {
  return !arg.use_empty() && llvm::all_of(arg.getUses(), [](OpOperand &use) {
    auto a = dyn_cast<AttentionOp>(use.getOwner());
    return a && use.getOperandNumber() < 3;
  });
}

/// The reassociation of a static reshape from `from` to `to` as one
/// expand_shape or collapse_shape; failure when it is neither.
FailureOr<Value> reshapeView(OpBuilder &b, Location loc, Value v,
                             RankedTensorType to) {
  auto from = cast<RankedTensorType>(v.getType());
  if (from.getShape() == to.getShape())
    return v;
  if (!to.hasStaticShape())
    return failure();
  std::optional<SmallVector<ReassociationIndices>> r =
      getReassociationIndicesForReshape(from, to);
  if (!r)
    return failure();
  auto viewType = RankedTensorType::get(to.getShape(), from.getElementType());
  if (to.getRank() > from.getRank())
    return Value(tensor::ExpandShapeOp::create(b, loc, viewType, v, *r));
  return Value(tensor::CollapseShapeOp::create(b, loc, viewType, v, *r));
}

struct ViewWindowsPass
    : public kiln::impl::KilnViewWindowsBase<ViewWindowsPass> {
  void runOnOperation() override {
    SmallVector<KernelOp> kernels;
    getOperation().walk([&](KernelOp k) { kernels.push_back(k); });
    for (KernelOp k : kernels) {
      for (unsigned i = 0; i < k.getInputs().size(); ++i)
        viewInput(k, i);
      dedupInputs(k);
    }
    // Copies and host reshapes nothing reads any more (users first).
    Block &body = getOperation().getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (!op.use_empty())
        continue;
      auto k = dyn_cast<KernelOp>(op);
      if ((k && windowOf(k)) ||
          isa<tensor::ReshapeOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
              tensor::BitcastOp>(op))
        op.erase();
    }
  }

  /// Input `i` of `k` through its source's view when it is a window copy's
  /// result (through host reshapes of static shape, and bitcasts between
  /// integer types of one width: an unsigned copy read as signless) read in
  /// place.
  void viewInput(KernelOp k, unsigned i) {
    BlockArgument arg = k.getBodyBlock().getArgument(i);
    if (!readInPlace(arg))
      return;
    Value in = k.getInputs()[i];
    SmallVector<RankedTensorType> shapes; // the reshapes, last first
    Type elem = cast<RankedTensorType>(arg.getType()).getElementType();
    while (Operation *def = in.getDefiningOp()) {
      if (isa<tensor::BitcastOp>(def)) {
        in = def->getOperand(0);
        continue;
      }
      if (!isa<tensor::ReshapeOp, tensor::ExpandShapeOp,
               tensor::CollapseShapeOp>(def))
        break;
      auto t = dyn_cast<RankedTensorType>(def->getResult(0).getType());
      if (!t || !t.hasStaticShape())
        return;
      shapes.push_back(t);
      in = def->getOperand(0);
    }
    auto copy = in.getDefiningOp<KernelOp>();
    if (!copy)
      return;
    std::optional<std::pair<unsigned, SmallVector<int64_t>>> window =
        windowOf(copy);
    if (!window)
      return;
    Value source = copy.getInputs()[window->first];
    auto sliceType = cast<RankedTensorType>(copy->getResult(0).getType());
    auto sourceType = cast<RankedTensorType>(source.getType());
    if (sourceType.getElementType() != elem) {
      // The bitcasts on the way, taken before the view instead.
      auto from = dyn_cast<IntegerType>(sourceType.getElementType());
      auto to = dyn_cast<IntegerType>(elem);
      if (!from || !to || from.getWidth() != to.getWidth())
        return;
      OpBuilder host(k);
      source = tensor::BitcastOp::create(host, k.getLoc(),
                                         sourceType.clone(elem), source);
      sliceType = sliceType.clone(elem);
    }

    OpBuilder b(k.getContext());
    b.setInsertionPointToStart(&k.getBodyBlock());
    Location loc = k.getLoc();
    // A placeholder argument of the source's type; `arg` keeps its uses
    // until the view is built.
    BlockArgument whole =
        k.getBodyBlock().insertArgument(i + 1, source.getType(), loc);
    SmallVector<OpFoldResult> offsets, sizes,
        strides(sliceType.getRank(), b.getIndexAttr(1));
    for (auto [o, s] : llvm::zip(window->second, sliceType.getShape())) {
      offsets.push_back(b.getIndexAttr(o));
      sizes.push_back(b.getIndexAttr(s));
    }
    Value view = tensor::ExtractSliceOp::create(b, loc, sliceType, whole,
                                                offsets, sizes, strides);
    for (RankedTensorType t : llvm::reverse(shapes)) {
      FailureOr<Value> next = reshapeView(b, loc, view, t);
      if (failed(next)) { // not expressible as a view: undo
        eraseView(k, whole);
        return;
      }
      view = *next;
    }
    if (view.getType() != arg.getType()) {
      eraseView(k, whole);
      return;
    }
    arg.replaceAllUsesWith(view);
    k.getBodyBlock().eraseArgument(i);
    k.getInputsMutable()[i].set(source);
  }

  /// One argument per distinct input (Q, K and V now all read the QKV
  /// projection's result).
  static void dedupInputs(KernelOp k) {
    Block &body = k.getBodyBlock();
    for (unsigned i = k.getInputs().size(); i-- > 0;) {
      Value in = k.getInputs()[i];
      for (unsigned j = 0; j < i; ++j) {
        if (k.getInputs()[j] != in)
          continue;
        body.getArgument(i).replaceAllUsesWith(body.getArgument(j));
        body.eraseArgument(i);
        k.getInputsMutable().erase(i);
        break;
      }
    }
  }

  /// Removes the partly built view of `whole` and `whole` itself.
  static void eraseView(KernelOp k, BlockArgument whole) {
    SmallVector<Operation *> ops;
    SmallVector<Value> work = {whole};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *u : v.getUsers()) {
        ops.push_back(u);
        llvm::append_range(work, u->getResults());
      }
    }
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    k.getBodyBlock().eraseArgument(whole.getArgNumber());
  }
};

} // namespace
