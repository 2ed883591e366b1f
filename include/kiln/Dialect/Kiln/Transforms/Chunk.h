//===- Chunk.h - Runs of launches split into batch chunks -------*- C++ -*-===//
//
// kiln-remat's second tool after recomputation: a run of consecutive
// launches whose kernels are parallel over the batch (dim 0 of every
// activation) is launched c times, each on a slice of B/c batch elements,
// so the run's intermediates exist only at B/c size. ChunkKernel.cpp
// re-instantiates a kernel for the slice; Chunk.cpp chooses the run and c on
// the planner's timeline and rewrites the host program.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H
#define KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/MemoryPlan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <memory>

namespace mlir::kiln {

/// The attribute on a chunked launch: [chunk index, number of chunks].
inline constexpr llvm::StringLiteral kChunkAttr = "kiln.chunk";
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

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_CHUNK_H
