//===- Lowering.h - What the GPU strategies share ---------------*- C++ -*-===//
//
// Private to lib/Target/GPU: the fusion of a reduction with the fill before
// and the elementwise op after it, the loads, stores and inlined bodies the
// strategies build with, and the strategies' classes (Reductions.cpp,
// TiledContraction.cpp), which kiln-map-kernels-to-gpu (MapKernelsToGPU.cpp)
// applies. They reach the vendor only through a GPUTargetInfo.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_GPU_LOWERING_H
#define KILN_LIB_TARGET_GPU_LOWERING_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Target/GPU/PaddedCopy.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln::gpumap {

/// What a reduction absorbs around it: a `linalg.fill` of its output just
/// before (the accumulators' initial value) and an elementwise
/// `linalg.generic` just after that only consumes the result (applied before
/// the store; the intermediate buffer is never written).
struct ReductionFusion {
  linalg::FillOp fill;
  Value fillValue;
  linalg::GenericOp epi;
  OpOperand *epiIn = nullptr;
};

ReductionFusion detectFusion(linalg::LinalgOp op, ArrayRef<unsigned> par);

/// Whether `type`'s innermost dim is contiguous and every other stride and
/// the offset are static multiples of `run` elements: a run of `run`
/// elements along that dim starting at a multiple of `run` is then aligned
/// to its size (the buffers' bases, the arena's, the weights' and the
/// staged inputs', are aligned to at least 64 bytes).
inline bool alignedRuns(MemRefType type, int64_t run) {
  auto [strides, offset] = type.getStridesAndOffset();
  if (strides.empty() || strides.back() != 1 || ShapedType::isDynamic(offset) ||
      offset % run != 0)
    return false;
  return llvm::all_of(ArrayRef<int64_t>(strides).drop_back(), [&](int64_t s) {
    return !ShapedType::isDynamic(s) && s % run == 0;
  });
}

/// Releases a kernel's run-scoped buffers where their block ends (the
/// launcher's return for the entry block's, an iteration's end for a host
/// loop's), so the kernels after it reuse that memory: a run then holds
/// about the largest kernel's scratch, not the sum over its kernels. The
/// launches using a buffer are queued before any that reuse it (one
/// stream), so nothing waits. Records the kernel's scratch for kilnc
/// --report (kiln.scratch_bytes: the static buffers' bytes, each counted
/// once; kiln.scratch_dynamic when some are sized at run time).
void releaseKernelBuffers(func::FuncOp fn, Value ctx);

/// Shared by the reduction lowerings: loads, stores, inlined bodies.
class LoweringBase {
public:
  explicit LoweringBase(RewriterBase &rewriter) : rewriter(rewriter) {}

protected:
  Value index(Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  }

