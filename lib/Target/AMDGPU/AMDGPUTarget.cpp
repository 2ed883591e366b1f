//===- AMDGPUTarget.cpp - AMD GPUs through ROCDL and ld.lld ---------------===//
//
// The codegen stage for --target=rocm:<chip>: kernels mapped onto the GPU
// (kiln-map-kernels-to-gpu with waves of 64 or 32 and MFMA or WMMA),
// outlined into one gpu.module, lowered through ROCDL to LLVM's AMDGPU
// backend, and linked by ld.lld into a code object (hsaco) that the HIP
// driver of the runtime loads. Kernels that call math functions (tanh, erf,
// ...) link the ROCm device libraries' ocml and ockl bitcode.
//
// gpu-module-to-binary finds ld.lld and the bitcode under one "toolkit"
// folder (<dir>/llvm/bin/ld.lld, <dir>/amdgcn/bitcode/*.bc) and wants
// oclc_isa_version_<chip>.bc, which Debian's rocm-device-libs (5.2) has for
// gfx90a but not for gfx942 or gfx1100. Kiln builds that folder once per
// process: links to LLVM 22's ld.lld and to the device libraries, and the
// ISA-version libraries written here (one constant each).
//
//===----------------------------------------------------------------------===//

#include "CodeObject.h"

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"
#include "kiln/Target/GPU/Passes.h"

#include "mlir/Conversion/AMDGPUToROCDL/AMDGPUToROCDL.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/GPUToROCDL/Runtimes.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <mutex>

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// Adding a chip is adding a row (and, for a new generation, its matrix
/// instruction in AMDGPUTargetInfo.cpp).
const RocmChip kRocmChips[] = {
    // MI200 (one graphics compute die of an MI250X).
    {"gfx90a", 64, RocmChip::Matrix::MFMA, 9010, 110, 512, 8, 65536},
    // MI300X.
    {"gfx942", 64, RocmChip::Matrix::MFMA, 9402, 304, 512, 8, 65536},
    // RDNA3 (Radeon RX 7900 XTX: 48 work-group processors).
    // (LDS: a work-group processor's 128 KiB, in work-group-processor mode.)
    {"gfx1100", 32, RocmChip::Matrix::WMMA, 11000, 48, 1536, 16, 131072},
};

/// The folder of the ROCm device libraries' bitcode: $KILN_ROCM_DEVICE_LIBS,
/// else $ROCM_PATH/amdgcn/bitcode, else the first of Debian's and ROCm's
/// usual places that holds ocml.bc.
std::string deviceLibsPath() {
  if (const char *v = std::getenv("KILN_ROCM_DEVICE_LIBS"); v && *v)
    return v;
  SmallVector<std::string> candidates;
  if (const char *v = std::getenv("ROCM_PATH"); v && *v)
    candidates.push_back((Twine(v) + "/amdgcn/bitcode").str());
  candidates.push_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
  candidates.push_back("/usr/lib/amdgcn/bitcode");
  candidates.push_back("/opt/rocm/amdgcn/bitcode");
  for (const std::string &c : candidates)
    if (llvm::sys::fs::exists(c + "/ocml.bc"))
      return c;
  return candidates.front();
}

/// LLVM 22's ld.lld: $KILN_LD_LLD, else LLVM's own bin folder, else
/// ld.lld-22 on the PATH.
std::string lldPath() {
  if (const char *v = std::getenv("KILN_LD_LLD"); v && *v)
    return v;
  if (llvm::sys::fs::can_execute("/usr/lib/llvm-22/bin/ld.lld"))
    return "/usr/lib/llvm-22/bin/ld.lld";
  if (auto p = llvm::sys::findProgramByName("ld.lld-22"))
    return *p;
  return "/usr/lib/llvm-22/bin/ld.lld";
}

/// Writes a bitcode library holding `@name = i32 value` as the device
/// libraries define their control constants.
bool writeConstantLibrary(StringRef path, StringRef name, int value,
                          std::string &error) {
  llvm::LLVMContext context;
  llvm::Module module(name, context);
  module.setTargetTriple(llvm::Triple("amdgcn-amd-amdhsa"));
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  auto *global = new llvm::GlobalVariable(
      module, i32, /*isConstant=*/true, llvm::GlobalValue::LinkOnceODRLinkage,
      llvm::ConstantInt::get(i32, value), name, nullptr,
      llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/4);
  global->setVisibility(llvm::GlobalValue::ProtectedVisibility);
  global->setAlignment(llvm::Align(4));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return false;
  }
  llvm::WriteBitcodeToFile(module, os);
  return true;
}

