//===- CPUCodegen.h - The pieces of kiln-cpu-codegen ------------*- C++ -*-===//
#ifndef KILN_LIB_TARGET_CPU_CPUCODEGEN_H
#define KILN_LIB_TARGET_CPU_CPUCODEGEN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln::cpu {

/// The roles of a contraction's loops for the register tile: rows (`m`,
/// indexing only the operand read a scalar at a time), the vector dim
/// (`n`, innermost in the output and contiguous in the other operand, or
/// for a dot product the reduction both read contiguously).
struct ContractionRoles {
  enum Kind { Broadcast, Dot } kind = Broadcast;
  unsigned m = 0, n = 0;
  /// Operand index (0 or 1) read as vectors along `n` (Broadcast) or
  /// along the reduction (Dot).
  unsigned vectorOperand = 1;
  /// Dot: the reduction dim read contiguously.
  unsigned k = 0;
  /// Broadcast: the coefficient of `n` in the vector operand's innermost
  /// index (a convolution's stride when it reads `a * n + b * kw`).
  int64_t vectorStride = 1;
  /// Broadcast: that innermost index is such a stencil term.
  bool stencil = false;
  /// Broadcast: the vector operand is packed in panels of this many
  /// columns (Packing.cpp; 0: not packed).
  int64_t panel = 0;
  /// Broadcast: `m` is read by the vector operand, not the row operand
  /// (a depthwise convolution's output rows): vectors per row, one scalar.
  bool rowsInVector = false;
  /// With rowsInVector: the row operand is read as vectors along `n` too
  /// (one per column, shared by the rows: a channels-last depthwise
  /// convolution's weights), not as one scalar.
  bool sharedVectors = false;
  /// Broadcast: bf16 operands with the vector operand packed in pairs
  /// along k (`k` is its reduction): AVX512-BF16 dot products of pairs.
  bool pairs = false;
  /// Broadcast: a uint8 row operand and an int8 vector operand packed in
  /// quads along k (QuadsLayout): VNNI dot products of four bytes.
  bool quads = false;
  /// Per input: an integer extended as unsigned (extui) in the body.
  bool unsignedInput[2] = {false, false};
};

/// A packed operand's index of loop dim `dim`: its panel (`dim floordiv
/// panel`) or its column in the panel (`dim mod panel`).
struct PackedTerm {
  unsigned dim;
  int64_t panel;
  bool isPanel;
};
std::optional<PackedTerm> matchPackedTerm(AffineExpr e);

/// A B packed in pairs for bf16 dot products: read at (n floordiv NR,
/// k floordiv 2, (n mod NR) * 2 + k mod 2), each panel row the NR columns'
/// values at k and k + 1 side by side.
struct PairsLayout {
  unsigned n, k;
  int64_t panel;
};
std::optional<PairsLayout> matchPairsLayout(AffineMap map);

/// An int8 B packed in quads for VNNI dot products: read at (n floordiv
/// NR, d..., k floordiv 4, (n mod NR) * 4 + k mod 4) (d...: its other
/// dims, a convolution's window), each panel row the NR columns' values at
/// k .. k + 3 side by side (one 32-bit lane of `vpdpbusd` per column).
struct QuadsLayout {
  unsigned n, k;
  int64_t panel;
};
std::optional<QuadsLayout> matchQuadsLayout(AffineMap map);

/// Packs the constant weights that contractions read as vectors (a
/// matmul's B, `k x n`) into panels of the register tile's columns,
/// contiguous along everything else (`n/NR x k x NR`, zero-padded), once,
/// at compile time: the globals' bytes are rewritten, kernels take the
/// packed type and read it through `n floordiv NR`, `n mod NR`. A kernel
/// is packed only when every launch passes a constant global there.
/// Returns the number of kernel operands packed.
/// With `bf16Pairs` (the chip has AVX512-BF16), a bf16 matmul's B is
/// packed in pairs (PairsLayout) instead.
/// With `int8Quads` (the chip has VNNI at `vectorBits`), an int8 B read by
/// a uint8 x int8 contraction along a k of a multiple of 4 that the row
/// operand reads innermost is packed in quads (QuadsLayout), whatever its
/// size (the dot products need the layout).
int64_t packWeights(ModuleOp module, int64_t vectorBits, bool bf16Pairs,
                    bool int8Quads = false);

/// The register tile of a contraction: rows × vectors of `lanes`.
struct RegisterTile {
  int64_t rows = 1, vectors = 1, lanes = 1;
};

/// Matches `out + a * b` (a, b maybe extended to the output type) with
/// projected-permutation maps, static shapes, and operands whose dims the
/// tile reads contiguously have unit stride.
/// Integer ones: `out + ext(a) * ext(b)` in i32 (i8/i16 inputs); packed in
/// quads (uint8 rows, int8 vectors), VNNI dot products.
std::optional<ContractionRoles> matchContraction(linalg::LinalgOp op);
/// matchContraction without the inputs' extensions (unsignedInput).
std::optional<ContractionRoles> matchRoles(linalg::LinalgOp op);
RegisterTile chooseRegisterTile(linalg::LinalgOp op,
                                const ContractionRoles &roles,
                                int64_t vectorBits);

