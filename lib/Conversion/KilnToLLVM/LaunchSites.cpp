//===- LaunchSites.cpp - Launch sites and their ONNX nodes ----------------===//
//
// Part of kiln-convert-host-to-llvm: each launch of the host program gets a
// site number, kiln_rt_launch_site calls around it and a signature record
// naming its kernel and ONNX nodes (docs/runtime.md, "Profiling").
//
//===----------------------------------------------------------------------===//

#include "HostToLLVM.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kiln;

/// Declares runtime function `name` in `module` if it is not there.
LLVM::LLVMFuncOp mlir::kiln::declareRuntimeFn(ModuleOp module, StringRef name,
                                              Type result,
                                              ArrayRef<Type> params) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                  LLVM::LLVMFunctionType::get(result, params));
}

/// Launch sites for profiles: each `kiln.launch` (and, on a GPU target, each
/// call of a kernel's launcher that replaced one) carrying its ONNX nodes
/// (kLaunchNodesAttr) gets a number in module order, a
/// `kiln_rt_launch_site(ctx, site)` call before it and `(ctx, -1)` after
/// (every launch it makes runs for that site, none outside), and a signature
/// record `launch <site> <kernel> <nodes>`. Returns the records.
std::string mlir::kiln::numberLaunchSites(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto i64Type = IntegerType::get(ctx, 64);
  declareRuntimeFn(module, "kiln_rt_launch_site", LLVM::LLVMVoidType::get(ctx),
                   {ptrType, i64Type});
  std::string records;
  int64_t site = 0;
  auto mark = [&](OpBuilder &b, Location loc, Value rtCtx, int64_t value) {
    Value v =
        LLVM::ConstantOp::create(b, loc, i64Type, b.getI64IntegerAttr(value));
    LLVM::CallOp::create(b, loc, TypeRange{}, "kiln_rt_launch_site",
                         ValueRange{rtCtx, v});
  };
  module.walk([&](Operation *op) {
    auto nodes = op->getAttrOfType<StringAttr>(kLaunchNodesAttr);
    if (!nodes)
      return;
    op->removeAttr(kLaunchNodesAttr);
    StringRef kernel;
    Value rtCtx;
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      kernel = launch.getKernel();
      rtCtx = launch.getCtx();
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      kernel = call.getCallee();
      rtCtx = call.getNumOperands() ? call.getOperand(0) : Value();
    }
    if (!rtCtx || !isa<LLVM::LLVMPointerType>(rtCtx.getType()))
      return;
    OpBuilder b(op);
    mark(b, op->getLoc(), rtCtx, site);
    b.setInsertionPointAfter(op);
    mark(b, op->getLoc(), rtCtx, -1);
    records += "launch " + std::to_string(site++) + " " + kernel.str();
    if (!nodes.getValue().empty())
      records += " " + nodes.str();
    records += "\n";
  });
  return records;
}
