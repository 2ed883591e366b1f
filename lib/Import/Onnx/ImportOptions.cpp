//===- ImportOptions.cpp - Spellings of the import options ----------------===//
//
// `--dim NAME=VALUE` and `--shapes NAME:DxD...[,NAME:...]` as kilnc, the
// compiler C API (kiln_compile_options_set "dim" / "shapes") and later
// kiln-run and Python read them: one parser, one set of messages.
//
//===----------------------------------------------------------------------===//

#include "kiln/Import/Onnx/Importer.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::addBoundDim(OnnxImportOptions &options, llvm::StringRef spec,
                             std::string &error) {
  size_t eq = spec.find('=');
  long long v = 0;
  if (eq == llvm::StringRef::npos || eq == 0 ||
      spec.substr(eq + 1).getAsInteger(10, v) || v < 0) {
    error = "--dim expects NAME=VALUE with a non-negative integer, got '" +
            spec.str() + "'";
    return false;
  }
  options.boundDims[spec.substr(0, eq).str()] = v;
  return true;
}

bool mlir::kiln::addInputShapes(OnnxImportOptions &options,
                                llvm::StringRef list, std::string &error) {
  llvm::SmallVector<llvm::StringRef> entries;
  list.split(entries, ',');
  for (llvm::StringRef entry : entries) {
    size_t colon = entry.rfind(':');
    if (colon == llvm::StringRef::npos || colon == 0) {
      error = "--shapes expects NAME:DxDx... (e.g. x:1x3x224x224), got '" +
              entry.str() + "'";
      return false;
    }
    std::string name = entry.take_front(colon).str();
    llvm::StringRef dims = entry.drop_front(colon + 1);
    std::vector<int64_t> shape;
    llvm::SmallVector<llvm::StringRef> parts;
    if (!dims.empty())
      dims.split(parts, 'x');
    for (llvm::StringRef part : parts) {
      long long v = 0;
      if (part.getAsInteger(10, v) || v < 0) {
        error = "--shapes: '" + entry.str() +
                "' has a dim that is not a non-negative integer ('" +
                part.str() + "')";
        return false;
      }
      shape.push_back(v);
    }
    if (!options.inputShapes.emplace(name, std::move(shape)).second) {
      error = "--shapes gives input '" + name + "' twice";
      return false;
    }
  }
  return true;
}