/// The process's toolkit folder (see the file comment), made on first use
/// and removed at exit.
struct Toolkit {
  std::string path, error;
  ~Toolkit() {
    if (!path.empty())
      (void)llvm::sys::fs::remove_directories(path);
  }
};

const Toolkit &getToolkit() {
  static Toolkit toolkit;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string libs = deviceLibsPath(), lld = lldPath();
    for (const char *lib : {"ocml.bc", "ockl.bc", "hip.bc", "opencl.bc"})
      if (!llvm::sys::fs::exists(libs + "/" + lib)) {
        toolkit.error = "--target=rocm needs the ROCm device libraries (" +
                        libs + "/" + lib +
                        " not found; install rocm-device-libs or set "
                        "KILN_ROCM_DEVICE_LIBS to the folder holding ocml.bc)";
        return;
      }
    if (!llvm::sys::fs::can_execute(lld)) {
      toolkit.error = "--target=rocm needs LLVM 22's ld.lld, not found at " +
                      lld + " (install lld-22 or set KILN_LD_LLD)";
      return;
    }
    SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("kiln-rocm", dir)) {
      toolkit.error = "cannot create a temporary folder: " + ec.message();
      return;
    }
    toolkit.path = dir.str().str();
    SmallString<128> bin(dir), bitcode(dir);
    llvm::sys::path::append(bin, "llvm", "bin");
    llvm::sys::path::append(bitcode, "amdgcn", "bitcode");
    for (StringRef d : {bin.str(), bitcode.str()})
      if (std::error_code ec = llvm::sys::fs::create_directories(d)) {
        toolkit.error = "cannot create " + d.str() + ": " + ec.message();
        return;
      }
    auto link = [&](StringRef from, const Twine &to) {
      if (std::error_code ec = llvm::sys::fs::create_link(from, to))
        toolkit.error = "cannot link " + to.str() + ": " + ec.message();
      return toolkit.error.empty();
    };
    if (!link(lld, bin + "/ld.lld"))
      return;
    for (const char *lib : {"ocml.bc", "ockl.bc", "hip.bc", "opencl.bc"})
      if (!link(libs + "/" + lib, bitcode + "/" + lib))
        return;
    for (const RocmChip &c : kRocmChips) {
      StringRef version = c.chip;
      version.consume_front("gfx");
      if (!writeConstantLibrary(
              (bitcode + "/oclc_isa_version_" + version + ".bc").str(),
              "__oclc_ISA_version", c.isaVersion, toolkit.error))
        return;
    }
  });
  return toolkit;
}

