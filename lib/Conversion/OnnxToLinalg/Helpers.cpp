//===- Helpers.cpp - Small helpers shared by the lowering files -----------===//
//
// Index arithmetic, operand queries and the parallel "generate" generic used
// by several op families (DataMovement, Resample, Quantize, Tensor).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

static Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value lowering::clampIntoRange(OpBuilder &b, Location loc, Value i, Value n) {
  Value hi = arith::SubIOp::create(b, loc, n, indexConst(b, loc, 1));
  Value v = arith::MinSIOp::create(b, loc, i, hi);
  return arith::MaxSIOp::create(b, loc, v, indexConst(b, loc, 0));
}

/// An integer or index element as i64.
static Value widenToI64(OpBuilder &b, Location loc, Value v) {
  Type i64 = b.getI64Type();
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, i64, v);
  if (v.getType().getIntOrFloatBitWidth() < 64)
    return arith::ExtSIOp::create(b, loc, i64, v);
  return v;
}

Value lowering::reduceToScalar(
    OpBuilder &b, Location loc, Value src, int64_t init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  int64_t rank = cast<RankedTensorType>(src.getType()).getRank();
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64);
  Value acc =
      linalg::FillOp::create(
          b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, init, 64)},
          ValueRange{empty})
          .getResult(0);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, {}, ctx)};
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{RankedTensorType::get({}, i64)}, ValueRange{src},
      ValueRange{acc}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::reduction),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l,
                                combine(nb, l, widenToI64(nb, l, a[0]), a[1]));
      });
  return tensor::ExtractOp::create(b, loc, op.getResult(0), ValueRange{})
      .getResult();
}

void lowering::checkIndicesInRange(OpBuilder &b, Operation *node, Value indices,
                                   ArrayRef<Value> sizes) {
  Location loc = node->getLoc();
  auto type = cast<RankedTensorType>(indices.getType());
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto wideHost = [&](Value v) {
    return v.getType().isIndex()
               ? b.createOrFold<arith::IndexCastOp>(loc, i64, v)
               : v;
  };
  // Constant indices (shape arithmetic): their range is known now, so only
  // the sizes are compared at run time, on the host, without a kernel.
  DenseIntElementsAttr constant;
  if (matchPattern(indices, m_Constant(&constant))) {
    size_t columns = sizes.size();
    SmallVector<int64_t> lo(columns, std::numeric_limits<int64_t>::max()),
        hi(columns, std::numeric_limits<int64_t>::min());
    int64_t last = rank ? type.getDimSize(rank - 1) : 1;
    for (auto [i, v] : llvm::enumerate(constant.getValues<APInt>())) {
      size_t c = columns > 1 ? i % std::max<int64_t>(last, 1) : 0;
      lo[c] = std::min(lo[c], v.getSExtValue());
      hi[c] = std::max(hi[c], v.getSExtValue());
    }
    for (size_t c = 0; c < columns; ++c) {
      if (lo[c] > hi[c])
        continue; // no indices
      Value n = wideHost(sizes[c]);
      Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
      Value ok = b.createOrFold<arith::AndIOp>(
          loc,
          b.createOrFold<arith::CmpIOp>(
              loc, arith::CmpIPredicate::sge,
              arith::ConstantIntOp::create(b, loc, lo[c], 64),
              b.createOrFold<arith::SubIOp>(loc, zero, n)),
          b.createOrFold<arith::CmpIOp>(
              loc, arith::CmpIPredicate::slt,
              arith::ConstantIntOp::create(b, loc, hi[c], 64), n));
      checkAtRunTime(b, node, ok,
                     "constant indices from {0} to {1} are out of range for "
                     "a dim of size {2}",
                     {arith::ConstantIntOp::create(b, loc, lo[c], 64),
                      arith::ConstantIntOp::create(b, loc, hi[c], 64), n});
    }
    return;
  }
  // One size: the indices' least and largest (two vectorizable
  // reductions), compared on the host.
  if (sizes.size() == 1) {
    Value lo =
        reduceToScalar(b, loc, indices, std::numeric_limits<int64_t>::max(),
                       [](OpBuilder &nb, Location l, Value v, Value acc) {
                         return arith::MinSIOp::create(nb, l, v, acc);
                       });
    Value hi =
        reduceToScalar(b, loc, indices, std::numeric_limits<int64_t>::min(),
                       [](OpBuilder &nb, Location l, Value v, Value acc) {
                         return arith::MaxSIOp::create(nb, l, v, acc);
                       });
    Value n = wideHost(sizes[0]);
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
    Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, lo,
                                        hi); // no indices at all
    Value ok = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, lo,
                              arith::SubIOp::create(b, loc, zero, n)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, hi, n));
    checkAtRunTime(b, node, arith::OrIOp::create(b, loc, empty, ok),
                   "indices from {0} to {1} are out of range for a dim of "
                   "size {2} (valid indices lie in [-{2}, {2}))",
                   {lo, hi, n});
    return;
  }
  // Index tuples (a size per column): one pass counting the indices out of
  // range, the last of them and its size, into three 0-d tensors.
  auto scalar = RankedTensorType::get({}, i64);
  auto init = [&](int64_t v) {
    Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64);
    return linalg::FillOp::create(
               b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, v, 64)},
               ValueRange{empty})
        .getResult(0);
  };
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  maps.append(3, AffineMap::get(rank, 0, {}, ctx));
  auto scan = linalg::GenericOp::create(
      b, loc, TypeRange{scalar, scalar, scalar}, ValueRange{indices},
      ValueRange{init(0), init(0), init(0)}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::reduction),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = widenToI64(nb, l, a[0]);
        Value n = widenToI64(nb, l, sizes[0]);
        if (sizes.size() > 1) {
          Value t = linalg::IndexOp::create(nb, l, rank - 1);
          for (auto [k, size] : llvm::enumerate(sizes))
            if (k > 0)
              n = arith::SelectOp::create(
                  nb, l,
                  arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, t,
                                        indexConst(nb, l, k)),
                  widenToI64(nb, l, size), n);
        }
        Value low = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::slt, v,
            arith::SubIOp::create(
                nb, l, arith::ConstantIntOp::create(nb, l, 0, 64), n));
        Value high =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, v, n);
        Value bad = arith::OrIOp::create(nb, l, low, high);
        Value count = arith::AddIOp::create(
            nb, l, a[1], arith::ExtUIOp::create(nb, l, i64, bad));
        linalg::YieldOp::create(
            nb, l,
            ValueRange{count, arith::SelectOp::create(nb, l, bad, v, a[2]),
                       arith::SelectOp::create(nb, l, bad, n, a[3])});
      });
  auto read = [&](unsigned i) {
    return tensor::ExtractOp::create(b, loc, scan.getResult(i), ValueRange{})
        .getResult();
  };
  Value count = read(0);
  checkAtRunTime(
      b, node,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count,
                            arith::ConstantIntOp::create(b, loc, 0, 64)),
      "{0} indices are out of range, e.g. {1} for a dim of size "
      "{2} (valid indices lie in [-{2}, {2}))",
      {count, read(1), read(2)});
}

