//===- Compiler.cpp - From the LLVM dialect to model.so -------------------===//
//
// Object emission (LLVM O2 for a portable x86-64 baseline) and the link of the
// object with Kiln's model runtime into a self-contained shared library.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"
#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"
#include "kiln/Dialect/Onnx/Transforms/Passes.h"
#include "kiln/Target/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::kiln;

LogicalResult mlir::kiln::emitObjectFile(ModuleOp module, StringRef objPath,
                                         int optLevel, bool assembly,
                                         TimingScope *timing) {
  Location loc = module.getLoc();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  TimingScope untimed;
  TimingScope &parent = timing ? *timing : untimed;
  TimingScope phase = parent.nest("llvm-translate");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln_model");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  std::string tripleStr = llvm::sys::getDefaultTargetTriple();
  llvm::Triple triple(tripleStr);
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return emitError(loc) << "no LLVM target for '" << tripleStr
                          << "': " << err;
  llvm::TargetOptions topts;
  // The CPU target records its machine (kiln-cpu-codegen); other targets'
  // host code is a portable baseline: the .so must also load on other
  // x86-64 hosts (the GPU machine).
  std::string cpu = triple.isX86() ? "x86-64-v2" : "generic";
  std::string features;
  if (auto c = module->getAttrOfType<StringAttr>("kiln.cpu"))
    cpu = c.str();
  if (auto f = module->getAttrOfType<StringAttr>("kiln.cpu_features"))
    features = f.str();
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, topts, llvm::Reloc::PIC_, std::nullopt,
      optLevel >= 2 ? llvm::CodeGenOptLevel::Aggressive
                    : llvm::CodeGenOptLevel::Default));
  if (!tm)
    return emitError(loc) << "cannot create a target machine for " << tripleStr;
  // Kernels' vectors are as wide as the CPU's registers: without this LLVM
  // splits 512-bit vectors in two on CPUs it tunes for 256 bits.
  if (auto bits = module->getAttrOfType<IntegerAttr>("kiln.cpu_vector_bits"))
    for (llvm::Function &fn : *llvmModule)
      if (!fn.isDeclaration())
        fn.addFnAttr("prefer-vector-width", std::to_string(bits.getInt()));
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(triple);
  phase.stop();
  phase = parent.nest("llvm-optimize");
  auto opt = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm.get());
  if (llvm::Error e = opt(llvmModule.get()))
    return emitError(loc) << "LLVM optimization failed: "
                          << llvm::toString(std::move(e));
  std::error_code ec;
  llvm::raw_fd_ostream os(objPath, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << "cannot write '" << objPath
                          << "': " << ec.message();
  phase.stop();
  phase = parent.nest("llvm-codegen");
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr,
                              assembly ? llvm::CodeGenFileType::AssemblyFile
                                       : llvm::CodeGenFileType::ObjectFile))
    return emitError(loc) << "the target cannot emit object files";
  codegen.run(*llvmModule);
  os.flush();
  return success();
}

LogicalResult mlir::kiln::linkSharedLibrary(MLIRContext *ctx, StringRef objPath,
                                            StringRef soPath,
                                            const CompileOptions &options) {
  Location loc = UnknownLoc::get(ctx);
  if (options.runtimeLibrary.empty() ||
      !llvm::sys::fs::exists(options.runtimeLibrary))
    return emitError(loc) << "Kiln's model runtime library '"
                          << options.runtimeLibrary << "' is missing";
  if (!llvm::sys::fs::can_execute(options.linker))
    return emitError(loc) << "linker '" << options.linker
                          << "' not found (install lld-22)";
  SmallString<128> tmpSo, errFile;
  llvm::sys::fs::createTemporaryFile("kiln-model", "so", tmpSo);
  llvm::sys::fs::createTemporaryFile("kiln-link", "txt", errFile);
  std::string tmpSoStr = tmpSo.str().str();
  SmallString<128> exportsMap(
      llvm::sys::path::parent_path(options.runtimeLibrary));
  llvm::sys::path::append(exportsMap, "KilnModelExports.map");
  std::string versionScript = "--version-script=" + exportsMap.str().str();
  // libgcc.a supplies helpers generated code may call (f16 conversions).
  std::string libgcc = "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a";
  SmallVector<StringRef> args = {options.linker,
                                 "-shared",
                                 "--no-undefined",
                                 "-z",
                                 "noexecstack",
                                 "--gc-sections",
                                 "-o",
                                 tmpSoStr,
                                 objPath,
                                 "--whole-archive",
                                 options.runtimeLibrary,
                                 "--no-whole-archive",
                                 versionScript,
                                 "-L/usr/lib/x86_64-linux-gnu",
                                 "-L/lib/x86_64-linux-gnu",
                                 "-lm",
                                 "-lc",
                                 "-lpthread",
                                 "-ldl",
                                 "-z",
                                 "now"};
  if (llvm::sys::fs::exists(libgcc))
    args.push_back(libgcc);
  // A sanitized runtime (utils/sanitize.sh) lists the sanitizer runtime it
  // needs, one linker argument per line, in KilnModelLinkFlags.txt beside
  // the archive; a normal build writes none.
  SmallString<128> extraFlagsPath(
      llvm::sys::path::parent_path(options.runtimeLibrary));
  llvm::sys::path::append(extraFlagsPath, "KilnModelLinkFlags.txt");
  SmallVector<std::string> extraFlags;
  if (auto buf = llvm::MemoryBuffer::getFile(extraFlagsPath)) {
    SmallVector<StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n', -1, false);
    for (StringRef line : lines)
      if (!line.trim().empty())
        extraFlags.push_back(line.trim().str());
  }
  for (const std::string &flag : extraFlags)
    args.push_back(flag);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(errFile),
                                          StringRef(errFile)};
  std::string execErr;
  int rc = llvm::sys::ExecuteAndWait(options.linker, args, std::nullopt,
                                     redirects, 0, 0, &execErr);
  auto cleanup = llvm::scope_exit([&] {
    llvm::sys::fs::remove(errFile);
    llvm::sys::fs::remove(tmpSo);
  });
  if (rc != 0) {
    std::string msg = execErr;
    if (auto buf = llvm::MemoryBuffer::getFile(errFile))
      msg += (*buf)->getBuffer().str();
    return emitError(loc) << "linking the model failed: " << msg;
  }
  if (std::error_code ec = llvm::sys::fs::copy_file(tmpSo, soPath))
    return emitError(loc) << "cannot write '" << soPath
                          << "': " << ec.message();
  llvm::sys::fs::setPermissions(soPath, llvm::sys::fs::all_read |
                                            llvm::sys::fs::owner_write |
                                            llvm::sys::fs::all_exe);
  return success();
}

LogicalResult
mlir::kiln::compileToSharedLibrary(ModuleOp module, StringRef soPath,
                                   const CompileOptions &options) {
  if (failed(lowerToLLVMDialect(module, options)))
    return failure();
  SmallString<128> obj;
  if (llvm::sys::fs::createTemporaryFile("kiln-model", "o", obj))
    return emitError(module.getLoc()) << "cannot create a temporary file";
  auto cleanup = llvm::scope_exit([&] { llvm::sys::fs::remove(obj); });
  // -O selects Kiln's graph optimizer; machine code is always optimized.
  if (failed(emitObjectFile(module, obj, /*optLevel=*/2, /*assembly=*/false,
                            options.timing)))
    return failure();
  TimingScope untimed;
  TimingScope link = (options.timing ? *options.timing : untimed).nest("link");
  return linkSharedLibrary(module.getContext(), obj, soPath, options);
}
