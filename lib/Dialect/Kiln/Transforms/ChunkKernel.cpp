//===- ChunkKernel.cpp - A kernel re-instantiated for a slice of its batch ===//
//
// Batch chunking (Chunk.cpp) launches a run of kernels c times, each on B/c
// of the batch. Each kernel of the run gets a clone whose batch-carrying
// values are retyped from B to n = B/c along dim 0:
//
//  1. the batch values: from the arguments the host says carry the batch,
//     through to_tensor / materialize_in_destination, pads, concatenations,
//     reshapes and slices that keep dim 0, and through linalg ops: an op that
//     touches a batch value indexes it by one parallel loop d_b in dim 0; its
//     outputs are batch values indexed the same way, inputs indexed by d_b in
//     dim 0 are too, and no other operand is indexed by d_b (so no reduction
//     or gather across the batch). The body may read a batch tensor with
//     tensor.extract only at index d_b (possibly clamped to [0, B-1], which
//     a smaller batch never reaches). Any other op touching a batch value,
//     or any value of the set whose dim 0 is not B, refuses the kernel;
//  2. retyping: every batch value gets dim 0 = n (tensor.empty, the linalg
//     ops, pads and reshapes follow their types; expand_shape's and slices'
//     static sizes are updated); a Local argument becomes an n-row buffer; a
//     Full argument keeps its type and the clone takes the chunk's first row
//     `off` as an index argument before its outputs: a Full input is read
//     as tensor.extract_slice [off, n), a Full output is written through
//     memref.subview [off, n);
//  3. the clone must verify (diagnostics silenced), else it is dropped.
//
// Every element of a batch slice is then computed by the same loops over
// the same inputs as in the original kernel, so a chunked run's outputs are
// bit-identical wherever the kernel's codegen treats each batch element the
// same way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Chunk.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The values of a kernel that carry the batch in dim 0.
class BatchValues {
public:
  explicit BatchValues(int64_t batch) : batch(batch) {}

  /// Propagates from the arguments flagged in `seeds` and checks every op
  /// that touches the set.
  LogicalResult analyze(func::FuncOp fn, ArrayRef<bool> seeds);

  llvm::SetVector<Value> values;

private:
  bool contains(Value v) const { return values.contains(v); }
  bool anyIn(ValueRange vs) const {
    return llvm::any_of(vs, [&](Value v) { return contains(v); });
  }
  /// Adds `v`; true when it was new.
  bool mark(Value v) { return values.insert(v); }
  /// When one of `vs` is a batch value, all are.
  bool tie(ArrayRef<Value> vs);
  bool propagate(Operation *op);
  bool isBatchOp(linalg::LinalgOp op) const;
  LogicalResult check(Operation *op);
  LogicalResult checkLinalg(linalg::LinalgOp op);

  int64_t batch;
};
} // namespace

bool BatchValues::tie(ArrayRef<Value> vs) {
  if (!llvm::any_of(vs, [&](Value v) { return contains(v); }))
    return false;
  bool changed = false;
  for (Value v : vs)
    changed |= mark(v);
  return changed;
}

/// The values used inside `op`'s regions but defined above them.
static llvm::SetVector<Value> capturedValues(Operation *op) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  return captured;
}

bool BatchValues::isBatchOp(linalg::LinalgOp op) const {
  return anyIn(op->getOperands()) || anyIn(op->getResults()) ||
         llvm::any_of(capturedValues(op), [&](Value v) { return contains(v); });
}

/// The loop a linalg operand's dim 0 is indexed by, if a plain loop.
static std::optional<unsigned> dim0Loop(linalg::LinalgOp op,
                                        OpOperand *operand) {
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(map.getResult(0)))
    return d.getPosition();
  return std::nullopt;
}