Value lowering::indexInRange(OpBuilder &b, Location loc, Value i, Value n) {
  Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i,
                                   indexConst(b, loc, 0));
  Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, n);
  return arith::AndIOp::create(b, loc, ge, lt);
}

Value lowering::normalizeAxisAtRunTime(OpBuilder &b, Operation *node,
                                       Value axis, int64_t k, int64_t rank) {
  Location loc = node->getLoc();
  Value ok = arith::AndIOp::create(
      b, loc, cmpI(b, loc, arith::CmpIPredicate::sge, axis, idx(b, loc, -rank)),
      cmpI(b, loc, arith::CmpIPredicate::slt, axis, idx(b, loc, rank)));
  checkAtRunTime(b, node, ok, "axes[{0}] is {1}, out of range for rank {2}",
                 {idx(b, loc, k), axis, idx(b, loc, rank)});
  return arith::SelectOp::create(
      b, loc, cmpI(b, loc, arith::CmpIPredicate::slt, axis, idx(b, loc, 0)),
      arith::AddIOp::create(b, loc, axis, idx(b, loc, rank)), axis);
}

void lowering::checkDistinctAxesAtRunTime(OpBuilder &b, Operation *node,
                                          ArrayRef<Value> axes) {
  Location loc = node->getLoc();
  for (size_t k = 0; k < axes.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      checkAtRunTime(b, node,
                     cmpI(b, loc, arith::CmpIPredicate::ne, axes[k], axes[j]),
                     "axes[{0}] and axes[{1}] are both axis {2}",
                     {idx(b, loc, j), idx(b, loc, k), axes[k]});
}

bool lowering::operandPresent(Operation *op, unsigned i) {
  return i < op->getNumOperands() && !onnxops::isNoValue(op->getOperand(i));
}

int64_t lowering::staticLength1D(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 1 || t.isDynamicDim(0))
    return -1;
  return t.getDimSize(0);
}

/// `v` with dim `dim` cast to the static `size`, checked at run time with
/// `message` ({0}: the dim's run-time size). `v` itself when static.
static Value castDimChecked(OpBuilder &b, Operation *node, Value v, int64_t dim,
                            int64_t size, const Twine &message) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(dim))
    return v;
  Location loc = v.getLoc();
  Value n = tensor::DimOp::create(b, loc, v, dim);
  checkAtRunTime(b, node,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n,
                                       indexConst(b, loc, size)),
                 message, {n});
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = size;
  return tensor::CastOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType(), t.getEncoding()),
      v);
}