class AMDGPUTarget : public Target {
public:
  AMDGPUTarget(const RocmChip &chip, const GPUCodegenOptions &gpu)
      : chip(chip), gpu(gpu) {}
  std::string getSpec() const override { return ("rocm:" + chip.chip).str(); }
  bool isDevice() const override { return true; }
  /// Channels-last: a tiled convolution then stages both operands with
  /// 128-bit loads (activations along channels, HWCF weights along filters);
  /// in NCHW only 1x1 weights are contiguous along K (docs/layout.md).
  ConvLayout getConvLayout() const override { return ConvLayout::NHWC; }
  bool checkToolchain(std::string &error) const override {
    const Toolkit &toolkit = getToolkit();
    error = toolkit.error;
    return error.empty();
  }
  void buildCodegenPipeline(OpPassManager &pm) const override {
    addGPUMappingPasses(pm, gpu, ("rocm " + chip.chip).str(),
                        createAMDGPUTargetInfo(chip.chip));
    GpuROCDLAttachTargetOptions attach;
    attach.chip = chip.chip.str();
    attach.optLevel = 3;
    attach.wave64Flag = chip.waveSize == 64;
    if (chip.waveSize == 32)
      attach.features = "+wavefrontsize32";
    pm.addPass(createGpuROCDLAttachTarget(attach));
    OpPassManager &dev = pm.nest<gpu::GPUModuleOp>();
    dev.addPass(createKilnErfComplement());
    addDeviceLoweringPrologue(dev);
    ConvertAMDGPUToROCDLPassOptions amdgpu;
    amdgpu.chipset = chip.chip.str();
    dev.addPass(createConvertAMDGPUToROCDLPass(amdgpu));
    ConvertGpuOpsToROCDLOpsOptions rocdl;
    rocdl.chipset = chip.chip.str();
    rocdl.runtime = gpu::amd::Runtime::HIP;
    dev.addPass(createConvertGpuOpsToROCDLOps(rocdl));
    // convert-gpu-to-rocdl calls ocml for the math it knows (tanh, erf,
    // ...) and leaves the rest (exp, sqrt, fma) to LLVM's intrinsics, and
    // memref accesses to kiln-finalize-device-memrefs.
    dev.addPass(createConvertMathToLLVMPass());
    dev.addPass(createKilnFinalizeDeviceMemRefs());
    dev.addPass(createCanonicalizerPass());
    dev.addPass(createCSEPass());
    dev.addPass(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "bin";
    binary.toolkitPath = getToolkit().path;
    pm.addPass(createGpuModuleToBinaryPass(binary));
  }

  /// Each kernel's registers, LDS, scratch and occupancy from the code
  /// object's metadata (CodeObject.cpp).
  llvm::json::Array describeDeviceKernels(ModuleOp module,
                                          std::string &error) const override {
    llvm::json::Array out;
    for (auto binary : module.getOps<gpu::BinaryOp>())
      for (Attribute a : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(a);
        if (!object || object.getFormat() != gpu::CompilationTarget::Binary)
          continue;
        SmallVector<KernelResources> kernels;
        if (!readCodeObject(object.getObject().getValue(), kernels, error))
          return {};
        for (const KernelResources &k : kernels) {
          Occupancy o = computeOccupancy(chip, k);
          std::string summary =
              llvm::formatv("{0} VGPRs, {1} AGPRs, {2} SGPRs, {3} B LDS, "
                            "{4} waves/SIMD ({5})",
                            k.vgprs, k.agprs, k.sgprs, k.ldsBytes,
                            o.wavesPerSimd, o.limit)
                  .str();
          if (k.scratchBytes || k.vgprSpills || k.sgprSpills)
            summary += llvm::formatv(", {0} B scratch, {1}+{2} spills",
                                     k.scratchBytes, k.vgprSpills, k.sgprSpills)
                           .str();
          out.push_back(llvm::json::Object{
              {"name", k.name},
              {"vgprs", k.vgprs},
              {"agprs", k.agprs},
              {"sgprs", k.sgprs},
              {"lds_bytes", k.ldsBytes},
              {"scratch_bytes", k.scratchBytes},
              {"vgpr_spills", k.vgprSpills},
              {"sgpr_spills", k.sgprSpills},
              {"wave_size", k.waveSize},
              {"workgroup_size", k.workgroupSize},
              {"waves_per_simd", o.wavesPerSimd},
              {"occupancy_limit", o.limit},
              {"summary", summary},
          });
        }
      }
    return out;
  }

private:
  RocmChip chip;
  GPUCodegenOptions gpu;
};
} // namespace

const RocmChip *mlir::kiln::lookupRocmChip(StringRef chip) {
  for (const RocmChip &c : kRocmChips)
    if (c.chip == chip)
      return &c;
  return nullptr;
}

ArrayRef<StringRef> mlir::kiln::getRocmChips() {
  static SmallVector<StringRef> chips = [] {
    SmallVector<StringRef> v;
    for (const RocmChip &c : kRocmChips)
      v.push_back(c.chip);
    return v;
  }();
  return chips;
}

std::unique_ptr<Target>
mlir::kiln::createAMDGPUTarget(StringRef chip, const GPUCodegenOptions &gpu) {
  if (const RocmChip *c = lookupRocmChip(chip))
    return std::make_unique<AMDGPUTarget>(*c, gpu);
  return nullptr;
}

void mlir::kiln::registerAMDGPUPasses() {
  registerConvertGpuOpsToROCDLOpsPass();
  registerConvertAMDGPUToROCDLPass();
  registerGpuROCDLAttachTargetPass();
}

void mlir::kiln::initializeAMDGPULLVM() {
  // gpu-module-to-binary looks the AMDGPU backend up by its triple.
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmParser();
  LLVMInitializeAMDGPUAsmPrinter();
}

void mlir::kiln::registerAMDGPUDialects(DialectRegistry &registry) {
  registry
      .insert<gpu::GPUDialect, ROCDL::ROCDLDialect, amdgpu::AMDGPUDialect>();
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
}
