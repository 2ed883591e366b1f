//===- NodeNames.h - The ONNX nodes an op computes --------------*- C++ -*-===//
//
// The importer gives every op the NameLoc of its ONNX node; fusion keeps
// them in fused locations. The compile report (per kernel) and the launch
// records of the signature (per launch) list them with this.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_TRANSFORMS_NODENAMES_H
#define KILN_DIALECT_KILN_TRANSFORMS_NODENAMES_H

#include "mlir/IR/Operation.h"

#include "llvm/ADT/SetVector.h"

#include <set>
#include <string>
#include <vector>

namespace mlir::kiln {

using NodeNameSet = llvm::SetVector<std::string, std::vector<std::string>,
                                    std::set<std::string>>;

/// The ONNX node names of the computations nested in `root` (not `root`
/// itself), in order of first appearance: NameLocs, also inside fused
/// locations. Constants, empty tensors, init fills, scalar index arithmetic
/// and a linalg op's body are skipped (they are cloned into every kernel
/// that uses them, or belong to their op).
void collectNodeNames(Operation *root, NodeNameSet &names);

/// On a `kiln.launch` (and the call that replaces it on a GPU target): the
/// ONNX nodes it computes, `%XX`-escaped as in the signature and joined by
/// ',' (kiln-outline-kernels sets it; HostToLLVM turns it into the
/// signature's `launch` record).
inline constexpr llvm::StringLiteral kLaunchNodesAttr = "kiln.launch_nodes";

} // namespace mlir::kiln

#endif // KILN_DIALECT_KILN_TRANSFORMS_NODENAMES_H
