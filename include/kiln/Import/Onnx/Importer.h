//===- Importer.h - ONNX ModelProto to the onnx dialect ---------*- C++ -*-===//
//
// Reads an ONNX model (a ModelProto, with external-data tensors) into a
// module holding one function, `main_graph`, in the `onnx` dialect:
//  - graph inputs become function arguments; symbolic dims (dim_param) stay
//    dynamic and keep their names in the `kiln.dim_names` argument attribute;
//    `kiln.name` holds the ONNX value name of each argument and result;
//  - initializers and Constant nodes become `arith.constant`s; large ones are
//    dense resources (blobs), never uniqued attributes;
//  - with `externalWeights` set (`kilnc --external-weights`), initializers of
//    at least `minBytes` bytes instead become extra function arguments after
//    the inputs (attribute `kiln.weight_offset`: their byte offset in the
//    weights file), opaque to the graph optimizer, and their bytes are
//    collected for the weights file (docs/runtime.md, "External weights");
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
#include <vector>

namespace mlir::kiln {

/// One initializer kept apart from code (`kilnc --external-weights`): its
/// bytes exactly as ONNX stores raw_data (little endian; bool one byte per
/// element) at a 64-byte-aligned `offset` of the weights file.
struct ExternalWeight {
  std::string name;
  std::string dtype; ///< ModelABI.h spelling: f32, f16, i64, ...
  int32_t onnxType = 0;
  std::vector<int64_t> dims;
  int64_t offset = 0;
  int64_t bytes = 0;
  std::string data;
};

/// The weights file of a model: a 64-byte header (ExternalWeights.cpp) and
/// the weights at their offsets. Filled by the importer.
struct ExternalWeights {
  /// Initializers with fewer bytes stay embedded (shape constants must fold).
  int64_t minBytes = 1024;
  /// Basename of the weights file, recorded in the model's signature.
  std::string fileName = "model.weights";
  std::vector<ExternalWeight> weights;
  /// Size of the whole file and the hash of its layout (names, dtypes,
  /// dims, offsets), set by finalize().
  int64_t fileBytes = 0;
  uint64_t layoutHash = 0;

  static constexpr int64_t kHeaderBytes = 64;
  static constexpr int64_t kAlignment = 64;
  /// Offset the next weight of `bytes` bytes goes to.
  int64_t nextOffset() const;
  /// Computes fileBytes and layoutHash.
  void finalize();
  /// layoutHash as 16 lower-case hex digits.
  std::string layoutHashHex() const;
  /// CRC-32 of the file's bytes after its header (padding and data).
  uint32_t checksum() const;
};

/// Writes the weights file `path` and its manifest `manifestPath` (JSON:
/// name, dtype, dims, offset, bytes of every weight; the contract with
/// utils/models/fill_weights.py). Returns false with `error` set on failure.
bool writeExternalWeights(const ExternalWeights &weights, llvm::StringRef path,
                          llvm::StringRef manifestPath,
                          llvm::StringRef sourceModel, std::string &error);

struct OnnxImportOptions {
  /// Constants with more elements than this become dense resource blobs.
  int64_t maxInlineElements = 16;
  /// Name of the imported model function.
  std::string functionName = "main_graph";
  /// Symbolic dims (ONNX dim_param) fixed to a value at compile time, for
  /// every input and output that uses them (`kilnc --dim seq=128`). A
  /// graph input's dim without a name is named `<input>:<axis>` (so
  /// `--dim x:0=1` fixes it).
  std::map<std::string, int64_t> boundDims;
  /// Whole input shapes fixed at compile time (`kilnc --shapes
  /// x:1x3x48x320`): each dim binds its symbol (its dim_param, or
  /// `<input>:<axis>`); a static dim must equal the model's.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// When set, large initializers become weight arguments collected here
  /// (see above) instead of constants.
  ExternalWeights *externalWeights = nullptr;
};

/// Adds `--dim NAME=VALUE` (`spec`) to `options.boundDims`; false with the
/// message in `error` (naming the flag) when it is not that spelling.
bool addBoundDim(OnnxImportOptions &options, llvm::StringRef spec,
                 std::string &error);
/// Adds `--shapes NAME:DxD...[,NAME:...]` (`list`; an input name may
/// contain ':', the shape follows the last one) to `options.inputShapes`;
/// false with the message in `error` for a bad spelling or an input given
/// twice.
bool addInputShapes(OnnxImportOptions &options, llvm::StringRef list,
                    std::string &error);

/// Reads the model file `path` into `bytes`: a regular file only (a FIFO or
/// a device is refused before it is read); false with the reason in `error`.
bool readModelFile(llvm::StringRef path, std::string &bytes,
                   std::string &error);

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
