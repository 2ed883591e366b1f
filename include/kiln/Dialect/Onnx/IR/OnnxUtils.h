//===- OnnxUtils.h - Helpers for onnx ops -----------------------*- C++ -*-===//
//
// Constant operand values, numpy-style broadcasting and axis normalization,
// shared by the onnx verifiers, shape inference and the lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_ONNX_IR_ONNXUTILS_H
#define KILN_DIALECT_ONNX_IR_ONNXUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::kiln::onnxops {

/// True if `v` is produced by onnx.NoValue (a missing optional operand).
bool isNoValue(Value v);

/// Whether `op` only moves its first operand's elements (Split, Slice,
/// Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Identity): a per-tensor
/// quantization commutes with it.
bool movesElements(Operation *op);

/// Set by the importer on an If that matchSqueezeIfSizeOne matched (the
/// squeezed axis): its result has the squeezed branch's type, which the
/// lowering checks at run time.
constexpr llvm::StringLiteral kSqueezeIfAttr = "kiln.squeeze_if_size_one";

/// Set by the importer on an If whose condition it computed from shapes
/// (evaluateCondition): 0 for the then branch, 1 for the else branch. The
/// lowering inlines that branch (the condition's ops are lowered by then).
constexpr llvm::StringLiteral kTakenBranchAttr = "kiln.taken_branch";

class IfOp;
/// The branch the importer fixed for `op` (kTakenBranchAttr): true for
/// then, false for else; std::nullopt when the condition is a run-time one.
std::optional<bool> takenBranch(IfOp op);
/// The squeezed axis when the importer typed `op` as a squeeze-if-size-one
/// (kSqueezeIfAttr).
std::optional<int64_t> squeezedAxis(IfOp op);
/// When `op` is torch's export of `x.squeeze(k)`: If(Shape(x)[k] == 1)
/// then Squeeze(x, [k]) else x (Identity), the axis k (normalized). Its
/// branches differ in rank; the traced input had size 1 at k.
std::optional<int64_t> matchSqueezeIfSizeOne(IfOp op);

/// The values of an integer `arith.constant` (DenseElementsAttr or
/// DenseResourceElementsAttr, any integer width, signed), flattened in
/// row-major order; std::nullopt if `v` is not such a constant.
std::optional<SmallVector<int64_t>> getConstantIntValues(Value v);

/// Same for floating-point constants (any float width), as doubles.
std::optional<SmallVector<double>> getConstantFloatValues(Value v);

/// Numpy (multidirectional) broadcast of two shapes; dims may be
/// ShapedType::kDynamic. A dynamic dim against 1 or a dynamic dim gives a
/// dynamic dim, a dynamic dim against N > 1 gives N. Failure if two static
/// dims differ and neither is 1.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// Maps `axis` in [-rank, rank) to [0, rank); failure when out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Element type for an ONNX TensorProto::DataType enum value (the `to`
/// attribute of Cast); null for unknown/unsupported (string) types.
Type getElementTypeForOnnxDataType(MLIRContext *ctx, int64_t dataType);

/// Combines an inferred result type with the current one: keeps whatever the
/// current type knows that the inferred one does not (a static dim, a rank,
/// an element type, an encoding); failure if they contradict.
FailureOr<Type> refineType(Type current, Type inferred);

/// Refines result `index` of `op` to `inferred` (via refineType); emits an
/// error at `op` and fails if they contradict.
LogicalResult refineResultType(Operation *op, unsigned index, Type inferred);

/// Shape inference of an op implementing InferShapesOpInterface: refines each
/// result to the matching type of `inferred` (the op's inferResultTypes()).
LogicalResult applyInferredResultTypes(Operation *op,
                                       FailureOr<SmallVector<Type>> inferred);

/// Verifier counterpart: fails (with an error at `op`) if inference failed or
/// contradicts the declared result types; changes nothing.
LogicalResult verifyInferredResultTypes(Operation *op,
                                        FailureOr<SmallVector<Type>> inferred);

/// The shape of a ranked tensor/shaped value, std::nullopt if unranked or not
/// shaped.
std::optional<ArrayRef<int64_t>> getShapeOf(Value v);

/// Convenience: RankedTensorType of `shape` with `elementType`, or an
/// UnrankedTensorType when `shape` is std::nullopt.
Type makeTensorType(std::optional<ArrayRef<int64_t>> shape, Type elementType);

/// The channels-last form of Conv, MaxPool, AveragePool, GlobalAveragePool
/// and GlobalMaxPool (kiln-onnx-convert-layout, docs/layout.md): with this
/// unit attribute the activations are N<spatial>C instead of NC<spatial>,
/// and a Conv's weights are <kernel>CF (kernel dims, input channels per
/// group, filters) instead of FC<kernel>. Shape inference, the verifiers
/// and the lowering read it; ONNX has no such op, so it never leaves Kiln.
constexpr llvm::StringLiteral kChannelsLastAttr = "kiln.channels_last";
bool isChannelsLast(Operation *op);
/// With kChannelsLastAttr on a ConvInteger: its weights are F<kernel>C
/// (filters, kernel dims, input channels: K-major for the implicit GEMM)
/// instead of <kernel>CF (kiln-onnx-convert-layout's filter-first-int8,
/// for targets whose 8-bit matrix instructions read B K-major only).
constexpr llvm::StringLiteral kFilterFirstAttr = "kiln.filter_first";
bool isFilterFirst(Operation *op);

/// `shape` permuted as onnx.Transpose with `perm` permutes it:
/// result[i] = shape[perm[i]].
SmallVector<int64_t> permuteShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> perm);
/// The permutation that undoes `perm`.
SmallVector<int64_t> invertPermutation(ArrayRef<int64_t> perm);
/// NC<spatial> → N<spatial>C ([0, 2, ..., rank-1, 1]) and its inverse
/// N<spatial>C → NC<spatial> ([0, rank-1, 1, ..., rank-2]).
SmallVector<int64_t> channelsLastPermutation(int64_t rank);
SmallVector<int64_t> channelsFirstPermutation(int64_t rank);
/// FC<kernel> → <kernel>CF ([2, ..., rank-1, 1, 0]).
SmallVector<int64_t> kernelLastWeightPermutation(int64_t rank);
/// FC<kernel> → F<kernel>C ([0, 2, ..., rank-1, 1]): channelsLastPermutation.

} // namespace mlir::kiln::onnxops

#endif // KILN_DIALECT_ONNX_IR_ONNXUTILS_H
