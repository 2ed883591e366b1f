//===- FormKernels.cpp - Group tensor computations into kernels -----------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

  /// Result sizes of a loop whose carried tensors keep their shape (the
  /// recurrent lowerings' time loops): those of its init values.
  static LogicalResult reifyLoopResults(OpBuilder &b, scf::ForOp loop,
                                        ReifiedRankedShapedTypeDims &shapes) {
    for (Value init : loop.getInitArgs()) {
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
                ? OpFoldResult(tensor::DimOp::create(b, loop.getLoc(), init, i)
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
      if (auto loop = dyn_cast<scf::ForOp>(root)) {
        if (failed(reifyLoopResults(b, loop, shapes)))
          return root->emitError("cannot compute the result sizes of ")
                 << root->getName() << " for its buffer";
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
