//===- WarpgroupContraction.h - sm_90a matmuls on warpgroup MMA -*- C++ -*-===//
//
// Private to lib/Target/NVPTX: the Hopper contraction kernel that
// NVPTXTargetInfo::lowerContraction builds on sm_90a
// (WarpgroupContraction.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_TARGET_NVPTX_WARPGROUPCONTRACTION_H
#define KILN_LIB_TARGET_NVPTX_WARPGROUPCONTRACTION_H

#include "kiln/Target/Target.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::kiln {

/// Replaces `op` (a linalg.matmul or linalg.batch_matmul of f16 or bf16
/// memrefs, or of f32 ones marked kiln.tf32, into an f32 one, after a
/// linalg.fill of its output) and that fill with tile maps built on the
/// host and one gpu.launch of the warpgroup-MMA kernel (after a launch that
/// transposes an N-major TF32 B), inside a launcher whose runtime context
/// is `ctx`; `choices`: whether the kernel is the persistent variant
/// (blocks that loop over tiles) as kilnc's --gpu-persistent says, and the
/// tiles it may take (--gpu-tiles). Failure (another op, layout or type)
/// leaves the IR unchanged.
LogicalResult lowerWarpgroupContraction(RewriterBase &rewriter, Operation *op,
                                        Value ctx,
                                        const ContractionChoices &choices);

/// The output tiles of the warpgroup kernel (rows x columns).
ContractionTiles warpgroupTiles();

} // namespace mlir::kiln

#endif // KILN_LIB_TARGET_NVPTX_WARPGROUPCONTRACTION_H
