//===- Contraction.cpp - MatMul, Gemm, Einsum -----------------------------===//
//
// The Contraction family (OnnxFamilies.def): linalg contractions whose
// accumulator type (f32 for f16/bf16 data under mixed precision) travels with
// the op.
//
// Einsum: the equation is parsed at compile time into one linalg.generic: one
// loop per distinct label (output labels first, then summed ones), each input
// read through the map of its labels (a label repeated within a term reads
// a diagonal), the product of the inputs added into a zero-filled output.
// Ellipsis dims are labels too, aligned to the right and broadcast (size 1
// against a larger size) like numpy.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/Einsum.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

using utils::IteratorType;

/// Dynamic sizes of `type` taken from `src` dims given by `srcDim` (one per
/// result dim; -1 for dims that must be static).
SmallVector<Value> dynSizesFrom(OpBuilder &b, Location loc,
                                RankedTensorType type,
                                ArrayRef<std::pair<Value, int64_t>> srcDim) {
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(
          tensor::DimOp::create(b, loc, srcDim[i].first, srcDim[i].second));
  return sizes;
}

//===----------------------------------------------------------------------===//
// MatMul and Gemm
//===----------------------------------------------------------------------===//

/// Y = A·B with numpy semantics (batch broadcasting, 1-D operands), as one
/// contraction. 2-D × 2-D becomes linalg.matmul.
LogicalResult lowerMatMul(onnxops::MatMulOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ta = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tb = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  Value A = op->getOperand(0), B = op->getOperand(1);
  Type elem = ty->getElementType();
  int64_t ra = ta->getRank(), rb = tb->getRank(), ry = ty->getRank();
  if (ra == 0 || rb == 0)
    return nodeError(op) << "MatMul operands must have rank >= 1", failure();
  // The contracted dims must agree (A's last, B's second to last).
  {
    int64_t ka = ra - 1, kb = rb >= 2 ? rb - 2 : 0;
    if (ta->isDynamicDim(ka) || tb->isDynamicDim(kb)) {
      Value da = tensor::DimOp::create(b, loc, A, ka);
      Value db = tensor::DimOp::create(b, loc, B, kb);
      checkAtRunTime(
          b, op,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, da, db),
          "the inner dims differ: A has {0} columns, B {1} rows", {da, db});
    }
  }
  // Half-precision products accumulate in f32 and round once at the end
  // ("f16 with f32 accumulation"), as numpy and the GPU tensor cores do.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  TypedAttr zero = scalarAttr(accElem, 0);
  auto finish = [&](Value acc) {
    if (!halfInputs)
      return acc;
    return buildElementwise(
        b, loc, *ty, acc,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, l, elem, a[0]);
        });
  };

  if (ra == 2 && rb == 2) {
    SmallVector<Value> dyn = dynSizesFrom(b, loc, *ty, {{A, 0}, {B, 1}});
    Value init = filledTensor(b, loc, accType, dyn, zero);
    results.push_back(
        finish(linalg::MatmulOp::create(b, loc, TypeRange{accType},
                                        ValueRange{A, B}, ValueRange{init})
                   .getResult(0)));
    return success();
  }

  // General contraction: loops = result dims + k.
  MLIRContext *ctx = b.getContext();
  int64_t nLoops = ry + 1;
  AffineExpr k = getAffineDimExpr(ry, ctx);
  // Result layout: batch..., [m if ra>1], [n if rb>1].
  int64_t batchRank = ry - (ra > 1 ? 1 : 0) - (rb > 1 ? 1 : 0);

  // Size of batch dim `i` of the result: the max of the operands' dynamic
  // batch dims there.
  auto batchSize = [&](int64_t i) -> Value {
    Value size;
    for (auto [v, t, nb] :
         {std::tuple{A, *ta, ra - 2}, std::tuple{B, *tb, rb - 2}}) {
      int64_t j = i - (batchRank - nb);
      if (nb <= 0 || j < 0 || !t.isDynamicDim(j))
        continue;
      Value d = tensor::DimOp::create(b, loc, v, j);
      size = size ? arith::MaxSIOp::create(b, loc, size, d).getResult() : d;
    }
    return size;
  };
  // Batch dims dynamic in both operands may broadcast at run time (one of
  // them 1): expand both operands to the full batch shape first.
  {
    int64_t nbA = std::max<int64_t>(ra - 2, 0),
            nbB = std::max<int64_t>(rb - 2, 0);
    SmallVector<bool> maskA(ra, false), maskB(rb, false);
    bool ambiguous = false;
    for (int64_t i = 0; i < batchRank; ++i) {
      int64_t ja = i - (batchRank - nbA), jb = i - (batchRank - nbB);
      if (ja >= 0 && jb >= 0 && ta->isDynamicDim(ja) && tb->isDynamicDim(jb) &&
          A != B && !sameDynamicDim(A, ja, B, jb)) {
        maskA[ja] = maskB[jb] = true;
        ambiguous = true;
      }
    }
    if (ambiguous) {
      auto expand = [&](Value v, RankedTensorType t, int64_t nb,
                        SmallVector<bool> mask) -> Value {
        SmallVector<int64_t> shape(ty->getShape().take_front(batchRank));
        llvm::append_range(shape, t.getShape().drop_front(nb));
        auto et = RankedTensorType::get(shape, t.getElementType());
        SmallVector<Value> dynS;
        for (int64_t i = 0; i < et.getRank(); ++i)
          if (et.isDynamicDim(i))
            dynS.push_back(i < batchRank ? batchSize(i)
                                         : tensor::DimOp::create(
                                               b, loc, v, i - batchRank + nb)
                                               .getResult());
        return buildBroadcastGeneric(
            b, loc, et, v, dynS, {mask},
            [](OpBuilder &, Location, ValueRange a) { return a[0]; });
      };
      A = expand(A, *ta, nbA, maskA);
      B = expand(B, *tb, nbB, maskB);
      ta = cast<RankedTensorType>(A.getType());
      tb = cast<RankedTensorType>(B.getType());
      ra = ta->getRank();
      rb = tb->getRank();
    }
  }
  AffineExpr m = ra > 1 ? getAffineDimExpr(batchRank, ctx) : AffineExpr();
  AffineExpr n = rb > 1 ? getAffineDimExpr(batchRank + (ra > 1 ? 1 : 0), ctx)
                        : AffineExpr();
  auto batchExprs = [&](RankedTensorType t, int64_t nb) {
    SmallVector<AffineExpr> e;
    for (int64_t j = 0; j < nb; ++j) {
      int64_t i = j + (batchRank - nb);
      if (t.getDimSize(j) == 1 && ty->getDimSize(i) != 1)
        e.push_back(getAffineConstantExpr(0, ctx));
      else
        e.push_back(getAffineDimExpr(i, ctx));
    }
    return e;
  };
  SmallVector<AffineExpr> ea = batchExprs(*ta, std::max<int64_t>(ra - 2, 0));
  if (ra > 1)
    ea.push_back(m);
  ea.push_back(k);
  SmallVector<AffineExpr> eb = batchExprs(*tb, std::max<int64_t>(rb - 2, 0));
  eb.push_back(k);
  if (rb > 1)
    eb.push_back(n);
  SmallVector<AffineExpr> ey;
  for (int64_t i = 0; i < ry; ++i)
    ey.push_back(getAffineDimExpr(i, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(nLoops, 0, ea, ctx),
                                 AffineMap::get(nLoops, 0, eb, ctx),
                                 AffineMap::get(nLoops, 0, ey, ctx)};
  SmallVector<IteratorType> iters(ry, IteratorType::parallel);
  iters.push_back(IteratorType::reduction);

  // Dynamic result sizes: batch from the broadcast of batch dims, m from A,
  // n from B.
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < ry; ++i) {
    if (!ty->isDynamicDim(i))
      continue;
    if (ra > 1 && i == batchRank) {
      dyn.push_back(tensor::DimOp::create(b, loc, A, ra - 2));
    } else if (rb > 1 && i == ry - 1) {
      dyn.push_back(tensor::DimOp::create(b, loc, B, rb - 1));
    } else {
      Value size = batchSize(i);
      if (!size)
        return nodeError(op) << "cannot size dynamic output dim " << i,
               failure();
      dyn.push_back(size);
    }
  }
  Value init = filledTensor(b, loc, accType, dyn, zero);
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, ValueRange{A, B}, ValueRange{init}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value x = a[0], y = a[1];
        if (halfInputs) {
          x = arith::ExtFOp::create(nb, l, accElem, x);
          y = arith::ExtFOp::create(nb, l, accElem, y);
        }
        Value p = addOrMul(nb, l, x, y, /*add=*/false);
        linalg::YieldOp::create(nb, l, addOrMul(nb, l, a[2], p, true));
      });
  results.push_back(finish(g.getResult(0)));
  return success();
}

