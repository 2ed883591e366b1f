//===- Epilogue.cpp - A contraction's fill and consumer in its tiles ------===//
//
// A kernel's contraction usually writes a temporary that a fill zeroes
// first and an elementwise op (bias, activation, residual) reads right
// after: three passes over the output. The register tiles take both
// instead: the accumulators start at the fill's value, and the elementwise
// op is applied to them (as vector ops) before they are stored, to its own
// output. The kernel-level check (markFusedEnds) runs before the split into
// tasks, which then tiles the three together; the tiles' emitter finds the
// marked ops around the contraction (findFusedEnds) and applies them
// (EpilogueWriter).
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

static constexpr llvm::StringLiteral kFusedAttr = "kiln.cpu_fused";

namespace {

/// Ops that only compute values (constants, views, index arithmetic).
bool isPureOp(Operation *op) {
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

Operation *prevNonPure(Operation *op) {
  for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode())
    if (!isPureOp(p))
      return p;
  return nullptr;
}

Operation *nextNonPure(Operation *op) {
  for (Operation *n = op->getNextNode(); n; n = n->getNextNode())
    if (!isPureOp(n))
      return n;
  return nullptr;
}

bool sameFoldResults(ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto p) {
           return std::get<0>(p) == std::get<1>(p);
         });
}

/// Whether `a` and `b` are the same elements: one value, or the same
/// subview of the same memory.
bool sameMemory(Value a, Value b) {
  if (a == b)
    return true;
  auto sa = a.getDefiningOp<memref::SubViewOp>();
  auto sb = b.getDefiningOp<memref::SubViewOp>();
  return sa && sb && a.getType() == b.getType() &&
         sameMemory(sa.getSource(), sb.getSource()) &&
         sameFoldResults(sa.getMixedOffsets(), sb.getMixedOffsets()) &&
         sameFoldResults(sa.getMixedSizes(), sb.getMixedSizes()) &&
         sameFoldResults(sa.getMixedStrides(), sb.getMixedStrides());
}

/// The input of `e` that reads `out` (whole, at the identity), if any.
std::optional<unsigned> outInput(linalg::GenericOp e, Value out) {
  std::optional<unsigned> found;
  for (OpOperand *in : e.getDpsInputOperands())
    if (sameMemory(in->get(), out)) {
      if (found || !e.getMatchingIndexingMap(in).isIdentity())
        return std::nullopt;
      found = in->getOperandNumber();
    }
  return found;
}

/// Whether `e` is an elementwise op over `out`'s dims whose body the
/// tiles can apply to vectors.
bool isFusableEpilogue(linalg::GenericOp e, Value out) {
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!outType || !e.hasPureBufferSemantics() || e.hasIndexSemantics() ||
      e.getNumDpsInits() != 1 || e.getNumLoops() != outType.getRank() ||
      e.getNumParallelLoops() != e.getNumLoops() || !outInput(e, out))
    return false;
  OpOperand *init = e.getDpsInitOperand(0);
  auto initType = dyn_cast<MemRefType>(init->get().getType());
  if (!initType || !e.getMatchingIndexingMap(init).isIdentity() ||
      !e.getMatchingBlockArgument(init).use_empty())
    return false;
  for (OpOperand *in : e.getDpsInputOperands()) {
    if (!isa<MemRefType>(in->get().getType()))
      return false;
    for (AffineExpr r : e.getMatchingIndexingMap(in).getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(r))
        return false;
  }
  for (Operation &op : e.getBody()->without_terminator()) {
    if (!isPureOp(&op))
      return false;
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    if (!op.hasTrait<OpTrait::Elementwise>())
      return false;
    for (Type t : llvm::concat<Type>(op.getOperandTypes(), op.getResultTypes()))
      if (!t.isIntOrIndexOrFloat())
        return false;
  }
  return true;
}

/// The strides of a memref (false when its layout is not strided).
bool stridesOf(MemRefType type, SmallVectorImpl<int64_t> &strides) {
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset));
}

} // namespace

