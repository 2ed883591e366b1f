//===- ControlFlow.cpp - If, Loop and Scan --------------------------------===//
//
// Control flow becomes scf ops on tensors whose regions hold the lowered
// body: If an scf.if (inlined when its condition is a constant), Loop and
// Scan an scf.for. Kernel formation makes each of them one kernel (its
// result buffers are sized from the declared result types or the loop's
// initial values), so the condition and trip count are read in the kernel;
// the host program only reads a trip count when it sizes scan outputs.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

/// The scalar of a one-element tensor (rank 0 or [1]...).
Value extractScalar(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<Value> zeros(type.getRank(),
                           arith::ConstantIndexOp::create(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, t, zeros);
}

/// `v` as `type` (a tensor.cast between ranked types), or failure.
FailureOr<Value> castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  auto from = dyn_cast<RankedTensorType>(v.getType());
  auto to = dyn_cast<RankedTensorType>(type);
  if (!from || !to || from.getElementType() != to.getElementType())
    return failure();
  // One element in another rank (a [1] condition or carried scalar where
  // the loop has a rank-0 one, as onnxruntime accepts).
  if (Value one = reshapeOneElement(b, loc, v, to))
    return one;
  if (failed(verifyCompatibleShape(from, to)))
    return failure();
  return tensor::CastOp::create(b, loc, to, v).getResult();
}

/// `v` written into the loop-carried `iter` (a copy unless it is `iter`):
/// bufferization wants each yielded value in its iteration argument's
/// buffer.
Value intoIter(OpBuilder &b, Location loc, Value v, Value iter) {
  if (v == iter)
    return v;
  return linalg::CopyOp::create(b, loc, v, iter).getResult(0);
}

/// Moves the ops of `from`'s single block (lowered already) before
/// `before`, replacing the block arguments by `args`; returns the values of
/// its onnx.Yield.
SmallVector<Value> inlineBlock(Region &from, Operation *before,
                               ValueRange args) {
  Block &block = from.front();
  for (auto [arg, v] : llvm::zip(block.getArguments(), args))
    arg.replaceAllUsesWith(v);
  Operation *yield = block.getTerminator();
  SmallVector<Value> values(yield->getOperands());
  before->getBlock()->getOperations().splice(
      Block::iterator(before), block.getOperations(), block.begin(),
      Block::iterator(yield));
  return values;
}

//===----------------------------------------------------------------------===//
// If
//===----------------------------------------------------------------------===//

