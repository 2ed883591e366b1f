//===- OnnxToLinalg.cpp - onnx → linalg/tensor/arith/math -----------------===//

#include "Lowering.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/IR/Precision.h"
#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"
#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCONVERTONNXTOLINALG
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::string nodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (isa<NameLoc>(l)) {
        loc = l;
        break;
      }
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "<unnamed>";
}

/// "node 'NAME' (Type, opset N)": how messages name an ONNX node.
static std::string describeNode(Operation *op) {
  int64_t opset = 0;
  if (auto module = op->getParentOfType<ModuleOp>())
    if (auto a = module->getAttrOfType<IntegerAttr>("onnx.opset"))
      opset = a.getInt();
  StringRef type = op->getName().getStringRef();
  type.consume_front("onnx.");
  return ("node '" + nodeName(op) + "' (" + type + ", opset " + Twine(opset) +
          ")")
      .str();
}

InFlightDiagnostic lowering::nodeError(Operation *op) {
  return op->emitError() << describeNode(op) << ": ";
}

void lowering::checkAtRunTime(OpBuilder &b, Operation *node, Value ok,
                              const Twine &what, ValueRange values) {
  // A condition folded to true needs no check.
  if (auto c = ok.getDefiningOp<arith::ConstantOp>())
    if (auto v = dyn_cast<IntegerAttr>(c.getValue()); v && v.getInt())
      return;
  CheckOp::create(b, node->getLoc(), /*ctx=*/Value(), ok,
                  b.getStringAttr(describeNode(node) + ": " + what.str()),
                  values);
}

FailureOr<RankedTensorType> lowering::rankedResult(Operation *op, unsigned i) {
  auto t = dyn_cast<RankedTensorType>(op->getResult(i).getType());
  if (!t)
    return nodeError(op) << "the rank of output " << i
                         << " could not be inferred",
           failure();
  return t;
}

FailureOr<RankedTensorType> lowering::rankedOperand(Operation *op, unsigned i) {
  auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
  if (!t)
    return nodeError(op) << "the rank of input " << i << " is unknown",
           failure();
  return t;
}

Value lowering::dimValue(OpBuilder &b, Location loc, Value v, int64_t d) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(d))
    return arith::ConstantIndexOp::create(b, loc, t.getDimSize(d));
  return tensor::DimOp::create(b, loc, v, d);
}

/// Where the size of `v`'s dim `axis` comes from: a (root value, dim) pair
/// found by following the lowering's own size bookkeeping back (an op's
/// result has its init's shape; an empty tensor's dynamic size and a
/// reshape's shape element are index values, through `tensor.dim` to the
/// value they measure), or (size value, -1) for a size computed otherwise.
static std::pair<Value, int64_t> dimOrigin(Value v, int64_t axis,
                                           int depth = 0);

/// A size value without the index casts around it.
static Value stripCasts(Value size) {
  while (auto cast = size.getDefiningOp<arith::IndexCastOp>())
    size = cast.getIn();
  return size;
}

/// Whether a size value is never negative: a measured dim, a non-negative
/// constant, or a select of such values.
static bool isNonNegative(Value size, int depth) {
  if (depth > 64)
    return false;
  size = stripCasts(size);
  if (size.getDefiningOp<tensor::DimOp>())
    return true;
  if (std::optional<int64_t> c = getConstantIntValue(size))
    return *c >= 0;
  if (auto sel = size.getDefiningOp<arith::SelectOp>())
    return isNonNegative(sel.getTrueValue(), depth + 1) &&
           isNonNegative(sel.getFalseValue(), depth + 1);
  return false;
}