FusedEnds mlir::kiln::cpu::markFusedEnds(linalg::LinalgOp op) {
  FusedEnds ends;
  std::optional<ContractionRoles> roles = matchContraction(op);
  if (!roles || roles->kind != ContractionRoles::Broadcast)
    return ends;
  Value out = op.getDpsInits()[0];
  Type acc = getElementTypeOrSelf(out.getType());
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(prevNonPure(op))) {
    if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == out &&
        fill.getInputs()[0].getType() == acc)
      ends.fill = fill;
  }
  auto e = dyn_cast_or_null<linalg::GenericOp>(nextNonPure(op));
  if (e && isFusableEpilogue(e, out)) {
    // Unless the epilogue writes in place, nothing may read the product
    // after it: it is never stored whole.
    Value y = e.getDpsInits()[0];
    bool fusable = y == out;
    if (!fusable) {
      auto alloc = out.getDefiningOp<memref::AllocOp>();
      fusable = alloc && llvm::all_of(out.getUsers(), [&](Operation *u) {
                  return u == op.getOperation() || u == e.getOperation() ||
                         u == ends.fill.getOperation() ||
                         isa<memref::DeallocOp>(u);
                });
    }
    if (fusable)
      ends.epilogue = e;
  }
  MLIRContext *ctx = op->getContext();
  if (ends.fill)
    ends.fill->setAttr(kFusedAttr, UnitAttr::get(ctx));
  if (ends.epilogue)
    ends.epilogue->setAttr(kFusedAttr, UnitAttr::get(ctx));
  return ends;
}

bool mlir::kiln::cpu::isFusedEnd(Operation *op) {
  return op->hasAttr(kFusedAttr);
}

FusedEnds mlir::kiln::cpu::findFusedEnds(linalg::LinalgOp op, Value out) {
  FusedEnds ends;
  auto fill = dyn_cast_or_null<linalg::FillOp>(prevNonPure(op));
  if (fill && isFusedEnd(fill) && sameMemory(fill.getOutputs()[0], out))
    ends.fill = fill;
  auto e = dyn_cast_or_null<linalg::GenericOp>(nextNonPure(op));
  if (e && isFusedEnd(e) && outInput(e, out))
    ends.epilogue = e;
  return ends;
}

std::unique_ptr<EpilogueWriter>
EpilogueWriter::create(OpBuilder &b, linalg::GenericOp e, Value out,
                       ArrayRef<ReassociationIndices> groups, int64_t lanes) {
  auto writer = std::unique_ptr<EpilogueWriter>(new EpilogueWriter());
  writer->e = e;
  writer->lanes = lanes;
  unsigned accInput = *outInput(e, out);
  // The O-dim group each dim of `out` is in.
  int64_t rank = cast<MemRefType>(out.getType()).getRank();
  SmallVector<int64_t> groupOf(rank, -1);
  for (auto [g, dims] : llvm::enumerate(groups))
    for (int64_t d : dims)
      groupOf[d] = g;
  if (llvm::is_contained(groupOf, -1))
    return nullptr;
  int64_t lastGroup = groups.size() - 1;
  Location loc = e.getLoc();
  for (OpOperand &operand : e->getOpOperands()) {
    Operand r;
    if (operand.getOperandNumber() == accInput) {
      r.isAcc = true;
      writer->operands.push_back(r);
      continue;
    }
    AffineMap map = e.getMatchingIndexingMap(&operand);
    auto type = cast<MemRefType>(operand.get().getType());
    SmallVector<int64_t> strides;
    if (!stridesOf(type, strides))
      return nullptr;
    // The operand's dims grouped like `out`'s: a group's dims all at
    // consecutive positions (one dim of the view) or none of them.
    SmallVector<ReassociationIndices> viewGroups;
    for (unsigned p = 0; p < map.getNumResults();) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(p));
      if (!d) {
        r.index.push_back(
            {false, cast<AffineConstantExpr>(map.getResult(p)).getValue()});
        viewGroups.push_back({p++});
        continue;
      }
      int64_t g = groupOf[d.getPosition()];
      ArrayRef<int64_t> dims = groups[g];
      if (dims.front() != d.getPosition() ||
          p + dims.size() > map.getNumResults())
        return nullptr;
      ReassociationIndices view;
      for (auto [i, dim] : llvm::enumerate(dims)) {
        auto di = dyn_cast<AffineDimExpr>(map.getResult(p + i));
        if (!di || di.getPosition() != dim)
          return nullptr;
        if (i > 0 &&
            (ShapedType::isDynamic(strides[p + i - 1]) ||
             ShapedType::isDynamic(strides[p + i]) ||
             strides[p + i - 1] != type.getDimSize(p + i) * strides[p + i]))
          return nullptr;
        view.push_back(p + i);
      }
      viewGroups.push_back(view);
      r.index.push_back({true, g});
      p += dims.size();
    }
    // A vector along the last group when the operand has it innermost
    // with unit stride; a broadcast scalar when it does not have it.
    auto it = llvm::find(r.index, std::make_pair(true, lastGroup));
    if (it != r.index.end()) {
      if (it + 1 != r.index.end() || strides.empty() || strides.back() != 1)
        return nullptr;
      r.isVector = true;
    }
    r.memref = operand.get();
    if (llvm::any_of(viewGroups, [](auto &g) { return g.size() > 1; }))
      r.memref =
          memref::CollapseShapeOp::create(b, loc, operand.get(), viewGroups);
    // The output is written as vectors.
    if (&operand == e.getDpsInitOperand(0) && !r.isVector)
      return nullptr;
    writer->operands.push_back(r);
  }
  return writer;
}

