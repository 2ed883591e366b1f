//===- Lowering.h - Shared helpers of the onnx → linalg lowering -*- C++ -*-===//
//
// The ops are lowered one family per file (the families of
// kiln/Dialect/Onnx/IR/OnnxFamilies.def): <Family>.cpp defines
// populate<Family>LoweringPatterns, which adds one typed pattern
// (OnnxLowering<Op>) per op of the family. The pass in OnnxToLinalg.cpp walks
// the model in program order and applies the one pattern registered for each
// op. A lowering builds the replacement values at the op, or emits one error
// at the op (naming the node, op type and opset) and fails. Attributes are
// read through the generated accessors (`op.getAxis()`), which carry the
// schema's defaults.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H
#define KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

namespace mlir::kiln::lowering {

/// The onnx op families (OnnxFamilies.def).
enum class OnnxFamily {
#define KILN_ONNX_FAMILY(FAMILY) FAMILY,
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"
};

/// The family of onnx op class `OpTy`; undefined (a compile error) for an op
/// that OnnxFamilies.def does not list.
template <typename OpTy> struct FamilyOf;
#define KILN_ONNX_OP(FAMILY, OP, INFER)                                        \
  template <> struct FamilyOf<onnxops::OP##Op> {                               \
    static constexpr OnnxFamily value = OnnxFamily::FAMILY;                    \
  };
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"

/// A lowering of `OpTy`: builds the values replacing the op's results (in
/// order) or emits an error and fails. A null value stands for an absent or
/// unused optional output.
template <typename OpTy>
using LowerOpFn = std::function<LogicalResult(OpTy op, OpBuilder &b,
                                              SmallVectorImpl<Value> &results)>;

/// A lowering of any op (the shared bodies of several ops of a family).
using LowerFn = LowerOpFn<Operation *>;

/// Replaces the results of `op` by `results` (a tensor.cast where a type
/// differs; results past the end must be unused, or it is an error). The op
/// itself is left to the driver to erase.
LogicalResult replaceLoweredResults(Operation *op, OpBuilder &b,
                                    ArrayRef<Value> results);

/// The pattern lowering one onnx op type.
template <typename OpTy> class OnnxLowering : public OpRewritePattern<OpTy> {
public:
  OnnxLowering(MLIRContext *ctx, LowerOpFn<OpTy> fn)
      : OpRewritePattern<OpTy>(ctx), fn(std::move(fn)) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.setInsertionPoint(op);
    SmallVector<Value> results;
    if (failed(fn(op, rewriter, results)))
      return failure();
    return replaceLoweredResults(op, rewriter, results);
  }

private:
  LowerOpFn<OpTy> fn;
};

/// Adds the lowerings of family `F` to a pattern set; `add<Op>` does not
/// compile for an op of another family.
template <OnnxFamily F> class FamilyPatterns {
public:
  explicit FamilyPatterns(RewritePatternSet &patterns) : patterns(patterns) {}

  template <typename OpTy> void add(LowerOpFn<OpTy> fn) {
    static_assert(FamilyOf<OpTy>::value == F,
                  "the op is lowered outside its family (OnnxFamilies.def)");
    patterns.add(std::make_unique<OnnxLowering<OpTy>>(patterns.getContext(),
                                                      std::move(fn)));
  }

private:
  RewritePatternSet &patterns;
};

#define KILN_ONNX_FAMILY(FAMILY)                                               \
  void populate##FAMILY##LoweringPatterns(RewritePatternSet &patterns);
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"

/// Lowers the onnx ops of `region` (OnnxToLinalg.cpp): control-flow
/// lowerings call it on the regions they move into scf ops.
LogicalResult lowerOnnxOpsIn(Region &region);

/// An error at `op` that names its ONNX node, op type and opset.
InFlightDiagnostic nodeError(Operation *op);

/// The onnx op being lowered (null outside a lowering).
Operation *loweringNode();

/// Whether the pass runs for a target with a fused attention kernel (its
/// `fused-attention` option): Attention.cpp then emits kiln.attention where
/// the kernel's conditions hold.
bool targetHasFusedAttention();

/// Whether the pass runs for a target whose 8-bit products read constant
/// weights K-major (its `int8-weights-k-major` option): MatMulInteger's
/// constant B is then laid out [N, K] at compile time.
bool targetWantsKMajorInt8Weights();

/// A run-time precondition of `node`: the run fails with INVALID_ARGUMENT
/// and "node 'NAME' (Type, opset N): `what`" (its `{i}` replaced by
/// `values[i]`) when `ok` is false (a kiln.check in the host program).
void checkAtRunTime(OpBuilder &b, Operation *node, Value ok, const Twine &what,
                    ValueRange values = {});

// Values of the generated attribute accessors: I64Attr reads as uint64_t
// and F32Attr as APFloat; these give the signed and double values.
inline int64_t asInt(uint64_t v) { return static_cast<int64_t>(v); }
inline std::optional<int64_t> asInt(std::optional<uint64_t> v) {
  if (!v)
    return std::nullopt;
  return static_cast<int64_t>(*v);
}
inline double asDouble(const APFloat &v) { return v.convertToDouble(); }
inline std::optional<double> asDouble(const std::optional<APFloat> &v) {
  if (!v)
    return std::nullopt;
  return v->convertToDouble();
}

