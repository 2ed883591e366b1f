//===- NodeNames.cpp - The ONNX nodes an op computes ----------------------===//

#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

void mlir::kiln::collectNodeNames(Operation *root, NodeNameSet &names) {
  // The computations only: constants, empty tensors and init fills are cloned
  // from their producers into every kernel that uses them.
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == root)
      return WalkResult::advance();
    if (isa<arith::ConstantOp, tensor::EmptyOp, linalg::FillOp, tensor::DimOp,
            bufferization::ToTensorOp,
            bufferization::MaterializeInDestinationOp, func::ReturnOp>(op))
      return WalkResult::skip();
    if (op->getNumRegions() == 0 &&
        llvm::none_of(op->getResultTypes(),
                      [](Type t) { return isa<ShapedType>(t); }))
      return WalkResult::skip(); // scalar index arithmetic
    op->getLoc()->walk([&](Location loc) {
      if (auto name = dyn_cast<NameLoc>(loc))
        names.insert(name.getName().str());
      return WalkResult::advance();
    });
    // A linalg op's body belongs to it.
    return isa<linalg::LinalgOp>(op) ? WalkResult::skip()
                                     : WalkResult::advance();
  });
}
