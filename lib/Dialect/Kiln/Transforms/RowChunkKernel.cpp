//===- RowChunkKernel.cpp - A kernel restricted to a band of output rows --===//
//
// Row chunking (RowChunk.cpp) launches a run of kernels once per band of
// rows of its outputs. A kernel of the run is cloned for one band:
//
//  1. the output is materialized from tensor.extract_slice [lo, hi) of the
//     value the kernel wrote (along one dim, the output's rows) into the
//     same rows of the output buffer (memref.subview);
//  2. the slice is swapped with its producer again and again: a linalg op
//     through its TilingInterface (its operands sliced to what those rows
//     read: a 3x3 convolution's input rows lo - 1 .. hi + 1 of the padded
//     tensor, a stride-2 pool's 2 lo .. 2 hi, a transpose's permuted dims),
//     a tensor.pad through bubbleUpPadSlice (the pad kept only where the band
//     reaches the border), a concatenation along another dim as the
//     concatenation of the slices; canonicalization folds the offsets to
//     constants, merges slices and drops the whole-tensor ops left dead.
//     A tensor read by tensor.extract inside a body (Resize, ConvTranspose)
//     stays whole, and so does what computes it. Any other producer of a
//     slice refuses the kernel;
//  3. what the clone reads of each argument: the hull of the static slices
//     of its to_tensor, along one dim, or all of it.
//
// localizeKernelRows then turns an argument into a band buffer (its type
// has the band's rows, the slices' offsets move by the band's first row; an
// output band is written directly). Every element of the band is computed by
// the same loop iterations as in the original kernel (a border pad gives the
// same zeros, an interior row the same data), so the results are
// bit-identical where codegen keeps each element's reduction order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Chunk.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::kiln;

/// Swaps of a slice with its producer, at most (a kernel has a few dozen
/// ops; each swap moves a slice one op up).
static constexpr unsigned kMaxSwaps = 512;

FrozenRewritePatternSet mlir::kiln::rowTilingPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  for (Dialect *d : ctx->getLoadedDialects())
    d->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
  tensor::populateMergeConsecutiveInsertExtractSlicePatterns(patterns);
  tensor::populateFoldTensorEmptyPatterns(patterns);
  return FrozenRewritePatternSet(std::move(patterns));
}

/// Offsets, sizes and strides of rows [lo, hi) of `dim` of `t`.
static void rowSlice(OpBuilder &b, ShapedType t, RowRange r,
                     SmallVector<OpFoldResult> &offsets,
                     SmallVector<OpFoldResult> &sizes,
                     SmallVector<OpFoldResult> &strides) {
  offsets.assign(t.getRank(), b.getIndexAttr(0));
  strides.assign(t.getRank(), b.getIndexAttr(1));
  sizes.clear();
  for (int64_t d : t.getShape())
    sizes.push_back(b.getIndexAttr(d));
  offsets[r.dim] = b.getIndexAttr(r.lo);
  sizes[r.dim] = b.getIndexAttr(r.hi - r.lo);
}

/// Swaps one slice with its producer; failure when the producer cannot be
/// sliced, false (nothing done) when there is nothing to swap.
static FailureOr<bool> swapWithProducer(tensor::ExtractSliceOp slice) {
  Operation *def = slice.getSource().getDefiningOp();
  if (!def ||
      isa<bufferization::ToTensorOp, tensor::EmptyOp, tensor::ExtractSliceOp>(
          def))
    return false; // an argument's read, or folded by canonicalization
  OpBuilder b(slice);
  if (!slice.hasUnitStride() ||
      slice.getSourceType().getRank() != slice.getResultType().getRank())
    return failure();
  Value tiled;
  if (auto pad = dyn_cast<tensor::PadOp>(def)) {
    FailureOr<TilingResult> r = tensor::bubbleUpPadSlice(
        b, pad, slice.getMixedOffsets(), slice.getMixedSizes(),
        /*generateZeroSliceGuard=*/true);
    if (failed(r) || r->tiledValues.size() != 1)
      return failure();
    tiled = r->tiledValues[0];
  } else if (auto concat = dyn_cast<tensor::ConcatOp>(def)) {
    // Along another dim: the concatenation of each input's slice.
    int64_t d = concat.getDim();
    if (slice.getStaticOffsets()[d] != 0 ||
        slice.getStaticSizes()[d] != slice.getSourceType().getDimSize(d))
      return failure();
    SmallVector<Value> parts;
    for (Value in : concat.getInputs()) {
      SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
      sizes[d] = b.getIndexAttr(cast<ShapedType>(in.getType()).getDimSize(d));
      parts.push_back(tensor::ExtractSliceOp::create(
          b, slice.getLoc(), in, slice.getMixedOffsets(), sizes,
          slice.getMixedStrides()));
    }
    tiled = tensor::ConcatOp::create(b, slice.getLoc(), d, parts);
  } else if (isa<TilingInterface>(def)) {
    FailureOr<TilingResult> r = tensor::replaceExtractSliceWithTiledProducer(
        b, slice, cast<OpResult>(slice.getSource()));
    if (failed(r) || r->tiledValues.size() != 1)
      return failure();
    tiled = r->tiledValues[0];
  } else {
    return failure();
  }
  if (tiled.getType() != slice.getType())
    tiled = tensor::CastOp::create(b, slice.getLoc(), slice.getType(), tiled);
  slice.replaceAllUsesWith(tiled);
  slice->erase();
  return true;
}