bool BatchValues::propagate(Operation *op) {
  if (auto t = dyn_cast<bufferization::ToTensorOp>(op))
    return tie({t.getBuffer(), t.getResult()});
  if (auto m = dyn_cast<bufferization::MaterializeInDestinationOp>(op))
    return tie({m.getSource(), m.getDest()});
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return tie({pad.getSource(), pad.getResult()});
  if (auto cast = dyn_cast<tensor::CastOp>(op))
    return tie({cast.getSource(), cast.getResult()});
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
    return tie({c.getSrc(), c.getResult()});
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
    return tie({e.getSrc(), e.getResult()});
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op))
    return tie({s.getSource(), s.getResult()});
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op))
    return tie({s.getSource(), s.getDest(), s.getResult()});
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    SmallVector<Value> vs(concat.getInputs());
    vs.push_back(concat.getResult());
    return tie(vs);
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isBatchOp(linalgOp))
    return false;
  // Every output (and its result) carries the batch; so does every input
  // indexed by the outputs' dim-0 loop in its dim 0.
  bool changed = false;
  for (Value r : op->getResults())
    changed |= mark(r);
  std::optional<unsigned> loop;
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    changed |= mark(init.get());
    if (!loop)
      loop = dim0Loop(linalgOp, &init);
  }
  if (!loop)
    return changed;
  for (OpOperand *input : linalgOp.getDpsInputOperands())
    if (isa<ShapedType>(input->get().getType()) &&
        dim0Loop(linalgOp, input) == loop)
      changed |= mark(input->get());
  return changed;
}

/// Whether `v` is linalg.index `loop` of `op`'s body, possibly clamped by
/// minsi with a bound >= batch - 1 and maxsi with a bound <= 0 (a clamp a
/// smaller batch never reaches).
static bool isBatchIndex(Value v, unsigned loop, int64_t batch) {
  while (true) {
    if (auto index = v.getDefiningOp<linalg::IndexOp>())
      return index.getDim() == loop;
    Operation *def = v.getDefiningOp();
    if (!def || !isa<arith::MinSIOp, arith::MaxSIOp>(def))
      return false;
    Value next;
    for (unsigned k = 0; k < 2; ++k) {
      auto c = def->getOperand(1 - k).getDefiningOp<arith::ConstantIndexOp>();
      if (!c)
        continue;
      bool ok =
          isa<arith::MinSIOp>(def) ? c.value() >= batch - 1 : c.value() <= 0;
      if (ok)
        next = def->getOperand(k);
    }
    if (!next)
      return false;
    v = next;
  }
}

/// Whether every use of `v` (linalg.index of the batch loop, or a clamp of
/// it) is as index 0 of a tensor.extract of a batch value, directly or
/// through clamps.
static bool usedOnlyAsBatchIndex(Value v,
                                 const llvm::SetVector<Value> &values) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
      if (use.getOperandNumber() != 1 || !values.contains(extract.getTensor()))
        return false;
      continue;
    }
    if (isa<arith::MinSIOp, arith::MaxSIOp>(user) &&
        usedOnlyAsBatchIndex(user->getResult(0), values))
      continue;
    return false;
  }
  return true;
}

LogicalResult BatchValues::checkLinalg(linalg::LinalgOp op) {
  if (!isBatchOp(op))
    return success();
  std::optional<unsigned> loop;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    std::optional<unsigned> l = dim0Loop(op, &init);
    if (!l || (loop && *loop != *l) || !contains(init.get()))
      return failure();
    loop = l;
  }
  if (!loop ||
      op.getIteratorTypesArray()[*loop] != utils::IteratorType::parallel)
    return failure();
  // Batch operands: dim 0 by the loop, no other dim by it; other operands
  // not by it at all.
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool isBatch = contains(operand.get());
    if (isBatch && dim0Loop(op, &operand) != loop)
      return failure();
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      if (!(isBatch && i == 0) && e.isFunctionOfDim(*loop))
        return failure();
  }
  // The body: the batch loop's index only as the batch index of an extract
  // from a batch tensor; batch tensors read only that way.
  WalkResult r = op->walk([&](Operation *inner) {
    if (inner == op.getOperation())
      return WalkResult::advance();
    if (auto index = dyn_cast<linalg::IndexOp>(inner))
      if (index.getDim() == *loop &&
          !usedOnlyAsBatchIndex(index.getResult(), values))
        return WalkResult::interrupt();
    for (OpOperand &use : inner->getOpOperands()) {
      if (!contains(use.get()))
        continue;
      auto extract = dyn_cast<tensor::ExtractOp>(inner);
      if (!extract || use.getOperandNumber() != 0 ||
          extract.getIndices().empty() ||
          !isBatchIndex(extract.getIndices()[0], *loop, batch))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// Whether reassociation group 0 maps dim 0 of the expanded type to itself:
/// every other dim of the group has size 1.
static bool keepsDim0(ArrayRef<ReassociationIndices> groups,
                      ShapedType expanded) {
  if (groups.empty() || groups[0].empty() || groups[0][0] != 0)
    return false;
  for (int64_t d : ArrayRef(groups[0]).drop_front())
    if (expanded.getDimSize(d) != 1)
      return false;
  return true;
}

/// Offset 0, size `batch` and stride 1 in dim 0.
static bool wholeDim0(OffsetSizeAndStrideOpInterface op, int64_t batch) {
  return !op.getStaticOffsets().empty() && op.getStaticOffsets()[0] == 0 &&
         op.getStaticSizes()[0] == batch && op.getStaticStrides()[0] == 1;
}

LogicalResult BatchValues::check(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return checkLinalg(linalgOp);
  if (!anyIn(op->getOperands()) && !anyIn(op->getResults()))
    return success();
  if (isa<bufferization::ToTensorOp, bufferization::MaterializeInDestinationOp,
          tensor::CastOp, tensor::EmptyOp>(op))
    return success();
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return success(pad.getStaticLow()[0] == 0 && pad.getStaticHigh()[0] == 0 &&
                   pad.getRegion().front().getArgument(0).use_empty());
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return success(concat.getDim() != 0);
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
    return success(keepsDim0(c.getReassociationIndices(), c.getSrcType()));
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
    return success(keepsDim0(e.getReassociationIndices(), e.getResultType()));
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op))
    return success(wholeDim0(s, batch));
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op))
    return success(wholeDim0(s, batch));
  return failure();
}

