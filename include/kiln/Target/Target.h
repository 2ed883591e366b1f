//===- Target.h - Kiln's code generation targets ----------------*- C++ -*-===//
//
// One interface per target (lib/Target/<T>): it adds the `codegen` stage
// (kernels on memrefs → loops or device code), says whether kernels run on a
// device, and names the runtime device kind written into the model's
// signature. Generic code never includes a vendor dialect; a new chip is a
// table entry (see NVPTXTarget.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_TARGET_H
#define KILN_TARGET_TARGET_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace mlir::kiln {

class Target {
public:
  virtual ~Target();
  /// The spelling `--target=` takes, canonicalized ("cpu", "cuda:sm_90").
  virtual std::string getSpec() const = 0;
  /// True when kernels run on a device with its own memory (buffers the
  /// host program hands to kernels are device memory).
  virtual bool isDevice() const = 0;
  /// Adds the passes of the `codegen` stage.
  virtual void buildCodegenPipeline(OpPassManager &pm) const = 0;
  /// Checks what codegen needs outside the compiler (a device toolkit);
  /// on failure says what is missing in `error`.
  virtual bool checkToolchain(std::string &error) const { return true; }
};

/// Choices of the GPU codegen (kiln-map-kernels-to-gpu's options), for
/// measuring one against the other (kilnc --gpu-...).
struct GPUCodegenOptions {
  bool tiledContractions = true;
  bool warpReductions = true;
  bool tensorCores = true;
};

/// Parses `--target=` (`cpu`, `cuda`, `cuda:sm_90`, ...). On failure returns
/// null and writes a message listing what is supported into `error`.
std::unique_ptr<Target> parseTarget(StringRef spec, std::string &error,
                                    const GPUCodegenOptions &gpu = {});

std::unique_ptr<Target> createCPUTarget();
/// `chip` must be one of getSupportedCudaChips().
std::unique_ptr<Target> createNVPTXTarget(StringRef chip,
                                          const GPUCodegenOptions &gpu = {});
ArrayRef<StringRef> getSupportedCudaChips();

/// Registers the GPU and NVVM dialects, translations and target attributes
/// the device targets need.
void registerTargetDialects(DialectRegistry &registry);

} // namespace mlir::kiln

#endif // KILN_TARGET_TARGET_H
