//===- WarpgroupProblem.h - What an sm_90a contraction computes -*- C++ -*-===//
//
// Private to lib/Target/NVPTX: the problem a matmul-like op or a
// channels-last convolution poses to the warpgroup-MMA kernel
// (WarpgroupMatch.cpp recognizes it and chooses the tile;
// WarpgroupContraction.cpp builds the kernel).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_NVPTX_WARPGROUPPROBLEM_H
#define KILN_LIB_TARGET_NVPTX_WARPGROUPPROBLEM_H

#include "kiln/Target/Target.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::kiln::warpgroup {

/// K advances 128 bytes (one swizzle row) per pipeline stage: 64 f16/bf16
/// elements, 32 tf32 ones or 128 8-bit integers (Problem::bk); 64 bytes
/// for 8-bit convolutions of at most 64 channels (Problem::stepBytes).
constexpr int64_t kStepBytes = 128;
/// The SMs a tile choice fills: an H100 SXM's or H200's 132 (an H100 PCIe
/// has 114; the choices only weigh how full the last wave is).
constexpr int64_t kSMs = 132;
/// The dynamic shared memory a block may take on sm_90 (227 KiB).
constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// What a dim of an operand's memref indexes.
enum class Role { M, N, K, Batch };
struct DimRole {
  Role role;
  int64_t batch = 0; // which batch dim (loop order), for Role::Batch
};

/// A 2-D convolution over a channels-last activation A [batch, H, W, C]
/// (already padded: the op reads A[n, oh * stride + kh * dilation, ...])
/// with weights B [KH, KW, C, F] (HWCF; `bKMajor` false) or [F, KH, KW, C]
/// (FHWC; `bKMajor` true) into C [batch, OH, OW, F]: an implicit GEMM of
/// M = batch * OH * OW, N = F and K = KH * KW * C, its A rows read by the
/// bulk copies' im2col mode.
struct Convolution {
  int64_t filter[2];    // KH, KW
  int64_t strides[2];   // along H, W
  int64_t dilations[2]; // along H, W
  int64_t in[2];        // A's H, W
  int64_t out[2];       // OH, OW
  int64_t channels;     // C
  /// The padding the copies' window adds before A's first row and column:
  /// 0 when the op reads a padded copy, else that copy's offsets (A is then
  /// the copy's source and `padOps` the zero fill and the copy, erased).
  int64_t pad[2] = {0, 0};
  SmallVector<Operation *> padOps;
};

/// The problem a matmul-like op poses: C[batch...][m][n] = fill + sum_k
/// A * B, all memrefs of identity layout; A's and B's dims may come in any
/// order (attention's Q [b, s, h, d] times K [b, s, h, d]) as long as A's
/// innermost is K and B's is N or K (`bKMajor`). A convolution sets `conv`
/// (A, B and C as Convolution says; `aDims`/`bDims` unused).
///
/// f16/bf16 operands, or f32 ones of a contraction marked kiln.tf32, which
/// wgmma multiplies as TF32, or 8-bit integers (a body acc + ext(a) *
/// ext(b) into i32, each operand's signedness from its extension), which
/// wgmma multiplies as u8/s8 into s32. TF32 and 8-bit operands are read
/// K-major only: an N-major B ([batch..., K, N], or HWCF weights) then sets
/// `transposeB` and the kernel reads a K-major copy of it.
struct Problem {
  linalg::LinalgOp op;
  linalg::FillOp fill;
  Value a, b, c;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  SmallVector<int64_t> batchSizes;   // C's outer dims, in loop order
  SmallVector<DimRole> aDims, bDims; // per dim of A (as read) and B
  bool bKMajor = false;
  /// The sizes of C's dims that make up M (several for a linalg.generic
  /// such as [batch, seq, K] x [K, N] or a convolution's [batch, OH, OW]:
  /// contiguous, read as one).
  SmallVector<int64_t> mSizes;
  std::optional<Convolution> conv;
  Type elem; // f16, bf16, f32 (multiplied as TF32) or i8
  /// The accumulators' type: f32, or i32 for 8-bit operands.
  Type acc;
  /// 8-bit operands: whether A, B are signed (extsi) or unsigned (extui).
  bool aSigned = false, bSigned = false;
  /// B is N-major and the kernel needs it K-major (TF32, 8-bit): a launch
  /// before
  /// the kernel transposes it (its two innermost dims, or HWCF to FHWC).
  bool transposeB = false;
  /// An elementwise op just after that only consumes C (a bias, an
  /// activation, a residual add, a cast): applied to the accumulators
  /// before the one store, C itself never written.
  linalg::GenericOp epilogue;
  OpOperand *epilogueIn = nullptr;
  /// The bytes of K per pipeline stage and the swizzle of its rows (the
  /// tile maps' and the wgmma descriptors'): kStepBytes, or 64 for an 8-bit
  /// convolution of at most 64 channels, whose 128-byte steps would be half
  /// the copies' out-of-bounds zeros (ResNet-50's layer 1).
  int64_t stepBytes = kStepBytes;

