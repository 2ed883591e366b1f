//===- Chunk.h - Runs of launches split into batch chunks -------*- C++ -*-===//
//
// kiln-remat's second tool after recomputation: a run of consecutive
// launches whose kernels are parallel over the batch (dim 0 of every
// activation) is launched c times, each on a slice of B/c batch elements,
// so the run's intermediates exist only at B/c size. ChunkKernel.cpp
// re-instantiates a kernel for the slice; Chunk.cpp chooses the run and c on
// the planner's timeline and rewrites the host program. Row chunking does
// the same along the rows of the run's tensors (a band of rows at a time,
// with the halo each kernel reads): RowChunkKernel.cpp and RowChunk.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H
#define KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/MemoryPlan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "llvm/ADT/StringMap.h"

#include <memory>

namespace mlir::kiln {

/// The attribute on a chunked launch: [chunk index, number of chunks].
inline constexpr llvm::StringLiteral kChunkAttr = "kiln.chunk";
/// The attribute on a launch of a band of rows: [dim, first row, end row]
/// of the output rows it computes.
inline constexpr llvm::StringLiteral kChunkRowsAttr = "kiln.chunk_rows";
/// The attribute on a chunk kernel: the name of the kernel it was cloned
/// from (a string: that kernel goes when no launch is left to it).
inline constexpr llvm::StringLiteral kChunkOfAttr = "kiln.chunk_of";
/// The name a chunk kernel was meant to have (renamed on a clash), until
/// BatchChunker::finish.
inline constexpr llvm::StringLiteral kChunkNameAttr = "kiln.chunk_name";

/// How a chunk kernel receives one argument of the original kernel.
enum class ChunkRole {
  /// Not indexed by the batch (weights, broadcast operands): unchanged.
  Other,
  /// An intermediate that lives only inside the run: a buffer of the
  /// chunk's size, B/c along dim 0.
  Local,
  /// A tensor that outlives the run (or comes from before it): the whole
  /// buffer, of which the kernel reads or writes the rows [off, off + B/c)
  /// of dim 0, `off` being an index argument the clone takes before its
  /// outputs.
  Full,
};

/// Whether kernel `fn` computes each batch element on its own when the
/// arguments flagged in `batchArgs` carry the batch (of `batch`) in dim 0:
/// every op that touches them indexes dim 0 by one parallel loop and no
/// other operand by that loop, pads, concatenations and reshapes keep dim 0,
/// nothing reduces or gathers across it.
bool isBatchParallel(func::FuncOp fn, int64_t batch, ArrayRef<bool> batchArgs);

/// A clone of `fn` for a batch of `n` (dividing `batch`), its arguments as
/// `roles` says, inserted after `fn` in `symbols`; failure (nothing added)
/// when `fn` is not batch-parallel or the retyped clone does not verify.
FailureOr<func::FuncOp> cloneKernelForBatch(func::FuncOp fn, int64_t batch,
                                            int64_t n,
                                            ArrayRef<ChunkRole> roles,
                                            SymbolTable &symbols);

/// Chooses and applies batch chunking on a host program, one run at a time.
class BatchChunker {
public:
  BatchChunker(func::FuncOp host, bool inPlace, int64_t alignment,
               int64_t persistent);
  ~BatchChunker();

  /// One step at the peak of `plan` (the current program's): the run of
  /// batch-parallel launches around the peak, split into the fewest chunks
  /// that make the arena fit `budget` (else the ones that lower the peak
  /// most), trimmed to the launches that matter. False when no run lowers
  /// the peak.
  bool step(const MemoryPlan &plan, int64_t budget);

  /// Erases the chunk kernels no launch uses (tried and dropped).
  void finish();

  /// Original launches split so far.
  int64_t chunkedLaunches = 0;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

//===----------------------------------------------------------------------===//
// Row chunking
//===----------------------------------------------------------------------===//

/// Rows [lo, hi) along dim `dim` of a tensor; dim -1 means all of it.
struct RowRange {
  int64_t dim = -1, lo = 0, hi = 0;
  bool whole() const { return dim < 0; }
  bool operator==(const RowRange &o) const {
    return dim == o.dim && lo == o.lo && hi == o.hi;
  }
};

/// A kernel clone (detached) that computes one band of its output, and what
/// it reads of each input argument (nullopt: nothing).
struct RowTiling {
  func::FuncOp clone;
  SmallVector<std::optional<RowRange>> reads;
};

/// The patterns tileKernelRows simplifies its clones with (canonicalization
/// of the loaded dialects, consecutive slices merged); build once.
FrozenRewritePatternSet rowTilingPatterns(MLIRContext *ctx);

/// Clones `fn` (one output) to compute only rows `out` of its output, every
/// producer sliced to what those rows need; failure when an op cannot be
/// sliced (a reshape across the rows, a producer without TilingInterface).
/// The clone still takes whole buffers and writes its band of the output
/// through a subview.
FailureOr<RowTiling> tileKernelRows(func::FuncOp fn, RowRange out,
                                    const FrozenRewritePatternSet &patterns);

/// Makes argument `arg` of a tileKernelRows clone a buffer holding only
/// rows `band` (which cover what the clone reads of it, or, for the output,
/// exactly the rows it writes).
LogicalResult localizeKernelRows(func::FuncOp clone, unsigned arg,
                                 RowRange band,
                                 const FrozenRewritePatternSet &patterns);

/// Verifies `fn` without reporting diagnostics.
LogicalResult verifySilently(func::FuncOp fn);

/// Chooses and applies row chunking on a host program, one run at a time.
class RowChunker {
public:
  RowChunker(func::FuncOp host, bool inPlace, int64_t alignment,
             int64_t persistent);
  ~RowChunker();

  /// One step at the peak of `plan`: the run of row-chunkable launches
  /// around the peak, split into the fewest bands that make the arena fit
  /// `budget` (else the ones that lower the peak most), trimmed. False when
  /// no run lowers the peak.
  bool step(const MemoryPlan &plan, int64_t budget);

  /// Erases the band kernels no launch uses and the kernels left without
  /// launches; frees the tiling clones.
  void finish();

  /// Original launches split so far, and the FLOPs their halos add.
  int64_t chunkedLaunches = 0, extraFlops = 0;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

//===----------------------------------------------------------------------===//
// Shared by the chunkers
//===----------------------------------------------------------------------===//

namespace chunk {
/// What a chunking changed on the host program, so it can be undone.
struct HostChange {
  SmallVector<Operation *> created;
  /// Ops unlinked, each with the op that followed it.
  SmallVector<std::pair<Operation *, Operation *>> removed;

  void remove(Operation *op);
  void undo();
  void commit();
};

/// The kernel's number of outputs (its trailing arguments), or -1.
int64_t numOutputs(func::FuncOp fn);
/// The source of a host view op, or null.
Value viewSource(Operation *op);
/// The ops that use `v` other than views, through views (and the views).
void collectUsers(Value v, SmallVectorImpl<Operation *> &users,
                  SmallVectorImpl<Operation *> *views = nullptr);
/// Whether `op` may sit between the launches of a run (allocations, views,
/// constants).
bool isInert(Operation *op);
/// Erases the chunk kernels in `clones` no launch uses, then the kernels
/// they were cloned from that no launch uses; kept clones take the name in
/// kChunkNameAttr where free.
void eraseUnused(SymbolTable &symbols, ArrayRef<func::FuncOp> clones);
} // namespace chunk

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H