/// The (value, dim) a size value measures: through index casts,
/// `tensor.dim`, and selects whose two sides measure the same dim or whose
/// condition cannot hold (a size compared equal to a negative constant: a
/// Reshape's -1, which a measured dim never is).
static std::optional<std::pair<Value, int64_t>> sizeOrigin(Value size,
                                                           int depth) {
  if (depth > 64)
    return std::nullopt;
  size = stripCasts(size);
  if (auto dim = size.getDefiningOp<tensor::DimOp>()) {
    if (std::optional<int64_t> c = dim.getConstantIndex())
      return dimOrigin(dim.getSource(), *c, depth + 1);
    return std::nullopt;
  }
  auto sel = size.getDefiningOp<arith::SelectOp>();
  if (!sel)
    return std::nullopt;
  if (auto cmp = sel.getCondition().getDefiningOp<arith::CmpIOp>()) {
    std::optional<int64_t> c = getConstantIntValue(cmp.getRhs());
    Value lhs = stripCasts(cmp.getLhs());
    if (cmp.getPredicate() == arith::CmpIPredicate::eq && c && *c < 0 &&
        isNonNegative(lhs, depth) && stripCasts(sel.getFalseValue()) == lhs)
      return sizeOrigin(sel.getFalseValue(), depth + 1);
  }
  std::optional<std::pair<Value, int64_t>> t =
      sizeOrigin(sel.getTrueValue(), depth + 1);
  std::optional<std::pair<Value, int64_t>> f =
      sizeOrigin(sel.getFalseValue(), depth + 1);
  if (t && f && *t == *f)
    return t;
  return std::nullopt;
}

static std::pair<Value, int64_t> dimOrigin(Value v, int64_t axis, int depth) {
  for (; depth < 256; ++depth) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || axis < 0 || axis >= t.getRank())
      return {v, axis};
    Operation *def = v.getDefiningOp();
    if (!def)
      return {v, axis};
    // A size value: through index casts and tensor.dim.
    auto fromSize =
        [&](Value size) -> std::optional<std::pair<Value, int64_t>> {
      return sizeOrigin(size, depth);
    };
    Value size;
    if (auto empty = dyn_cast<tensor::EmptyOp>(def)) {
      if (!t.isDynamicDim(axis))
        return {v, axis};
      size = empty.getDynamicSize(axis);
    } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      auto r = cast<OpResult>(v);
      if (r.getResultNumber() >= dps.getNumDpsInits())
        return {v, axis};
      v = dps.getDpsInitOperand(r.getResultNumber())->get();
      continue;
    } else if (auto reshape = dyn_cast<tensor::ReshapeOp>(def)) {
      auto elems = reshape.getShape().getDefiningOp<tensor::FromElementsOp>();
      if (!elems || (int64_t)elems.getElements().size() != t.getRank())
        return {v, axis};
      size = elems.getElements()[axis];
    } else if (auto cast = dyn_cast<tensor::CastOp>(def)) {
      v = cast.getSource();
      continue;
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
      std::optional<int64_t> group;
      for (auto [g, dims] : llvm::enumerate(expand.getReassociationIndices()))
        if (llvm::is_contained(dims, axis))
          group = dims.size() == 1 ? std::optional<int64_t>(g) : std::nullopt;
      if (!group)
        return {v, axis};
      v = expand.getSrc(), axis = *group;
      continue;
    } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      auto groups = collapse.getReassociationIndices();
      if (groups[axis].size() != 1)
        return {v, axis};
      v = collapse.getSrc(), axis = groups[axis].front();
      continue;
    } else {
      return {v, axis};
    }
    if (std::optional<std::pair<Value, int64_t>> from = fromSize(size)) {
      std::tie(v, axis) = *from;
      continue;
    }
    return {size, -1};
  }
  return {v, axis};
}

bool lowering::sameDynamicDim(Value a, int64_t ia, Value b, int64_t ib) {
  return dimOrigin(a, ia) == dimOrigin(b, ib);
}

Value lowering::emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                            ValueRange dynSizes) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynSizes);
}

TypedAttr lowering::scalarAttr(Type type, double value) {
  if (isa<FloatType>(type))
    return FloatAttr::get(type, value);
  return IntegerAttr::get(type, static_cast<int64_t>(value));
}

Value lowering::scalarConstant(OpBuilder &b, Location loc, Type type,
                               double value) {
  return arith::ConstantOp::create(b, loc, scalarAttr(type, value));
}

Value lowering::filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                             ValueRange dynSizes, TypedAttr value) {
  Value init = emptyTensor(b, loc, type, dynSizes);
  Value scalar = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
}

bool lowering::isFloat(Type t) {
  return isa<FloatType>(getElementTypeOrSelf(t));
}