/// `a * d_p + b * d_r` of a map result: d_p parallel, d_r a reduction.
struct StencilTerm {
  unsigned p, r;
  int64_t a, b;
};
std::optional<StencilTerm>
matchStencilTerm(AffineExpr e, ArrayRef<utils::IteratorType> iters);

/// Rewrites a stencil generic (an input indexed `a * d_p + b * d_r`, d_r a
/// reduction) into loops over its d_r dims around a generic on shifted,
/// strided views. Fails (leaving it) when it is not one, or with
/// `onlyUnitWindows` when a d_r has more than one value (a contraction's
/// register tile then keeps the whole window in registers instead).
LogicalResult decomposeStencil(RewriterBase &rewriter, linalg::GenericOp op,
                               bool onlyUnitWindows = false);
/// Whether `op` is a stencil with a window of two or more (what
/// decomposeStencil takes apart).
bool hasStencilWindow(linalg::GenericOp op);
/// A stencil as loops over its planes (every parallel dim its window does
/// not slide along, one at a time: a depthwise convolution's or a pool's
/// channels), each plane decomposed: the window's passes over one plane
/// stay in cache.
LogicalResult decomposeInPlanes(RewriterBase &rewriter, linalg::GenericOp op);

/// The ops a contraction's register tiles take in (Epilogue.cpp): the fill
/// of its output before it (the accumulators start at its value) and the
/// elementwise op reading the output after it (applied to the
/// accumulators, which are stored to its output instead).
struct FusedEnds {
  linalg::FillOp fill;
  linalg::GenericOp epilogue;
};
/// In a kernel, before the split into tasks: finds the ends the tiles of
/// `op` can take (the epilogue only when nothing else reads the product)
/// and marks them (isFusedEnd). The split tiles them with `op`.
FusedEnds markFusedEnds(linalg::LinalgOp op);
bool isFusedEnd(Operation *op);
/// At the tiles: the marked ends around `op`, on the same memory as `out`
/// (`op`'s output before its dims were collapsed).
FusedEnds findFusedEnds(linalg::LinalgOp op, Value out);

/// Applies an epilogue to accumulator vectors and writes its output.
class EpilogueWriter {
public:
  /// Views of the epilogue's operands indexed like `out` with its dims
  /// grouped by `groups` (the contraction's output as its tiles index it);
  /// null when an operand cannot be read that way. Views are created at
  /// `b`'s insertion point.
  static std::unique_ptr<EpilogueWriter>
  create(OpBuilder &b, linalg::GenericOp epilogue, Value out,
         ArrayRef<ReassociationIndices> groups, int64_t lanes);
  /// The epilogue of `acc` (the product at `idx`, `lanes` along the last
  /// index), written to the epilogue's output.
  void write(OpBuilder &b, Location loc, Value acc, ValueRange idx,
             bool inBounds);

private:
  EpilogueWriter() = default;
  struct Operand {
    bool isAcc = false, isVector = false;
    Value memref;
    /// Per index of `memref`: (true, group of `out`) or (false, constant).
    SmallVector<std::pair<bool, int64_t>> index;
  };
  linalg::GenericOp e;
  int64_t lanes = 1;
  SmallVector<Operand> operands;
};

/// Rewrites a contraction (matchContraction) into its register tiles;
/// returns the vector bits they use, nullopt (op left) when it is not one.
/// `out` is the output before `op`'s dims were collapsed by `outGroups`
/// (its dims grouped as `op` indexes its output; empty: not collapsed):
/// the fused ends are found on it.
/// `l1Bytes` (the L1 data cache) sizes the reduction blocks: one block of
/// the vector operand's panel fills two thirds of it.
/// With `int8Tiles` (the chip has AMX-INT8), quads contractions take AMX
/// tile products where their shapes allow (Contraction.cpp).
std::optional<int64_t>
emitContraction(RewriterBase &rewriter, linalg::LinalgOp op, int64_t vectorBits,
                int64_t l1Bytes, Value out = {},
                ArrayRef<ReassociationIndices> outGroups = {},
                bool int8Tiles = false);

/// The static innermost stride of a memref (1 for rank 0; dynamic when
/// its layout is not strided).
int64_t innermostStride(Value memref);
Value indexConst(OpBuilder &b, Location loc, int64_t v);
/// `base + v` (`base` itself for 0).
Value addIndex(OpBuilder &b, Location loc, Value base, int64_t v);
/// The memory of `memref` (static shape, innermost stride `stride`) as a
/// view of unit innermost stride covering the same elements: its last dim
/// (size - 1) * stride + 1 long.
Value unitStrideView(OpBuilder &b, Location loc, Value memref, int64_t stride);
int64_t elementBits(Type t);

/// Rewrites a static linalg op on memrefs into vector code of at most
/// `vectorBits`-wide vectors. Returns the vector bits it used, 0 when it
/// left the op for the loop lowering.
int64_t vectorizeOp(RewriterBase &rewriter, linalg::LinalgOp op,
                    int64_t vectorBits, int64_t l1Bytes,
                    bool int8Tiles = false);

/// Lowers the vector ops vectorizeOp leaves (transfers, masks,
/// multi-reductions, contractions) to the forms the LLVM lowering takes.
LogicalResult lowerVectorOps(Operation *root);

} // namespace mlir::kiln::cpu

#endif // KILN_LIB_TARGET_CPU_CPUCODEGEN_H