/// Y = alpha·op(A)·op(B) + beta·C. Half-precision operands accumulate in
/// f32; alpha, beta and C are applied in f32 and the result rounds once.
LogicalResult lowerGemm(onnxops::GemmOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ta = rankedOperand(op, 0);
  FailureOr<RankedTensorType> tb = rankedOperand(op, 1);
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ta) || failed(tb) || failed(ty))
    return failure();
  if (ta->getRank() != 2 || tb->getRank() != 2)
    return nodeError(op) << "Gemm operands must be 2-D", failure();
  Value A = op->getOperand(0), B = op->getOperand(1), C = op->getOperand(2);
  bool transA = asInt(op.getTransA()), transB = asInt(op.getTransB());
  double alpha = asDouble(op.getAlpha()), beta = asDouble(op.getBeta());
  Type elem = ty->getElementType();
  if (!isa<FloatType>(elem))
    return nodeError(op) << "Gemm supports float types only", failure();
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  MLIRContext *ctx = b.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0,
                     transA ? ArrayRef<AffineExpr>{k, m}
                            : ArrayRef<AffineExpr>{m, k},
                     ctx),
      AffineMap::get(3, 0,
                     transB ? ArrayRef<AffineExpr>{n, k}
                            : ArrayRef<AffineExpr>{k, n},
                     ctx),
      AffineMap::get(3, 0, {m, n}, ctx)};
  SmallVector<Value> dyn =
      dynSizesFrom(b, loc, *ty, {{A, transA ? 1 : 0}, {B, transB ? 0 : 1}});
  Value init = filledTensor(b, loc, accType, dyn, scalarAttr(accElem, 0));
  Value acc;
  if (!transA && !transB) {
    acc = linalg::MatmulOp::create(b, loc, TypeRange{accType}, ValueRange{A, B},
                                   ValueRange{init})
              .getResult(0);
  } else {
    acc = linalg::GenericOp::create(
              b, loc, TypeRange{accType}, ValueRange{A, B}, ValueRange{init},
              maps,
              {IteratorType::parallel, IteratorType::parallel,
               IteratorType::reduction},
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value x = a[0], y = a[1];
                if (halfInputs) {
                  x = arith::ExtFOp::create(nb, l, accElem, x);
                  y = arith::ExtFOp::create(nb, l, accElem, y);
                }
                Value p = arith::MulFOp::create(nb, l, x, y);
                linalg::YieldOp::create(
                    nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
              })
              .getResult(0);
  }
  bool hasC = !onnxops::isNoValue(C) && beta != 0.0;
  if (alpha == 1.0 && !hasC && !halfInputs) {
    results.push_back(acc);
    return success();
  }
  SmallVector<Value> ins = {acc};
  if (hasC) {
    if (!isa<RankedTensorType>(C.getType()))
      return nodeError(op) << "the rank of C is unknown", failure();
    ins.push_back(C);
  }
  results.push_back(buildElementwise(
      b, loc, *ty, ins, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = a[0];
        if (alpha != 1.0)
          v = arith::MulFOp::create(nb, l, v,
                                    scalarConstant(nb, l, accElem, alpha));
        if (hasC) {
          Value c = a[1];
          if (halfInputs)
            c = arith::ExtFOp::create(nb, l, accElem, c);
          if (beta != 1.0)
            c = arith::MulFOp::create(nb, l, c,
                                      scalarConstant(nb, l, accElem, beta));
          v = arith::AddFOp::create(nb, l, v, c);
        }
        if (halfInputs)
          v = arith::TruncFOp::create(nb, l, elem, v);
        return v;
      }));
  return success();
}

