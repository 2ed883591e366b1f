//===- FuseKernels.cpp - Merge kernels by a cost model ---------------------===//
//
// Kernel formation gives every computation its own `kiln.kernel`; this pass
// merges kernels so intermediates stay inside one launch:
//  - prologue: a cheap producer (elementwise or data movement, e.g. the
//    padding of a convolution, a transpose) whose results are all consumed by
//    one kernel moves into it;
//  - epilogue: an elementwise kernel joins the contraction, reduction or
//    elementwise kernel producing its input (bias, activation, residual add,
//    scaling), when it reads that result without broadcasting it to a larger
//    shape;
//  - rows: reductions over the innermost dims and the elementwise ops around
//    them on the same rows (softmax, layer normalization) become one kernel;
//    a reduction that feeds a broadcast along other dims does not fuse;
//  - horizontal: contractions of the same shape that read a common input
//    (the Q, K and V projections) become one kernel.
// Nothing is ever duplicated: a producer with several consumers outside the
// merged kernel stays a result of it, and two contractions never merge
// vertically, so an expensive producer is never recomputed.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/IR/Precision.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFUSEKERNELS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

enum class KernelKind { Elementwise, Movement, Reduction, Contraction, Other };

/// What a kernel computes, and for reductions the shape of their rows.
struct KernelInfo {
  KernelKind kind = KernelKind::Other;
  /// Iteration shape of the widest op (rows ++ reduced dims) for kernels
  /// whose ops all live on the same rows; empty when unknown.
  SmallVector<int64_t> space;
  /// Number of leading (row) dims; the rest are reduced. -1: no reduction.
  int64_t rowDims = -1;
  bool rowCompatible = false;
};

bool isRealInput(Value v) {
  // Pooling windows are empty tensors that only give loop ranges.
  return !v.getDefiningOp<tensor::EmptyOp>();
}

KernelInfo analyze(KernelOp kernel) {
  KernelInfo info;
  bool anyContraction = false, anyReduction = false, anyMovement = false,
       anyOther = false, anyLinalg = false;
  SmallVector<linalg::LinalgOp> ops;
  for (Operation &op : kernel.getBodyBlock().without_terminator()) {
    if (isa<tensor::EmptyOp, arith::ConstantOp, linalg::FillOp>(op))
      continue;
    if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
      anyLinalg = true;
      ops.push_back(l);
      if (l.getNumReductionLoops() == 0)
        continue;
      int64_t realInputs = llvm::count_if(
          l.getDpsInputs(), [](Value v) { return isRealInput(v); });
      bool windowed = realInputs < static_cast<int64_t>(l.getNumDpsInputs());
      if (realInputs >= 2 || windowed || isa<linalg::MatmulOp>(op))
        anyContraction = true;
      else
        anyReduction = true;
      continue;
    }
    if (isa<tensor::PadOp, tensor::ConcatOp, tensor::ExtractSliceOp,
            tensor::InsertSliceOp, tensor::ReshapeOp, tensor::CollapseShapeOp,
            tensor::ExpandShapeOp, tensor::CastOp>(op)) {
      anyMovement = true;
      continue;
    }
    if (op.getNumRegions() == 0 &&
        llvm::none_of(op.getResultTypes(),
                      [](Type t) { return isa<ShapedType>(t); }))
      continue; // scalar arithmetic
    anyOther = true;
  }
  if (anyOther || (!anyLinalg && !anyMovement))
    info.kind = KernelKind::Other;
  else if (anyContraction)
    info.kind = KernelKind::Contraction;
  else if (anyReduction)
    info.kind = KernelKind::Reduction;
  else if (anyMovement)
    info.kind = KernelKind::Movement;
  else
    info.kind = KernelKind::Elementwise;

  // Row analysis for elementwise and reduction kernels: reductions only over
  // trailing dims of a common iteration space, every other op on that space
  // or on its rows (reduced dims of size 1).
  if (info.kind != KernelKind::Elementwise &&
      info.kind != KernelKind::Reduction)
    return info;
  SmallVector<int64_t> space;
  int64_t rows = -1;
  for (linalg::LinalgOp l : ops) {
    if (l.getNumReductionLoops() == 0)
      continue;
    SmallVector<int64_t> ranges = l.getStaticLoopRanges();
    auto iters = l.getIteratorTypesArray();
    int64_t first =
        llvm::find(iters, utils::IteratorType::reduction) - iters.begin();
    for (int64_t i = first; i < static_cast<int64_t>(iters.size()); ++i)
      if (iters[i] != utils::IteratorType::reduction)
        return info; // reduction dims not trailing
    if (!space.empty() && (space != ranges || rows != first))
      return info;
    space = ranges;
    rows = first;
  }
  if (space.empty()) {
    // Elementwise only: its own space; any row split fits.
    for (linalg::LinalgOp l : ops) {
      SmallVector<int64_t> ranges = l.getStaticLoopRanges();
      if (space.empty() || ranges.size() > space.size())
        space = ranges;
    }
    info.space = space;
    info.rowDims = -1;
    info.rowCompatible = true;
    return info;
  }
  for (linalg::LinalgOp l : ops) {
    SmallVector<int64_t> ranges = l.getStaticLoopRanges();
    if (ranges.size() != space.size())
      return info;
    for (int64_t i = 0; i < static_cast<int64_t>(space.size()); ++i) {
      bool ok = ranges[i] == space[i] || (i >= rows && ranges[i] == 1);
      if (!ok)
        return info;
    }
  }
  info.space = space;
  info.rowDims = rows;
  info.rowCompatible = true;
  return info;
}

