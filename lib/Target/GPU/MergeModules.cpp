//===- MergeModules.cpp - Every outlined kernel into one gpu.module -------===//

#include "kiln/Target/GPU/Passes.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMERGEGPUMODULES
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct MergeGPUModulesPass
    : public kiln::impl::KilnMergeGPUModulesBase<MergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto merged = gpu::GPUModuleOp::create(b, module.getLoc(), "kiln_kernels");
    Block &dest = merged.getBodyRegion().front();
    // Outlining names each module uniquely but its kernel after the parent
    // function: the merged kernel takes the module's name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp m : modules) {
      SmallVector<Operation *> ops;
      for (Operation &op : m.getBodyRegion().front())
        if (!op.hasTrait<OpTrait::IsTerminator>())
          ops.push_back(&op);
      for (Operation *op : ops) {
        auto sym = dyn_cast<SymbolOpInterface>(op);
        if (!sym) {
          op->moveBefore(&dest, dest.end());
          continue;
        }
        std::string name = ops.size() == 1
                               ? m.getName().str()
                               : (m.getName() + "_" + sym.getName()).str();
        if (SymbolTable::lookupSymbolIn(merged, name)) {
          m.emitError("two outlined kernels named '") << name << "'";
          return signalPassFailure();
        }
        auto newName = StringAttr::get(&getContext(), name);
        renamed[{m.getNameAttr(), sym.getNameAttr()}] = newName;
        sym.setName(newName);
        op->moveBefore(&dest, dest.end());
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it =
          renamed.find({launch.getKernelModuleName(), launch.getKernelName()});
      if (it == renamed.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
    for (gpu::GPUModuleOp m : modules)
      m.erase();
  }
};
} // namespace
