//===- ConversionFixups.cpp - Host code shapes LLVM needs changed ---------===//
//
// Two rewrites around kiln-convert-host-to-llvm's conversion, for shapes of
// code the LLVM dialect or LLVM itself handles badly: n-D
// vector.from_elements before it (the LLVM lowering takes 1-D ones only),
// and fixed-size allocas outside the entry block after it (LLVM gives them
// new stack each time they run).
//
//===----------------------------------------------------------------------===//

#include "HostToLLVM.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

LogicalResult mlir::kiln::unrollNDFromElements(ModuleOp module) {
  SmallVector<Operation *> nd;
  module.walk([&](vector::FromElementsOp op) {
    if (op.getType().getRank() > 1)
      nd.push_back(op);
  });
  if (nd.empty())
    return success();
  RewritePatternSet unroll(module.getContext());
  vector::populateVectorFromElementsUnrollPatterns(unroll);
  // Only these ops and what they become: the greedy driver would also
  // erase other ops it finds dead (a host read whose value is unused).
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  return applyOpPatternsGreedily(nd, std::move(unroll), config);
}

/// Moves every fixed-size `llvm.alloca` into its function's entry block (a
/// launch's argument array, a call's result slot, a descriptor passed by
/// pointer): LLVM gives only entry-block allocas a place in the frame, and
/// one elsewhere takes new stack each time it runs, so inside a host loop
/// (a Loop node's steps) the stack grew with every step (slanet's decoder,
/// 501 steps on a GPU target: a stack overflow inside the driver). Each such
/// buffer is filled and used within one step, so one per function does.
void mlir::kiln::hoistFixedAllocas(ModuleOp module) {
  module.walk([](LLVM::LLVMFuncOp fn) {
    if (fn.getBody().empty())
      return;
    Block &entry = fn.getBody().front();
    SmallVector<LLVM::AllocaOp> moved;
    fn.walk([&](LLVM::AllocaOp alloca) {
      if (alloca->getBlock() == &entry)
        return;
      auto size = alloca.getArraySize().getDefiningOp<LLVM::ConstantOp>();
      if (size && isa<IntegerAttr>(size.getValue()))
        moved.push_back(alloca);
    });
    for (LLVM::AllocaOp alloca : moved) {
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Operation *size = b.clone(*alloca.getArraySize().getDefiningOp());
      alloca->moveAfter(size);
      alloca->setOperand(0, size->getResult(0));
    }
  });
}