/// Whether two row-compatible kernels work on the same rows.
bool sameRows(const KernelInfo &a, const KernelInfo &b) {
  if (!a.rowCompatible || !b.rowCompatible)
    return false;
  if (a.space.size() != b.space.size())
    return false;
  int64_t rows = a.rowDims >= 0 ? a.rowDims : b.rowDims;
  if (rows < 0)
    return a.space == b.space;
  if (a.rowDims >= 0 && b.rowDims >= 0 && a.rowDims != b.rowDims)
    return false;
  for (int64_t i = 0; i < static_cast<int64_t>(a.space.size()); ++i) {
    // Dynamic sizes are taken to agree: grouping ops into one kernel is
    // correct whatever the sizes; the row structure only guides codegen.
    if (ShapedType::isDynamic(a.space[i]) || ShapedType::isDynamic(b.space[i]))
      continue;
    if (i < rows && a.space[i] != b.space[i])
      return false;
    if (i >= rows && a.space[i] != b.space[i] && a.space[i] != 1 &&
        b.space[i] != 1)
      return false;
  }
  return true;
}

struct FuseKernelsPass
    : public kiln::impl::KilnFuseKernelsBase<FuseKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &block = func.getBody().front();
    forwardResultDims(block);
    bool changed = true;
    unsigned rounds = 0;
    while (changed && rounds++ < 10000) {
      changed = false;
      SmallVector<KernelOp> kernels(block.getOps<KernelOp>());
      for (KernelOp k2 : kernels) {
        if (tryVertical(block, k2)) {
          changed = true;
          break;
        }
      }
      if (changed)
        continue;
      for (KernelOp k : kernels)
        if (tryHorizontal(block, k)) {
          changed = true;
          break;
        }
    }
    // Inside each kernel, fold transposes and elementwise producers into the
    // indexing of their single consumer (no intermediate is materialized).
    for (KernelOp k : block.getOps<KernelOp>())
      if (failed(fuseInsideKernel(k)))
        return signalPassFailure();
    // Renumber kernel names in program order.
    unsigned id = 0;
    for (KernelOp k : block.getOps<KernelOp>())
      k.setNameAttr(
          StringAttr::get(&getContext(), "kernel_" + std::to_string(id++)));
  }

  /// Whether fusing `producer` into the op reading it through `fused` would
  /// compute the producer's elements more than once: the consumer reads
  /// the operand broadcast along one of its loops (a matmul's A along n)
  /// and the producer computes something (a quantization before an integer
  /// matmul would be redone for every column). Producers that only move or
  /// convert values (transposes, copies, extensions) fold into the
  /// consumer's indexing for free.
  static bool recomputes(OpOperand *fused, Operation *producer) {
    auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
    auto p = dyn_cast<linalg::LinalgOp>(producer);
    if (!consumer || !p)
      return false;
    AffineMap map = consumer.getMatchingIndexingMap(fused);
    bool broadcast = false;
    for (unsigned d = 0; d < consumer.getNumLoops(); ++d)
      broadcast |= !map.isFunctionOfDim(d);
    if (!broadcast)
      return false;
    return llvm::any_of(p.getBlock()->without_terminator(), [](Operation &op) {
      return !isa<arith::ExtFOp, arith::TruncFOp, arith::ExtSIOp,
                  arith::ExtUIOp, arith::TruncIOp, arith::BitcastOp>(op);
    });
  }

  static LogicalResult fuseInsideKernel(KernelOp kernel) {
    MLIRContext *ctx = kernel.getContext();
    // Transposes become generics so their permutation can move into the
    // consumer's indexing map.
    IRRewriter rewriter(ctx);
    SmallVector<linalg::TransposeOp> transposes;
    kernel.walk([&](linalg::TransposeOp t) { transposes.push_back(t); });
    for (linalg::TransposeOp t : transposes) {
      rewriter.setInsertionPoint(t);
      if (failed(linalg::generalizeNamedOp(rewriter, t)))
        return failure();
    }
    // Fusion replaces a consumer by a new op built from clones of both
    // bodies: a contraction's TF32 mark rides on its multiply meanwhile.
    auto multiplies = [](linalg::LinalgOp op) {
      SmallVector<Operation *> muls;
      if (Block *body = op.getBlock())
        for (auto mul : body->getOps<arith::MulFOp>())
          muls.push_back(mul);
      return muls;
    };
    kernel.walk([&](linalg::LinalgOp op) {
      if (op->removeAttr(kTF32Attr))
        for (Operation *mul : multiplies(op))
          mul->setAttr(kTF32Attr, UnitAttr::get(ctx));
    });
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *fused) {
          // Only producers with this one use, read once per element:
          // fusing never recomputes.
          Operation *producer = fused->get().getDefiningOp();
          return producer && producer->hasOneUse() &&
                 !recomputes(fused, producer);
        });
    LogicalResult result =
        applyPatternsGreedily(kernel.getBody(), std::move(patterns));
    kernel.walk([&](linalg::LinalgOp op) {
      for (Operation *mul : multiplies(op))
        if (mul->removeAttr(kTF32Attr))
          op->setAttr(kTF32Attr, UnitAttr::get(ctx));
    });
    return result;
  }

  /// `tensor.dim` of a kernel result is the kernel's own dims operand (or a
  /// constant): reading it needs no dependence on the kernel.
  static void forwardResultDims(Block &block) {
    SmallVector<tensor::DimOp> dimOps;
    block.walk([&](tensor::DimOp d) { dimOps.push_back(d); });
    for (tensor::DimOp d : dimOps) {
      auto result = dyn_cast<OpResult>(d.getSource());
      auto kernel = result ? dyn_cast<KernelOp>(result.getOwner()) : nullptr;
      std::optional<int64_t> index = d.getConstantIndex();
      if (!kernel || !index)
        continue;
      auto type = cast<RankedTensorType>(result.getType());
      if (*index < 0 || *index >= type.getRank())
        continue;
      OpBuilder b(d);
      if (!type.isDynamicDim(*index)) {
        d.replaceAllUsesWith(arith::ConstantIndexOp::create(
                                 b, d.getLoc(), type.getDimSize(*index))
                                 .getResult());
        d.erase();
        continue;
      }
      unsigned k = 0;
      for (int64_t i = 0; i < *index; ++i)
        k += type.isDynamicDim(i);
      d.replaceAllUsesWith(kernel.getResultDims(result.getResultNumber())[k]);
      d.erase();
    }
  }

  /// Ops strictly between `a` and `b` (same block, a before b) that depend
  /// on `a`, transitively.
  static SetVector<Operation *> dependentsBetween(Operation *a, Operation *b) {
    SetVector<Operation *> deps;
    llvm::SmallPtrSet<Operation *, 16> set;
    set.insert(a);
    for (Operation *op = a->getNextNode(); op && op != b;
         op = op->getNextNode()) {
      bool depends = false;
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (set.contains(def->getBlock() == a->getBlock()
                                 ? def
                                 : a->getBlock()->findAncestorOpInBlock(*def)))
              depends = true;
      });
      if (depends) {
        set.insert(op);
        deps.insert(op);
      }
    }
    return deps;
  }

  /// Whether `b` reads any result of the ops in `ops`.
  static bool readsAny(Operation *b, const SetVector<Operation *> &ops) {
    bool found = false;
    b->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (ops.contains(def))
            found = true;
    });
    return found;
  }

  /// Whether kernel `k` computes only from external weights (arguments of
  /// the model function marked `kiln.weight_offset`), constants and the
  /// results of such kernels (a weight's cast to half, then its permutation
  /// to channels-last): it runs once per instance
  /// (kiln-hoist-weight-kernels), so fusing it into a consumer that runs
  /// every time would redo it on every run.
  static bool isWeightOnly(KernelOp k) {
    bool anyWeight = false;
    for (Value in : k.getInputs()) {
      while (Operation *def = in.getDefiningOp()) {
        if (!isa<tensor::ReshapeOp, tensor::CollapseShapeOp,
                 tensor::ExpandShapeOp, tensor::CastOp>(def))
          break;
        in = def->getOperand(0);
      }
      if (auto arg = dyn_cast<BlockArgument>(in)) {
        auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
        if (!fn || !fn.getArgAttr(arg.getArgNumber(), "kiln.weight_offset"))
          return false;
        anyWeight = true;
        continue;
      }
      Operation *def = in.getDefiningOp();
      if (auto producer = dyn_cast_or_null<KernelOp>(def)) {
        if (!isWeightOnly(producer))
          return false;
        anyWeight = true;
        continue;
      }
      if (!def || !def->hasTrait<OpTrait::ConstantLike>())
        return false;
    }
    return anyWeight;
  }

  /// Whether `k` only widens a tensor for other kernels: elementwise
  /// generics whose one result has wider elements than the one input the
  /// kernel reads at the result's shape (the others scalars or per-channel
  /// parameters): the
  /// f32 statistics input of a half normalization (a plain extension), or
  /// the dequantization of a uint8 activation a residual Add reads. As an
  /// epilogue of the kernel producing that input it would write the wide
  /// tensor (2 to 4 times the bytes, beside the narrow one its other users
  /// read) where the consumer can widen as it reads (a prologue or, where
  /// the consumer is a row kernel, a rows fusion takes it instead; a rows
  /// fusion into its producer would write it as the epilogue does).
  static bool onlyWidensForKernels(KernelOp k) {
    for (Operation &op : k.getBodyBlock().without_terminator()) {
      if (isa<tensor::EmptyOp, arith::ConstantOp>(op))
        continue;
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g || g.getNumLoops() != g.getNumParallelLoops())
        return false;
    }
    if (k->getNumResults() != 1)
      return false;
    auto outType = dyn_cast<RankedTensorType>(k->getResult(0).getType());
    if (!outType || !outType.getElementType().isIntOrFloat())
      return false;
    int64_t wide = 0;
    for (Value in : k.getInputs()) {
      auto t = dyn_cast<RankedTensorType>(in.getType());
      if (!t || !t.getElementType().isIntOrFloat())
        return false;
      if (t.hasStaticShape() && t.getNumElements() <= kMaxParamElements &&
          t.getShape() != outType.getShape())
        continue; // a scalar or a per-channel parameter
      if (++wide > 1 || t.getShape() != outType.getShape() ||
          t.getElementTypeBitWidth() >= outType.getElementTypeBitWidth())
        return false;
    }
    if (wide != 1)
      return false;
    return llvm::all_of(k->getUsers(),
                        [](Operation *u) { return isa<KernelOp>(u); });
  }
  /// The largest parameter tensor (scales, zero points) a widening kernel
  /// reads beside its input.
  static constexpr int64_t kMaxParamElements = 4096;

  /// Whether `k` is a fused attention, the views of its operands and the
  /// elementwise epilogues it took.
  static bool isAttention(KernelOp k) {
    bool found = false;
    for (Operation &op : k.getBodyBlock().without_terminator()) {
      if (isa<AttentionOp>(op)) {
        found = true;
        continue;
      }
      if (auto g = dyn_cast<linalg::GenericOp>(op);
          g && g.getNumLoops() == g.getNumParallelLoops())
        continue;
      if (!isa<tensor::EmptyOp, arith::ConstantOp, tensor::ExtractSliceOp,
               tensor::ReshapeOp, tensor::CollapseShapeOp,
               tensor::ExpandShapeOp, tensor::CastOp>(op))
        return false;
    }
    return found && k->getNumResults() == 1;
  }

  /// Whether elementwise `k2` reads `k1`'s one result (`in`, through views
  /// or not) and otherwise only scalars: the quantization of an attention's
  /// output for the next int8 product (BERT's int8 build), which the fused
  /// attention applies as it stores (FlashAttention.cpp) instead of a launch
  /// of its own that reads the half tensor back.
  static bool isAttentionEpilogue(KernelOp k1, KernelOp k2, Value in) {
    if (!isAttention(k1) || analyze(k2).kind != KernelKind::Elementwise ||
        k2->getNumResults() != 1 || !k1->getResult(0).hasOneUse())
      return false;
    for (Value v : k2.getInputs()) {
      if (v == in)
        continue;
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || t.getRank() != 0)
        return false;
    }
    return true;
  }

  bool tryVertical(Block &block, KernelOp k2) {
    KernelInfo i2 = analyze(k2);
    if (i2.kind == KernelKind::Other)
      return false;
    for (Value in : k2.getInputs()) {
      // k2 may read k1's result through reshapes (host views): the views
      // move into the merged kernel (prologue only).
      SmallVector<Operation *> chain;
      Value src = in;
      while (Operation *def = src.getDefiningOp()) {
        if (!isa<tensor::ReshapeOp, tensor::CollapseShapeOp,
                 tensor::ExpandShapeOp, tensor::CastOp>(def) ||
            !def->getResult(0).hasOneUse())
          break;
        chain.insert(chain.begin(), def);
        src = def->getOperand(0);
      }
      auto k1 = src.getDefiningOp<KernelOp>();
      if (!k1 || k1 == k2)
        continue;
      if (isAttentionEpilogue(k1, k2, in) && mergeInto(block, k1, k2, chain))
        return true;
      KernelInfo i1 = analyze(k1);
      if (i1.kind == KernelKind::Other)
        continue;
      if (isWeightOnly(k1) && !isWeightOnly(k2))
        continue;
      Operation *head = chain.empty() ? k2.getOperation() : chain.front();
      bool allUsesInK2 = llvm::all_of(k1->getUsers(), [&](Operation *u) {
        return u == head || u == k2.getOperation();
      });
      if (!chain.empty()) {
        // Through views: a prologue whose every result feeds this chain.
        bool prologue = (i1.kind == KernelKind::Elementwise ||
                         i1.kind == KernelKind::Movement) &&
                        llvm::all_of(k1->getUsers(),
                                     [&](Operation *u) { return u == head; }) &&
                        i2.kind != KernelKind::Movement;
        if (prologue && mergeInto(block, k1, k2, chain))
          return true;
        continue;
      }
      bool prologue = (i1.kind == KernelKind::Elementwise ||
                       i1.kind == KernelKind::Movement) &&
                      allUsesInK2 && i2.kind != KernelKind::Movement;
      bool epilogue = false;
      if (i2.kind == KernelKind::Elementwise && !onlyWidensForKernels(k2) &&
          (i1.kind == KernelKind::Contraction ||
           i1.kind == KernelKind::Elementwise)) {
        // k2 reads k1's results at their own shape (no broadcast to a
        // larger space); its element type may differ (a cast to the
        // model's half-precision output).
        auto shapeOf = [](Type t) {
          auto s = dyn_cast<ShapedType>(t);
          return s && s.hasRank() ? s.getShape() : ArrayRef<int64_t>();
        };
        epilogue = llvm::all_of(k2->getResultTypes(), [&](Type t) {
          return isa<ShapedType>(t) &&
                 llvm::any_of(k1->getResultTypes(), [&](Type r) {
                   return isa<ShapedType>(r) && shapeOf(r) == shapeOf(t);
                 });
        });
      }
      // A widening kernel does not join its producer by rows either (a
      // LayerNorm writing its uint8 output and, beside it, the half
      // dequantization a residual Add reads: BERT's int8 build): it joins
      // its reader as a prologue.
      bool rows = (i1.kind == KernelKind::Reduction ||
                   i2.kind == KernelKind::Reduction ||
                   (i1.kind == KernelKind::Elementwise &&
                    i2.kind == KernelKind::Elementwise)) &&
                  i1.kind != KernelKind::Contraction &&
                  i2.kind != KernelKind::Contraction && sameRows(i1, i2) &&
                  !onlyWidensForKernels(k2);
      if (!prologue && !epilogue && !rows)
        continue;
      if (mergeInto(block, k1, k2))
        return true;
    }
    return false;
  }

  bool tryHorizontal(Block &block, KernelOp a) {
    if (analyze(a).kind != KernelKind::Contraction)
      return false;
    for (Value in : a.getInputs()) {
      if (!isa<RankedTensorType>(in.getType()))
        continue;
      for (Operation *user : in.getUsers()) {
        auto b = dyn_cast<KernelOp>(user);
        if (!b || b == a || b->getBlock() != &block || !a->isBeforeInBlock(b))
          continue;
        if (analyze(b).kind != KernelKind::Contraction)
          continue;
        if (a->getResultTypes() != b->getResultTypes())
          continue;
        // Siblings only: b must not read a (a direct edge is vertical).
        if (llvm::any_of(b.getInputs(), [&](Value v) {
              return v.getDefiningOp() == a.getOperation();
            }))
          continue;
        if (mergeInto(block, a, b))
          return true;
      }
    }
    return false;
  }

  /// Merges `k1` (earlier) into `k2`: one kernel at k2's position whose body
  /// is k1's then k2's; k1's results consumed only by k2 become internal.
  /// Ops between them that depend on k1 (but not feeding k2) move after it.
  /// Returns false (changing nothing) when the merge would not be convex.
  bool mergeInto(Block &block, KernelOp k1, KernelOp k2,
                 ArrayRef<Operation *> chain = {}) {
    if (!k1->isBeforeInBlock(k2))
      return false;
    SetVector<Operation *> between = dependentsBetween(k1, k2);
    // The view chain from k1 to k2 moves into the merged kernel.
    for (Operation *op : chain)
      between.remove(op);
    if (readsAny(k2, between))
      return false; // k1 → x → k2: not convex
    for (Operation *op : chain)
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (between.contains(d))
            return false;
    Value chainEnd = chain.empty() ? Value() : chain.back()->getResult(0);
    // The dims of k1's exported results are host values defined before k1
    // or between; they must dominate the merged kernel: they do (defined
    // before k2). Inputs of k1 dominate k2 as well.
    OpBuilder b(k2);
    Location loc = FusedLoc::get(b.getContext(), {k1.getLoc(), k2.getLoc()});

    // Inputs: k1's, then k2's that are not k1's results.
    SetVector<Value> inputs;
    for (Value v : k1.getInputs())
      inputs.insert(v);
    // Shape operands of the views: constants and from_elements of index
    // values are cloned in (their scalars become inputs).
    SetVector<Operation *> chainClones;
    for (Operation *op : chain)
      for (Value v : llvm::drop_begin(op->getOperands())) {
        Operation *d = v.getDefiningOp();
        if (d && isa<arith::ConstantOp, tensor::FromElementsOp>(d)) {
          chainClones.insert(d);
          for (Value e : d->getOperands())
            inputs.insert(e);
        } else {
          inputs.insert(v);
        }
      }
    for (Value v : k2.getInputs())
      if (v.getDefiningOp() != k1.getOperation() && v != chainEnd)
        inputs.insert(v);
    // Results: k1's still used outside k2 (and its view chain), then k2's.
    SmallVector<OpResult> exported;
    for (OpResult r : k1->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) {
            return u != k2.getOperation() && !llvm::is_contained(chain, u);
          }))
        exported.push_back(r);
    SmallVector<Type> resultTypes;
    SmallVector<Value> dims;
    for (OpResult r : exported) {
      resultTypes.push_back(r.getType());
      llvm::append_range(dims, k1.getResultDims(r.getResultNumber()));
    }
    for (OpResult r : k2->getResults()) {
      resultTypes.push_back(r.getType());
      llvm::append_range(dims, k2.getResultDims(r.getResultNumber()));
    }
    auto merged = KernelOp::create(b, loc, resultTypes, inputs.getArrayRef(),
                                   dims, k2.getNameAttr());
    Block *body = new Block();
    merged.getBody().push_back(body);
    IRMapping map;
    DenseMap<Value, Value> argOf;
    for (Value v : inputs)
      argOf[v] = body->addArgument(v.getType(), v.getLoc());
    OpBuilder kb = OpBuilder::atBlockBegin(body);
    // k1's body.
    IRMapping m1;
    for (auto [arg, in] :
         llvm::zip(k1.getBodyBlock().getArguments(), k1.getInputs()))
      m1.map(arg, argOf[in]);
    for (Operation &op : k1.getBodyBlock().without_terminator())
      kb.clone(op, m1);
    auto y1 = cast<YieldOp>(k1.getBodyBlock().getTerminator());
    SmallVector<Value> k1Values;
    for (Value v : y1.getValues())
      k1Values.push_back(m1.lookupOrDefault(v));
    // The view chain, on k1's value.
    Value chainValue;
    if (!chain.empty()) {
      IRMapping mc;
      for (auto [res, val] : llvm::zip(k1->getResults(), k1Values))
        mc.map(res, val);
      for (Value v : inputs)
        mc.map(v, argOf[v]);
      for (Operation *op : chainClones)
        kb.clone(*op, mc);
      for (Operation *op : chain)
        kb.clone(*op, mc);
      chainValue = mc.lookup(chainEnd);
    }
    // k2's body.
    IRMapping m2;
    for (auto [arg, in] :
         llvm::zip(k2.getBodyBlock().getArguments(), k2.getInputs())) {
      if (in.getDefiningOp() == k1.getOperation())
        m2.map(arg, k1Values[cast<OpResult>(in).getResultNumber()]);
      else if (chainEnd && in == chainEnd)
        m2.map(arg, chainValue);
      else
        m2.map(arg, argOf[in]);
    }
    for (Operation &op : k2.getBodyBlock().without_terminator())
      kb.clone(op, m2);
    auto y2 = cast<YieldOp>(k2.getBodyBlock().getTerminator());
    SmallVector<Value> yields;
    for (OpResult r : exported)
      yields.push_back(k1Values[r.getResultNumber()]);
    for (Value v : y2.getValues())
      yields.push_back(m2.lookupOrDefault(v));
    YieldOp::create(kb, loc, yields);

    // Move the dependents of k1 that sat between them after the merged
    // kernel, in order.
    Operation *after = merged;
    for (Operation *op : between) {
      op->moveAfter(after);
      after = op;
    }
    unsigned i = 0;
    for (OpResult r : exported)
      r.replaceAllUsesWith(merged->getResult(i++));
    for (OpResult r : k2->getResults())
      r.replaceAllUsesWith(merged->getResult(i++));
    k2.erase();
    for (Operation *op : llvm::reverse(chain))
      op->erase();
    for (Operation *op : chainClones)
      if (op->use_empty())
        op->erase();
    k1.erase();
    return true;
  }
};
} // namespace
