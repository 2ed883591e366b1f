//===- CPUTarget.cpp - Kernels vectorized and threaded on the host --------===//
//
// The `cpu` target: kernels stay in the host object. kiln-cpu-codegen
// splits them across the runtime's thread pool and vectorizes them for the
// chip's machine (CPUMachine.cpp); what it leaves as linalg becomes loops.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CPUTarget.h"
#include "kiln/Target/CPU/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
class CPUTarget : public Target {
public:
  explicit CPUTarget(StringRef chip) : chip(chip.str()) {}
  std::string getSpec() const override {
    return chip == "host" ? "cpu" : "cpu:" + chip;
  }
  bool isDevice() const override { return false; }
  // Channels-last: a convolution is a matmul over (window, channels) with
  // the filters along the vectors and the input broadcast, its weights
  // packed like a matmul's; a depthwise one reads input and weights as
  // vectors along the channels (docs/layout.md has the measurements).
  ConvLayout getConvLayout() const override { return ConvLayout::NHWC; }
  void buildCodegenPipeline(OpPassManager &pm) const override {
    CPUMachine m = getCPUMachine(chip);
    KilnCPUCodegenOptions o;
    o.cpu = m.cpu;
    o.features = m.features;
    o.
      requires
    = llvm::join(m.requires_, " ");
    o.vectorBits = m.vectorBits;
    o.bf16Dot = m.bf16;
    o.int8Dot = m.int8Dot;
    o.int8Tiles = m.int8Tiles;
    o.l1Bytes = m.l1Bytes;
    o.l2Bytes = m.l2Bytes;
    pm.addPass(createKilnCPUCodegen(o));
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }

private:
  std::string chip;
};
} // namespace

std::unique_ptr<Target> mlir::kiln::createCPUTarget(StringRef chip,
                                                    const GPUCodegenOptions &) {
  return std::make_unique<CPUTarget>(chip);
}

void mlir::kiln::registerCPUDialects(DialectRegistry &registry) {
  registry.insert<vector::VectorDialect, x86vector::X86VectorDialect,
                  amx::AMXDialect>();
  linalg::registerTilingInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
}

void mlir::kiln::registerCPUPasses() { registerKilnTargetCPUPasses(); }
