//===- Lowering.h - Shared helpers of the onnx → linalg lowering -*- C++ -*-===//
//
// Each onnx op family has its own file with `lower<Op>` functions; the pass
// in OnnxToLinalg.cpp walks the model in order and dispatches on the op
// name. A lowering builds the replacement values at the op, or emits one
// error at the op (naming the node, op type and opset) and fails.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H
#define KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::kiln::lowering {

/// A lowering: builds the values replacing `op`'s results (in order) or
/// emits an error and fails.
using LowerFn = std::function<LogicalResult(Operation *op, OpBuilder &b,
                                            SmallVectorImpl<Value> &results)>;

void registerElementwiseLowerings(llvm::StringMap<LowerFn> &table);
void registerElementwise2Lowerings(llvm::StringMap<LowerFn> &table);
void registerGenerateLowerings(llvm::StringMap<LowerFn> &table);
void registerNNLowerings(llvm::StringMap<LowerFn> &table);
void registerRecurrentLowerings(llvm::StringMap<LowerFn> &table);
void registerReductionLowerings(llvm::StringMap<LowerFn> &table);
void registerNormalizationLowerings(llvm::StringMap<LowerFn> &table);
void registerAttentionLowerings(llvm::StringMap<LowerFn> &table);
void registerTensorLowerings(llvm::StringMap<LowerFn> &table);
void registerDataMovementLowerings(llvm::StringMap<LowerFn> &table);
void registerDetectionLowerings(llvm::StringMap<LowerFn> &table);
void registerResampleLowerings(llvm::StringMap<LowerFn> &table);
void registerQuantizeLowerings(llvm::StringMap<LowerFn> &table);
void registerSpatialLowerings(llvm::StringMap<LowerFn> &table);
void registerControlFlowLowerings(llvm::StringMap<LowerFn> &table);
void registerEinsumLowerings(llvm::StringMap<LowerFn> &table);
void registerSignalLowerings(llvm::StringMap<LowerFn> &table);

/// Lowers the onnx ops of `region` (OnnxToLinalg.cpp): control-flow
/// lowerings call it on the regions they move into scf ops.
LogicalResult lowerOnnxOpsIn(Region &region);

/// An error at `op` that names its ONNX node, op type and opset.
InFlightDiagnostic nodeError(Operation *op);

// Attribute access by ONNX name, with the schema's defaults.
int64_t getInt(Operation *op, StringRef name, int64_t dflt);
double getFloat(Operation *op, StringRef name, double dflt);
std::string getStr(Operation *op, StringRef name, StringRef dflt);
std::optional<SmallVector<int64_t>> getInts(Operation *op, StringRef name);

/// The ranked tensor type of result `i`, or an error when shape inference
/// could not rank it.
FailureOr<RankedTensorType> rankedResult(Operation *op, unsigned i = 0);
/// The ranked tensor type of operand `i`, or an error.
FailureOr<RankedTensorType> rankedOperand(Operation *op, unsigned i);

/// Index-typed size of dim `d` of `v` (a constant when static).
Value dimValue(OpBuilder &b, Location loc, Value v, int64_t d);
/// `tensor.empty` of `type` whose dynamic sizes come from `dynSizes` (one
/// per dynamic dim, in order).
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange dynSizes);
/// `linalg.fill` of a new tensor with `value`.
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ValueRange dynSizes, TypedAttr value);
/// Scalar constant of `type` (float or integer) with `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);
TypedAttr scalarAttr(Type type, double value);

/// Body builder of an elementwise computation: receives one scalar per
/// input and returns the output scalar.
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A `linalg.generic` computing `resultType` elementwise from `inputs` with
/// numpy broadcasting (inputs aligned to the right; static size-1 dims
/// broadcast). Dynamic result sizes are taken from the inputs.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, ScalarFn body);

