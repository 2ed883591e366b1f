//===- Importer.h - ONNX ModelProto to the onnx dialect ---------*- C++ -*-===//
//
// Reads an ONNX model (a ModelProto, with external-data tensors) into a
// module holding one function, `main_graph`, in the `onnx` dialect:
//  - graph inputs become function arguments; symbolic dims (dim_param) stay
//    dynamic and keep their names in the `kiln.dim_names` argument attribute;
//    `kiln.name` holds the ONNX value name of each argument and result;
//  - initializers and Constant nodes become `arith.constant`s; large ones are
//    dense resources (blobs), never uniqued attributes;
//  - every op's location is a NameLoc naming its ONNX node;
//  - opset differences are normalized so passes see one form per op (e.g.
//    `axes` always an input), and the model's opset is recorded in the
//    module attribute `onnx.opset`.
// Errors are emitted as diagnostics on the context; the result is null then.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_IMPORT_ONNX_IMPORTER_H
#define KILN_IMPORT_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>

namespace mlir::kiln {

struct OnnxImportOptions {
  /// Constants with more elements than this become dense resource blobs.
  int64_t maxInlineElements = 16;
  /// Name of the imported model function.
  std::string functionName = "main_graph";
  /// Symbolic dims (ONNX dim_param) fixed to a value at compile time, for
  /// every input and output that uses them (`kilnc --dim seq=128`).
  std::map<std::string, int64_t> boundDims;
};

/// Imports the ONNX model in file `path`. External-data tensors are read
/// relative to the file's folder.
OwningOpRef<ModuleOp> importOnnxFile(MLIRContext *context, llvm::StringRef path,
                                     const OnnxImportOptions &options = {});

/// Imports a serialized ModelProto held in memory; `baseDir` resolves
/// external data; `sourceName` names the model in diagnostics.
OwningOpRef<ModuleOp> importOnnxBuffer(MLIRContext *context,
                                       llvm::StringRef bytes,
                                       llvm::StringRef baseDir,
                                       llvm::StringRef sourceName,
                                       const OnnxImportOptions &options = {});

/// Registers `--import-onnx` with mlir-translate style tools.
void registerOnnxImportTranslation();

} // namespace mlir::kiln

#endif // KILN_IMPORT_ONNX_IMPORTER_H
