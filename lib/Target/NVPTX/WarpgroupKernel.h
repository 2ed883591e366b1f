//===- WarpgroupKernel.h - The sm_90a contraction kernel's body -*- C++ -*-===//
//
// Private to lib/Target/NVPTX: the body of the warpgroup-MMA kernel
// (WarpgroupKernel.cpp) that lowerWarpgroupContraction builds inside its
// gpu.launch: one tile per block, or, persistent, a loop of each block
// over tiles (WarpgroupPersistent.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_NVPTX_WARPGROUPKERNEL_H
#define KILN_LIB_TARGET_NVPTX_WARPGROUPKERNEL_H

#include "WarpgroupProblem.h"

#include "kiln/Target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln::warpgroup {

/// Builds the kernel's body: i32 arithmetic on shared-memory addresses, the
/// NVVM ops of mbarriers, bulk copies and wgmma.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// Builds `fn` inside a new scf.if on `cond` (no else).
  void ifThen(Value cond, function_ref<void()> fn) {
    auto op = scf::IfOp::create(b, loc, TypeRange{}, cond,
                                /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    fn();
  }

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, i32(y)) : x; }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, i32(y));
  }
  Value divu(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, i32(y));
  }
  Value remu(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, i32(y));
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value toI32(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  }
  /// A shared-memory pointer at 32-bit shared address `addr`.
  Value shared(Value addr) {
    auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
    return LLVM::IntToPtrOp::create(b, loc, ptr3, addr);
  }

  OpBuilder &b;
  Location loc;
};

/// How one launch covers the problem (lowerWarpgroupContraction's choices).
struct KernelConfig {
  Tile tile;
  /// Split K: K steps per part and the parts (1: none); grid z is the
  /// batch times the parts.
  int64_t kPer = 0, splits = 1;
  /// Persistent: `blocks` blocks along grid x, each looping over tiles
  /// (never with split K).
  bool persistent = false;
  int64_t blocks = 0;
  /// Persistent tiles that leave through shared memory: the staging area's
  /// offset from the aligned base, past the ring and its barriers (the
  /// ring is filling the next tile's stages meanwhile); 0: none.
  int64_t stagingOffset = 0;
  /// The tile maps (vector<16xi64> values of kiln.tile_map or
  /// kiln.im2col_map).
  Value mapA, mapB;
  /// Split K's scratch buffer [batch x parts][M][N] (null without).
  Value parts;
};

/// One output tile of a block: its corner, its batch, its K steps.
struct TileCoords {
  Value m0, n0;
  /// The batch (times the parts, plus this part, with split K): the
  /// output's outermost index.
  Value bz;
  /// The batch indices (loop order) of `bz`.
  SmallVector<Value> bIdx;
  Value kBegin, kEnd;
  /// The K steps the block ran through its ring before this tile's
  /// (persistent; null: none).
  Value ring;
  /// Whether the block has a tile after this one (persistent; null: none).
  Value hasNext;
};

/// Builds the kernel's body into `launch` (whose grid covers the problem as
/// `cfg` says).
void buildKernel(RewriterBase &rewriter, const Problem &p, gpu::LaunchOp launch,
                 const KernelConfig &cfg);

/// The batch indices (loop order, the last fastest) of batch `bz`.
SmallVector<Value> batchIndices(Emitter &e, const Problem &p, Value bz);

/// C's dims (index-typed) at batch indices `batchIdx`, row `row` of its
/// M x N view and column `col` (i32 or index).
SmallVector<Value> cPoint(OpBuilder &b, Location loc, const Problem &p,
                          ArrayRef<Value> batchIdx, Value row, Value col);

/// C's value `v` at `dims` through the epilogue's body (its other inputs
/// loaded at the point, or taken from `loaded` where it has them); `v`
/// itself without an epilogue.
Value throughEpilogue(
    OpBuilder &b, Location loc, const Problem &p, Value v, ArrayRef<Value> dims,
    const llvm::DenseMap<OpOperand *, Value> *loaded = nullptr);

/// The epilogue's memref inputs other than C whose indexing maps use none
/// of C's M dims (per-column scales, zero-point sums, a bias): the same
/// values for every row of a column.
SmallVector<OpOperand *> columnOperands(const Problem &p);

/// The epilogue's input `in` loaded at C's point `dims`.
Value loadEpilogueOperand(OpBuilder &b, Location loc, const Problem &p,
                          OpOperand *in, ArrayRef<Value> dims);

/// Stores the final value `r` at `dims`: into the epilogue's output, or C.
void storeFinal(OpBuilder &b, Location loc, const Problem &p, Value r,
                ArrayRef<Value> dims);

// The stores through shared memory (WarpgroupEpilogue.cpp).

/// Whether the tiles of `p` under `cfg` leave through shared memory
/// (storeTileStaged): no split K, an output of 8-, 16- or 32-bit elements,
/// N a multiple of 8, and the staged tile within the ring (one tile per
/// block) or in a staging area of its own (persistent, cfg.stagingOffset).
bool canStageTile(const Problem &p, const KernelConfig &cfg);

/// The bytes of a staged tile of `t` (its accumulators, rows padded).
int64_t stagedTileBytes(const Tile &t);

/// The rows of the staging area (the tile's; a ping-pong tile's consumers
/// stage 64 rows at a time, each in its own part of the area).
int64_t stagedRows(const Tile &t);

/// Whether the output of `p` can leave through shared memory at all (its
/// element type and N), whatever the tile.
bool canStageOutput(const Problem &p);

/// 64 rows of a tile that one warpgroup stores through shared memory.
struct StagedPart {
  /// Their accumulators (one m64 wgmma row block's).
  Value acc;
  /// Their first row in the tile and in the staging area (i32).
  Value tileRow, stagedRow;
  /// The named barrier (i32) of the warpgroups that share the staging
  /// area, and their threads.
  Value barrier;
  int64_t barrierThreads;
};

/// Stores `part` of tile `t` (thread `ltid` of its warpgroup) through the
/// staging area at shared address `base`, then through the epilogue to
/// the output in chunks of 8 columns. Every thread of the part's barrier
/// calls it (it synchronizes them).
void storeTileStaged(Emitter &e, const Problem &p, const KernelConfig &cfg,
                     const TileCoords &t, const StagedPart &part, Value base,
                     Value ltid);

// The persistent schedule (WarpgroupPersistent.cpp).

/// Whether `p`, tiled by `t` and split `splits` ways along K, takes the
/// persistent kernel under `mode`.
bool usePersistent(PersistentKernels mode, const Problem &p, const Tile &t,
                   int64_t splits);

/// The persistent grid: one block per SM, at most one per tile.
int64_t persistentBlocks(const Problem &p, const Tile &t);

/// M-tiles per rasterization group (a block's consecutive tiles walk a
/// group's M-tiles first, so that tiles running at once share B's columns
/// and a few of A's rows in L2).
constexpr int64_t kGroupM = 8;

/// Builds a loop over the tiles of block `blockId` (i32): tile
/// blockId + i * cfg.blocks, in grouped order, calling `body` at each with
/// the K steps the ring has run before it; with `first` (i32) and `stride`,
/// only the block's tiles first, first + stride, ... (a ping-pong
/// consumer's).
void forEachPersistentTile(Emitter &e, const Problem &p,
                           const KernelConfig &cfg, Value blockId,
                           function_ref<void(const TileCoords &)> body,
                           Value first = nullptr, int64_t stride = 1);

} // namespace mlir::kiln::warpgroup

#endif // KILN_LIB_TARGET_NVPTX_WARPGROUPKERNEL_H