/// The integers of an optional integer-array attribute (`op.getPerm()`).
std::optional<SmallVector<int64_t>> intsOf(std::optional<ArrayAttr> attr);

/// The ranked tensor type of result `i`, or an error when shape inference
/// could not rank it.
FailureOr<RankedTensorType> rankedResult(Operation *op, unsigned i = 0);
/// The ranked tensor type of operand `i`, or an error.
FailureOr<RankedTensorType> rankedOperand(Operation *op, unsigned i);

/// Index-typed size of dim `d` of `v` (a constant when static).
Value dimValue(OpBuilder &b, Location loc, Value v, int64_t d);
/// Whether dim `ia` of `a` and dim `ib` of `b` are the same size by
/// construction: both traced back (through the sizes the lowering gave
/// empty tensors and reshapes, and results' inits) to the same dim of one
/// value or the same size value.
bool sameDynamicDim(Value a, int64_t ia, Value b, int64_t ib);
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
/// Index (i64, keepdims shape) of the max (or min) along `axis`; ties go to
/// the first index, or the last with `last`. Order-independent
/// (Reduction.cpp).
Value argReduce(OpBuilder &b, Location loc, Value x, int64_t axis, bool isMax,
                bool last);
/// `fn` over `x` and the keepdims tensors `kept` broadcast against it, with
/// element type `elem` (Reduction.cpp).
Value withKept(OpBuilder &b, Location loc, Value x, ValueRange kept, Type elem,
               ScalarFn fn);

/// The arithmetic of a convolution's generic (NN.cpp): the accumulator's
/// element type, the scalar the input is padded with, and the body's new
/// accumulator from an input element, a weight element and the old one.
struct ConvArith {
  Type accElem;
  Value padValue;
  std::function<Value(OpBuilder &, Location, Value x, Value w, Value acc)> body;
};
/// The convolution of Conv or ConvInteger `op` (its window attributes and
/// group; channels-last with kiln.channels_last) of `x` by `w` as one
/// linalg.generic: a tensor of `arith.accElem`, the op's result shape
/// (NN.cpp).
FailureOr<Value> buildConvolution(Operation *op, OpBuilder &b, Value x, Value w,
                                  const ConvArith &arith);

/// How reduceKeepDims combines (NN.cpp).
enum class ReduceKind { Sum, Mean, Max };
/// Reduces `x` over `axes` (sorted, normalized) keeping them as size-1 dims;
/// combines with `kind` (NN.cpp: pooling, Softmax).
Value reduceKeepDims(OpBuilder &b, Location loc, Value x,
                     ArrayRef<int64_t> axes, ReduceKind kind);
/// Sums of more f32 elements than this (or of a count only known at run
/// time) accumulate in f64: a sequential f32 sum of n terms loses about
/// n * 2^-24 of the total (1.4e-4 relative for an 18k-class Softmax, 6.7e-6
/// for a mean over 184 x 248), where onnxruntime's vectorized partial sums
/// lose ~1e-6.
constexpr int64_t kWideSumThreshold = 4096;
/// Whether a sum of `type`'s elements over the `reduced` dims accumulates in
/// f64 (f32 elements only; Helpers.cpp).
bool accumulatesWide(RankedTensorType type, ArrayRef<bool> reduced);
/// `wide` (an f64 accumulator tensor) rounded to `elem`.
Value narrowTo(OpBuilder &b, Location loc, Value wide, Type elem);
/// x + y or x * y, float or integer (Helpers.cpp).
Value addOrMul(OpBuilder &b, Location loc, Value x, Value y, bool add);

// Elementwise lowering over all ONNX numeric types (Elementwise.cpp; the
// Elementwise and Logic families).

/// Element kinds a body accepts.
enum ElementKind : unsigned { kFloat = 1, kInt = 2, kBool = 4, kAny = 7 };
/// The kind of an element type, 0 if unsupported (strings never get here:
/// the importer rejects them; int4, complex; f8 goes through Cast.cpp).
unsigned kindOf(Type t);
/// What a scalar body knows about the op: the signless element type of its
/// data operand and whether that operand is unsigned.
struct Scalars {
  Operation *op;
  Type elem;
  bool isUnsigned;
};
using Body =
    std::function<Value(OpBuilder &, Location, const Scalars &, ValueRange)>;
/// An elementwise lowering with broadcasting over the present operands;
/// `kinds` are the accepted element kinds of operand `data`.
LowerFn ew(Body body, unsigned kinds, unsigned data = 0);
/// -1 of a float or (signless) integer type: all ones for integers.
Value minusOne(OpBuilder &b, Location loc, Type t);