LogicalResult BatchValues::analyze(func::FuncOp fn, ArrayRef<bool> seeds) {
  Block &body = fn.getBody().front();
  if (seeds.size() != body.getNumArguments())
    return failure();
  // A batch argument the body does not touch says nothing about how the
  // kernel indexes it (a declaration, a stub): not chunked.
  for (auto [arg, seed] : llvm::zip(body.getArguments(), seeds)) {
    if (seed && arg.use_empty())
      return failure();
    if (seed)
      mark(arg);
  }
  for (bool changed = true; changed;) {
    changed = false;
    fn.walk([&](Operation *op) { changed |= propagate(op); });
  }
  for (Value v : values) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (!t || !t.hasRank() || t.getRank() == 0 || t.getDimSize(0) != batch)
      return failure();
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (arg.getOwner() != &body || !seeds[arg.getArgNumber()])
        return failure();
  }
  WalkResult r = fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (failed(check(op)))
      return WalkResult::interrupt();
    // A linalg body is checked with its op.
    return isa<linalg::LinalgOp>(op) ? WalkResult::skip()
                                     : WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// Gives every use of a tensor.empty its own, so the batch set does not tie
/// unrelated ops through one shared empty tensor.
static void splitEmptyTensors(func::FuncOp fn) {
  SmallVector<tensor::EmptyOp> empties;
  fn.walk([&](tensor::EmptyOp e) { empties.push_back(e); });
  for (tensor::EmptyOp e : empties) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : e->getUses())
      uses.push_back(&use);
    for (OpOperand *use : ArrayRef(uses).drop_front()) {
      OpBuilder b(use->getOwner());
      use->set(b.clone(*e)->getResult(0));
    }
  }
}

bool mlir::kiln::isBatchParallel(func::FuncOp fn, int64_t batch,
                                 ArrayRef<bool> batchArgs) {
  if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock())
    return false;
  auto clone = cast<func::FuncOp>(fn->clone());
  splitEmptyTensors(clone);
  BatchValues values(batch);
  bool ok = succeeded(values.analyze(clone, batchArgs));
  clone->erase();
  return ok;
}

static Type withDim0(Type t, int64_t n) {
  if (auto r = dyn_cast<RankedTensorType>(t)) {
    SmallVector<int64_t> shape(r.getShape());
    shape[0] = n;
    return RankedTensorType::get(shape, r.getElementType(), r.getEncoding());
  }
  auto m = cast<MemRefType>(t);
  SmallVector<int64_t> shape(m.getShape());
  shape[0] = n;
  return MemRefType::get(shape, m.getElementType(), m.getLayout(),
                         m.getMemorySpace());
}

/// Rows [off, off + n) of dim 0 of a value of type `t`.
static void sliceOfDim0(OpBuilder &b, ShapedType t, Value off, int64_t n,
                        SmallVector<OpFoldResult> &offsets,
                        SmallVector<OpFoldResult> &sizes,
                        SmallVector<OpFoldResult> &strides) {
  offsets.assign(t.getRank(), b.getIndexAttr(0));
  strides.assign(t.getRank(), b.getIndexAttr(1));
  sizes.clear();
  for (int64_t d : t.getShape())
    sizes.push_back(b.getIndexAttr(d));
  offsets[0] = off;
  sizes[0] = b.getIndexAttr(n);
}

