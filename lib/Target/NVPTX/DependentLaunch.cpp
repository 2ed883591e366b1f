//===- DependentLaunch.cpp - Kernels that wait for their predecessor ------===//
//
// kiln-nvptx-dependent-launch (Passes.td): griddepcontrol.wait and
// griddepcontrol.launch_dependents at every kernel's entry, and the module's
// kiln.dependent_launch mark for the signature (HostToLLVM.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVPTX/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVPTXDEPENDENTLAUNCH
#include "kiln/Target/NVPTX/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// Whether `op` is griddepcontrol `kind`.
bool isGridDep(Operation &op, NVVM::GridDepActionKind kind) {
  auto g = dyn_cast<NVVM::GriddepcontrolOp>(op);
  return g && g.getKind() == kind;
}

struct DependentLaunchPass
    : public kiln::impl::KilnNVPTXDependentLaunchBase<DependentLaunchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      for (auto fn : gpuModule.getOps<LLVM::LLVMFuncOp>()) {
        if (!fn->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
          continue;
        if (fn.isExternal()) {
          fn.emitError("kernel without a body: its launches cannot wait for "
                       "the previous kernel");
          return signalPassFailure();
        }
        any = true;
        Block &entry = fn.getBody().front();
        // Once per kernel (the pass may run again on its own output).
        if (!entry.empty() &&
            isGridDep(entry.front(), NVVM::GridDepActionKind::wait))
          continue;
        OpBuilder b = OpBuilder::atBlockBegin(&entry);
        NVVM::GriddepcontrolOp::create(b, fn.getLoc(),
                                       NVVM::GridDepActionKind::wait);
        NVVM::GriddepcontrolOp::create(
            b, fn.getLoc(), NVVM::GridDepActionKind::launch_dependents);
      }
    }
    if (any)
      module->setAttr("kiln.dependent_launch", UnitAttr::get(&getContext()));
  }
};
} // namespace