  /// A double buffer's next step: when `more` holds, `load` fills the next
  /// slab's (tile's) values, else the `staged` ones pass through; the
  /// insertion point is after the returned if, whose results are the next
  /// iteration's staged values.
  scf::IfOp loadNextIf(Location loc, Value more, ValueRange staged,
                       llvm::function_ref<void(SmallVector<Value> &)> load) {
    auto next = scf::IfOp::create(rewriter, loc, staged.getTypes(), more,
                                  /*withElseRegion=*/true);
    rewriter.setInsertionPointToStart(next.thenBlock());
    SmallVector<Value> loaded;
    load(loaded);
    scf::YieldOp::create(rewriter, loc, loaded);
    rewriter.setInsertionPointToStart(next.elseBlock());
    scf::YieldOp::create(rewriter, loc, staged);
    rewriter.setInsertionPointAfter(next);
    return next;
  }
  /// A shared-memory buffer of `n` values of `type` attributed to
  /// `launch` (one slot per warp of a block's partial results).
  Value addSharedSlots(gpu::LaunchOp launch, int64_t n, Type type) {
    auto slots = MemRefType::get(
        {n}, type, MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                   gpu::AddressSpace::Workgroup));
    return launch.addWorkgroupAttribution(slots, launch.getLoc());
  }
  /// A block's warps meet in shared memory: lane 0 of each warp stores its
  /// `acc` to `slots[warpId]`, then every thread waits at a barrier.
  void storeWarpSlots(Location loc, const GPUTargetInfo &info, Value acc,
                      Value slots, Value lane, Value warpId) {
    Value isLane0 = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, lane, index(loc, 0));
    {
      auto guard = scf::IfOp::create(rewriter, loc, isLane0, false);
      OpBuilder::InsertionGuard ig(rewriter);
      rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
      memref::StoreOp::create(rewriter, loc, acc, slots, ValueRange{warpId});
    }
    info.buildBarrier(rewriter, loc);
  }
  /// The first `n` slots combined in order (the same order every run).
  Value combineSlots(Location loc, Value slots, int64_t n,
                     function_ref<Value(Value, Value)> combine) {
    Value total = memref::LoadOp::create(rewriter, loc, slots, index(loc, 0));
    for (int64_t w = 1; w < n; ++w)
      total = combine(total, memref::LoadOp::create(rewriter, loc, slots,
                                                    ValueRange{index(loc, w)}));
    return total;
  }
  /// Moves the insertion point into `launch`'s body, before the terminator
  /// this creates.
  void enterLaunch(gpu::LaunchOp launch) {
    Block &body = launch.getBody().front();
    rewriter.setInsertionPointToEnd(&body);
    auto term = gpu::TerminatorOp::create(rewriter, launch.getLoc());
    rewriter.setInsertionPoint(term);
  }
  /// `op`'s body at loop point `dims`: its memref inputs loaded there
  /// through their indexing maps, `acc` as the accumulator.
  Value bodyAt(Location loc, linalg::LinalgOp op, ArrayRef<Value> dims,
               Value acc) {
    SmallVector<Value> args;
    for (OpOperand *in : op.getDpsInputOperands())
      args.push_back(
          isa<MemRefType>(in->get().getType())
              ? load(loc, in->get(), op.getMatchingIndexingMap(in), dims)
              : in->get());
    args.push_back(acc);
    return inlineBody(*op.getBlock(), args, dims);
  }
  SmallVector<Value> apply(Location loc, AffineMap map, ArrayRef<Value> dims) {
    std::optional<SmallVector<Value, 8>> idx =
        affine::expandAffineMap(rewriter, loc, map, dims);
    return SmallVector<Value>(idx->begin(), idx->end());
  }
  Value load(Location loc, Value buffer, AffineMap map, ArrayRef<Value> dims) {
    return memref::LoadOp::create(rewriter, loc, buffer, apply(loc, map, dims));
  }
  /// The inputs of `op` (by number) read through a zero-padded copy
  /// (PaddedCopy.h; with `anyFill`, padded with any constant), which
  /// `op`'s lowering may read from the copy's source instead, the fill
  /// where the padding was; with `lastDimUnpadded`, only those whose last
  /// dim has no padding (16-byte loads run along it).
  using PaddedInputs = llvm::SmallDenseMap<unsigned, PaddedCopy>;
  static PaddedInputs matchPaddedInputs(linalg::LinalgOp op,
                                        bool lastDimUnpadded,
                                        bool anyFill = false);
  /// Input `i`'s indices at loop point `pt` into `idx`: for a padded
  /// input, the source's (shifted by the padding, clamped inside it), and
  /// then whether they are inside it (else a null value).
  Value inputIndices(Location loc, linalg::LinalgOp op,
                     const PaddedInputs &padded, unsigned i, ArrayRef<Value> pt,
                     SmallVectorImpl<Value> &idx);
  /// The buffer input `i` is read from.
  static Value inputMemRef(linalg::LinalgOp op, const PaddedInputs &padded,
                           unsigned i);
  /// After the lowering: the padded copies' fills and copies (their
  /// scratch buffers then have no users left).
  void erasePaddedCopies(const PaddedInputs &padded);
  void store(Location loc, Value v, Value buffer, AffineMap map,
             ArrayRef<Value> dims) {
    memref::StoreOp::create(rewriter, loc, v, buffer, apply(loc, map, dims));
  }
  /// Clones `body` (a linalg region) with its block arguments bound to
  /// `args` and linalg.index d bound to dims[d]; returns the yielded value.
  /// Floating-point ops may contract (a multiply and the accumulating add
  /// become one fma, rounded once).
  Value inlineBody(Block &body, ValueRange args, ArrayRef<Value> dims) {
    IRMapping map;
    map.map(body.getArguments(), args);
    for (Operation &op : body.without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) {
        map.map(idx.getResult(), dims[idx.getDim()]);
        continue;
      }
      cloneContracting(op, map);
    }
    return map.lookupOrDefault(body.getTerminator()->getOperand(0));
  }
  /// Clones `op`; a floating-point multiply, add or subtract may contract.
  Operation *cloneContracting(Operation &op, IRMapping &map) {
    Operation *clone = rewriter.clone(op, map);
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(clone))
      if (isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(clone))
        clone->setAttr(
            fm.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(clone->getContext(),
                                          fm.getFastMathFlagsAttr().getValue() |
                                              arith::FastMathFlags::contract));
    return clone;
  }
  /// Stores the reduced value `v` of the output point `pt` (all loop dims,
  /// the parallel ones set): through the epilogue when there is one.
  void storeResult(Location loc, Value v, linalg::LinalgOp op,
                   ArrayRef<unsigned> par, ArrayRef<Value> pt,
                   ReductionFusion f) {
    OpOperand *init = op.getDpsInitOperand(0);
    if (!f.epi) {
      store(loc, v, init->get(), op.getMatchingIndexingMap(init), pt);
      return;
    }
    SmallVector<Value> edims; // the epilogue's dims: the parallel dims
    for (unsigned d : par)
      edims.push_back(pt[d]);
    SmallVector<Value> args;
    for (OpOperand *in : f.epi.getDpsInputOperands()) {
      if (in == f.epiIn)
        args.push_back(v);
      else if (!isa<MemRefType>(in->get().getType()))
        args.push_back(in->get());
      else
        args.push_back(
            load(loc, in->get(), f.epi.getMatchingIndexingMap(in), edims));
    }
    OpOperand *eout = f.epi.getDpsInitOperand(0);
    Block &ebody = *f.epi.getBlock();
    BlockArgument outArg = ebody.getArgument(ebody.getNumArguments() - 1);
    if (!outArg.use_empty())
      args.push_back(
          load(loc, eout->get(), f.epi.getMatchingIndexingMap(eout), edims));
    else
      args.push_back(ub::PoisonOp::create(rewriter, loc, outArg.getType()));
    Value r = inlineBody(ebody, args, edims);
    store(loc, r, eout->get(), f.epi.getMatchingIndexingMap(eout), edims);
  }
  void eraseFused(linalg::LinalgOp op, ReductionFusion f) {
    if (f.epi)
      rewriter.eraseOp(f.epi);
    if (f.fill)
      rewriter.eraseOp(f.fill);
    rewriter.eraseOp(op);
  }

  RewriterBase &rewriter;
};

