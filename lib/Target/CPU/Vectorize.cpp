//===- Vectorize.cpp - Rows of linalg ops vectorized, vector lowering -----===//
//
// Contractions go to Contraction.cpp's register tiles. Every other static
// op is tiled to one row of its innermost dim (whole when the row is short,
// as for softmax or a layer norm's rows), after folding dims that every
// operand reads contiguously, and handed to linalg's vectorizer. Then the
// vector ops are lowered to 1-D loads, stores, FMAs, shuffles and
// reductions (strided rows read wide and deinterleaved, vector math as
// polynomials).
//
//===----------------------------------------------------------------------===//
#include "CPUCodegen.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

int64_t mlir::kiln::cpu::innermostStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 0)
    return 1;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return ShapedType::kDynamic;
  return strides.back();
}

Value mlir::kiln::cpu::indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value mlir::kiln::cpu::addIndex(OpBuilder &b, Location loc, Value base,
                                int64_t v) {
  if (v == 0)
    return base;
  return arith::AddIOp::create(b, loc, base, indexConst(b, loc, v));
}

Value mlir::kiln::cpu::unitStrideView(OpBuilder &b, Location loc, Value memref,
                                      int64_t stride) {
  auto type = cast<MemRefType>(memref.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = (shape.back() - 1) * stride + 1;
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  strides.back() = 1;
  auto denseType = MemRefType::get(
      shape, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides));
  SmallVector<OpFoldResult> sizes, strideValues;
  for (int64_t d : shape)
    sizes.push_back(b.getIndexAttr(d));
  for (Value v : meta.getStrides().drop_back())
    strideValues.push_back(v);
  strideValues.push_back(b.getIndexAttr(1));
  return memref::ReinterpretCastOp::create(
      b, loc, denseType, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()),
      sizes, strideValues);
}

int64_t mlir::kiln::cpu::elementBits(Type t) {
  return t.getIntOrFloatBitWidth();
}

