//===- TargetInfo.h - What GPU codegen asks the vendor ----------*- C++ -*-===//
//
// lib/Target/GPU maps kernels onto a GPU with the gpu dialect only; what
// differs between vendors and chips it asks a GPUTargetInfo: the warp (or
// wave) size, the cross-lane shuffle, the shared-memory address space, the
// barrier, and the matrix-multiply-accumulate instruction with the layout of
// its fragments. Each device target implements one (lib/Target/<T>).
//
// How a pass gets its target-info: kiln-map-kernels-to-gpu takes the object
// when a target's codegen pipeline builds it (createKilnMapKernelsToGPU with
// a GPUTargetInfo, see GPU/Passes.h); from a textual pipeline (kiln-opt, lit)
// the pass looks its `device` option ("<kind> <chip>") up in the registry
// below, which registerKilnTargetPasses() fills from the target table
// (lib/Target/Registry.cpp) and which test code may extend. An empty
// `device` means the first GPU kind registered, at its default chip.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_GPU_TARGETINFO_H
#define KILN_TARGET_GPU_TARGETINFO_H

#include "kiln/Target/Target.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir::kiln {

/// A coordinate of a lane's fragment element, as a function of the lane:
/// with lanes in groups of MMALayout::groupSize, coordinate =
/// group * (lane / groupSize) + thread * (lane % groupSize) + offset, the
/// offset coming from the register or element (see MMALayout).
struct LaneCoord {
  int64_t group = 0;
  int64_t thread = 0;
  bool operator==(const LaneCoord &o) const {
    return group == o.group && thread == o.thread;
  }
};

/// A register (of A or B) or an accumulator element (of C): the offsets
/// added to the lane's coordinates.
struct FragmentOffset {
  int64_t outer; ///< row of A or C, column of B
  int64_t inner; ///< K of A and B, column of C
};

/// The matrix-multiply-accumulate instruction of one warp: C (M x N) +=
/// A (M x K) * B (K x N), A row-major and B column-major (both read along
/// K). Each lane holds registers of A and B, each `kPack` consecutive K
/// elements of one row (A) or column (B), and accumulators of C, one
/// element each.
struct MMALayout {
  int64_t m = 0, n = 0, k = 0;
  /// The element type of A and B, and of C.
  Type operand, acc;
  /// f32 A and B that the instruction multiplies as TF32 (8-bit exponent,
  /// 10-bit mantissa): a getTF32MMA layout, only for contractions that allow
  /// it (kTF32Attr, --precision=tf32).
  bool tf32 = false;
  /// Integer A and B (8-bit, `operand` i8): each one's signedness, from
  /// the extension the contraction reads it through (u8 x s8 products).
  bool aSigned = true, bSigned = true;
  /// Lanes per group (the `lane % groupSize` of LaneCoord).
  int64_t groupSize = 1;
  /// K elements per A or B register (a vector<kPack x elem> load).
  int64_t kPack = 1;
  /// A register r of the lane: row aRow + aRegs[r].outer, K aK +
  /// aRegs[r].inner (its first element).
  LaneCoord aRow, aK;
  SmallVector<FragmentOffset> aRegs;
  /// B register r: column bCol + bRegs[r].outer, K bK + bRegs[r].inner.
  LaneCoord bCol, bK;
  SmallVector<FragmentOffset> bRegs;
  /// Accumulator e: row cRow + cElems[e].outer, column cCol +
  /// cElems[e].inner.
  LaneCoord cRow, cCol;
  SmallVector<FragmentOffset> cElems;
};

class GPUTargetInfo {
public:
  virtual ~GPUTargetInfo();

  /// Lanes that run in lockstep and exchange values through shuffles.
  virtual int64_t getWarpSize() const = 0;
  /// Most threads in one block.
  virtual int64_t getMaxBlockSize() const { return 1024; }
  /// Blocks that fill the chip (two per multiprocessor or compute unit):
  /// tiled contractions with fewer split their K, unless the pass's
  /// fill-blocks option says otherwise.
  virtual int64_t getFillBlocks() const { return 264; }
  /// True when a 16-byte load from global memory at any element-aligned
  /// address is one wide load (tiled contractions then stage their operands
  /// 16 bytes at a time); false when such a load needs its alignment proven
  /// and would otherwise split into element loads.
  virtual bool hasUnalignedWideLoads() const { return false; }

