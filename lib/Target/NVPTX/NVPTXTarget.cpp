//===- NVPTXTarget.cpp - NVIDIA GPUs through NVVM and ptxas ---------------===//
//
// The codegen stage for --target=cuda:<chip>: kernels mapped onto the GPU
// (kiln-map-kernels-to-gpu), outlined into one gpu.module, lowered through
// NVVM to PTX, and assembled by the CUDA toolkit's ptxas into a fatbin that
// holds the cubin for the chip and the PTX (so a newer GPU can JIT it). The
// host side (launches through kiln_rt_launch_cuda) is lowered with the host
// program in the llvm stage.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVPTX/NVPTXTarget.h"
#include "kiln/Target/GPU/Passes.h"
#include "kiln/Target/NVPTX/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The CUDA toolkit whose ptxas, fatbinary and libdevice serialize the
/// kernels: $CUDA_HOME, $CUDA_PATH, else /usr/local/cuda (what the packages
/// install; docs/gpu.md).
std::string cudaToolkitPath() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

struct CudaChip {
  StringRef chip;
  StringRef ptxFeatures; // PTX ISA version the chip needs
};
/// Adding a chip is adding a row (CUDA 13's ptxas has nothing below sm_75).
/// sm_90a: PTX 8.4 (CUDA 12.4), the first ISA whose wgmma takes mixed
/// integer operands (an int8 model's u8 x s8).
const CudaChip kCudaChips[] = {
    {"sm_75", "+ptx80"},  {"sm_80", "+ptx80"},  {"sm_86", "+ptx80"},
    {"sm_89", "+ptx80"},  {"sm_90", "+ptx80"},  {"sm_90a", "+ptx84"},
    {"sm_100", "+ptx86"}, {"sm_120", "+ptx87"},
};

class NVPTXTarget : public Target {
public:
  NVPTXTarget(const CudaChip &chip, const GPUCodegenOptions &gpu)
      : chip(chip), gpu(gpu) {}
  std::string getSpec() const override { return ("cuda:" + chip.chip).str(); }
  bool isDevice() const override { return true; }
  /// Channels-last where convolutions run on warpgroup MMA (sm_90a: the
  /// bulk copies' im2col mode reads NHWC activations, WarpgroupMatch.cpp);
  /// the mma.sync chips keep NCHW (docs/layout.md).
  ConvLayout getConvLayout() const override {
    return chip.chip == "sm_90a" ? ConvLayout::NHWC : ConvLayout::NCHW;
  }
  /// sm_90a's 8-bit warpgroup MMA reads B K-major only: FHWC filters and
  /// [N, K] matmul weights spare each product a transpose launch per run.
  bool wantsKMajorInt8Weights() const override { return chip.chip == "sm_90a"; }
  /// The fused attention kernel (lib/Target/GPU/FlashAttention.cpp) runs
  /// on the matrix instruction: with tensor cores on, on the chips whose
  /// target-info has mma.sync for f16 (sm_80 and newer).
  bool hasFusedAttention() const override {
    return gpu.tensorCores && smVersion() >= 80;
  }
  bool checkToolchain(std::string &error) const override {
    std::string toolkit = cudaToolkitPath();
    for (const char *tool : {"ptxas", "fatbinary"}) {
      std::string path = toolkit + "/bin/" + tool;
      if (!llvm::sys::fs::can_execute(path)) {
        error = "--target=cuda needs the CUDA toolkit's " + std::string(tool) +
                ", not found at " + path +
                " (set CUDA_HOME to the toolkit's folder)";
        return false;
      }
    }
    return true;
  }
  void buildCodegenPipeline(OpPassManager &pm) const override {
    // The tensor cores (mma.sync) come with the chip's target-info.
    addGPUMappingPasses(pm, gpu, ("cuda " + chip.chip).str(),
                        createNVPTXTargetInfo(chip.chip));
    GpuNVVMAttachTargetOptions attach;
    attach.chip = chip.chip.str();
    attach.features = chip.ptxFeatures.str();
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
    OpPassManager &dev = pm.nest<gpu::GPUModuleOp>();
    // GELU's erf before the quantizations' rounding is rewritten (a GELU
    // rounded to an integer takes the short polynomial).
    dev.addPass(createKilnErfComplement());
    // Before arith-expand (the prologue) turns the clamps into selects.
    dev.addPass(createKilnNVPTXQuantizeRounding());
    addDeviceLoweringPrologue(dev);
    // kiln-erf-complement's exponential (the prologue's) without the
    // subnormal guard.
    dev.addPass(createKilnNVPTXFastExp2());
    dev.addPass(createConvertGpuOpsToNVVMOps());
    // convert-gpu-to-nvvm leaves memref accesses to this one.
    dev.addPass(createKilnFinalizeDeviceMemRefs());
    // Tile maps by value (sm_90a kernels), then NVVM's inline-PTX ops
    // (wgmma, mbarrier waits) as llvm.inline_asm.
    dev.addPass(createKilnNVPTXGridConstants());
    dev.addPass(createConvertNVVMToLLVMPass());
    dev.addPass(createCanonicalizerPass());
    dev.addPass(createCSEPass());
    dev.addPass(createReconcileUnrealizedCastsPass());
    // griddepcontrol (sm_90 and newer): each kernel waits for the previous
    // one itself, and the runtime launches it early.
    if (gpu.dependentLaunch && smVersion() >= 90)
      pm.addPass(createKilnNVPTXDependentLaunch());
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "fatbin";
    binary.toolkitPath = cudaToolkitPath();
    pm.addPass(createGpuModuleToBinaryPass(binary));
  }

private:
  /// 90 for sm_90 and sm_90a.
  unsigned smVersion() const {
    unsigned sm = 0;
    (void)chip.chip.drop_front(3)
        .take_while(llvm::isDigit)
        .getAsInteger(10, sm);
    return sm;
  }

  CudaChip chip;
  GPUCodegenOptions gpu;
};
} // namespace

ArrayRef<StringRef> mlir::kiln::getCudaChips() {
  static SmallVector<StringRef> chips = [] {
    SmallVector<StringRef> v;
    for (const CudaChip &c : kCudaChips)
      v.push_back(c.chip);
    return v;
  }();
  return chips;
}

std::unique_ptr<Target>
mlir::kiln::createNVPTXTarget(StringRef chip, const GPUCodegenOptions &gpu) {
  for (const CudaChip &c : kCudaChips)
    if (c.chip == chip)
      return std::make_unique<NVPTXTarget>(c, gpu);
  return nullptr;
}

void mlir::kiln::registerNVPTXPasses() {
  registerKilnTargetNVPTXPasses();
  // The upstream passes the codegen pipeline runs, for kiln-opt.
  registerConvertGpuOpsToNVVMOpsPass();
  registerConvertNVVMToLLVMPass();
}

void mlir::kiln::initializeNVPTXLLVM() {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

void mlir::kiln::registerNVPTXDialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