/// The generic behind buildElementwise, with the result's dynamic sizes
/// given and, per input and input dim, whether that (dynamic) dim may be 1
/// at run time and broadcast (read with tensor.extract at select(dim == 1,
/// 0, i)). `runtimeBcast` may be shorter than `inputs`.
Value buildBroadcastGeneric(OpBuilder &b, Location loc,
                            RankedTensorType resultType, ValueRange inputs,
                            ValueRange dynSizes,
                            ArrayRef<SmallVector<bool>> runtimeBcast,
                            ScalarFn body);

/// Dynamic sizes of a broadcast result of `inputs`.
SmallVector<Value> broadcastDynSizes(OpBuilder &b, Location loc,
                                     RankedTensorType resultType,
                                     ValueRange inputs);

/// Reshapes `v` to `type` (row-major), with `sizes` giving every dimension
/// of the result (index values). Emits `tensor.reshape`.
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type,
                ArrayRef<Value> sizes);

bool isFloat(Type t);

// Small builders every lowering file uses.
inline Value idx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
inline Value cmpI(OpBuilder &b, Location loc, arith::CmpIPredicate p, Value x,
                  Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
inline Value select(OpBuilder &b, Location loc, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
/// Scalar constant of float or integer `type`.
inline Value cst(OpBuilder &b, Location loc, Type type, double v) {
  return scalarConstant(b, loc, type, v);
}

/// Sum (or max) of `x` over the dims flagged in `reduced`, kept as size-1
/// dims (Reduction.cpp).
Value reduceKept(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
                 bool isMax = false);
/// log(softmax(x)) along `axis` (float `x`; Reduction.cpp).
Value logSoftmax(OpBuilder &b, Location loc, Value x, int64_t axis);

/// Unsigned integer types (`ui8`...) as the signless type of the same width
/// (arith works on signless integers); other types unchanged.
Type signlessType(Type t);
RankedTensorType signlessTensor(RankedTensorType t);
/// `tensor.bitcast` of an unsigned tensor to signless (a host view), and back
/// to `type`; no-ops for other types.
Value toSignless(OpBuilder &b, Location loc, Value v);
Value fromSignless(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// 8-bit floats (SmallFloat.cpp): computed on their i8 bits.
bool isFloat8(Type t);
/// Scalar i8 bits of an `f8` value to f32 (exact).
Value float8ToF32(OpBuilder &b, Location loc, Value bits, Type f8);
/// Scalar f32 to the i8 bits of `f8`, round to nearest even; `saturate` as
/// in Cast (overflow gives +-max instead of infinity or NaN).
Value f32ToFloat8(OpBuilder &b, Location loc, Value v, Type f8, bool saturate);
/// `tensor.bitcast` of an f8 tensor to i8 (a host view); others unchanged.
Value float8BitsView(OpBuilder &b, Location loc, Value v);

// Small helpers shared by several lowering files (Helpers.cpp).

/// min(max(i, 0), n - 1) on index values (0 when n is 0: callers never read
/// then).
Value clampIntoRange(OpBuilder &b, Location loc, Value i, Value n);
/// 0 <= i < n on index values.
Value indexInRange(OpBuilder &b, Location loc, Value i, Value n);
/// Whether optional operand `i` is given (exists and is not a NoValue).
bool operandPresent(Operation *op, unsigned i);
/// Static length of a 1-D operand, or -1.
int64_t staticLength1D(Value v);
/// The `n` integers of a 1-D operand as index values: constants when the
/// operand is constant (0 past its end), otherwise read on the host.
SmallVector<Value> readHostIndices(OpBuilder &b, Location loc, Value v,
                                   int64_t n);
/// Body builder of generateTensor: receives the output indices.
using IndexBodyFn =
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value> /*ivs*/)>;
/// A tensor of `type` (dynamic sizes `dynSizes`) whose every element is
/// `body(ivs)`: a parallel `linalg.generic` without inputs.
Value generateTensor(OpBuilder &b, Location loc, RankedTensorType type,
                     ValueRange dynSizes, IndexBodyFn body);
/// generateTensor with `sizes` giving every dim (the dynamic ones are used).
Value generateSized(OpBuilder &b, Location loc, RankedTensorType type,
                    ArrayRef<Value> sizes, IndexBodyFn body);

} // namespace mlir::kiln::lowering

#endif // KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H
