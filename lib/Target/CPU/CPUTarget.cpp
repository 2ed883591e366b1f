//===- CPUTarget.cpp - Kernels as loops in the host object ----------------===//

#include "kiln/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// Kernels become plain loops in the host object (run by kiln_rt_launch_cpu).
class CPUTarget : public Target {
public:
  std::string getSpec() const override { return "cpu"; }
  bool isDevice() const override { return false; }
  void buildCodegenPipeline(OpPassManager &pm) const override {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
    pm.addPass(createCanonicalizerPass());
  }
};
} // namespace

std::unique_ptr<Target> mlir::kiln::createCPUTarget() {
  return std::make_unique<CPUTarget>();
}
