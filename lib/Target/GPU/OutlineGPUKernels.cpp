//===- OutlineGPUKernels.cpp - Outlining that keeps kernel attributes -----===//
//
// Upstream gpu-kernel-outlining makes each gpu.launch a gpu.func and drops
// what the kernel function itself must know of its launch: a lowering that
// wants something of it (its occupancy, a register bound) writes it into the
// launch's `kiln.kernel_attrs` dictionary, and this pass sets it on the
// outlined function (launches and their gpu.launch_func replacements are
// matched by position in the module's walk order); a launch of clusters
// gives its kernel `known_cluster_size`, so that the cluster shape is fixed
// at compile time and the runtime's plain launch makes the clusters.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/Passes.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
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
        auto d = op->getAttrOfType<DictionaryAttr>(kKernelAttrsName);
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
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
    for (gpu::LaunchFuncOp launch : launches)
      if (failed(setClusterSize(launch)))
        return signalPassFailure();
    if (!any)
      return;
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

  /// The kernel of a launch with constant cluster sizes gets them as its
  /// `known_cluster_size`.
  static LogicalResult setClusterSize(gpu::LaunchFuncOp launch) {
    if (!launch.hasClusterSize())
      return success();
    std::optional<gpu::KernelDim3> cluster =
        launch.getClusterSizeOperandValues();
    SmallVector<int32_t> dims;
    for (Value v : {cluster->x, cluster->y, cluster->z}) {
      APInt c;
      if (!matchPattern(v, m_ConstantInt(&c)))
        return success();
      dims.push_back(c.getZExtValue());
    }
    auto fn = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
        launch, launch.getKernel());
    if (!fn)
      return launch.emitError("kiln-outline-gpu-kernels: no kernel ")
             << launch.getKernel();
    fn.setKnownClusterSizeAttr(
        DenseI32ArrayAttr::get(launch.getContext(), dims));
    return success();
  }
};
} // namespace
