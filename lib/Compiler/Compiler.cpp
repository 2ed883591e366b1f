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
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::kiln;

/// Optimizes `llvmModule` and writes its object file (or assembly) to
/// `objPath`: x86-64-v2 (a portable baseline) unless `cpu`/`features` name
/// the CPU target's machine, vectors `vectorBits` wide when non-zero.
static LogicalResult emitLLVMModule(Location loc, llvm::Module &llvmModule,
                                    StringRef objPath, int optLevel,
                                    bool assembly, StringRef cpuName,
                                    StringRef features, int64_t vectorBits,
                                    TimingScope &parent) {
  initializeLLVMTargets();
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
  if (!cpuName.empty())
    cpu = cpuName.str();
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, topts, llvm::Reloc::PIC_, std::nullopt,
      optLevel >= 2 ? llvm::CodeGenOptLevel::Aggressive
                    : llvm::CodeGenOptLevel::Default));
  if (!tm)
    return emitError(loc) << "cannot create a target machine for " << tripleStr;
  // Kernels' vectors are as wide as the CPU's registers: without this LLVM
  // splits 512-bit vectors in two on CPUs it tunes for 256 bits.
  if (vectorBits)
    for (llvm::Function &fn : llvmModule)
      if (!fn.isDeclaration())
        fn.addFnAttr("prefer-vector-width", std::to_string(vectorBits));
  llvmModule.setDataLayout(tm->createDataLayout());
  llvmModule.setTargetTriple(triple);
  TimingScope phase = parent.nest("llvm-optimize");
  auto opt = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm.get());
  if (llvm::Error e = opt(&llvmModule))
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
  codegen.run(llvmModule);
  os.flush();
  return success();
}

LogicalResult mlir::kiln::emitObjectFile(ModuleOp module, StringRef objPath,
                                         int optLevel, bool assembly,
                                         TimingScope *timing) {
  Location loc = module.getLoc();
  TimingScope untimed;
  TimingScope &parent = timing ? *timing : untimed;
  TimingScope phase = parent.nest("llvm-translate");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln_model");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  phase.stop();
  StringRef cpu, features;
  if (auto c = module->getAttrOfType<StringAttr>("kiln.cpu"))
    cpu = c.getValue();
  if (auto f = module->getAttrOfType<StringAttr>("kiln.cpu_features"))
    features = f.getValue();
  int64_t vectorBits = 0;
  if (auto bits = module->getAttrOfType<IntegerAttr>("kiln.cpu_vector_bits"))
    vectorBits = bits.getInt();
  return emitLLVMModule(loc, *llvmModule, objPath, optLevel, assembly, cpu,
                        features, vectorBits, parent);
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

/// What generated code defines for one program (ModelABI.h), in the order
/// of kiln_model_program's fields.
static constexpr StringRef kProgramSymbols[] = {"kiln_model_signature",
                                                "kiln_model_main",
                                                "kiln_model_init",
                                                "kiln_model_device_image",
                                                "kiln_model_device_image_size",
                                                "kiln_model_device_image_kind"};

/// Makes image `index`'s module linkable beside the others: its program
/// symbols get names of their own (`<symbol>.image<index>`, kept external
/// so the linker keeps them; returned, null where it defines none) and
/// every other symbol it defines becomes internal (the linker renames
/// clashes).
static SmallVector<llvm::GlobalValue *> internalizeProgram(llvm::Module &module,
                                                           unsigned index) {
  SmallVector<llvm::GlobalValue *> program(std::size(kProgramSymbols));
  for (auto [i, name] : llvm::enumerate(kProgramSymbols)) {
    llvm::GlobalValue *gv = module.getNamedValue(name);
    if (gv && !gv->isDeclaration()) {
      gv->setName((name + ".image" + Twine(index)).str());
      program[i] = gv;
    }
  }
  for (llvm::GlobalValue &gv : module.global_values())
    if (!gv.isDeclaration() && !gv.hasLocalLinkage() &&
        !llvm::is_contained(program, &gv) &&
        gv.getName() != "llvm.global_ctors" &&
        gv.getName() != "llvm.global_dtors") {
      gv.setLinkage(llvm::GlobalValue::InternalLinkage);
      gv.setVisibility(llvm::GlobalValue::DefaultVisibility);
    }
  // Constant data (weights, names) is never compared by address: the
  // optimizer's constant merging then keeps one copy of what images share.
  for (llvm::GlobalVariable &gv : module.globals())
    if (gv.isConstant() && gv.hasLocalLinkage() &&
        !llvm::is_contained(program, &gv))
      gv.setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return program;
}

/// Defines kiln_model_programs and kiln_model_num_programs (ModelABI.h)
/// in `module` from each image's program symbols.
static void
defineProgramTable(llvm::Module &module,
                   ArrayRef<SmallVector<llvm::GlobalValue *>> programs) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  // {signature, main, init, image, image_size, image_kind}: pointers.
  auto *entryType = llvm::StructType::get(
      ctx, SmallVector<llvm::Type *>(std::size(kProgramSymbols), ptr));
  SmallVector<llvm::Constant *> entries;
  for (ArrayRef<llvm::GlobalValue *> program : programs) {
    SmallVector<llvm::Constant *> fields;
    for (llvm::GlobalValue *gv : program)
      fields.push_back(gv ? static_cast<llvm::Constant *>(gv)
                          : llvm::ConstantPointerNull::get(ptr));
    entries.push_back(llvm::ConstantStruct::get(entryType, fields));
  }
  auto *tableType = llvm::ArrayType::get(entryType, entries.size());
  auto *table = new llvm::GlobalVariable(
      module, tableType, /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantArray::get(tableType, entries), "kiln_model_programs");
  table->setVisibility(llvm::GlobalValue::HiddenVisibility);
  auto *count = new llvm::GlobalVariable(
      module, i64, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantInt::get(i64, entries.size()), "kiln_model_num_programs");
  count->setVisibility(llvm::GlobalValue::HiddenVisibility);
}