/// Checks at run time that `v` (of dynamic shape) holds one element;
/// `message`'s {0} is its element count.
static void checkOneElement(OpBuilder &b, Operation *node, Value v,
                            const Twine &message) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.hasStaticShape())
    return;
  Location loc = v.getLoc();
  Value count = indexConst(b, loc, 1);
  for (int64_t d = 0; d < t.getRank(); ++d)
    count = arith::MulIOp::create(b, loc, count,
                                  tensor::DimOp::create(b, loc, v, d));
  checkAtRunTime(b, node,
                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, count,
                                       indexConst(b, loc, 1)),
                 message, {count});
}

Value lowering::withStaticLength(OpBuilder &b, Operation *node, Value v,
                                 int64_t len, const Twine &what) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 1)
    return Value();
  return castDimChecked(b, node, v, 0, len,
                        what + " has {0} entries, expected " + Twine(len));
}

Value lowering::withStaticDim(OpBuilder &b, Operation *node, Value v,
                              int64_t dim, int64_t size, const Twine &what) {
  return castDimChecked(b, node, v, dim, size,
                        what + " is {0}, expected " + Twine(size));
}

Value lowering::withStaticDims(OpBuilder &b, Operation *node, Value v,
                               RankedTensorType to, const Twine &what) {
  auto from = dyn_cast<RankedTensorType>(v.getType());
  if (!from || from.getRank() != to.getRank())
    return v;
  for (int64_t d = 0; d < to.getRank(); ++d)
    if (from.isDynamicDim(d) && !to.isDynamicDim(d))
      v = castDimChecked(b, node, v, d, to.getDimSize(d),
                         "dim " + Twine(d) + " of " + what +
                             " is {0} at run time; its type says " +
                             Twine(to.getDimSize(d)));
  return v;
}

Value lowering::extractScalarOperand(OpBuilder &b, Operation *node, Value v,
                                     const Twine &what) {
  auto t = cast<RankedTensorType>(v.getType());
  Location loc = v.getLoc();
  checkOneElement(b, node, v, what + " must hold one element, not {0}");
  SmallVector<Value> zeros(t.getRank(), indexConst(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, v, zeros);
}

SmallVector<Value> lowering::readHostIndices(OpBuilder &b, Location loc,
                                             Value v, int64_t n) {
  SmallVector<Value> r;
  if (auto c = onnxops::getConstantIntValues(v)) {
    for (int64_t i = 0; i < n; ++i)
      r.push_back(indexConst(b, loc, i < (int64_t)c->size() ? (*c)[i] : 0));
    return r;
  }
  // Elements the program already has as values (a shape built from dims).
  if (auto fe = v.getDefiningOp<tensor::FromElementsOp>();
      fe && (int64_t)fe.getElements().size() >= n) {
    for (int64_t i = 0; i < n; ++i) {
      Value e = fe.getElements()[i];
      r.push_back(e.getType().isIndex()
                      ? e
                      : arith::IndexCastOp::create(b, loc, b.getIndexType(), e)
                            .getResult());
    }
    return r;
  }
  for (int64_t i = 0; i < n; ++i) {
    Value e =
        tensor::ExtractOp::create(b, loc, v, ValueRange{indexConst(b, loc, i)});
    r.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), e));
  }
  return r;
}

Value lowering::generateTensor(OpBuilder &b, Location loc,
                               RankedTensorType type, ValueRange dynSizes,
                               IndexBodyFn body) {
  int64_t rank = type.getRank();
  Value init = emptyTensor(b, loc, type, dynSizes);
  MLIRContext *ctx = b.getContext();
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
             {AffineMap::getMultiDimIdentityMap(rank, ctx)},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange) {
               SmallVector<Value> ivs;
               for (int64_t i = 0; i < rank; ++i)
                 ivs.push_back(linalg::IndexOp::create(nb, l, i));
               linalg::YieldOp::create(nb, l, body(nb, l, ivs));
             })
      .getResult(0);
}

Value lowering::generateSized(OpBuilder &b, Location loc, RankedTensorType type,
                              ArrayRef<Value> sizes, IndexBodyFn body) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(sizes[i]);
  return generateTensor(b, loc, type, dyn, body);
}

Value lowering::addOrMul(OpBuilder &b, Location loc, Value x, Value y,
                         bool add) {
  if (isa<FloatType>(x.getType()))
    return add ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::MulFOp::create(b, loc, x, y).getResult();
  return add ? arith::AddIOp::create(b, loc, x, y).getResult()
             : arith::MulIOp::create(b, loc, x, y).getResult();
}