namespace {

/// The tile of the last loop dim one vector op covers, 0 for none: the
/// whole row when it is short (rows of reductions up to 1024), else the
/// largest divisor of it up to 8 vectors.
int64_t chooseRowTile(int64_t extent, bool reduces, int64_t lanes) {
  int64_t whole = reduces ? 1024 : 8 * lanes;
  if (extent <= whole)
    return extent;
  for (int64_t t = std::min(extent, 8 * lanes); t >= lanes; --t)
    if (extent % t == 0)
      return t;
  return 0;
}

/// Tiles a static generic to one row of its last dim per vector op and
/// vectorizes each tile.
int64_t vectorizeRows(RewriterBase &b, linalg::GenericOp op,
                      int64_t vectorBits) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned n = ranges.size();
  if (n == 0 || failed(linalg::vectorizeOpPrecondition(
                    op, {}, {}, /*vectorizeNDExtract=*/true)))
    return 0;
  int64_t bits = 8;
  for (Value v : op->getOperands()) {
    Type t = getElementTypeOrSelf(v.getType());
    // Vectors of i1 are bit-packed in memory, memrefs of i1 byte-wide.
    if (!t.isIntOrFloat() || elementBits(t) % 8 != 0)
      return 0;
    bits = std::max(bits, elementBits(t));
  }
  int64_t lanes = std::max<int64_t>(vectorBits / bits, 1);
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  bool reduces = iters.back() == utils::IteratorType::reduction;
  int64_t tileSize = chooseRowTile(ranges.back(), reduces, lanes);
  if (!tileSize)
    return 0;
  // A transpose (an input contiguous along another loop dim `a`, the
  // output along the last): tiles of lanes x lanes, read as rows along `a`
  // and transposed in registers, instead of one scalar load per lane.
  // Only copies and float conversions: the square's 2-D vectors feed the
  // stores directly (other bodies, a quantization fused with the
  // transpose, would compute on 2-D vectors the lowering leaves as they
  // are).
  bool copyBody =
      llvm::all_of(op.getBlock()->without_terminator(), [](Operation &o) {
        return isa<arith::ExtFOp, arith::TruncFOp>(o);
      });
  std::optional<unsigned> across;
  if (!reduces && n >= 2 && copyBody)
    for (OpOperand *in : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(in);
      auto type = dyn_cast<MemRefType>(in->get().getType());
      if (!type || !map.isProjectedPermutation() || map.getNumResults() == 0 ||
          innermostStride(in->get()) != 1)
        continue;
      auto d = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (d && d.getPosition() + 1 != n && ranges[d.getPosition()] >= lanes &&
          ranges[d.getPosition()] % lanes == 0 && ranges.back() >= lanes &&
          ranges.back() % lanes == 0 &&
          iters[d.getPosition()] == utils::IteratorType::parallel)
        across = d.getPosition();
    }
  if (across)
    tileSize = lanes;
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  SmallVector<OpFoldResult> offsets, sizes;
  for (unsigned d = 0; d < n; ++d) {
    int64_t size = d + 1 == n ? tileSize : (across && d == *across) ? lanes : 1;
    if (ranges[d] == size) {
      offsets.push_back(b.getIndexAttr(0));
    } else {
      auto loop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                     indexConst(b, loc, ranges[d]),
                                     indexConst(b, loc, size));
      b.setInsertionPointToStart(loop.getBody());
      offsets.push_back(loop.getInductionVar());
    }
    sizes.push_back(b.getIndexAttr(size));
  }
  FailureOr<TilingResult> tiled =
      cast<TilingInterface>(op.getOperation())
          .getTiledImplementation(b, offsets, sizes);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return 0;
  b.eraseOp(op);
  Operation *tiledOp = tiled->tiledOps.front();
  b.setInsertionPoint(tiledOp);
  FailureOr<linalg::VectorizationResult> result =
      linalg::vectorize(b, tiledOp, {}, {}, /*vectorizeNDExtract=*/true);
  if (failed(result))
    return 0; // the tiled op stays, for the loop lowering
  b.eraseOp(tiledOp);
  return std::min(tileSize, lanes) * bits;
}

/// Folds runs of adjacent loop dims of one kind that every operand reads
/// adjacently and contiguously (a 1x1 convolution's rows and columns, an
/// elementwise op's trailing dims) into one, so vectors run along all of
/// them. Returns the op to vectorize (`op` when nothing folds).
linalg::GenericOp collapseContiguousDims(
    RewriterBase &b, linalg::GenericOp op,
    SmallVectorImpl<ReassociationIndices> *folded = nullptr) {
  if (!cast<linalg::LinalgOp>(op.getOperation())
           .hasOnlyProjectedPermutations() ||
      op.hasIndexSemantics())
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto canFold = [&](unsigned d) {
    if (iters[d] != iters[d + 1])
      return false;
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = maps[operand.getOperandNumber()];
      std::optional<unsigned> p1 = map.getResultPosition(
                                  getAffineDimExpr(d, op.getContext())),
                              p2 = map.getResultPosition(
                                  getAffineDimExpr(d + 1, op.getContext()));
      if (!p1 && !p2)
        continue;
      if (!p1 || !p2 || *p2 != *p1 + 1)
        return false;
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type)
        return false;
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(type.getStridesAndOffset(strides, offset)) ||
          ShapedType::isDynamic(strides[*p1]) ||
          ShapedType::isDynamic(strides[*p2]) || type.isDynamicDim(*p2) ||
          strides[*p1] != type.getDimSize(*p2) * strides[*p2])
        return false;
    }
    return true;
  };
  SmallVector<ReassociationIndices> groups;
  for (unsigned d = 0; d + 1 < ranges.size(); ++d) {
    if (!canFold(d))
      continue;
    if (!groups.empty() && groups.back().back() == (int64_t)d)
      groups.back().push_back(d + 1);
    else
      groups.push_back({(int64_t)d, (int64_t)d + 1});
  }
  if (groups.empty() || !linalg::areDimSequencesPreserved(maps, groups))
    return op;
  b.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(op, groups, b);
  if (failed(collapsed))
    return op;
  b.eraseOp(op);
  if (folded)
    folded->assign(groups.begin(), groups.end());
  return cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
}

