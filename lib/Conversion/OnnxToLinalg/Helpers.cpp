//===- Helpers.cpp - Small helpers shared by the lowering files -----------===//
//
// Index arithmetic, operand queries and the parallel "generate" generic used
// by several op families (DataMovement, Resample, Quantize, Tensor).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

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

Value lowering::indexInRange(OpBuilder &b, Location loc, Value i, Value n) {
  Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i,
                                   indexConst(b, loc, 0));
  Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, n);
  return arith::AndIOp::create(b, loc, ge, lt);
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

SmallVector<Value> lowering::readHostIndices(OpBuilder &b, Location loc,
                                             Value v, int64_t n) {
  SmallVector<Value> r;
  if (auto c = onnxops::getConstantIntValues(v)) {
    for (int64_t i = 0; i < n; ++i)
      r.push_back(indexConst(b, loc, i < (int64_t)c->size() ? (*c)[i] : 0));
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
