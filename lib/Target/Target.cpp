//===- Target.cpp - Parsing --target= and the CPU target ------------------===//

#include "kiln/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

Target::~Target() = default;

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

std::unique_ptr<Target> mlir::kiln::parseTarget(StringRef spec,
                                                std::string &error,
                                                const GPUCodegenOptions &gpu) {
  auto [kind, chip] = spec.split(':');
  if (kind == "cpu" && chip.empty())
    return createCPUTarget();
  if (kind == "cuda") {
    if (chip.empty())
      chip = "sm_90";
    if (llvm::is_contained(getSupportedCudaChips(), chip))
      return createNVPTXTarget(chip, gpu);
    error = ("unknown CUDA chip '" + chip + "' in --target=" + spec +
             " (supported: " + llvm::join(getSupportedCudaChips(), ", ") + ")")
                .str();
    return nullptr;
  }
  error = ("unknown target '" + spec +
           "' (supported: cpu, cuda, cuda:<chip> with chip one of " +
           llvm::join(getSupportedCudaChips(), ", ") + ")")
              .str();
  return nullptr;
}
