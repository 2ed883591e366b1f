//===- SmallChannelConvRows.h - The im2col copies by rows ------*- C++ -*-===//
//
// Private to lib/Target/GPU: what SmallChannelConv.cpp's rewrite and its
// im2col copies by rows of output pixels (SmallChannelConvRows.cpp) share.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_GPU_SMALLCHANNELCONVROWS_H
#define KILN_LIB_TARGET_GPU_SMALLCHANNELCONVROWS_H

#include "Lowering.h"

namespace mlir::kiln::gpumap {

/// The dims of a 2-D convolution: four parallel loops (the output's), of
/// which A reads three (its pixels) and B one (the filters); three
/// reduction loops: the window's rows and columns (in A's expressions) and
/// the channels (a plain dim of A and B).
struct ConvDims {
  OpOperand *a = nullptr, *b = nullptr;
  SmallVector<unsigned> pixels; // loop order
  unsigned filters = 0, kh = 0, kw = 0, channels = 0;
};

/// What the im2col copy reads as the convolution's input `a`: `a` itself,
/// or the source of the padded copy `a` is (the fill outside it), and that
/// source through the elementwise op that wrote it (a cast, a permutation
/// of the dims), when nothing else reads them.
struct Source {
  Value a;
  std::optional<PaddedCopy> padded;
  linalg::GenericOp producer;

  /// The value of `a` at `idx` (each index in range of `a`'s dims).
  Value load(OpBuilder &b, Location l, ArrayRef<Value> idx) const;
  /// The ops and buffers the reads above made dead (`g` gone).
  void erase(RewriterBase &rewriter) const;
};

/// The source the im2col copy of `conv`'s input `a` reads.
Source traceSource(OpOperand *a, Operation *conv);

/// The im2col copy by rows of output pixels: A's results by role, the
/// window rows' (input) extent a row of pixels reads, and the staged rows'
/// size.
struct RowPlan {
  unsigned pixelH = 0, pixelW = 0, pixelN = 0; // loops
  int64_t resH = -1, resW = -1;                // results of A's map
  int64_t rows = 0, cols = 0, firstCol = 0;    // the staged rows
  int64_t hAtZero = 0;                         // resH at (pixelH, kh) = 0
  int64_t kwStep = 0; // resW's step from one kw to the next
};

/// The plan of the im2col copy by rows for `c`, when A's map is a plain
/// dim per result but two: the row (a pixel dim and kh) and the column (a
/// pixel dim and kw), both affine and increasing; when that column's pixel
/// dim is the innermost of the pixels (a block's values are one run of the
/// im2col buffer); and when the rows fit `maxBytes` of shared memory.
std::optional<RowPlan> planRows(linalg::GenericOp g, const ConvDims &c,
                                ArrayRef<int64_t> loops, int64_t bytes,
                                int64_t maxBytes);

/// cols[pixels..., k] by rows of output pixels, K = KH x KW x C padded to
/// Kp, through a table of each k's place in the staged rows.
void emitRows(OpBuilder &b, const GPUTargetInfo &info, Location loc,
              linalg::GenericOp g, const ConvDims &c, ArrayRef<int64_t> loops,
              const RowPlan &p, const Source &src, int64_t K, int64_t Kp,
              Value cols, int64_t threads);

/// cols[pixels..., k] by rows where a pixel's channels are one 32-bit word,
/// each window row KWp taps long.
void emitPackedRows(OpBuilder &b, const GPUTargetInfo &info, Location loc,
                    linalg::GenericOp g, const ConvDims &c,
                    ArrayRef<int64_t> loops, const RowPlan &p,
                    const Source &src, int64_t KWp, int64_t Kp, Value cols,
                    int64_t threads);

} // namespace mlir::kiln::gpumap

#endif // KILN_LIB_TARGET_GPU_SMALLCHANNELCONVROWS_H