/// A 1-D read along a dim of stride 2 to 4 (a pool's or strided
/// convolution's window): the same memory as a unit-stride view, read
/// `stride` times as wide (bounds checked) and deinterleaved by a shuffle,
/// instead of one scalar load per lane.
struct StridedReadAsShuffle : public OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<MemRefType>(op.getBase().getType());
    VectorType vt = op.getVectorType();
    if (!type || type.getRank() == 0 || vt.getRank() != 1 || op.getMask() ||
        !type.hasStaticShape() || !op.getPermutationMap().isMinorIdentity() ||
        vt.isScalable())
      return failure();
    int64_t stride = innermostStride(op.getBase());
    if (ShapedType::isDynamic(stride) || stride < 2 || stride > 4)
      return failure();
    Location loc = op.getLoc();
    Value dense = unitStrideView(rewriter, loc, op.getBase(), stride);
    SmallVector<Value> idx(op.getIndices());
    idx.back() = arith::MulIOp::create(rewriter, loc, idx.back(),
                                       indexConst(rewriter, loc, stride));
    auto wide =
        VectorType::get({vt.getDimSize(0) * stride}, vt.getElementType());
    AffineMap minor =
        AffineMap::getMinorIdentityMap(type.getRank(), 1, getContext());
    Value w = vector::TransferReadOp::create(rewriter, loc, wide, dense, idx,
                                             op.getPadding(), minor,
                                             ArrayRef<bool>{false});
    SmallVector<int64_t> lanes;
    for (int64_t i = 0; i < vt.getDimSize(0); ++i)
      lanes.push_back(i * stride);
    rewriter.replaceOpWithNewOp<vector::ShuffleOp>(op, w, w, lanes);
    return success();
  }
};

} // namespace

