//===- kilnc.cpp - Kiln's ahead-of-time compiler --------------------------===//
//
//   kilnc model.onnx -o model.so [--target=cpu] [--dump-after=STAGE] [-O N]
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Import/Onnx/Importer.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required);
static cl::opt<std::string> outputFile("o", cl::desc("Output shared library"),
                                       cl::value_desc("model.so"));
static cl::opt<std::string> target("target", cl::desc("Target: cpu"),
                                   cl::init("cpu"));
static cl::opt<std::string>
    dumpAfter("dump-after",
              cl::desc("Print the IR after a stage (import, graph, lower, "
                       "kernels, host, bufferize, llvm) to stdout"),
              cl::init(""));
static cl::opt<int> optLevel("O", cl::desc("Optimization level (0-3)"),
                             cl::init(2), cl::Prefix);

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Kiln: ONNX to shared library\n");

  auto stages = kiln::getStageNames();
  if (!dumpAfter.empty() && !llvm::is_contained(stages, dumpAfter)) {
    llvm::errs() << "kilnc: unknown stage '" << dumpAfter
                 << "' for --dump-after (stages:";
    for (auto s : stages)
      llvm::errs() << " " << s;
    llvm::errs() << ")\n";
    return 1;
  }
  if (target != "cpu") {
    llvm::errs() << "kilnc: unknown target '" << target
                 << "' (supported: cpu)\n";
    return 1;
  }
  if (optLevel < 0 || optLevel > 3) {
    llvm::errs() << "kilnc: -O must be 0, 1, 2 or 3\n";
    return 1;
  }
  if (outputFile.empty() && dumpAfter.empty()) {
    llvm::errs() << "kilnc: no output file (-o model.so)\n";
    return 1;
  }

  DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics go to stderr as "location: error: message".
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());

  OwningOpRef<ModuleOp> module = kiln::importOnnxFile(&context, inputFile);
  if (!module)
    return 1;
  if (dumpAfter == "import") {
    module->print(llvm::outs());
    llvm::outs() << "\n";
    if (outputFile.empty())
      return 0;
  }

  kiln::CompileOptions options;
  options.target = target;
  options.optLevel = optLevel;
  options.dumpAfter = dumpAfter;
  options.dump = [](llvm::StringRef, ModuleOp m) {
    m.print(llvm::outs());
    llvm::outs() << "\n";
  };
  std::string exe = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
  llvm::SmallString<256> lib(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(lib, "lib", "libKilnModelRuntime.a");
  options.runtimeLibrary = lib.str().str();

  if (outputFile.empty()) {
    // Dump only: run the stages without emitting code.
    return failed(kiln::lowerToLLVMDialect(*module, options)) ? 1 : 0;
  }
  if (failed(kiln::compileToSharedLibrary(*module, outputFile, options)))
    return 1;
  return 0;
}
