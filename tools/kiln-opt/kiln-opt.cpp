//===- kiln-opt.cpp - Kiln's pass driver ----------------------------------===//
//
// Every Kiln dialect and pass, plus the upstream passes Kiln's pipelines
// use, for driving and testing passes one at a time with lit and FileCheck.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::kiln::test {
void registerTestGPUTargetInfo();
} // namespace mlir::kiln::test

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::registerLinalgPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::memref::registerMemRefPasses();
  // The device targets' codegen passes (each target registers its own
  // vendor passes from the target table).
  mlir::registerGPUPasses();
  mlir::arith::registerArithPasses();
  mlir::registerSCFToControlFlowPass();
  mlir::registerConvertMathToLibmPass();
  mlir::registerLowerAffinePass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::kiln::registerAllKilnPasses();
  // A made-up GPU (waves of 64, a 32x32x8 matrix instruction) for the
  // vendor-neutral strategies' tests.
  mlir::kiln::test::registerTestGPUTargetInfo();
  mlir::DialectRegistry registry;
  mlir::kiln::registerKilnDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