/// Checks shared by both lowerings: buffer semantics, one output indexed by
/// exactly the parallel dims, one yielded value. Fills `par` and `red`.
bool isLowerableReduction(linalg::LinalgOp op, SmallVectorImpl<unsigned> &par,
                          SmallVectorImpl<unsigned> &red,
                          bool allowZeroResults = false);

/// Reductions and contractions (a linalg op with reduction dims whose one
/// output is indexed by all its parallel dims): one thread per tile of
/// output elements, the accumulators in registers across the reduction
/// loops (one load and one store per output element, not per step). Up to
/// two parallel dims are unrolled (U x V outputs per thread) so each loaded
/// input element is reused from registers, as long as enough threads remain
/// to fill the GPU.
class ReductionLowering : public LoweringBase {
public:
  ReductionLowering(RewriterBase &rewriter, const GPUTargetInfo &info,
                    int64_t minThreads)
      : LoweringBase(rewriter), info(info), minThreads(minThreads) {}
  LogicalResult lower(linalg::LinalgOp op);
  /// One warp per output: the warp's lanes stride over the (one, contiguous)
  /// reduction dim, then combine their partial results with a butterfly of
  /// shuffles. Needs a fill whose value is the identity of the body's
  /// combining op (add, max, min) and a 32-bit accumulator.
  LogicalResult lowerWarp(linalg::LinalgOp op);
  /// A reduction of every dim to one value (an index range's least and
  /// largest, a sum): one block whose threads stride over the flattened
  /// iteration space, a butterfly in each warp, the warps' values combined
  /// through shared memory by the first thread in a fixed order. Needs a
  /// fill that is the identity of the combining op; any scalar width.
  LogicalResult lowerFull(linalg::LinalgOp op);

private:
  const GPUTargetInfo &info;
  int64_t minThreads;
};