/// A library of several images (getTargetImages): the stages run once per
/// image on a copy of the imported module, each program's host code keeps
/// its symbols to itself, and a program table lists them for the runtime.
/// Dumps, the pipeline listing and the report hooks see the first image.
static LogicalResult compileImages(ModuleOp module, StringRef soPath,
                                   const CompileOptions &options,
                                   ArrayRef<std::string> images) {
  Location loc = module.getLoc();
  TimingScope untimed;
  TimingScope &parent = options.timing ? *options.timing : untimed;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> linked;
  SmallVector<SmallVector<llvm::GlobalValue *>> programs;
  for (auto [index, image] : llvm::enumerate(images)) {
    OwningOpRef<ModuleOp> copy = module.clone();
    CompileOptions o = options;
    o.target = image;
    if (index > 0) {
      o.dump = nullptr;
      o.dumpAfter.clear();
      o.printPipelineTo = nullptr;
      o.afterHost = nullptr;
      o.afterCodegen = nullptr;
    }
    TimingScope imageTiming = parent.nest(image);
    o.timing = &imageTiming;
    if (failed(lowerToLLVMDialect(*copy, o)))
      return emitError(loc) << "the " << image << " image failed";
    TimingScope phase = imageTiming.nest("llvm-translate");
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*copy, llvmContext, "kiln_model");
    if (!llvmModule)
      return emitError(loc)
             << "translation to LLVM IR failed (" << image << ")";
    SmallVector<llvm::GlobalValue *> program =
        internalizeProgram(*llvmModule, index);
    // The linker moves the first image's values into `linked` and copies
    // the others' (external, uniquely named): look them up by name after.
    SmallVector<std::string> names =
        llvm::map_to_vector(program, [](llvm::GlobalValue *gv) {
          return gv ? gv->getName().str() : std::string();
        });
    if (!linked) {
      linked = std::move(llvmModule);
    } else if (llvm::Linker::linkModules(*linked, std::move(llvmModule))) {
      return emitError(loc)
             << "linking the " << image << " image's host code failed";
    }
    SmallVector<llvm::GlobalValue *> resolved;
    for (const std::string &name : names)
      resolved.push_back(name.empty() ? nullptr : linked->getNamedValue(name));
    programs.push_back(std::move(resolved));
  }
  defineProgramTable(*linked, programs);
  // Only the table refers to the programs now.
  for (ArrayRef<llvm::GlobalValue *> program : programs)
    for (llvm::GlobalValue *gv : program)
      if (gv)
        gv->setLinkage(llvm::GlobalValue::InternalLinkage);
  SmallString<128> obj;
  if (llvm::sys::fs::createTemporaryFile("kiln-model", "o", obj))
    return emitError(loc) << "cannot create a temporary file";
  auto cleanup = llvm::scope_exit([&] { llvm::sys::fs::remove(obj); });
  if (failed(emitLLVMModule(loc, *linked, obj, /*optLevel=*/2,
                            /*assembly=*/false, "", "", 0, parent)))
    return failure();
  TimingScope link = parent.nest("link");
  return linkSharedLibrary(module.getContext(), obj, soPath, options);
}

LogicalResult
mlir::kiln::compileToSharedLibrary(ModuleOp module, StringRef soPath,
                                   const CompileOptions &options) {
  SmallVector<std::string> images = getTargetImages(options.target);
  if (images.size() > 1)
    return compileImages(module, soPath, options, images);
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