void EpilogueWriter::write(OpBuilder &b, Location loc, Value acc,
                           ValueRange idx, bool inBounds) {
  auto indices = [&](const Operand &r) {
    SmallVector<Value> v;
    for (auto [isGroup, i] : r.index)
      v.push_back(isGroup ? idx[i] : indexConst(b, loc, i));
    return v;
  };
  auto minor = [&](Value memref) {
    return AffineMap::getMinorIdentityMap(
        cast<MemRefType>(memref.getType()).getRank(), 1, b.getContext());
  };
  IRMapping map;
  auto vectorOf = [&](Value v) -> Value {
    if (Value m = map.lookupOrNull(v))
      return m;
    Value bc = vector::BroadcastOp::create(
        b, loc, VectorType::get({lanes}, v.getType()), v);
    map.map(v, bc);
    return bc;
  };
  Block *body = e.getBody();
  for (auto [i, r] : llvm::enumerate(operands)) {
    if (static_cast<int64_t>(i) >= e.getNumDpsInputs())
      break;
    Value arg = body->getArgument(i);
    if (r.isAcc) {
      map.map(arg, acc);
      continue;
    }
    Type elt = arg.getType();
    if (r.isVector) {
      Value pad = arith::ConstantOp::create(b, loc, elt, b.getZeroAttr(elt))
                      .getResult();
      map.map(arg,
              vector::TransferReadOp::create(
                  b, loc, VectorType::get({lanes}, elt), r.memref, indices(r),
                  pad, minor(r.memref), ArrayRef<bool>{inBounds}));
    } else {
      map.map(arg,
              vectorOf(memref::LoadOp::create(b, loc, r.memref, indices(r))));
    }
  }
  for (Operation &op : body->without_terminator()) {
    if (op.hasTrait<OpTrait::ConstantLike>()) {
      Operation *c = b.clone(op);
      map.map(op.getResult(0), vectorOf(c->getResult(0)));
      continue;
    }
    SmallVector<Value> args;
    for (Value v : op.getOperands())
      args.push_back(vectorOf(v));
    SmallVector<Type> types;
    for (Type t : op.getResultTypes())
      types.push_back(VectorType::get({lanes}, t));
    OperationState state(loc, op.getName().getStringRef(), args, types,
                         op.getAttrs());
    Operation *v = b.create(state);
    for (auto [from, to] : llvm::zip(op.getResults(), v->getResults()))
      map.map(from, to);
  }
  Value result =
      vectorOf(cast<linalg::YieldOp>(body->getTerminator()).getOperand(0));
  const Operand &y = operands.back();
  vector::TransferWriteOp::create(b, loc, result, y.memref, indices(y),
                                  minor(y.memref), ArrayRef<bool>{inBounds});
}