LogicalResult lowerIf(onnxops::IfOp op, OpBuilder &b,
                      SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  Region &thenR = op->getRegion(0), &elseR = op->getRegion(1);
  // torch's squeeze(k) export with dim k only known at run time: the
  // importer typed the result as the squeezed branch (the traced size was
  // 1); that branch runs, and the run fails if the size is not 1.
  Value squeezed;
  std::optional<int64_t> squeezeAxis = onnxops::squeezedAxis(op);
  if (squeezeAxis && !onnxops::getConstantIntValues(op->getOperand(0))) {
    auto squeeze = thenR.front()
                       .getTerminator()
                       ->getOperand(0)
                       .getDefiningOp<onnxops::SqueezeOp>();
    if (!squeeze)
      return nodeError(op) << "the squeeze branch changed before lowering",
             failure();
    squeezed = squeeze->getOperand(0);
  }
  if (failed(lowerOnnxOpsIn(thenR)) || failed(lowerOnnxOpsIn(elseR)))
    return failure();
  if (squeezed) {
    Value n = tensor::DimOp::create(b, loc, squeezed, *squeezeAxis);
    checkAtRunTime(
        b, op,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n,
                              arith::ConstantIndexOp::create(b, loc, 1)),
        "dim " + Twine(*squeezeAxis) +
            " of the squeezed value is {0}; Kiln compiled this If (torch's "
            "squeeze export) for a size of 1, as traced, since its other "
            "branch has another rank",
        {n});
    for (Value v : inlineBlock(thenR, op, {}))
      results.push_back(v);
    return success();
  }
  Value cond = op->getOperand(0);
  std::optional<SmallVector<int64_t>> constCond =
      onnxops::getConstantIntValues(cond);
  if (constCond && constCond->size() != 1)
    return nodeError(op) << "the condition must have one element", failure();
  std::optional<bool> known;
  if (constCond)
    known = (*constCond)[0] != 0;
  else
    known = onnxops::takenBranch(op);
  if (known) {
    Region &taken = *known ? thenR : elseR;
    for (Value v : inlineBlock(taken, op, {}))
      results.push_back(v);
    return success();
  }
  if (failed(rankedOperand(op, 0)))
    return failure();
  // Result types: the declared ones, or those both branches agree on.
  Operation *thenY = thenR.front().getTerminator();
  Operation *elseY = elseR.front().getTerminator();
  if (thenY->getNumOperands() != op->getNumResults() ||
      elseY->getNumOperands() != op->getNumResults())
    return nodeError(op) << "each branch must yield " << op->getNumResults()
                         << " values",
           failure();
  SmallVector<Type> types;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    auto t = dyn_cast<RankedTensorType>(op->getResult(i).getType());
    Type ta = thenY->getOperand(i).getType(),
         tb = elseY->getOperand(i).getType();
    if (!t && ta == tb)
      t = dyn_cast<RankedTensorType>(ta);
    if (!t)
      return nodeError(op) << "the rank of output " << i
                           << " could not be inferred",
             failure();
    // Kernel formation sizes the result buffers before the condition is
    // known: dynamic dims must be computable from values outside the
    // branches (FormKernels' reifyIfResults), else kernel formation fails
    // naming this node.
    types.push_back(t);
  }
  Value c = extractScalar(b, loc, cond);
  if (!c.getType().isInteger(1))
    c = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, c,
        arith::ConstantOp::create(b, loc, b.getZeroAttr(c.getType())));
  auto ifOp = scf::IfOp::create(b, loc, types, c, /*withElseRegion=*/true);
  for (auto [from, to] :
       {std::pair<Region *, Region *>{&thenR, &ifOp.getThenRegion()},
        {&elseR, &ifOp.getElseRegion()}}) {
    to->getBlocks().clear();
    to->takeBody(*from);
    Operation *yield = to->front().getTerminator();
    OpBuilder yb(yield);
    SmallVector<Value> values;
    for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
      FailureOr<Value> cv = castTo(yb, loc, v, types[i]);
      if (failed(cv))
        return nodeError(op) << "a branch yields " << v.getType()
                             << " for output " << i << " of type " << types[i],
               failure();
      values.push_back(*cv);
    }
    scf::YieldOp::create(yb, loc, values);
    yield->erase();
  }
  results.append(ifOp.getResults().begin(), ifOp.getResults().end());
  return success();
}

//===----------------------------------------------------------------------===//
// Loop
//===----------------------------------------------------------------------===//

/// Whether `v` is `arg`, possibly through Identity ops (lowered away).
bool isPassThrough(Value v, Value arg) {
  while (v != arg) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumOperands() != 1 || !isa<tensor::CastOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return true;
}