SmallVector<Value> lowering::broadcastDynSizes(OpBuilder &b, Location loc,
                                               RankedTensorType resultType,
                                               ValueRange inputs) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < rank; ++i) {
    if (!resultType.isDynamicDim(i))
      continue;
    Value size;
    for (Value in : inputs) {
      auto t = dyn_cast<RankedTensorType>(in.getType());
      if (!t)
        continue;
      int64_t j = i - (rank - t.getRank());
      if (j < 0 || !t.isDynamicDim(j))
        continue;
      Value d = tensor::DimOp::create(b, loc, in, j);
      size = size ? arith::MaxSIOp::create(b, loc, size, d).getResult() : d;
    }
    assert(size && "dynamic broadcast dim without a dynamic input dim");
    sizes.push_back(size);
  }
  return sizes;
}

Value lowering::buildElementwise(OpBuilder &b, Location loc,
                                 RankedTensorType resultType, ValueRange inputs,
                                 ScalarFn body) {
  // A dynamic input dim may be 1 at run time and broadcast when another
  // (different) input is also dynamic at the same result position (the
  // result size is the max) or when the result dim is static and not 1:
  // such an input is read at select(dim == 1, 0, i) instead of through an
  // affine map.
  int64_t rank = resultType.getRank();
  SmallVector<SmallVector<bool>> runtimeBcast;
  for (auto [k, in] : llvm::enumerate(inputs)) {
    auto t = cast<RankedTensorType>(in.getType());
    SmallVector<bool> mask(t.getRank(), false);
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t i = j + (rank - t.getRank());
      if (!t.isDynamicDim(j))
        continue;
      // Against a static result dim other than 1 (set by another input), the
      // dynamic dim is either that size or 1.
      if (!resultType.isDynamicDim(i)) {
        mask[j] = resultType.getDimSize(i) != 1;
        continue;
      }
      for (auto [k2, other] : llvm::enumerate(inputs)) {
        if (k2 == k || other == in)
          continue;
        auto ot = cast<RankedTensorType>(other.getType());
        int64_t j2 = i - (rank - ot.getRank());
        if (j2 >= 0 && ot.isDynamicDim(j2))
          mask[j] = true;
      }
    }
    runtimeBcast.push_back(mask);
  }
  return buildBroadcastGeneric(b, loc, resultType, inputs,
                               broadcastDynSizes(b, loc, resultType, inputs),
                               runtimeBcast, body);
}

