//===- Target.cpp - --target= and registration from the target table ------===//
//
// Nothing here names a target: parsing, the messages listing what is
// supported, dialect and pass registration all walk getTargetTable()
// (Registry.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Target.h"
#include "kiln/Target/GPU/Passes.h"
#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

using namespace mlir;
using namespace mlir::kiln;

/// "<kind>, <kind>:<chip> with chip one of <chips>, ...": each kind, and for
/// one with chips the chips it takes.
static std::string supportedTargets() {
  SmallVector<std::string> parts;
  for (const TargetEntry &t : getTargetTable()) {
    parts.push_back(t.kind.str());
    ArrayRef<StringRef> chips = t.chips();
    if (!chips.empty())
      parts.push_back(
          (t.kind + ":<chip> with chip one of " + llvm::join(chips, ", "))
              .str());
  }
  return llvm::join(parts, ", ");
}

std::unique_ptr<Target> mlir::kiln::parseTarget(StringRef spec,
                                                std::string &error,
                                                const GPUCodegenOptions &gpu) {
  auto [kind, chip] = spec.split(':');
  for (const TargetEntry &t : getTargetTable()) {
    if (t.kind != kind)
      continue;
    ArrayRef<StringRef> chips = t.chips();
    if (chips.empty()) {
      if (!chip.empty())
        break; // a chip for a kind that takes none
      return t.create("", gpu);
    }
    if (chip.empty())
      chip = t.defaultChip;
    if (llvm::is_contained(chips, chip))
      return t.create(chip, gpu);
    error = ("unknown " + t.chipFamily + " chip '" + chip + "' in --target=" +
             spec + " (supported: " + llvm::join(chips, ", ") + ")")
                .str();
    return nullptr;
  }
  error =
      ("unknown target '" + spec + "' (supported: " + supportedTargets() + ")")
          .str();
  return nullptr;
}

SmallVector<std::string> mlir::kiln::getTargetImages(StringRef spec) {
  for (const TargetEntry &t : getTargetTable())
    if (t.kind == spec && !t.defaultImages.empty())
      return llvm::map_to_vector(t.defaultImages, [&](StringRef chip) {
        return (spec + ":" + chip).str();
      });
  return {spec.str()};
}

void mlir::kiln::initializeLLVMTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    for (const TargetEntry &t : getTargetTable())
      if (t.initializeLLVM)
        t.initializeLLVM();
  });
}

void mlir::kiln::registerTargetDialects(DialectRegistry &registry) {
  initializeLLVMTargets();
  for (const TargetEntry &t : getTargetTable())
    if (t.registerDialects)
      t.registerDialects(registry);
}

void mlir::kiln::registerKilnTargetPasses() {
  registerKilnTargetGPUPasses();
  for (const TargetEntry &t : getTargetTable()) {
    if (t.registerPasses)
      t.registerPasses();
    if (t.createGPUTargetInfo)
      registerGPUTargetInfo(t.kind, t.defaultChip, t.createGPUTargetInfo);
    std::string spec = t.kind.str();
    std::string description =
        ("Kiln's 'codegen' stage for --target=" + t.kind).str();
    if (!t.defaultChip.empty())
      description += (" (" + t.defaultChip + ")").str();
    PassPipelineRegistration<>(("kiln-" + t.kind + "-codegen-pipeline").str(),
                               description, [spec](OpPassManager &pm) {
                                 std::string error;
                                 std::unique_ptr<Target> target =
                                     parseTarget(spec, error);
                                 assert(target && "a table row parses");
                                 target->buildCodegenPipeline(pm);
                               });
  }
}