/// Loop(M, cond, v...) with a trip count: an scf.for over [0, M) carrying
/// cond and v, whose body runs only while cond holds. Scan outputs are
/// sized by the number of iterations that run, which must be known before
/// the loop: the body's condition must be its input condition.
LogicalResult lowerLoop(onnxops::LoopOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  Region &body = op->getRegion(0);
  Value m = op->getOperand(0), cond = op->getOperand(1);
  if (failed(rankedOperand(op, 0)))
    return failure();
  if (isa<NoneType>(m.getType()))
    return nodeError(op) << "a Loop without a trip count (M) is not supported",
           failure();
  unsigned nCarried = op->getNumOperands() - 2;
  Block &block = body.front();
  if (block.getNumArguments() != nCarried + 2)
    return nodeError(op) << "the body must take " << nCarried + 2
                         << " arguments",
           failure();
  for (unsigned i = 0; i < nCarried; ++i)
    if (failed(rankedOperand(op, 2 + i)))
      return failure();
  if (failed(lowerOnnxOpsIn(body)))
    return failure();
  Operation *yield = block.getTerminator();
  unsigned nScan = op->getNumResults() - nCarried;
  if (yield->getNumOperands() != 1 + nCarried + nScan)
    return nodeError(op) << "the body must yield " << 1 + nCarried + nScan
                         << " values",
           failure();

  // Trip count and condition on the host.
  Value trip = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                          extractScalar(b, loc, m));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  trip = arith::MaxSIOp::create(b, loc, trip, zero);
  auto i1T = RankedTensorType::get({}, b.getI1Type());
  Value condT;
  if (isa<NoneType>(cond.getType())) {
    condT =
        arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i1T, true));
  } else {
    if (failed(rankedOperand(op, 1)))
      return failure();
    condT = tensor::FromElementsOp::create(
        b, loc, i1T, ValueRange{extractScalar(b, loc, cond)});
  }
  // A condition the body computes ends the loop at a step only the run
  // knows. With scan outputs the loop then runs twice: once for the carried
  // values and the number of steps that ran (read on the host), once over
  // that many steps writing the scan outputs, sized by it (the body is
  // deterministic: ONNX ops have no side effects).
  bool condInBody = !isa<NoneType>(cond.getType()) &&
                    !isPassThrough(yield->getOperand(0), block.getArgument(1));
  // A while loop only where the steps could be too many to guard one by
  // one: M unknown at compile time or above 2^20 (an exported while loop's
  // INT64_MAX). A known small M keeps the guarded scf.for.
  DenseIntElementsAttr tripAttr;
  bool smallTrip = matchPattern(m, m_Constant(&tripAttr)) &&
                   tripAttr.getNumElements() == 1 &&
                   (*tripAttr.value_begin<APInt>()).getSExtValue() <= (1 << 20);
  bool useWhileLoop = condInBody && !smallTrip;
  // Scan outputs of `rows` rows, zero-filled.
  auto makeScanInits = [&](Value rows,
                           SmallVectorImpl<Value> &scanInits) -> LogicalResult {
    for (unsigned k = 0; k < nScan; ++k) {
      FailureOr<RankedTensorType> rt = rankedResult(op, nCarried + k);
      auto et = dyn_cast<RankedTensorType>(
          yield->getOperand(1 + nCarried + k).getType());
      if (failed(rt) || !et || rt->getRank() != et.getRank() + 1)
        return nodeError(op)
                   << "scan output " << k << " must have a ranked element",
               failure();
      SmallVector<Value> dyn;
      if (rt->isDynamicDim(0))
        dyn.push_back(rows);
      for (int64_t d = 0; d < et.getRank(); ++d)
        if (rt->isDynamicDim(d + 1)) {
          if (!et.isDynamicDim(d)) {
            dyn.push_back(
                arith::ConstantIndexOp::create(b, loc, et.getDimSize(d)));
            continue;
          }
          return nodeError(op)
                     << "scan output " << k << " needs a static element shape",
                 failure();
        }
      scanInits.push_back(
          filledTensor(b, loc, *rt, dyn, b.getZeroAttr(rt->getElementType())));
    }
    return success();
  };
  LogicalResult status = success();
  // The loop over `steps` steps from `condT`: scan outputs written into
  // `scanInits` (none: the scan outputs are not built), the condition the
  // body computes ignored (`ignoreCond`), and the steps that ran counted
  // (`countSteps`: a 0-d i64 tensor, the last value). Returns the loop's
  // results after the condition: carried, scans, the count.
  auto emitLoop = [&](Region &from, Value steps, Value condT,
                      ArrayRef<Value> scanInits, bool ignoreCond,
                      bool countSteps, bool useWhile) -> SmallVector<Value> {
    SmallVector<Value> inits{condT};
    for (unsigned i = 0; i < nCarried; ++i)
      inits.push_back(op->getOperand(2 + i));
    inits.append(scanInits.begin(), scanInits.end());
    auto i64T = RankedTensorType::get({}, b.getI64Type());
    if (countSteps)
      inits.push_back(
          arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i64T, 0L)));
    unsigned nScanIters = scanInits.size();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // One step at `iv` on `iters`, at the end of `tb`'s block, ending in
    // scf.yield(prefix..., the next iter values).
    auto step = [&](OpBuilder &tb, Location l, Value iv, ValueRange iters,
                    ValueRange prefix) {
      SmallVector<Type> types;
      for (Value v : iters)
        types.push_back(v.getType());
      Value ivT = tensor::FromElementsOp::create(
          tb, l, RankedTensorType::get({}, tb.getI64Type()),
          ValueRange{arith::IndexCastOp::create(tb, l, tb.getI64Type(), iv)});
      Operation *anchor = scf::YieldOp::create(tb, l, ValueRange{});
      SmallVector<Value> args{ivT, iters[0]};
      for (unsigned i = 0; i < nCarried; ++i)
        args.push_back(iters[1 + i]);
      // The block arguments have the declared types; carried values have
      // their initial values' types.
      SmallVector<Value> argVals;
      OpBuilder ab(anchor);
      for (auto [arg, v] : llvm::zip(block.getArguments(), args)) {
        FailureOr<Value> cv = castTo(ab, l, v, arg.getType());
        argVals.push_back(succeeded(cv) ? *cv : v);
      }
      SmallVector<Value> ys = inlineBlock(from, anchor, argVals);
      ab.setInsertionPoint(anchor);
      SmallVector<Value> next;
      if (ignoreCond) {
        // The steps known to run: the condition stays true.
        next.push_back(iters[0]);
      } else {
        FailureOr<Value> c = castTo(ab, l, ys[0], i1T);
        if (failed(c))
          status = failure();
        next.push_back(succeeded(c) ? intoIter(ab, l, *c, iters[0]) : iters[0]);
      }
      for (unsigned i = 0; i < nCarried; ++i) {
        FailureOr<Value> cv = castTo(ab, l, ys[1 + i], types[1 + i]);
        if (failed(cv))
          status = failure();
        next.push_back(succeeded(cv) ? intoIter(ab, l, *cv, iters[1 + i])
                                     : iters[1 + i]);
      }
      for (unsigned k = 0; k < nScanIters; ++k) {
        Value acc = iters[1 + nCarried + k];
        auto at = cast<RankedTensorType>(acc.getType());
        auto et = RankedTensorType::get(at.getShape().drop_front(),
                                        at.getElementType());
        FailureOr<Value> e = castTo(ab, l, ys[1 + nCarried + k], et);
        if (failed(e)) {
          status = failure();
          next.push_back(acc);
          continue;
        }
        // Rows beyond the buffer (a declared size smaller than M) are
        // dropped rather than written out of bounds.
        Value inRange =
            arith::CmpIOp::create(ab, l, arith::CmpIPredicate::slt, iv,
                                  tensor::DimOp::create(ab, l, acc, 0));
        auto ins = scf::IfOp::create(ab, l, TypeRange{at}, inRange, true);
        {
          OpBuilder ib = OpBuilder::atBlockEnd(&ins.getThenRegion().front());
          SmallVector<OpFoldResult> offs{OpFoldResult(iv)},
              sizes{ib.getIndexAttr(1)},
              strides(at.getRank(), ib.getIndexAttr(1));
          for (int64_t d = 0; d < et.getRank(); ++d) {
            offs.push_back(ib.getIndexAttr(0));
            sizes.push_back(
                et.isDynamicDim(d)
                    ? OpFoldResult(
                          tensor::DimOp::create(ib, l, *e, d).getResult())
                    : OpFoldResult(ib.getIndexAttr(et.getDimSize(d))));
          }
          Value r = tensor::InsertSliceOp::create(ib, l, *e, acc, offs, sizes,
                                                  strides);
          scf::YieldOp::create(ib, l, r);
          OpBuilder eb = OpBuilder::atBlockEnd(&ins.getElseRegion().front());
          scf::YieldOp::create(eb, l, acc);
        }
        next.push_back(ins.getResult(0));
      }
      if (countSteps) {
        Value ran =
            arith::AddIOp::create(ab, l, extractScalar(ab, l, iters.back()),
                                  arith::ConstantIntOp::create(ab, l, 1, 64));
        next.push_back(intoIter(
            ab, l, tensor::FromElementsOp::create(ab, l, i64T, ValueRange{ran}),
            iters.back()));
      }
      SmallVector<Value> yielded(prefix.begin(), prefix.end());
      yielded.append(next);
      scf::YieldOp::create(ab, l, yielded);
      anchor->erase();
    };
    if (useWhile) {
      // Stops at the first step whose condition is false (M may be
      // INT64_MAX, as exporters write while loops). The step number is a 0-d
      // i64 tensor like the condition (values crossing kernels are tensors).
      auto i64T0 = RankedTensorType::get({}, b.getI64Type());
      SmallVector<Value> whileInits{
          arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i64T0, 0L))};
      whileInits.append(inits);
      SmallVector<Type> types;
      for (Value v : whileInits)
        types.push_back(v.getType());
      auto w = scf::WhileOp::create(b, loc, types, whileInits);
      SmallVector<Location> locs(types.size(), loc);
      OpBuilder::InsertionGuard g(b);
      Block *before = b.createBlock(&w.getBefore(), {}, types, locs);
      {
        OpBuilder bb = OpBuilder::atBlockEnd(before);
        Value at = arith::IndexCastOp::create(
            bb, loc, bb.getIndexType(),
            extractScalar(bb, loc, before->getArgument(0)));
        Value inRange = arith::CmpIOp::create(
            bb, loc, arith::CmpIPredicate::slt, at, steps);
        Value go = arith::AndIOp::create(
            bb, loc, inRange, extractScalar(bb, loc, before->getArgument(1)));
        scf::ConditionOp::create(bb, loc, go, before->getArguments());
      }
      Block *after = b.createBlock(&w.getAfter(), {}, types, locs);
      {
        OpBuilder ab = OpBuilder::atBlockEnd(after);
        Value n = extractScalar(ab, loc, after->getArgument(0));
        Value iv = arith::IndexCastOp::create(ab, loc, ab.getIndexType(), n);
        Value nextN = arith::AddIOp::create(
            ab, loc, n, arith::ConstantIntOp::create(ab, loc, 1, 64));
        Value nextIv = intoIter(
            ab, loc,
            tensor::FromElementsOp::create(ab, loc, i64T0, ValueRange{nextN}),
            after->getArgument(0));
        step(ab, loc, iv, after->getArguments().drop_front(),
             ValueRange{nextIv});
      }
      return SmallVector<Value>(w.getResults().drop_front(2));
    }
    auto loop = scf::ForOp::create(
        b, loc, zero, steps, one, inits,
        [&](OpBuilder &lb, Location l, Value iv, ValueRange iters) {
          Value run = extractScalar(lb, l, iters[0]);
          SmallVector<Type> types;
          for (Value v : iters)
            types.push_back(v.getType());
          auto guard = scf::IfOp::create(lb, l, types, run, true);
          {
            OpBuilder eb =
                OpBuilder::atBlockEnd(&guard.getElseRegion().front());
            scf::YieldOp::create(eb, l, iters);
          }
          OpBuilder tb = OpBuilder::atBlockEnd(&guard.getThenRegion().front());
          step(tb, l, iv, iters, ValueRange{});
          scf::YieldOp::create(lb, l, guard.getResults());
        });
    return SmallVector<Value>(loop.getResults().drop_front());
  };
  SmallVector<Value> outs;
  if (nScan && condInBody) {
    // The first run takes a copy of the body (inlining moves its ops).
    Region copy;
    IRMapping map;
    body.cloneInto(&copy, map);
    SmallVector<Value> first =
        emitLoop(copy, trip, condT, {}, /*ignoreCond=*/false,
                 /*countSteps=*/true, /*useWhile=*/useWhileLoop);
    Value ran = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                           extractScalar(b, loc, first.back()));
    SmallVector<Value> scanInits;
    if (failed(makeScanInits(ran, scanInits)))
      return failure();
    Value yes =
        arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i1T, true));
    outs = emitLoop(body, ran, yes, scanInits, /*ignoreCond=*/true,
                    /*countSteps=*/false, /*useWhile=*/false);
  } else {
    SmallVector<Value> scanInits;
    if (nScan) {
      // Steps that run: M, or 0 when the condition is false.
      Value rows = trip;
      if (!isa<NoneType>(cond.getType()))
        rows = arith::SelectOp::create(b, loc, extractScalar(b, loc, cond),
                                       trip, zero);
      if (failed(makeScanInits(rows, scanInits)))
        return failure();
    }
    outs = emitLoop(body, trip, condT, scanInits, /*ignoreCond=*/false,
                    /*countSteps=*/false, /*useWhile=*/useWhileLoop);
  }
  if (failed(status))
    return nodeError(op) << "the body yields values whose types do not match "
                            "the loop's",
           failure();
  results.append(outs.begin(), outs.begin() + nCarried + nScan);
  return success();
}