Value lowering::buildBroadcastGeneric(OpBuilder &b, Location loc,
                                      RankedTensorType resultType,
                                      ValueRange inputs, ValueRange dynSizes,
                                      ArrayRef<SmallVector<bool>> runtimeBcast,
                                      ScalarFn body) {
  int64_t rank = resultType.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  SmallVector<Value> genericIns;
  // Per input: null when read through the generic's operands; otherwise
  // the "dim j is 1" flags (null for dims that never broadcast at run time).
  SmallVector<std::optional<SmallVector<Value>>> extracted;
  for (auto [k, in] : llvm::enumerate(inputs)) {
    auto t = cast<RankedTensorType>(in.getType());
    bool anyRuntime =
        k < runtimeBcast.size() && llvm::is_contained(runtimeBcast[k], true);
    if (anyRuntime) {
      SmallVector<Value> isOne;
      for (int64_t j = 0; j < t.getRank(); ++j)
        isOne.push_back(runtimeBcast[k][j]
                            ? arith::CmpIOp::create(
                                  b, loc, arith::CmpIPredicate::eq,
                                  tensor::DimOp::create(b, loc, in, j),
                                  arith::ConstantIndexOp::create(b, loc, 1))
                                  .getResult()
                            : Value());
      extracted.push_back(isOne);
      continue;
    }
    extracted.push_back(std::nullopt);
    SmallVector<AffineExpr> exprs;
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t i = j + (rank - t.getRank());
      if (t.getDimSize(j) == 1 && resultType.getDimSize(i) != 1)
        exprs.push_back(getAffineConstantExpr(0, ctx));
      else
        exprs.push_back(getAffineDimExpr(i, ctx));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
    genericIns.push_back(in);
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  // A dim of an input must be the result's or 1 (numpy broadcasting): a
  // run-time check wherever either is dynamic, before anything reads the
  // input through it.
  if (Operation *node = loweringNode()) {
    SmallVector<Value> resultDims;
    unsigned nextDyn = 0;
    for (int64_t i = 0; i < rank; ++i)
      resultDims.push_back(resultType.isDynamicDim(i)
                               ? dynSizes[nextDyn++]
                               : arith::ConstantIndexOp::create(
                                     b, loc, resultType.getDimSize(i)));
    for (auto [k, in] : llvm::enumerate(inputs)) {
      auto t = cast<RankedTensorType>(in.getType());
      for (int64_t j = 0; j < t.getRank(); ++j) {
        int64_t i = j + (rank - t.getRank());
        if (!t.isDynamicDim(j) && !resultType.isDynamicDim(i))
          continue;
        if (t.getDimSize(j) == 1)
          continue; // broadcasts to any size
        Value dim = tensor::DimOp::create(b, loc, in, j);
        Value ok = arith::OrIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim,
                                  resultDims[i]),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim,
                                  arith::ConstantIndexOp::create(b, loc, 1)));
        checkAtRunTime(b, node, ok,
                       "input " + Twine(k) + " has {0} at dim " + Twine(j) +
                           " where the result has {1}: the sizes must "
                           "match or be 1 (broadcasting)",
                       {dim, resultDims[i]});
      }
    }
  }
  Value init = emptyTensor(b, loc, resultType, dynSizes);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, genericIns, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        unsigned next = 0;
        for (auto [k, in] : llvm::enumerate(inputs)) {
          if (!extracted[k]) {
            scalars.push_back(args[next++]);
            continue;
          }
          auto t = cast<RankedTensorType>(in.getType());
          Value zero = arith::ConstantIndexOp::create(nb, nloc, 0);
          SmallVector<Value> ix;
          for (int64_t j = 0; j < t.getRank(); ++j) {
            int64_t i = j + (rank - t.getRank());
            if (t.getDimSize(j) == 1 && resultType.getDimSize(i) != 1) {
              ix.push_back(zero);
              continue;
            }
            Value iv = linalg::IndexOp::create(nb, nloc, i);
            if (Value one = (*extracted[k])[j])
              iv = arith::SelectOp::create(nb, nloc, one, zero, iv);
            ix.push_back(iv);
          }
          scalars.push_back(tensor::ExtractOp::create(nb, nloc, in, ix));
        }
        Value r = body(nb, nloc, scalars);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value lowering::reshapeTo(OpBuilder &b, Location loc, Value v,
                          RankedTensorType type, ArrayRef<Value> sizes) {
  // The same static type is the same shape; the same dynamic type is not
  // ([?x?x?] reshaped by [2, -1, 2] from [2, 3, 4]).
  if (v.getType() == type && type.hasStaticShape())
    return v;
  auto shapeType = RankedTensorType::get({static_cast<int64_t>(sizes.size())},
                                         b.getIndexType());
  Value shape = tensor::FromElementsOp::create(b, loc, shapeType, sizes);
  return tensor::ReshapeOp::create(b, loc, type, v, shape);
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

std::optional<SmallVector<int64_t>>
lowering::intsOf(std::optional<ArrayAttr> attr) {
  if (!attr)
    return std::nullopt;
  SmallVector<int64_t> v;
  for (Attribute e : *attr)
    v.push_back(cast<IntegerAttr>(e).getInt());
  return v;
}

LogicalResult lowering::replaceLoweredResults(Operation *op, OpBuilder &b,
                                              ArrayRef<Value> results) {
  assert(results.size() <= op->getNumResults());
  for (auto [i, lowered] : llvm::enumerate(results)) {
    Value r = lowered;
    if (!r) // an absent or unused optional output: nothing to replace
      continue;
    Value old = op->getResult(i);
    if (auto to = dyn_cast<RankedTensorType>(old.getType()))
      if (Value one = reshapeOneElement(b, op->getLoc(), r, to))
        r = one;
    if (r.getType() != old.getType()) {
      // A dim the result's type fixes (inferred, or declared by the model's
      // value_info) that the lowering computes at run time: the cast asserts
      // it, so check it there instead of reading past a smaller buffer.
      if (auto to = dyn_cast<RankedTensorType>(old.getType()))
        r = withStaticDims(b, op, r, to, "output " + Twine(i));
      if (r.getType() != old.getType())
        r = tensor::CastOp::create(b, op->getLoc(), old.getType(), r);
    }
    if (r != old) // a lowering may hand back an omitted (none) output
      old.replaceAllUsesWith(r);
  }
  bool unsupported = false;
  for (unsigned i = results.size(); i < op->getNumResults(); ++i)
    if (!op->getResult(i).use_empty()) {
      nodeError(op) << "output " << i << " is not supported";
      unsupported = true;
    }
  return failure(unsupported);
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
/// The ONNX op types that OnnxFamilies.def lists: those with a lowering.
const llvm::StringSet<> &loweredOpTypes() {
  static const llvm::StringSet<> types = {
#define KILN_ONNX_OP(FAMILY, OP, INFER) #OP,
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"
  };
  return types;
}

/// The lowering patterns of every family, by the op type they lower.
class LoweringTable {
public:
  explicit LoweringTable(MLIRContext *ctx) : patterns(ctx) {
    populateOnnxToLinalgPatterns(patterns);
    for (const std::unique_ptr<RewritePattern> &p :
         patterns.getNativePatterns()) {
      std::optional<OperationName> root = p->getRootKind();
      assert(root && "an onnx lowering pattern without a root op");
      [[maybe_unused]] bool inserted = byOp.try_emplace(*root, p.get()).second;
      assert(inserted && "two lowering patterns for one op");
    }
    assert(byOp.size() == loweredOpTypes().size() &&
           "an op of OnnxFamilies.def has no lowering pattern");
  }

  const RewritePattern *lookup(OperationName name) const {
    return byOp.lookup(name);
  }

private:
  RewritePatternSet patterns;
  DenseMap<OperationName, const RewritePattern *> byOp;
};

} // namespace

void mlir::kiln::populateOnnxToLinalgPatterns(RewritePatternSet &patterns) {
#define KILN_ONNX_FAMILY(FAMILY) populate##FAMILY##LoweringPatterns(patterns);
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"
}

bool mlir::kiln::isOnnxOpLowered(StringRef opType) {
  return loweredOpTypes().contains(opType);
}

/// The table of the pass run in progress on this thread (control-flow
/// lowerings lower their regions with it).
static thread_local const LoweringTable *currentTable = nullptr;
/// The onnx op being lowered: the node helpers' run-time checks name.
static thread_local Operation *currentNode = nullptr;

Operation *lowering::loweringNode() { return currentNode; }
/// The fused-attention option of the pass run in progress on this thread.
static thread_local bool fusedAttentionOn = false;
bool lowering::targetHasFusedAttention() { return fusedAttentionOn; }
/// The int8-weights-k-major option of the pass run in progress.
static thread_local bool kMajorInt8On = false;
bool lowering::targetWantsKMajorInt8Weights() { return kMajorInt8On; }

/// Whether `op` is a contraction of f32 values into an f32 accumulator: a
/// linalg op with reduction loops whose body yields `acc + a * b` (either
/// order) with a, b and acc f32.
static bool isF32Contraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumReductionLoops() == 0 ||
      linalgOp.getNumDpsInits() != 1 || !linalgOp.getBlock())
    return false;
  Block &body = *linalgOp.getBlock();
  Value acc = body.getArguments().back();
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!acc.getType().isF32() || !add || add->getBlock() != &body ||
      (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  auto mul = (add.getLhs() == acc ? add.getRhs() : add.getLhs())
                 .getDefiningOp<arith::MulFOp>();
  return mul && mul->getBlock() == &body && mul.getLhs().getType().isF32() &&
         mul.getRhs().getType().isF32();
}

