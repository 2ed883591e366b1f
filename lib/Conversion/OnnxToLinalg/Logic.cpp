//===- Logic.cpp - Comparisons, boolean and bitwise ops, Where ------------===//
//
// The Logic family (OnnxFamilies.def): Equal, Less, Greater and their
// OrEqual forms, And/Or/Xor/Not on i1, the Bitwise ops and BitShift on
// integers, and Where. Bodies go through `ew` (Elementwise.cpp), which views
// unsigned tensors as signless; comparisons pick the unsigned predicate then.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

Value cmp(OpBuilder &b, Location loc, const Scalars &s, Value x, Value y,
          arith::CmpFPredicate fp, arith::CmpIPredicate sp,
          arith::CmpIPredicate up) {
  if (isa<FloatType>(x.getType()))
    return arith::CmpFOp::create(b, loc, fp, x, y);
  return arith::CmpIOp::create(b, loc, s.isUnsigned ? up : sp, x, y);
}

LowerFn compare(arith::CmpFPredicate fp, arith::CmpIPredicate sp,
                arith::CmpIPredicate up, unsigned kinds = kFloat | kInt) {
  return ew(
      [=](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) {
        return cmp(b, loc, s, a[0], a[1], fp, sp, up);
      },
      kinds);
}

} // namespace

void lowering::populateLogicLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Logic> t(patterns);
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  // Comparisons.
  t.add<onnxops::EqualOp>(compare(FP::OEQ, IP::eq, IP::eq, kAny));
  t.add<onnxops::LessOp>(compare(FP::OLT, IP::slt, IP::ult));
  t.add<onnxops::GreaterOp>(compare(FP::OGT, IP::sgt, IP::ugt));
  t.add<onnxops::LessOrEqualOp>(compare(FP::OLE, IP::sle, IP::ule));
  t.add<onnxops::GreaterOrEqualOp>(compare(FP::OGE, IP::sge, IP::uge));

  // Logical and bitwise.
  auto bitwise = [](auto make, unsigned kinds) {
    return ew([make](OpBuilder &b, Location loc, const Scalars &,
                     ValueRange a) { return make(b, loc, a[0], a[1]); },
              kinds);
  };
  auto andOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::AndIOp::create(b, l, x, y);
  };
  auto orOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::OrIOp::create(b, l, x, y);
  };
  auto xorOp = [](OpBuilder &b, Location l, Value x, Value y) -> Value {
    return arith::XOrIOp::create(b, l, x, y);
  };
  t.add<onnxops::AndOp>(bitwise(andOp, kBool));
  t.add<onnxops::OrOp>(bitwise(orOp, kBool));
  t.add<onnxops::XorOp>(bitwise(xorOp, kBool));
  t.add<onnxops::BitwiseAndOp>(bitwise(andOp, kInt));
  t.add<onnxops::BitwiseOrOp>(bitwise(orOp, kInt));
  t.add<onnxops::BitwiseXorOp>(bitwise(xorOp, kInt));
  auto notOp = [](OpBuilder &b, Location loc, const Scalars &,
                  ValueRange a) -> Value {
    return arith::XOrIOp::create(b, loc, a[0],
                                 minusOne(b, loc, a[0].getType()));
  };
  t.add<onnxops::NotOp>(ew(notOp, kBool));
  t.add<onnxops::BitwiseNotOp>(ew(notOp, kInt));
  t.add<onnxops::BitShiftOp>(ew(
      [](OpBuilder &b, Location loc, const Scalars &s, ValueRange a) -> Value {
        Type ty = a[0].getType();
        bool left =
            cast<onnxops::BitShiftOp>(s.op).getDirection().str() == "LEFT";
        // Shifting by the width or more gives 0 (LLVM would give poison).
        Value tooFar = arith::CmpIOp::create(
            b, loc, IP::uge, a[1], cst(b, loc, ty, ty.getIntOrFloatBitWidth()));
        Value r = left ? arith::ShLIOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::ShRUIOp::create(b, loc, a[0], a[1]).getResult();
        return arith::SelectOp::create(b, loc, tooFar, cst(b, loc, ty, 0), r);
      },
      kInt));

  t.add<onnxops::WhereOp>(ew(
      [](OpBuilder &b, Location loc, const Scalars &, ValueRange a) -> Value {
        return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
      },
      kAny, /*data=*/1));
}