/// The op that combines a reduction body's accumulator with the value the
/// body computes from the inputs (acc = combine(acc, x)), when the fill
/// `init` is its identity and the accumulator 32-bit (any integer or float
/// scalar up to 64 bits with `anyWidth`); null otherwise (Reductions.cpp).
Operation *warpCombiner(Block &body, Value init, bool anyWidth = false);

/// Chains of row-local linalg.generic ops (a normalization's or softmax's
/// row reductions along the innermost dim and the elementwise ops between
/// them, over the same rows) as one launch of a block per row
/// (RowFusion.cpp).
class RowFusion : public LoweringBase {
public:
  RowFusion(RewriterBase &rewriter, const GPUTargetInfo &info)
      : LoweringBase(rewriter), info(info) {}
  /// Fuses the chains around the row reductions of `block` (a launcher's
  /// body); returns how many launches it built.
  int64_t run(Block &block);

  /// The rows a chain iterates: the outer dims' sizes and the row's length.
  struct Shape {
    SmallVector<int64_t> outer;
    int64_t row = 0;
  };
  /// One op of a chain: over the row's elements, over the row itself (a
  /// per-row scalar), or a row reduction with the fill of its initial value.
  struct Member {
    linalg::GenericOp op;
    enum Kind { Row, Scalar, Reduction } kind;
    linalg::FillOp fill;
    Operation *combiner = nullptr;
  };

private:
  /// The rows of a reduction along its innermost dim that a block can take.
  std::optional<Shape> rowReduction(linalg::GenericOp op) const;
  LogicalResult fuseAround(linalg::GenericOp seed,
                           SmallPtrSetImpl<Operation *> &taken);
  /// Builds the chain's launch: a warp per row when it is `laneLocal` (each
  /// element read back by the lane that wrote it) and short, else a block.
  void emit(MutableArrayRef<Member> chain, const Shape &shape, bool laneLocal);

  const GPUTargetInfo &info;
};

/// 2-D convolutions of few input channels (a stem's RGB image) as an
/// im2col copy and a matmul the tensor-core lowerings take
/// (SmallChannelConv.cpp).
class SmallChannelConv {
public:
  /// Channels below which (and not a multiple of 8) a convolution is
  /// rewritten, and the largest padded window K.
  static constexpr int64_t kMaxChannels = 16, kMaxK = 512;
  /// The im2col copy by rows (a block per row of output pixels, the
  /// input's window rows staged in shared memory, 16-byte stores): its
  /// threads and the most shared memory the staged rows may take.
  static constexpr int64_t kRowThreads = 256, kMaxRowBytes = 40 * 1024;
  /// The im2col copy otherwise: K' (up to a multiple of 32) threads along x
  /// times as many pixels along y as fit this many threads; each thread
  /// copies its k of this many pixels.
  static constexpr int64_t kMaxIm2colThreads = 512, kPixelsPerThread = 4;
  SmallChannelConv(RewriterBase &rewriter, const GPUTargetInfo &info)
      : rewriter(rewriter), info(info) {}
  /// Rewrites the convolutions of `block` (a kernel's body; `ctx` its
  /// context argument for the new buffers); returns how many.
  int64_t run(Block &block, Value ctx);

private:
  LogicalResult rewrite(linalg::GenericOp g, Value ctx);
  RewriterBase &rewriter;
  const GPUTargetInfo &info;
};

struct MulAccBody;

