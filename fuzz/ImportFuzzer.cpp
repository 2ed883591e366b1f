//===- ImportFuzzer.cpp - libFuzzer target: the ONNX importer -------------===//
//
// Feeds arbitrary bytes to the importer as a serialized ModelProto, then
// verifies what it built and runs the graph-level shape inference and
// simplification on it (what kilnc does first). A model the importer
// rejects must come back as a diagnostic; a crash, a sanitizer report, a
// hang or unbounded memory is a finding. External data resolves against an
// empty folder, so no input makes the target read a real file.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/Transforms/Passes.h"
#include "kiln/Import/Onnx/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

/// An empty folder for the external-data lookups, made once per process.
const std::string &emptyBaseDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/kiln-fuzz-import-XXXXXX";
    const char *made = mkdtemp(tmpl);
    return std::string(made ? made : "/nonexistent");
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: each input is judged alone (a finding
  // replays from its bytes), and resource blobs do not pile up.
  DialectRegistry registry;
  registry.insert<kiln::onnxops::OnnxDialect, func::FuncDialect,
                  arith::ArithDialect, tensor::TensorDialect>();
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Rejections are expected; keep them off stderr.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      kiln::importOnnxBuffer(&context, bytes, emptyBaseDir(), "fuzz.onnx");
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addNestedPass<func::FuncOp>(kiln::createKilnOnnxInferShapes());
  pm.addNestedPass<func::FuncOp>(kiln::createKilnOnnxSimplify());
  (void)pm.run(*module);
  return 0;
}