/// Replaces static size 0 of a slice-like op with `n`.
template <typename OpTy> static void setSize0(OpTy op, int64_t n) {
  SmallVector<int64_t> sizes(op.getStaticSizes());
  sizes[0] = n;
  op.setStaticSizes(sizes);
}

FailureOr<func::FuncOp>
mlir::kiln::cloneKernelForBatch(func::FuncOp fn, int64_t batch, int64_t n,
                                ArrayRef<ChunkRole> roles,
                                SymbolTable &symbols) {
  if (!fn || fn.isExternal() || !fn.getBody().hasOneBlock() || n < 1 ||
      batch % n || roles.size() != fn.getNumArguments())
    return failure();
  auto numOut = fn->getAttrOfType<IntegerAttr>("kiln.num_outputs");
  if (!numOut || numOut.getInt() > static_cast<int64_t>(roles.size()))
    return failure();
  auto clone = cast<func::FuncOp>(fn->clone());
  auto drop = [&]() -> FailureOr<func::FuncOp> {
    clone->erase();
    return failure();
  };
  splitEmptyTensors(clone);
  BatchValues values(batch);
  SmallVector<bool> seeds;
  for (ChunkRole r : roles)
    seeds.push_back(r != ChunkRole::Other);
  if (failed(values.analyze(clone, seeds)))
    return drop();

  Block &body = clone.getBody().front();
  SmallVector<BlockArgument> args(body.getArguments());
  // Full arguments: sliced at `off`, an index argument before the outputs.
  if (llvm::is_contained(roles, ChunkRole::Full)) {
    unsigned at = roles.size() - numOut.getInt();
    OpBuilder b(clone.getContext());
    if (failed(clone.insertArgument(at, b.getIndexType(), {}, clone.getLoc())))
      return drop();
    Value off = body.getArgument(at);
    for (auto [arg, role] : llvm::zip(args, roles)) {
      if (role != ChunkRole::Full)
        continue;
      values.values.remove(arg);
      auto type = cast<MemRefType>(arg.getType());
      SmallVector<OpFoldResult> offsets, sizes, strides;
      sliceOfDim0(b, type, off, n, offsets, sizes, strides);
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *user = use.getOwner();
        if (auto t = dyn_cast<bufferization::ToTensorOp>(user)) {
          b.setInsertionPointAfter(t);
          auto slice = tensor::ExtractSliceOp::create(
              b, t.getLoc(), t.getResult(), offsets, sizes, strides);
          t.getResult().replaceAllUsesExcept(slice.getResult(), slice);
          values.values.remove(t.getResult());
          values.values.insert(slice.getResult());
          continue;
        }
        auto m = dyn_cast<bufferization::MaterializeInDestinationOp>(user);
        if (!m || m.getDest() != arg)
          return drop();
        // At the top, so anything that builds on the destination (as
        // eliminate-empty-tensors does) finds it defined.
        b.setInsertionPointToStart(&body);
        auto view = memref::SubViewOp::create(b, m.getLoc(), arg, offsets,
                                              sizes, strides);
        m.getDestMutable().assign(view.getResult());
      }
    }
  }
  // Retype the batch values (Local arguments included) to n rows.
  for (Value v : values.values)
    v.setType(withDim0(v.getType(), n));
  clone.walk([&](Operation *op) {
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      if (values.values.contains(e.getResult())) {
        SmallVector<int64_t> shape(e.getStaticOutputShape());
        shape[0] = n;
        e.setStaticOutputShape(shape);
      }
    } else if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (values.values.contains(s.getSource()))
        setSize0(s, n);
    } else if (auto s = dyn_cast<tensor::InsertSliceOp>(op)) {
      if (values.values.contains(s.getDest()))
        setSize0(s, n);
    }
  });
  clone.setType(FunctionType::get(clone.getContext(), body.getArgumentTypes(),
                                  clone.getResultTypes()));
  clone->setAttr(kChunkOfAttr, fn.getSymNameAttr());
  std::string name = (fn.getSymName() + "_b" + Twine(n)).str();
  clone.setSymName(name);
  clone->setAttr(kChunkNameAttr, StringAttr::get(clone.getContext(), name));
  {
    ScopedDiagnosticHandler silence(clone.getContext(),
                                    [](Diagnostic &) { return success(); });
    if (failed(verify(clone)))
      return drop();
  }
  symbols.insert(clone, std::next(Block::iterator(fn)));
  return clone;
}