/// Contractions (matmul, batched matmul, convolution: the output indexed by
/// every parallel dim, the body acc + a * b with a computed from one set of
/// inputs, X's, and b from another, W's; see MulAccBody) as a tiled matrix
/// product through shared memory: the parallel dims only X's inputs read
/// form the GEMM's M, those only W's read its N, those both read a batch
/// (grid z), the reduction dims its K. What is staged is a and b themselves,
/// computed from the loaded inputs (casts, a fused producer's bias and ReLU
/// run once per staged element, not once per product).
///
/// A block of 16x16 threads computes a T x T tile of outputs (T = 128, each
/// thread 8x8 in registers, when that still fills the GPU; else T = 64 and
/// 4x4), a thread's outputs in runs of 4 that are 64 apart, so its operands
/// come from shared memory as 4-wide vector loads without bank conflicts.
/// K advances BK (1024 / T) at a time through two shared buffers: the
/// threads load the next slab of X and W into registers (through their
/// indexing maps, so a convolution's windows are gathered as an implicit
/// im2col; consecutive threads along whichever of the slab's dims is
/// contiguous in memory; the column coordinates computed once, outside the
/// K loop) while they multiply the current one, one barrier per step. Rows
/// of the shared buffers are padded by 4 so column- and K-major stores are
/// both conflict-free. The thread layout follows the output's innermost dim
/// so stores coalesce.
///
/// Half operands extended to an f32 accumulator go to the target's matrix
/// instruction instead (GPUTargetInfo::getMMA and its fragment layout):
/// the half values are staged in K-contiguous slabs (BK = 32, rows padded by
/// 8 halves); the block's warps, as 2 x (warps / 2), each own T/2 x
/// T/(warps / 2) outputs as M x N tiles of the instruction, their fragments
/// read from the slabs as the layout's K runs.
///
/// When the tiles alone leave the GPU short of blocks (batch 1, few large
/// outputs), K is split S ways: each block sums one part into a scratch
/// buffer, and a second launch adds the parts, the fill value and the
/// epilogue. Zero padding (K beyond the slab or the part, M and N beyond
/// the tile) stages a = b = 0, which leaves acc + a * b exact.
///
/// Static shapes, a fill before (the initial value), M, N >= 16 and at
/// least `minBlocks` blocks; anything else goes to ReductionLowering.
class TiledContraction : public LoweringBase {
public:
  TiledContraction(RewriterBase &rewriter, const GPUTargetInfo &info, Value ctx,
                   int64_t minBlocks, int64_t fillBlocks, bool tensorCores,
                   bool asyncCopy = false)
      : LoweringBase(rewriter), info(info), ctx(ctx), minBlocks(minBlocks),
        fillBlocks(fillBlocks), tensorCores(tensorCores), asyncCopy(asyncCopy) {
  }
  LogicalResult lower(linalg::LinalgOp op);