static bool isUnsignedTensor(Type t) {
  return getElementTypeOrSelf(t).isUnsignedInteger();
}

Type lowering::signlessType(Type t) {
  if (auto it = dyn_cast<IntegerType>(t); it && !it.isSignless())
    return IntegerType::get(t.getContext(), it.getWidth());
  return t;
}

RankedTensorType lowering::signlessTensor(RankedTensorType t) {
  return t.clone(signlessType(t.getElementType()));
}

/// `v` viewed with a signless element type (a no-op for other types).
Value lowering::toSignless(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!isUnsignedTensor(t))
    return v;
  return tensor::BitcastOp::create(b, loc, signlessTensor(t), v);
}

/// `v` (signless) viewed as `type` (which may be unsigned).
Value lowering::fromSignless(OpBuilder &b, Location loc, Value v,
                             RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return tensor::BitcastOp::create(b, loc, type, v);
}

SmallVector<Value> lowering::resultSizes(OpBuilder &b, Location loc,
                                         RankedTensorType type,
                                         ArrayRef<Value> computed) {
  SmallVector<Value> s;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (type.isDynamicDim(i)) {
      s.push_back(computed[i]);
      continue;
    }
    // A static dim (inferred or declared) must be what the run computes.
    Value st = idx(b, loc, type.getDimSize(i));
    std::optional<int64_t> c = getConstantIntValue(computed[i]);
    if (!c || *c != type.getDimSize(i))
      checkAtRunTime(b, loweringNode(),
                     cmpI(b, loc, arith::CmpIPredicate::eq, computed[i], st),
                     "dim " + Twine(i) +
                         " of the result is {0}; its type says " +
                         Twine(type.getDimSize(i)),
                     {computed[i]});
    s.push_back(st);
  }
  return s;
}

Value lowering::reshapeOneElement(OpBuilder &b, Location loc, Value v,
                                  RankedTensorType to) {
  auto from = dyn_cast<RankedTensorType>(v.getType());
  if (!from || from.getElementType() != to.getElementType() ||
      from.getRank() == to.getRank() || !to.hasStaticShape() ||
      to.getNumElements() != 1 || !llvm::all_of(from.getShape(), [](int64_t d) {
        return d == 1 || ShapedType::isDynamic(d);
      }))
    return Value();
  checkOneElement(b, loweringNode(), v,
                  "a value of one element for a rank-" + Twine(to.getRank()) +
                      " one has {0} elements");
  SmallVector<Value> zeros(from.getRank(), indexConst(b, loc, 0));
  Value e = tensor::ExtractOp::create(b, loc, v, zeros);
  return tensor::FromElementsOp::create(b, loc, to, ValueRange{e});
}

bool lowering::accumulatesWide(RankedTensorType type, ArrayRef<bool> reduced) {
  if (!type.getElementType().isF32())
    return false;
  int64_t count = 1;
  for (auto [d, red] : llvm::enumerate(reduced)) {
    if (!red)
      continue;
    if (type.isDynamicDim(d))
      return true;
    count *= type.getDimSize(d);
  }
  return count > kWideSumThreshold;
}

Value lowering::narrowTo(OpBuilder &b, Location loc, Value wide, Type elem) {
  auto t = cast<RankedTensorType>(wide.getType());
  if (t.getElementType() == elem)
    return wide;
  auto to = RankedTensorType::get(t.getShape(), elem);
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, wide, d));
  Value init = emptyTensor(b, loc, to, dyn);
  SmallVector<AffineMap> maps(
      2, AffineMap::getMultiDimIdentityMap(t.getRank(), b.getContext()));
  return linalg::GenericOp::create(
             b, loc, TypeRange{to}, ValueRange{wide}, ValueRange{init}, maps,
             SmallVector<utils::IteratorType>(t.getRank(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::TruncFOp::create(nb, l, elem, a[0]).getResult());
             })
      .getResult(0);
}

Value lowering::normalizeIndex(OpBuilder &b, Location loc, Value v, Value n) {
  if (!v.getType().isIndex())
    v = arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  Value neg = cmpI(b, loc, arith::CmpIPredicate::slt, v, idx(b, loc, 0));
  v = select(b, loc, neg, arith::AddIOp::create(b, loc, v, n), v);
  return clampIntoRange(b, loc, v, n);
}

Value lowering::andAll(OpBuilder &b, Location loc, ArrayRef<Value> conds) {
  Value r;
  for (Value c : conds)
    r = r ? arith::AndIOp::create(b, loc, r, c).getResult() : c;
  return r ? r : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
}