/// Canonicalization and CSE of a kernel clone; then every static slice of
/// an argument moves up to its to_tensor, as an argument read is in any
/// kernel (before all computation: codegen fuses an epilogue into its
/// contraction assuming what the epilogue reads is defined there).
static void simplify(func::FuncOp fn, const FrozenRewritePatternSet &patterns) {
  (void)applyPatternsGreedily(fn, patterns);
  IRRewriter rewriter(fn.getContext());
  DominanceInfo dom;
  eliminateCommonSubExpressions(rewriter, dom, fn);
  fn.walk([](tensor::ExtractSliceOp s) {
    auto t = s.getSource().getDefiningOp<bufferization::ToTensorOp>();
    if (t && s->getNumOperands() == 1 && t->getBlock() == s->getBlock())
      s->moveAfter(t);
  });
}

/// What `fn` reads of argument `arg`: nullopt when nothing; a RowRange with
/// dim -1 when all of it (or across more than one dim).
static std::optional<RowRange> readRows(BlockArgument arg) {
  auto type = dyn_cast<MemRefType>(arg.getType());
  if (!type || arg.use_empty())
    return std::nullopt;
  int64_t rank = type.getRank();
  SmallVector<int64_t> lo(rank, INT64_MAX), hi(rank, -1);
  RowRange whole;
  for (Operation *user : arg.getUsers()) {
    auto t = dyn_cast<bufferization::ToTensorOp>(user);
    if (!t)
      return whole;
    for (Operation *u : t.getResult().getUsers()) {
      auto s = dyn_cast<tensor::ExtractSliceOp>(u);
      if (!s || !s.hasUnitStride() ||
          ShapedType::isDynamicShape(s.getStaticOffsets()) ||
          ShapedType::isDynamicShape(s.getStaticSizes()))
        return whole;
      for (int64_t d = 0; d < rank; ++d) {
        lo[d] = std::min(lo[d], s.getStaticOffsets()[d]);
        hi[d] =
            std::max(hi[d], s.getStaticOffsets()[d] + s.getStaticSizes()[d]);
      }
    }
  }
  RowRange r;
  for (int64_t d = 0; d < rank; ++d) {
    if (hi[d] < 0) // no slice at all (unused tensor)
      return std::nullopt;
    if (lo[d] == 0 && hi[d] == type.getDimSize(d))
      continue;
    if (r.dim >= 0)
      return whole;
    r = RowRange{d, lo[d], hi[d]};
  }
  return r;
}