/// Unsigned integer types (`ui8`...) as the signless type of the same width
/// (arith works on signless integers); other types unchanged.
Type signlessType(Type t);
RankedTensorType signlessTensor(RankedTensorType t);
/// `tensor.bitcast` of an unsigned tensor to signless (a host view), and back
/// to `type`; no-ops for other types.
Value toSignless(OpBuilder &b, Location loc, Value v);
Value fromSignless(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// 8-bit floats (Cast.cpp): computed on their i8 bits.
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

/// The i64 fold of all elements of the integer tensor `src` (widened to
/// i64) from `init` by `combine(element, acc)`, read on the host: one
/// linalg reduction to a 0-d tensor and its extract.
Value reduceToScalar(
    OpBuilder &b, Location loc, Value src, int64_t init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine);

/// Checks at run time that every element of the integer tensor `indices`
/// lies in [-n, n) for its size n: `sizes[0]` for all of them, or with
/// several sizes `sizes[t]` for the elements at t of the last dim (GatherND
/// index tuples). The run fails naming `node`, how many are out of range,
/// one of them and its size (checkAtRunTime). The kernels clamp as well, so
/// no read is ever out of bounds.
void checkIndicesInRange(OpBuilder &b, Operation *node, Value indices,
                         ArrayRef<Value> sizes);
/// An integer of any width as an index, negative counting from `n`, then
/// clamped into [0, n).
Value normalizeIndex(OpBuilder &b, Location loc, Value v, Value n);
/// The conjunction of i1 `conds` (true when empty).
Value andAll(OpBuilder &b, Location loc, ArrayRef<Value> conds);
/// 0 <= i < n on index values.
Value indexInRange(OpBuilder &b, Location loc, Value i, Value n);
/// Axis `k` of `node`'s run-time axes (an index value): checked to lie in
/// [-rank, rank) ("axes[k] is A, out of range for rank R") and returned in
/// [0, rank).
Value normalizeAxisAtRunTime(OpBuilder &b, Operation *node, Value axis,
                             int64_t k, int64_t rank);
/// Checks that the normalized run-time axes `axes` are distinct ("axes[j]
/// and axes[k] are both axis A").
void checkDistinctAxesAtRunTime(OpBuilder &b, Operation *node,
                                ArrayRef<Value> axes);
/// Whether optional operand `i` is given (exists and is not a NoValue).
bool operandPresent(Operation *op, unsigned i);
/// Static length of a 1-D operand, or -1.
int64_t staticLength1D(Value v);
/// A 1-D operand whose length the op's semantics fix (`len` entries: one per
/// axis, two per padded axis, ...): returned as it is when its length is
/// static, else checked at run time ("`what` has {n} entries, expected
/// `len`") and cast to the static length, so the lowering can read it like
/// a constant-length one. Null (no error) for an operand that is not 1-D.
Value withStaticLength(OpBuilder &b, Operation *node, Value v, int64_t len,
                       const Twine &what);
/// `v` with dim `dim` static at `size`: as it is when static, else checked
/// at run time ("`what` is {n}, expected `size`") and cast (the input
/// channels of a convolution whose weights fix them).
Value withStaticDim(OpBuilder &b, Operation *node, Value v, int64_t dim,
                    int64_t size, const Twine &what);
/// `v` cast to `to`'s static dims where `v`'s are dynamic (same rank), each
/// checked at run time ("dim d of `what` is {n} at run time; its type says
/// N"); `v` unchanged when the ranks differ.
Value withStaticDims(OpBuilder &b, Operation *node, Value v,
                     RankedTensorType to, const Twine &what);
/// The single element of a scalar-like operand: rank 0, or a tensor of one
/// element (ONNX models pass `[1]` where the spec says scalar; a dynamic
/// shape is checked at run time to hold one element).
Value extractScalarOperand(OpBuilder &b, Operation *node, Value v,
                           const Twine &what);
/// The `n` integers of a 1-D operand as index values: constants when the
/// operand is constant (0 past its end), otherwise read on the host.
SmallVector<Value> readHostIndices(OpBuilder &b, Location loc, Value v,
                                   int64_t n);
/// Body builder of generateTensor: receives the output indices.
using IndexBodyFn =
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value> /*ivs*/)>;
/// `v` as `to` when both hold one element in different ranks (rank-0 and
/// [1], [1, 1]...: ONNX models mix them where onnxruntime accepts it); a
/// dynamic `v` is checked at run time to hold one element. Null otherwise.
Value reshapeOneElement(OpBuilder &b, Location loc, Value v,
                        RankedTensorType to);
/// Sizes of a result of `type`: its static dims (each checked at run time
/// against the `computed` one, naming the node being lowered), else
/// `computed`.
SmallVector<Value> resultSizes(OpBuilder &b, Location loc,
                               RankedTensorType type, ArrayRef<Value> computed);
/// A tensor of `type` (dynamic sizes `dynSizes`) whose every element is
/// `body(ivs)`: a parallel `linalg.generic` without inputs.
Value generateTensor(OpBuilder &b, Location loc, RankedTensorType type,
                     ValueRange dynSizes, IndexBodyFn body);
/// generateTensor with `sizes` giving every dim (the dynamic ones are used).
Value generateSized(OpBuilder &b, Location loc, RankedTensorType type,
                    ArrayRef<Value> sizes, IndexBodyFn body);

} // namespace mlir::kiln::lowering

#endif // KILN_LIB_CONVERSION_ONNXTOLINALG_LOWERING_H
