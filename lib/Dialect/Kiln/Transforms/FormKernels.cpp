//===- FormKernels.cpp - Group tensor computations into kernels -----------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFORMKERNELS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

/// Ops that stay in the host program: shape-only ops whose result is a view
/// or a scalar, and constants.
static bool isHostOp(Operation *op) {
  if (isa<tensor::EmptyOp, tensor::ReshapeOp, tensor::CollapseShapeOp,
          tensor::ExpandShapeOp, tensor::CastOp, tensor::DimOp,
          tensor::FromElementsOp, tensor::ExtractOp, arith::ConstantOp,
          tensor::BitcastOp>(op))
    return true;
  // Scalar (index/integer/float) arithmetic.
  return llvm::none_of(op->getResultTypes(),
                       [](Type t) { return isa<TensorType>(t); });
}

/// `linalg.fill` of a constant into an empty tensor.
static bool isInitFill(Operation *op) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.getInputs()[0].getDefiningOp<arith::ConstantOp>() &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// Producers worth cloning into the kernel that uses them rather than
/// passing their result in: they cost nothing to recompute.
static bool isCloneable(Operation *op, Operation *root) {
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto elements = dyn_cast<DenseElementsAttr>(c.getValue());
    return !isa<TensorType>(c.getType()) || (elements && elements.isSplat());
  }
  if (isa<tensor::EmptyOp>(op))
    return true;
  // A fill with a constant of an empty tensor (an init): writing it again in
  // each kernel that uses it costs what reading it would.
  if (isInitFill(op))
    return true;
  return false;
}