LogicalResult lowerEinsum(onnxops::EinsumOp op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType, IntegerType>(elem))
    return nodeError(op) << "unsupported element type " << elem, failure();
  unsigned n = op->getNumOperands();
  SmallVector<RankedTensorType> types;
  SmallVector<int64_t> ranks;
  for (unsigned i = 0; i < n; ++i) {
    FailureOr<RankedTensorType> t = rankedOperand(op, i);
    if (failed(t))
      return failure();
    if (t->getElementType() != elem)
      return nodeError(op) << "inputs and output must have one element type",
             failure();
    types.push_back(*t);
    ranks.push_back(t->getRank());
  }
  std::string error;
  FailureOr<onnxops::EinsumLabels> labels =
      onnxops::parseEinsum(op.getEquation(), ranks, error);
  if (failed(labels))
    return nodeError(op) << error, failure();
  SmallVector<SmallVector<int>> &inLabels = labels->inputs;
  SmallVector<int> &outLabels = labels->output;
  if (static_cast<int64_t>(outLabels.size()) != ty->getRank())
    return nodeError(op) << "the output term has " << outLabels.size()
                         << " dims, the output " << ty->getRank(),
           failure();
  // Loops: output labels, then the others in order of appearance.
  SmallVector<int> loops(outLabels);
  for (auto &ls : inLabels)
    for (int l : ls)
      if (!llvm::is_contained(loops, l))
        loops.push_back(l);
  // Static size of each label (the non-1 size when broadcast), and where to
  // read a dynamic one.
  llvm::DenseMap<int, int64_t> size;
  llvm::DenseMap<int, std::pair<unsigned, int64_t>> dynFrom;
  for (unsigned i = 0; i < n; ++i)
    for (auto [d, l] : llvm::enumerate(inLabels[i])) {
      int64_t s = types[i].getDimSize(d);
      if (ShapedType::isDynamic(s)) {
        dynFrom.try_emplace(l, i, d);
        continue;
      }
      auto it = size.find(l);
      if (it == size.end() || it->second == 1)
        size[l] = s;
      else if (s != 1 && s != it->second)
        return nodeError(op) << "inputs disagree on the size of a label",
               failure();
    }

  MLIRContext *ctx = b.getContext();
  int64_t nLoops = loops.size();
  auto loopOf = [&](int l) {
    return static_cast<unsigned>(llvm::find(loops, l) - loops.begin());
  };
  SmallVector<AffineMap> maps;
  for (unsigned i = 0; i < n; ++i) {
    SmallVector<AffineExpr> exprs;
    for (auto [d, l] : llvm::enumerate(inLabels[i])) {
      int64_t s = types[i].getDimSize(d);
      auto it = size.find(l);
      if (s == 1 && it != size.end() && it->second != 1)
        exprs.push_back(getAffineConstantExpr(0, ctx));
      else
        exprs.push_back(getAffineDimExpr(loopOf(l), ctx));
    }
    maps.push_back(AffineMap::get(nLoops, 0, exprs, ctx));
  }
  SmallVector<AffineExpr> outExprs;
  for (int l : outLabels)
    outExprs.push_back(getAffineDimExpr(loopOf(l), ctx));
  maps.push_back(AffineMap::get(nLoops, 0, outExprs, ctx));
  SmallVector<Value> dyn;
  for (auto [d, l] : llvm::enumerate(outLabels)) {
    if (!ty->isDynamicDim(d))
      continue;
    auto it = dynFrom.find(l);
    if (it == dynFrom.end()) {
      dyn.push_back(arith::ConstantIndexOp::create(b, loc, size[l]));
      continue;
    }
    dyn.push_back(tensor::DimOp::create(
        b, loc, op->getOperand(it->second.first), it->second.second));
  }
  // Half-precision operands accumulate in f32 and round once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  Value init = filledTensor(b, loc, accType, dyn, b.getZeroAttr(accElem));
  SmallVector<utils::IteratorType> iters;
  for (int64_t i = 0; i < nLoops; ++i)
    iters.push_back(i < static_cast<int64_t>(outLabels.size())
                        ? utils::IteratorType::parallel
                        : utils::IteratorType::reduction);
  bool fp = isa<FloatType>(elem);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, op->getOperands(), ValueRange{init}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        auto in = [&](unsigned i) -> Value {
          return halfInputs
                     ? arith::ExtFOp::create(nb, l, accElem, a[i]).getResult()
                     : a[i];
        };
        Value p = in(0);
        for (unsigned i = 1; i < n; ++i)
          p = fp ? arith::MulFOp::create(nb, l, p, in(i)).getResult()
                 : arith::MulIOp::create(nb, l, p, a[i]).getResult();
        Value acc = a[n];
        Value r = fp ? arith::AddFOp::create(nb, l, acc, p).getResult()
                     : arith::AddIOp::create(nb, l, acc, p).getResult();
        linalg::YieldOp::create(nb, l, r);
      });
  Value r = generic.getResult(0);
  if (halfInputs)
    r = buildElementwise(b, loc, *ty, r,
                         [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::TruncFOp::create(nb, l, elem, a[0]);
                         });
  results.push_back(r);
  return success();
}

} // namespace

void lowering::populateContractionLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Contraction> t(patterns);
  t.add<onnxops::MatMulOp>(lowerMatMul);
  t.add<onnxops::GemmOp>(lowerGemm);
  t.add<onnxops::EinsumOp>(lowerEinsum);
}