int64_t mlir::kiln::cpu::vectorizeOp(RewriterBase &rewriter,
                                     linalg::LinalgOp op, int64_t vectorBits,
                                     int64_t l1Bytes, bool int8Tiles) {
  if (!op.hasPureBufferSemantics() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return 0;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  // A named contraction as it is; a generic one after folding its dims
  // (a 1x1 convolution's 7x7 outputs are 49 lanes, not 7 of a row).
  if (!generic) {
    if (std::optional<int64_t> bits = emitContraction(
            rewriter, op, vectorBits, l1Bytes, {}, {}, int8Tiles))
      return *bits;
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
    if (failed(g))
      return 0;
    generic = *g;
  }
  // Folded dims, or a generalized named op, may make a contraction match.
  // Its fused ends are on the output as it was, whose dims fold like the
  // loop dims the output map reads.
  Value out = generic.getDpsInits()[0];
  AffineMap outMap = generic.getIndexingMapsArray().back();
  SmallVector<ReassociationIndices> folded;
  generic = collapseContiguousDims(rewriter, generic, &folded);
  SmallVector<ReassociationIndices> outGroups;
  if (!folded.empty() && outMap.isProjectedPermutation()) {
    for (unsigned p = 0; p < outMap.getNumResults(); ++p) {
      unsigned d = cast<AffineDimExpr>(outMap.getResult(p)).getPosition();
      auto in = llvm::find_if(folded, [&](const ReassociationIndices &g) {
        return llvm::is_contained(g, (int64_t)d) && g.front() != (int64_t)d;
      });
      if (in != folded.end())
        outGroups.back().push_back(p);
      else
        outGroups.push_back({(int64_t)p});
    }
  }
  if (std::optional<int64_t> bits = emitContraction(
          rewriter, generic, vectorBits, l1Bytes, out, outGroups, int8Tiles))
    return *bits;
  return vectorizeRows(rewriter, generic, vectorBits);
}

LogicalResult mlir::kiln::cpu::lowerVectorOps(Operation *root) {
  MLIRContext *ctx = root->getContext();
  // Stages of patterns that do not undo one another, each to a fixpoint.
  SmallVector<std::function<void(RewritePatternSet &)>> stages = {
      [](RewritePatternSet &p) {
        vector::populateVectorTransferPermutationMapLoweringPatterns(p);
        vector::populateVectorMaskOpLoweringPatterns(p);
        vector::populateVectorMultiReductionLoweringPatterns(
            p, vector::VectorMultiReductionLowering::InnerReduction);
        vector::populateVectorBroadcastLoweringPatterns(p);
        vector::populateVectorTransposeLoweringPatterns(
            p, vector::VectorTransposeLowering::Shuffle16x16);
        vector::populateVectorStepLoweringPatterns(p);
        vector::populateVectorGatherLoweringPatterns(p);
      },
      [](RewritePatternSet &p) {
        vector::populateCastAwayVectorLeadingOneDimPatterns(p);
      },
      [](RewritePatternSet &p) {
        vector::populateVectorTransferDropUnitDimsPatterns(p);
        vector::populateVectorShapeCastLoweringPatterns(p);
      },
      [](RewritePatternSet &p) { p.add<StridedReadAsShuffle>(p.getContext()); },
      [](RewritePatternSet &p) {
        vector::populateVectorMaskMaterializationPatterns(
            p, /*force32BitVectorIndices=*/false);
        vector::populateVectorTransferLoweringPatterns(p,
                                                       /*maxTransferRank=*/1);
      },
      // Transfers that are not unit-stride loads: scalar loops.
      [](RewritePatternSet &p) {
        populateVectorToSCFConversionPatterns(
            p, VectorTransferToSCFOptions().enableFullUnroll());
      },
      [](RewritePatternSet &p) {
        vector::populateVectorMaskMaterializationPatterns(
            p, /*force32BitVectorIndices=*/false);
        vector::populateVectorTransferLoweringPatterns(p,
                                                       /*maxTransferRank=*/1);
        vector::populateVectorBroadcastLoweringPatterns(p);
        vector::populateVectorMaskOpLoweringPatterns(p);
        vector::populateVectorShapeCastLoweringPatterns(p);
        vector::populateVectorStepLoweringPatterns(p);
      },
  };
  // Vector math as polynomials (libm would take it one lane at a time);
  // scalar math stays with libm.
  {
    RewritePatternSet patterns(ctx);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return llvm::is_contained(
          {"erf", "exp", "expm1", "log", "log1p", "log2", "tanh"}, name);
    });
    SmallVector<Operation *> ops;
    root->walk([&](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "math" &&
          op->getNumResults() == 1 && isa<VectorType>(op->getResultTypes()[0]))
        ops.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      return root->emitError("kiln-cpu-codegen: vector math did not converge");
  }
  // The approximations' math.fma on vectors is vector.fma (math-to-libm
  // would call fmaf per lane).
  {
    SmallVector<math::FmaOp> fmas;
    root->walk([&](math::FmaOp op) {
      if (isa<VectorType>(op.getType()))
        fmas.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (math::FmaOp op : fmas) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOpWithNewOp<vector::FMAOp>(op, op.getA(), op.getB(),
                                                 op.getC());
    }
  }
  for (auto &stage : stages) {
    RewritePatternSet patterns(ctx);
    stage(patterns);
    GreedyRewriteConfig config;
    config.setMaxIterations(32);
    if (failed(applyPatternsGreedily(root, std::move(patterns), config)))
      return root->emitError("kiln-cpu-codegen: vector lowering did not "
                             "converge");
  }
  return success();
}