  /// The value of `value` in lane (lane xor `offset`) of a group of `width`
  /// lanes (one step of a butterfly). Default: gpu.shuffle xor.
  virtual Value buildShuffleXor(OpBuilder &b, Location loc, Value value,
                                int32_t offset, int32_t width) const;
  /// The memory space of a block's shared buffers (a memref's memory-space
  /// attribute). Default: #gpu.address_space<workgroup>.
  virtual Attribute getSharedMemorySpace(MLIRContext *context) const;
  /// Waits until every thread of the block arrived and sees the others'
  /// shared-memory stores. Default: gpu.barrier.
  virtual void buildBarrier(OpBuilder &b, Location loc) const;

  /// The matrix instruction for A and B of `operand` type accumulated in
  /// `acc`, if the chip has one.
  virtual std::optional<MMALayout> getMMA(Type operand, Type acc) const {
    return std::nullopt;
  }
  /// The matrix instruction for f32 A and B rounded to TF32 and accumulated
  /// in `acc`, if the chip has one (its layout has `tf32` set). Asked only
  /// for contractions marked kTF32Attr; an unmarked f32 contraction gets
  /// getMMA(f32, f32), an instruction of full f32 precision, or none.
  virtual std::optional<MMALayout> getTF32MMA(Type acc) const {
    return std::nullopt;
  }
  /// The matrix instruction for 8-bit integer A and B (signed or not, as
  /// the contraction extends them) accumulated in `acc` (i32), if the chip
  /// has one: `operand` is i8 and aSigned/bSigned say how each is read.
  virtual std::optional<MMALayout> getIntegerMMA(bool aSigned, bool bSigned,
                                                 Type acc) const {
    return std::nullopt;
  }
  /// The value staged in shared memory for the instruction from an element
  /// (or a vector of elements) of A or B as the contraction computes it,
  /// once per element and block: by default `value`; e.g. f32 rounded to
  /// TF32, kept in f32 storage.
  virtual Value buildMMAStaged(OpBuilder &b, Location loc,
                               const MMALayout &layout, Value value) const {
    return value;
  }
  /// The A or B register from the vector<kPack x operand> loaded for it.
  virtual Value buildMMAOperand(OpBuilder &b, Location loc,
                                const MMALayout &layout, Value loaded) const {
    return loaded;
  }
  /// Emits the instruction on the registers built by buildMMAOperand and
  /// the accumulators (cElems.size() of them, in the layout's order);
  /// returns the new accumulators.
  virtual SmallVector<Value> buildMMA(OpBuilder &b, Location loc,
                                      const MMALayout &layout, ValueRange a,
                                      ValueRange bRegs, ValueRange c) const;

  /// Asynchronous copies from global to shared memory, 16 bytes each,
  /// counted in groups per thread: true when the chip has them (tiled
  /// contractions then stage their operands through a ring of shared
  /// buffers, with GPUCodegenOptions::asyncCopy).
  virtual bool hasAsyncCopy() const { return false; }
  /// Starts copying the 16 bytes at src[srcIndices] (global memory) to
  /// dst[dstIndices] (a shared buffer); where `valid` (i1) is false the
  /// destination gets zeros and the source is not read. Both addresses are
  /// 16-byte aligned. Belongs to the next group buildAsyncCommit closes.
  virtual void buildAsyncCopy(OpBuilder &b, Location loc, Value dst,
                              ValueRange dstIndices, Value src,
                              ValueRange srcIndices, Value valid) const {}
  /// Closes the group of this thread's copies started since the last one
  /// (an empty group when there were none).
  virtual void buildAsyncCommit(OpBuilder &b, Location loc) const {}
  /// Waits until at most `pending` of this thread's committed groups are
  /// in flight (a barrier then makes every thread's copies visible).
  virtual void buildAsyncWait(OpBuilder &b, Location loc,
                              int64_t pending) const {}