//===----------------------------------------------------------------------===//
// Scan (opset 9+)
//===----------------------------------------------------------------------===//

LogicalResult lowerScan(onnxops::ScanOp op, OpBuilder &b,
                        SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  if (op->getNumOperands() && isa<NoneType>(op->getOperand(0).getType()))
    return nodeError(op) << "Scan-8 (with a batch axis) is not supported",
           failure();
  int64_t nIn = asInt(op.getNumScanInputs());
  int64_t nOps = op->getNumOperands();
  int64_t nState = nOps - nIn;
  int64_t nOut = op->getNumResults() - nState;
  if (nIn <= 0 || nState < 0 || nOut < 0)
    return nodeError(op) << "bad num_scan_inputs", failure();
  auto allZero = [&](std::optional<ArrayAttr> attr) {
    std::optional<SmallVector<int64_t>> v = intsOf(attr);
    return !v || llvm::all_of(*v, [](int64_t a) { return a == 0; });
  };
  if (!allZero(op.getScanInputAxes()) || !allZero(op.getScanOutputAxes()))
    return nodeError(op) << "scan axes other than 0 are not supported",
           failure();
  SmallVector<int64_t> inDir = intsOf(op.getScanInputDirections())
                                   .value_or(SmallVector<int64_t>(nIn, 0));
  SmallVector<int64_t> outDir = intsOf(op.getScanOutputDirections())
                                    .value_or(SmallVector<int64_t>(nOut, 0));
  if (static_cast<int64_t>(inDir.size()) != nIn ||
      static_cast<int64_t>(outDir.size()) != nOut)
    return nodeError(op) << "scan directions must match the scan inputs and "
                            "outputs",
           failure();
  for (int64_t i = 0; i < nOps; ++i)
    if (failed(rankedOperand(op, i)))
      return failure();
  Region &body = op->getRegion(0);
  Block &block = body.front();
  if (block.getNumArguments() != static_cast<unsigned>(nOps))
    return nodeError(op) << "the body must take " << nOps << " arguments",
           failure();
  if (failed(lowerOnnxOpsIn(body)))
    return failure();
  Value seq = tensor::DimOp::create(b, loc, op->getOperand(nState), 0);
  SmallVector<Value> inits;
  for (int64_t i = 0; i < nState; ++i)
    inits.push_back(op->getOperand(i));
  Operation *yield = block.getTerminator();
  for (int64_t k = 0; k < nOut; ++k) {
    FailureOr<RankedTensorType> rt = rankedResult(op, nState + k);
    if (failed(rt))
      return failure();
    SmallVector<Value> dyn;
    for (int64_t d = 0; d < rt->getRank(); ++d)
      if (rt->isDynamicDim(d)) {
        if (d == 0) {
          dyn.push_back(seq);
          continue;
        }
        auto et =
            dyn_cast<RankedTensorType>(yield->getOperand(nState + k).getType());
        if (!et || et.getRank() + 1 != rt->getRank() || et.isDynamicDim(d - 1))
          return nodeError(op)
                     << "scan output " << k << " needs a static element shape",
                 failure();
        dyn.push_back(
            arith::ConstantIndexOp::create(b, loc, et.getDimSize(d - 1)));
      }
    inits.push_back(emptyTensor(b, loc, *rt, dyn));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, zero, seq, one, inits,
      [&](OpBuilder &lb, Location l, Value t, ValueRange iters) {
        Value last = arith::SubIOp::create(lb, l, seq, one);
        Value rev = arith::SubIOp::create(lb, l, last, t);
        Operation *anchor = scf::YieldOp::create(lb, l, ValueRange{});
        OpBuilder ab(anchor);
        SmallVector<Value> args;
        for (int64_t i = 0; i < nState; ++i)
          args.push_back(iters[i]);
        for (int64_t j = 0; j < nIn; ++j) {
          Value in = op->getOperand(nState + j);
          auto it = cast<RankedTensorType>(in.getType());
          auto et = RankedTensorType::get(it.getShape().drop_front(),
                                          it.getElementType());
          SmallVector<OpFoldResult> offs{OpFoldResult(inDir[j] ? rev : t)},
              sizes{ab.getIndexAttr(1)},
              strides(it.getRank(), ab.getIndexAttr(1));
          for (int64_t d = 1; d < it.getRank(); ++d) {
            offs.push_back(ab.getIndexAttr(0));
            sizes.push_back(
                it.isDynamicDim(d)
                    ? OpFoldResult(
                          tensor::DimOp::create(ab, l, in, d).getResult())
                    : OpFoldResult(ab.getIndexAttr(it.getDimSize(d))));
          }
          args.push_back(tensor::ExtractSliceOp::create(ab, l, et, in, offs,
                                                        sizes, strides));
        }
        SmallVector<Value> argVals;
        for (auto [arg, v] : llvm::zip(block.getArguments(), args)) {
          FailureOr<Value> cv = castTo(ab, l, v, arg.getType());
          argVals.push_back(succeeded(cv) ? *cv : v);
        }
        SmallVector<Value> ys = inlineBlock(body, anchor, argVals);
        ab.setInsertionPoint(anchor);
        SmallVector<Value> next;
        for (int64_t i = 0; i < nState; ++i) {
          FailureOr<Value> cv = castTo(ab, l, ys[i], iters[i].getType());
          if (failed(cv))
            status = failure();
          next.push_back(succeeded(cv) ? intoIter(ab, l, *cv, iters[i])
                                       : iters[i]);
        }
        for (int64_t k = 0; k < nOut; ++k) {
          Value acc = iters[nState + k];
          auto at = cast<RankedTensorType>(acc.getType());
          auto et = RankedTensorType::get(at.getShape().drop_front(),
                                          at.getElementType());
          FailureOr<Value> e = castTo(ab, l, ys[nState + k], et);
          if (failed(e)) {
            status = failure();
            next.push_back(acc);
            continue;
          }
          SmallVector<OpFoldResult> offs{OpFoldResult(outDir[k] ? rev : t)},
              sizes{ab.getIndexAttr(1)},
              strides(at.getRank(), ab.getIndexAttr(1));
          for (int64_t d = 0; d < et.getRank(); ++d) {
            offs.push_back(ab.getIndexAttr(0));
            sizes.push_back(
                et.isDynamicDim(d)
                    ? OpFoldResult(
                          tensor::DimOp::create(ab, l, *e, d).getResult())
                    : OpFoldResult(ab.getIndexAttr(et.getDimSize(d))));
          }
          next.push_back(tensor::InsertSliceOp::create(ab, l, *e, acc, offs,
                                                       sizes, strides));
        }
        scf::YieldOp::create(ab, l, next);
        anchor->erase();
      });
  if (failed(status))
    return nodeError(op) << "the body yields values whose types do not match "
                            "the scan's",
           failure();
  results.append(loop.getResults().begin(), loop.getResults().end());
  return success();
}

} // namespace

void lowering::populateControlFlowLoweringPatterns(
    RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::ControlFlow> t(patterns);
  t.add<onnxops::IfOp>(lowerIf);
  t.add<onnxops::LoopOp>(lowerLoop);
  t.add<onnxops::ScanOp>(lowerScan);
}