/// Lowers the onnx ops of `region` in order. The regions of onnx ops that
/// have some (If, Loop, Scan) are left to those ops' lowerings, which lower
/// them with this function when they move them into their replacement.
LogicalResult lowering::lowerOnnxOpsIn(Region &region) {
  std::optional<LoweringTable> ownTable;
  if (!currentTable)
    ownTable.emplace(region.getContext());
  const LoweringTable &table = currentTable ? *currentTable : *ownTable;
  SmallVector<Operation *> ops;
  region.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<onnxops::OnnxDialect>(op->getDialect()))
      return WalkResult::advance();
    ops.push_back(op);
    return op->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  // A Reshape whose shape the shape arithmetic knows as constants and dims
  // of values gets that shape directly (the dims measured where the values
  // are, so the measured tensors' lowering carries them along): its result
  // sizes then name the dims they copy, which later lowerings compare (two
  // attention heads' batch dims are the same, not broadcast).
  for (Operation *op : ops) {
    auto reshape = dyn_cast<onnxops::ReshapeOp>(op);
    if (!reshape)
      continue;
    Value shape = reshape->getOperand(1);
    auto st = dyn_cast<RankedTensorType>(shape.getType());
    std::optional<SmallVector<onnxops::ShapeElement>> elems =
        onnxops::evaluateShapeValue(shape);
    if (!st || !st.getElementType().isInteger(64) || !elems ||
        shape.getDefiningOp<tensor::FromElementsOp>() ||
        !llvm::all_of(*elems,
                      [](const onnxops::ShapeElement &e) {
                        return e.value || e.isDimOf();
                      }) ||
        llvm::none_of(
            *elems, [](const onnxops::ShapeElement &e) { return e.isDimOf(); }))
      continue;
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<Value> values;
    for (const onnxops::ShapeElement &e : *elems) {
      if (e.value) {
        values.push_back(arith::ConstantIntOp::create(b, loc, *e.value, 64));
        continue;
      }
      Value d = tensor::DimOp::create(b, loc, e.source, e.axis);
      values.push_back(arith::IndexCastOp::create(b, loc, b.getI64Type(), d));
    }
    reshape->setOperand(
        1, tensor::FromElementsOp::create(b, loc, st, values).getResult());
  }
  bool failed = false;
  SmallVector<Operation *> noValues;
  PatternRewriter rewriter(region.getContext());
  for (Operation *op : ops) {
    if (isa<onnxops::NoValueOp>(op)) {
      noValues.push_back(op);
      continue;
    }
    // Terminators of nested regions are rewritten by their parent's lowering.
    if (isa<onnxops::YieldOp>(op))
      continue;
    const RewritePattern *pattern = table.lookup(op->getName());
    if (!pattern) {
      StringRef name = op->getName().getStringRef();
      name.consume_front("onnx.");
      nodeError(op) << "operator '" << name << "' is not supported by Kiln yet";
      failed = true;
      continue;
    }
    // The lowering inserts its ops just before the node.
    Operation *before = op->getPrevNode();
    Operation *outerNode = currentNode;
    currentNode = op;
    LogicalResult lowered = pattern->matchAndRewrite(op, rewriter);
    currentNode = outerNode;
    if (mlir::failed(lowered)) {
      failed = true;
      continue;
    }
    // A node kiln-mixed-precision allowed TF32: its f32 contractions carry
    // the mark to the targets (kTF32Attr).
    if (isMarkedTF32(op))
      for (Operation *o = before ? before->getNextNode()
                                 : &op->getBlock()->front();
           o != op; o = o->getNextNode())
        o->walk([&](Operation *inner) {
          if (isF32Contraction(inner))
            inner->setAttr(kTF32Attr, rewriter.getUnitAttr());
        });
    if (!failed)
      op->erase();
  }
  if (failed)
    return failure();
  for (Operation *op : noValues)
    if (op->use_empty())
      op->erase();
  return success();
}

namespace {
struct ConvertOnnxToLinalgPass
    : public kiln::impl::KilnConvertOnnxToLinalgBase<ConvertOnnxToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    LoweringTable table(&getContext());
    const LoweringTable *outer = currentTable;
    bool outerFused = fusedAttentionOn, outerKMajor = kMajorInt8On;
    currentTable = &table;
    fusedAttentionOn = fusedAttention;
    kMajorInt8On = kMajorInt8Weights;
    LogicalResult result = lowerOnnxOpsIn(getOperation().getBody());
    currentTable = outer;
    fusedAttentionOn = outerFused;
    kMajorInt8On = outerKMajor;
    if (failed(result))
      return signalPassFailure();
  }
};
} // namespace