FailureOr<RowTiling>
mlir::kiln::tileKernelRows(func::FuncOp fn, RowRange out,
                           const FrozenRewritePatternSet &patterns) {
  auto numOut =
      fn ? fn->getAttrOfType<IntegerAttr>("kiln.num_outputs") : IntegerAttr();
  if (!numOut || numOut.getInt() != 1 || fn.isExternal() ||
      !fn.getBody().hasOneBlock() || fn.getNumArguments() == 0)
    return failure();
  auto clone = cast<func::FuncOp>(fn->clone());
  auto drop = [&]() -> FailureOr<RowTiling> {
    clone->erase();
    return failure();
  };
  Block &body = clone.getBody().front();
  BlockArgument outArg = body.getArguments().back();
  auto outType = dyn_cast<MemRefType>(outArg.getType());
  if (!outType || !outType.hasStaticShape() || out.dim < 0 ||
      out.dim >= outType.getRank() || out.lo < 0 || out.lo >= out.hi ||
      out.hi > outType.getDimSize(out.dim) || !outArg.hasOneUse())
    return drop();
  auto m = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *outArg.getUsers().begin());
  if (!m || m.getDest() != outArg)
    return drop();
  // 1. The band of the output.
  OpBuilder b(m);
  SmallVector<OpFoldResult> offsets, sizes, strides;
  rowSlice(b, outType, out, offsets, sizes, strides);
  auto slice = tensor::ExtractSliceOp::create(b, m.getLoc(), m.getSource(),
                                              offsets, sizes, strides);
  b.setInsertionPointToStart(&body);
  auto view =
      memref::SubViewOp::create(b, m.getLoc(), outArg, offsets, sizes, strides);
  m.getSourceMutable().assign(slice.getResult());
  m.getDestMutable().assign(view.getResult());
  // 2. Slices up through their producers. A producer that cannot be
  // tiled (an op whose result map is not a projection) says so to the
  // diagnostics: a failed trial, not the user's error.
  ScopedDiagnosticHandler silence(clone.getContext(),
                                  [](Diagnostic &) { return success(); });
  unsigned swaps = 0;
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<tensor::ExtractSliceOp> slices;
    clone.walk([&](tensor::ExtractSliceOp s) { slices.push_back(s); });
    for (tensor::ExtractSliceOp s : slices) {
      FailureOr<bool> swapped = swapWithProducer(s);
      if (failed(swapped) || (*swapped && ++swaps > kMaxSwaps))
        return drop();
      changed |= *swapped;
    }
    simplify(clone, patterns);
  }
  // Every slice left reads an argument.
  WalkResult left = clone.walk([&](tensor::ExtractSliceOp s) {
    return s.getSource().getDefiningOp<bufferization::ToTensorOp>()
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  if (left.wasInterrupted())
    return drop();
  // 3. What each argument is read for.
  RowTiling tiling;
  for (BlockArgument arg : body.getArguments().drop_back())
    tiling.reads.push_back(readRows(arg));
  tiling.clone = clone;
  return tiling;
}

LogicalResult
mlir::kiln::localizeKernelRows(func::FuncOp clone, unsigned arg, RowRange band,
                               const FrozenRewritePatternSet &patterns) {
  Block &body = clone.getBody().front();
  BlockArgument a = body.getArgument(arg);
  auto type = dyn_cast<MemRefType>(a.getType());
  if (!type || band.dim < 0 || band.dim >= type.getRank())
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  shape[band.dim] = band.hi - band.lo;
  a.setType(MemRefType::get(shape, type.getElementType()));
  for (Operation *user : llvm::make_early_inc_range(a.getUsers())) {
    if (auto view = dyn_cast<memref::SubViewOp>(user)) {
      // The output band: written whole, in place of the rows it was.
      SmallVector<int64_t> offsets(view.getStaticOffsets());
      if (!view.hasUnitStride() || view.getStaticSizes() != ArrayRef(shape) ||
          llvm::any_of(llvm::enumerate(offsets), [&](auto e) {
            return e.value() !=
                   (static_cast<int64_t>(e.index()) == band.dim ? band.lo : 0);
          }))
        return failure();
      view.getResult().replaceAllUsesWith(a);
      view->erase();
      continue;
    }
    auto t = dyn_cast<bufferization::ToTensorOp>(user);
    if (!t)
      return failure();
    Value result = t.getResult();
    result.setType(RankedTensorType::get(shape, type.getElementType()));
    for (Operation *u : result.getUsers()) {
      auto s = dyn_cast<tensor::ExtractSliceOp>(u);
      if (!s)
        return failure();
      SmallVector<int64_t> offsets(s.getStaticOffsets());
      offsets[band.dim] -= band.lo;
      if (offsets[band.dim] < 0 ||
          offsets[band.dim] + s.getStaticSizes()[band.dim] > shape[band.dim])
        return failure();
      s.setStaticOffsets(offsets);
    }
  }
  clone.setType(FunctionType::get(clone.getContext(), body.getArgumentTypes(),
                                  clone.getResultTypes()));
  simplify(clone, patterns); // slices of a whole band fold away
  return success();
}

LogicalResult mlir::kiln::verifySilently(func::FuncOp fn) {
  ScopedDiagnosticHandler silence(fn.getContext(),
                                  [](Diagnostic &) { return success(); });
  return verify(fn);
}