  /// The fill's value as an attribute of the accumulators' type.
  TypedAttr fillValue() const;
  /// The memref the results go to: the epilogue's output, or C.
  Value output() const;
  bool tf32() const { return elem.isF32(); }
  bool integer() const { return elem.isInteger(8); }
  int64_t elemBytes() const { return integer() ? 1 : tf32() ? 4 : 2; }
  /// K elements per pipeline stage (one swizzle row).
  int64_t bk() const { return stepBytes / elemBytes(); }
  /// K of one wgmma (32 bytes of each row: k16 for f16/bf16, k8 for tf32,
  /// k32 for 8-bit integers).
  int64_t mmaK() const { return 32 / elemBytes(); }
  /// The pipeline's K steps: bk-wide slices of K, or of the channels per
  /// filter tap.
  int64_t kSteps() const {
    if (conv)
      return conv->filter[0] * conv->filter[1] *
             ((conv->channels + bk() - 1) / bk());
    return (k + bk() - 1) / bk();
  }
  /// Whether this is an 8-bit product whose epilogue takes most of a tile's
  /// time: one of at most kShortKSteps K steps (a requantization, a residual
  /// read after one or two steps: ResNet-50's block ends), or one whose
  /// epilogue computes a transcendental function per element (GELU's erf
  /// and its requantization after BERT's FFN1: some 50 instructions an
  /// element, run while the tensor cores wait).
  bool epilogueBound() const;
  /// Whether the epilogue computes a transcendental function per element
  /// (GELU's erf).
  bool transcendentalEpilogue() const;
  /// Whether this is a matmul of at most kShortK K elements, not
  /// epilogue-bound and without a transcendental epilogue: its tiles' fill
  /// and epilogue are a large share of their time, and the ping-pong tile
  /// (one consumer's epilogue beside the other's main loop) pays there.
  bool shortK() const;
};

/// The problem `op` poses, when the kernel computes it: f16 or bf16
/// operands (or f32 ones of a kiln.tf32 contraction) into f32, or 8-bit
/// integers into i32 (an N-major B of either having its K and N as its two
/// innermost dims, or HWCF), after a constant fill, static identity-layout
/// memrefs, K (the channels) and N multiples of 8 (K of 16 for 8-bit
/// operands: 16-byte row strides).
std::optional<Problem> analyze(Operation *op);

struct Tile {
  int64_t bm, bn, stages;
  /// Its throughput relative to 256 x 128 on a problem that fills every
  /// wave (bench/hopper, 8192^3 fp16: 0.88x torch.matmul, 0.77x, 0.52x).
  double rate;
  /// Measured on matmuls of 16- and 8-bit operands and on 8-bit
  /// convolutions only: the cost model leaves it out for 16-bit
  /// convolutions and TF32 (--gpu-tiles can still ask).
  bool matmulsOnly = false;
  /// Blocks that share a multiprocessor: 2 when the tile's stages take at
  /// most half of its 228 KiB (less 1 KiB a block the hardware keeps), so
  /// that one block's epilogue overlaps the other's products.
  int64_t blocksPerSM = 1;
  /// Its rate on epilogue-bound 8-bit products (Problem::epilogueBound),
  /// where the epilogue is most of a tile's time; 0: `rate` there too.
  double epilogueBoundRate = 0.0;
  /// Its rate on short-K matmuls (Problem::shortK); 0: `rate` there too.
  double shortKRate = 0.0;
  /// Ping-pong: two consumer warpgroups each take whole tiles (BM / 64
  /// wgmma row blocks apiece), in turns, of a persistent block: one's main
  /// loop runs while the other's epilogue does (named barriers order the
  /// main loops), where the consumers of the other tiles share each tile
  /// and run their epilogues at once.
  bool pingPong = false;
  /// Multicast: two blocks (a cluster along the other operand's dim) share
  /// the larger of the two operand tiles (A's when bm >= bn): each loads
  /// half of it into both blocks' shared memory (Tensor Memory Accelerator
  /// multicast), so that a block reads (bm / 2 + bn) or (bm + bn / 2) rows
  /// a K step from L2 instead of bm + bn.
  bool multicast = false;

  /// Whether a multicast tile shares A (its pairs along N); B otherwise
  /// (pairs along M).
  bool sharesA() const { return bm >= bn; }
  /// The consumer warpgroups: 64 rows each, or two taking turns.
  int64_t consumers() const { return pingPong ? 2 : bm / 64; }
  /// The m64 wgmma row blocks of a consumer's part of a tile.
  int64_t rowBlocks() const { return pingPong ? bm / 64 : 1; }
  /// Whether the producer is one warp after the consumers (two blocks to a
  /// multiprocessor, whose registers must fit twice) rather than
  /// warpgroup 0 before them.
  bool producerWarp() const { return blocksPerSM > 1; }
  /// A block's threads.
  int64_t threads() const {
    return 128 * consumers() + (producerWarp() ? 32 : 128);
  }
  /// The tile as --gpu-tiles names it.
  ContractionTile key() const {
    return {bm, bn, blocksPerSM, pingPong, multicast};
  }
};

/// The K steps up to which an 8-bit product is epilogue-bound whatever its
/// epilogue (Tile::epilogueBoundRate).
constexpr int64_t kShortKSteps = 4;
/// Problem::shortK's bound on K (elements): BERT-base's QKV product, K =
/// 768, is where the ping-pong tile was measured faster.
constexpr int64_t kShortK = 768;

/// Every tile the kernel takes. A rate of 0: not measured yet, taken only
/// when --gpu-tiles asks for it.
ArrayRef<Tile> tileTable();

/// The tile of least estimated time for `p` among `allowed` (rows x
/// columns; empty: the table's measured tiles) that `accept` takes (all
/// when null; when it takes none, the choice without it).
Tile chooseTile(const Problem &p, const ContractionTiles &allowed = {},
                function_ref<bool(const Tile &)> accept = nullptr);

} // namespace mlir::kiln::warpgroup

#endif // KILN_LIB_TARGET_NVPTX_WARPGROUPPROBLEM_H