namespace {
struct FormKernelsPass
    : public kiln::impl::KilnFormKernelsBase<FormKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Every returned value must be the result of its own kernel so the host
    // program can write it straight into the output buffer: copy values that
    // are views, constants, inputs, or returned twice.
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      Operation *def = v.getDefiningOp();
      bool needsCopy = !def || isHostOp(def) || !seen.insert(v).second;
      if (!needsCopy)
        continue;
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type) {
        ret.emitError("model output ")
            << operand.getOperandNumber() << " has no static rank";
        return signalPassFailure();
      }
      SmallVector<Value> dyn;
      for (int64_t i = 0; i < type.getRank(); ++i)
        if (type.isDynamicDim(i))
          dyn.push_back(tensor::DimOp::create(b, ret.getLoc(), v, i));
      Value init = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                           type.getElementType(), dyn);
      operand.set(
          linalg::CopyOp::create(b, ret.getLoc(), v, init).getResult(0));
    }

    SmallVector<Operation *> roots;
    for (Operation &op : func.getBody().front())
      if (!isHostOp(&op) && !isa<func::ReturnOp>(op) &&
          !(isInitFill(&op) && !op.use_empty() &&
            llvm::none_of(op.getUsers(),
                          [](Operation *u) { return isHostOp(u); })))
        roots.push_back(&op);

    unsigned counter = 0;
    for (Operation *root : roots)
      if (failed(formKernel(root, counter++)))
        return signalPassFailure();
  }

  /// " of node 'NAME'" for an op whose location names its ONNX node.
  static std::string nodeOf(Operation *op) {
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      return (" of node '" + name.getName().getValue() + "'").str();
    return "";
  }

  /// Dim `d` of `v` computed before `scope` (an op whose regions define `v`):
  /// through casts, destination-style ops (their init's dim) and
  /// tensor.empty sizes, hoisting the index arithmetic that only uses values
  /// from outside `scope`. Failure when the dim depends on the regions' work
  /// (a data-dependent size).
  static FailureOr<Value> dimBefore(OpBuilder &b, Value v, int64_t d,
                                    Operation *scope, unsigned depth = 0) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || depth > 32)
      return failure();
    Location loc = scope->getLoc();
    if (!t.isDynamicDim(d))
      return Value(arith::ConstantIndexOp::create(b, loc, t.getDimSize(d)));
    Operation *def = v.getDefiningOp();
    Region *region = v.getParentRegion();
    if (!scope->isProperAncestor(region->getParentOp()) &&
        region->getParentOp() != scope)
      return Value(tensor::DimOp::create(b, loc, v, d));
    if (!def)
      return failure();
    if (auto cast = dyn_cast<tensor::CastOp>(def))
      return dimBefore(b, cast.getSource(), d, scope, depth + 1);
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return indexBefore(b, empty.getDynamicSize(d), scope, depth + 1);
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      OpOperand *init = dps.getTiedOpOperand(cast<OpResult>(v));
      if (init)
        return dimBefore(b, init->get(), d, scope, depth + 1);
    }
    if (auto reshape = dyn_cast<tensor::ReshapeOp>(def)) {
      // The size is entry d of the shape operand (from_elements inside the
      // branch, or a tensor from outside).
      Value shape = reshape.getShape();
      if (auto elements = shape.getDefiningOp<tensor::FromElementsOp>())
        return indexBefore(b, elements.getElements()[d], scope, depth + 1);
      FailureOr<Value> outside = indexBefore(b, shape, scope, depth + 1);
      if (failed(outside))
        return failure();
      Value e = tensor::ExtractOp::create(
          b, loc, *outside,
          ValueRange{arith::ConstantIndexOp::create(b, loc, d)});
      if (!e.getType().isIndex())
        e = arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
      return e;
    }
    // Any other op that can say its result sizes (tensor.concat,
    // collapse/expand_shape, ...): its answer, hoisted.
    if (auto reify = dyn_cast<ReifyRankedShapedTypeOpInterface>(def)) {
      OpBuilder inner(def);
      ReifiedRankedShapedTypeDims shapes;
      if (failed(reify.reifyResultShapes(inner, shapes)))
        return failure();
      OpFoldResult size = shapes[cast<OpResult>(v).getResultNumber()][d];
      if (auto attr = dyn_cast<Attribute>(size))
        return Value(arith::ConstantIndexOp::create(
            b, loc, cast<IntegerAttr>(attr).getInt()));
      return indexBefore(b, cast<Value>(size), scope, depth + 1);
    }
    return failure();
  }

  /// The index value `v` computed before `scope` (see dimBefore).
  static FailureOr<Value> indexBefore(OpBuilder &b, Value v, Operation *scope,
                                      unsigned depth) {
    Region *region = v.getParentRegion();
    if (!scope->isProperAncestor(region->getParentOp()) &&
        region->getParentOp() != scope)
      return v;
    Operation *def = v.getDefiningOp();
    if (!def || depth > 32)
      return failure();
    if (auto dim = dyn_cast<tensor::DimOp>(def)) {
      std::optional<int64_t> axis = dim.getConstantIndex();
      if (!axis)
        return failure();
      return dimBefore(b, dim.getSource(), *axis, scope, depth + 1);
    }
    if (def->getNumRegions() != 0 || !isPure(def) ||
        (def->getDialect()->getNamespace() != "arith" &&
         !isa<tensor::FromElementsOp>(def)))
      return failure();
    IRMapping map;
    for (Value operand : def->getOperands()) {
      FailureOr<Value> o = indexBefore(b, operand, scope, depth + 1);
      if (failed(o))
        return failure();
      map.map(operand, *o);
    }
    return b.clone(*def, map)->getResult(cast<OpResult>(v).getResultNumber());
  }

  /// Result sizes of an scf.if: each branch's yielded dims computed before
  /// it, selected by the condition.
  static LogicalResult reifyIfResults(OpBuilder &b, scf::IfOp ifOp,
                                      ReifiedRankedShapedTypeDims &shapes) {
    Operation *thenY = ifOp.thenYield(), *elseY = ifOp.elseYield();
    for (auto [i, r] : llvm::enumerate(ifOp.getResults())) {
      auto t = cast<RankedTensorType>(r.getType());
      SmallVector<OpFoldResult> sizes;
      for (int64_t d = 0; d < t.getRank(); ++d) {
        if (!t.isDynamicDim(d)) {
          sizes.push_back(b.getIndexAttr(t.getDimSize(d)));
          continue;
        }
        FailureOr<Value> a = dimBefore(b, thenY->getOperand(i), d, ifOp);
        FailureOr<Value> c = dimBefore(b, elseY->getOperand(i), d, ifOp);
        if (failed(a) || failed(c))
          return failure();
        sizes.push_back(arith::SelectOp::create(b, ifOp.getLoc(),
                                                ifOp.getCondition(), *a, *c)
                            .getResult());
      }
      shapes.push_back(sizes);
    }
    return success();
  }

  /// Result sizes of a loop whose carried tensors keep their shape (the
  /// recurrent lowerings' time loops): those of its init values.
  /// A loop's results (scf.for, scf.while) have its initial values' sizes.
  static LogicalResult reifyLoopResults(OpBuilder &b, Operation *loop,
                                        ValueRange initArgs,
                                        ReifiedRankedShapedTypeDims &shapes) {
    for (Value init : initArgs) {
      auto result = dyn_cast<OpResult>(init);
      auto reify =
          result ? dyn_cast<ReifyRankedShapedTypeOpInterface>(result.getOwner())
                 : nullptr;
      if (reify) {
        ReifiedRankedShapedTypeDims initShapes;
        if (failed(reify.reifyResultShapes(b, initShapes)))
          return failure();
        shapes.push_back(initShapes[result.getResultNumber()]);
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(init.getType());
      if (!type)
        return failure();
      SmallVector<OpFoldResult> sizes;
      for (int64_t i = 0; i < type.getRank(); ++i)
        sizes.push_back(
            type.isDynamicDim(i)
                ? OpFoldResult(tensor::DimOp::create(b, loop->getLoc(), init, i)
                                   .getResult())
                : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
      shapes.push_back(sizes);
    }
    return success();
  }

  LogicalResult formKernel(Operation *root, unsigned id) {
    Location loc = root->getLoc();
    OpBuilder b(root);
    // Collect the closure (before sizing the results, which adds uses) of the root: cloneable producers come along,
    // everything else is an input.
    SetVector<Operation *> cloned;
    SetVector<Value> inputs;
    std::function<void(Operation *)> visit = [&](Operation *op) {
      SetVector<Value> used;
      for (Value v : op->getOperands())
        used.insert(v);
      for (Region &region : op->getRegions())
        getUsedValuesDefinedAbove(region, used);
      for (Value v : used) {
        Operation *def = v.getDefiningOp();
        if (def && isCloneable(def, op == root ? root : nullptr) &&
            !cloned.contains(def)) {
          visit(def);
          cloned.insert(def);
        } else if (!def || !cloned.contains(def)) {
          inputs.insert(v);
        }
      }
    };
    visit(root);

    // Dynamic sizes of the results, computed on the host before the kernel.
    SmallVector<Value> dims;
    auto reify = dyn_cast<ReifyRankedShapedTypeOpInterface>(root);
    for (Value r : root->getResults()) {
      auto t = dyn_cast<RankedTensorType>(r.getType());
      if (!t)
        return root->emitError("kernel result has no static rank: ")
               << r.getType();
    }
    bool anyDynamic = llvm::any_of(root->getResultTypes(), [](Type t) {
      return !cast<RankedTensorType>(t).hasStaticShape();
    });
    if (anyDynamic) {
      ReifiedRankedShapedTypeDims shapes;
      if (isa<scf::ForOp, scf::WhileOp>(root)) {
        ValueRange inits =
            isa<scf::ForOp>(root)
                ? ValueRange(cast<scf::ForOp>(root).getInitArgs())
                : ValueRange(cast<scf::WhileOp>(root).getInits());
        if (failed(reifyLoopResults(b, root, inits, shapes)))
          return root->emitError("cannot compute the result sizes of ")
                 << root->getName() << " for its buffer";
      } else if (auto ifOp = dyn_cast<scf::IfOp>(root)) {
        if (failed(reifyIfResults(b, ifOp, shapes)))
          return root->emitError("cannot compute the result sizes of ")
                 << root->getName() << nodeOf(root)
                 << " for its buffer before the condition is known (a "
                    "branch's result size depends on the branch's data)";
      } else if (!reify || failed(reify.reifyResultShapes(b, shapes)))
        return root->emitError("cannot compute the result sizes of ")
               << root->getName() << " for its buffer";
      for (auto [r, shape] : llvm::zip(root->getResults(), shapes)) {
        auto t = cast<RankedTensorType>(r.getType());
        for (int64_t i = 0; i < t.getRank(); ++i)
          if (t.isDynamicDim(i))
            dims.push_back(getValueOrCreateConstantIndexOp(b, loc, shape[i]));
      }
    }

    auto kernel =
        KernelOp::create(b, loc, root->getResultTypes(), inputs.getArrayRef(),
                         dims, b.getStringAttr("kernel_" + std::to_string(id)));
    Block *block = new Block();
    kernel.getBody().push_back(block);
    IRMapping map;
    for (Value in : inputs)
      map.map(in, block->addArgument(in.getType(), in.getLoc()));
    OpBuilder kb = OpBuilder::atBlockBegin(block);
    for (Operation *op : cloned)
      kb.clone(*op, map);
    Operation *newRoot = kb.clone(*root, map);
    YieldOp::create(kb, loc, newRoot->getResults());
    root->replaceAllUsesWith(kernel.getResults());
    root->erase();
    for (Operation *op : llvm::reverse(cloned))
      if (op->use_empty())
        op->erase();
    return success();
  }
};
} // namespace
