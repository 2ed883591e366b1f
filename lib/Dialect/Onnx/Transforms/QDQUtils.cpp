//===- QDQUtils.cpp - Helpers of kiln-onnx-fuse-qdq -----------------------===//
//
// QDQUtils.h's constants, single users and names.
//
//===----------------------------------------------------------------------===//

#include "QDQUtils.h"

#include "ByteConstants.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;

Value qdq::valuesConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          Type elem, ArrayRef<double> values, StringRef hint) {
  auto type = RankedTensorType::get(shape, elem);
  unsigned width = elem.getIntOrFloatBitWidth();
  std::vector<char> bytes(values.size() * width / 8);
  for (auto [i, v] : llvm::enumerate(values)) {
    char *p = bytes.data() + i * width / 8;
    if (elem.isF32()) {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (width == 32) {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
    } else {
      *p = static_cast<char>(static_cast<int64_t>(v));
    }
  }
  return makeBytesConstant(b, loc, type, bytes, hint);
}

Operation *qdq::soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

std::optional<double> qdq::scalarOf(Value v) {
  std::optional<SmallVector<double>> f = getConstantFloatValues(v);
  if (!f || f->size() != 1)
    return std::nullopt;
  return f->front();
}

std::string qdq::hintOf(Operation *op, StringRef suffix) {
  if (auto nl = dyn_cast<NameLoc>(op->getLoc()))
    return (nl.getName().strref() + suffix).str();
  return ("qdq" + suffix).str();
}