  /// Staging one operand: the slot r of a thread holds element
  /// e = tid + 256 r of the BK x T slab, (k, col) = (e / T, e % T) when the
  /// operand's innermost memory dim follows a column dim, else
  /// (e % BK, e / BK). The column part of each slot's point is fixed.
  /// A staged value is the product operand computed from its side's inputs
  /// (loaded through their indexing maps) by the body's ops.
  struct Stage {
    Value root, dst, zero;
    SmallVector<unsigned> inputs;
    SmallVector<Operation *> ops;
    SmallVector<Value> kr, col, colOk;
    SmallVector<SmallVector<Value>> pt;
    /// Elements per slot: 1, or a 16-byte vector along K (vecK) or along
    /// the columns (see vectorSlots).
    int64_t vec = 1;
    bool vecK = false;
  };
  /// What the asynchronous K loop (AsyncStaging.cpp) is built from.
  struct AsyncLoop {
    linalg::LinalgOp op;
    const MMALayout *layout = nullptr;
    Stage *x = nullptr, *w = nullptr;
    ArrayRef<unsigned> red;
    function_ref<Value(unsigned)> sizeOf;
    /// The block's K range, the slab count, the lane and the warp's origin
    /// in the tile.
    Value kBegin, kEnd, slabs, lane, warpM, warpN;
    int64_t bk = 0, tile = 0, stages = 0, mTiles = 0, nTiles = 0;
    SmallVector<Value> inits;
  };
  /// Shared buffers per operand of the asynchronous ring for a tile of
  /// `tile` and slabs of `bk` 16-bit elements: as many as fit (at most 4).
  static int64_t asyncStages(int64_t tile, int64_t bk);
  /// The shared index of element `e` of row `row` of a ring buffer whose
  /// rows hold `width` 16-bit elements: the 16-byte run of `e` swizzled
  /// (xor) with the row, so that 8 rows' runs at one offset (a fragment
  /// load) and 8 consecutive runs (a warp's copies) fall on distinct banks.
  Value swizzle(Location loc, Value row, Value e, int64_t width);
  /// The K loop over a ring of `stages` shared buffers filled by the
  /// target's asynchronous copies and read with its matrix fragment loads;
  /// its first results are the accumulators.
  scf::ForOp buildAsyncLoop(Location loc, AsyncLoop &l);

private:
  const GPUTargetInfo &info;
  Value ctx;
  int64_t minBlocks, fillBlocks;
  bool tensorCores, asyncCopy;
  static constexpr int64_t kThreads = 256, kSide = 16, kRun = 4, kChunk = 64;
  /// K of a shared slab for the matrix instruction.
  static constexpr int64_t kMMASlabK = 32;
  /// `linear` delinearized over `dims` (outermost first) into `pt`.
  void delinearize(Location loc, Value linear, ArrayRef<unsigned> dims,
                   ArrayRef<int64_t> sizes, SmallVectorImpl<Value> &pt) {
    delinearize(
        loc, linear, dims, [&](unsigned d) { return index(loc, sizes[d]); },
        pt);
  }
  /// The same with the dims' sizes as values (`size(d)`; run-time sizes).
  void delinearize(Location loc, Value linear, ArrayRef<unsigned> dims,
                   function_ref<Value(unsigned)> size,
                   SmallVectorImpl<Value> &pt) {
    for (int64_t i = dims.size() - 1; i >= 0; --i) {
      Value sz = size(dims[i]);
      pt[dims[i]] =
          i == 0
              ? linear
              : arith::RemUIOp::create(rewriter, loc, linear, sz).getResult();
      if (i > 0)
        linear = arith::DivUIOp::create(rewriter, loc, linear, sz);
    }
  }
  Value add(Location loc, Value a, Value b) {
    return arith::AddIOp::create(rewriter, loc, a, b);
  }
  Value mul(Location loc, Value a, int64_t b) {
    return arith::MulIOp::create(rewriter, loc, a, index(loc, b));
  }
  Value ult(Location loc, Value a, Value b) {
    return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, a,
                                 b);
  }
  /// acc + a * b with the body's own ops, free to contract into an fma.
  Value mulAdd(const MulAccBody &ma, Value a, Value b, Value acc);
  /// coord.group * group + coord.thread * thread, without the terms whose
  /// factor is 0 (and the product when it is 1).
  Value laneCoord(Location loc, LaneCoord coord, Value group, Value thread);
};

/// `kiln.attention` (on memrefs) as one launch of a fused kernel: an online
/// softmax over key tiles on the target's matrix instruction, the scores in
/// registers (FlashAttention.cpp, whose header says how).
class FlashAttention : public LoweringBase {
public:
  /// `block` (--gpu-attention-block) overrides the kernel's own warps,
  /// keys a step and blocks a multiprocessor where it is not the default.
  FlashAttention(RewriterBase &rewriter, const GPUTargetInfo &info,
                 const AttentionBlock &block = {})
      : LoweringBase(rewriter), info(info), block(block) {}
  /// Builds the launch in place of `op`; an error at `op` when the target's
  /// matrix instruction cannot serve it.
  LogicalResult lower(AttentionOp op);

private:
  /// Warps of a block (each the instruction's M query rows) and keys a step,
  /// the kernel's own choice.
  static constexpr int64_t kWarps = 4, kKeys = 64;
  /// Blocks a multiprocessor takes of a kernel with heads of up to 64 and
  /// an output epilogue, the kernel's own choice.
  static constexpr int64_t kMinAttentionBlocks = 4;
  /// The static shared memory a block may take (the smallest limit of the
  /// targets: 48 KiB); the asynchronous copies' second buffers must fit.
  static constexpr int64_t kMaxSharedBytes = 48 * 1024;
  Value add(Location loc, Value a, Value b) {
    return arith::AddIOp::create(rewriter, loc, a, b);
  }
  Value mul(Location loc, Value a, int64_t b) {
    return arith::MulIOp::create(rewriter, loc, a, index(loc, b));
  }
  Value ult(Location loc, Value a, Value b) {
    return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, a,
                                 b);
  }
  const GPUTargetInfo &info;
  AttentionBlock block;
};

} // namespace mlir::kiln::gpumap

#endif // KILN_LIB_TARGET_GPU_LOWERING_H