  /// True when buildMatrixLoad serves `layout`'s operands.
  virtual bool hasMatrixLoad(const MMALayout &layout) const { return false; }
  /// The registers of A (`isB` false) or B of `tiles` instruction tiles
  /// along M (A) or N (B), loaded from a shared buffer by the whole warp:
  /// tile t's registers at [t * regs, (t + 1) * regs), each as
  /// buildMMAOperand returns it. `indices(outer, inner)` gives the buffer
  /// indices of the element at row (A; column of B) `outer`, counted from
  /// the first tile's, and K `inner`; the target asks only for runs of 16
  /// bytes that are contiguous in the buffer: along K when `kContiguous`,
  /// else along the rows of A or the columns of B, each run starting at a
  /// multiple of its length. `lane` is the lane in the warp.
  virtual SmallVector<Value>
  buildMatrixLoad(OpBuilder &b, Location loc, const MMALayout &layout, bool isB,
                  int64_t tiles, bool kContiguous, Value lane, Value smem,
                  function_ref<SmallVector<Value>(Value outer, Value inner)>
                      indices) const {
    return {};
  }

  /// A kernel of the target's own for contraction `op` (a linalg op on
  /// memrefs in a launcher whose runtime context is `ctx`): built in place
  /// of the op and of the linalg.fill of its output just before, returning
  /// success; failure leaves the IR unchanged and the vendor-neutral
  /// strategies run. For instructions those do not model (e.g. a matrix
  /// instruction of a whole group of warps fed by bulk tensor copies).
  /// Called only with tensor cores
  /// on (GPUCodegenOptions::tensorCores). `choices`: whether a kernel
  /// with a persistent variant uses it and the tiles it may take
  /// (GPUCodegenOptions::persistent and ::tiles).
  virtual LogicalResult
  lowerContraction(RewriterBase &rewriter, Operation *op, Value ctx,
                   const ContractionChoices &choices) const {
    return failure();
  }

  /// The output tiles lowerContraction's kernels can take (rows x
  /// columns); empty when it has none (then --gpu-tiles does not apply).
  virtual ContractionTiles getContractionTiles() const { return {}; }

  /// The kernel function attribute asking the vendor's compiler to fit at
  /// least `blocks` blocks on a multiprocessor (bounding its registers), for
  /// a launch's `kiln.kernel_attrs` (kiln-outline-gpu-kernels); none when the
  /// target has no such attribute.
  virtual std::optional<NamedAttribute>
  getMinBlocksPerSMAttr(MLIRContext *context, int64_t blocks) const {
    return std::nullopt;
  }

  /// Dialects of the ops this target-info creates (loaded before the pass
  /// runs).
  virtual void getDependentDialects(DialectRegistry &registry) const {}
};

/// Appends `what` (a contraction's problem and the kernel chosen for it) to
/// the `kiln.gpu_contractions` of the function holding `op`: kilnc
/// --report lists them under the kernel.
void noteGPUContraction(Operation *op, StringRef what);

/// The dictionary of a gpu.launch that kiln-outline-gpu-kernels puts on its
/// outlined kernel (occupancy and register bounds a lowering wants).
inline constexpr llvm::StringLiteral kKernelAttrsName = "kiln.kernel_attrs";

/// Adds `attr` to `launch`'s kKernelAttrsName dictionary (replacing an
/// entry of the same name, keeping the others).
void addKernelAttr(Operation *launch, NamedAttribute attr);

/// Creates the target-info of one chip of a GPU kind; null when the chip is
/// not one of the kind's.
using GPUTargetInfoFactory =
    std::function<std::shared_ptr<const GPUTargetInfo>(StringRef chip)>;

/// Registers the target-info of a device kind (the first word of the
/// pass's `device` option); `defaultChip` serves an empty `device`.
void registerGPUTargetInfo(StringRef kind, StringRef defaultChip,
                           GPUTargetInfoFactory factory);

/// The target-info for `device` ("<kind> <chip>", or empty: the first kind
/// registered at its default chip), and in `resolved` the device spelled out.
/// On failure null, with a message in `error`.
std::shared_ptr<const GPUTargetInfo> lookupGPUTargetInfo(StringRef device,
                                                         std::string &resolved,
                                                         std::string &error);

} // namespace mlir::kiln

#endif // KILN_TARGET_GPU_TARGETINFO_H
