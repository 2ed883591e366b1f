//===- kiln-translate.cpp - Kiln's translations ---------------------------===//
//
// `kiln-translate --import-onnx model.onnx` prints the imported onnx-dialect
// module.
//
//===----------------------------------------------------------------------===//

#include "kiln/Import/Onnx/Importer.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::kiln::registerOnnxImportTranslation();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "Kiln translations"));
}
