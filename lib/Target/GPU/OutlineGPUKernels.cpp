//===- OutlineGPUKernels.cpp - Outlining that keeps kernel attributes -----===//
//
// Upstream gpu-kernel-outlining makes each gpu.launch a gpu.func and drops
// the launch's attributes; a lowering that wants something of the kernel
// function itself (its occupancy, a register bound) writes it into the
// launch's `kiln.kernel_attrs` dictionary, and this pass sets it on the
// outlined function. Launches and their gpu.launch_func replacements are
// matched by position in the module's walk order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNOUTLINEGPUKERNELS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct OutlineGPUKernelsPass
    : public kiln::impl::KilnOutlineGPUKernelsBase<OutlineGPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each launch's kernel attributes (null: none, or a launch_func already
    // there), in walk order.
    SmallVector<DictionaryAttr> attrs;
    bool any = false;
    module.walk([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op)) {
        auto d = op->getAttrOfType<DictionaryAttr>(kKernelAttrs);
        any |= bool(d);
        attrs.push_back(d);
      } else if (isa<gpu::LaunchFuncOp>(op)) {
        attrs.push_back(nullptr);
      }
    });
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(createGpuKernelOutliningPass());
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
    if (!any)
      return;
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
    if (launches.size() != attrs.size()) {
      module.emitError("kiln-outline-gpu-kernels: ")
          << attrs.size() << " launches became " << launches.size()
          << " gpu.launch_func ops";
      return signalPassFailure();
    }
    for (auto [launch, d] : llvm::zip(launches, attrs)) {
      if (!d)
        continue;
      auto fn = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!fn) {
        launch.emitError("kiln-outline-gpu-kernels: no kernel ")
            << launch.getKernel();
        return signalPassFailure();
      }
      for (NamedAttribute a : d)
        fn->setAttr(a.getName(), a.getValue());
    }
  }

  static constexpr StringLiteral kKernelAttrs = "kiln.kernel_attrs";
};
} // namespace
