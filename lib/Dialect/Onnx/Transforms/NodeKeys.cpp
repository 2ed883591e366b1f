//===- NodeKeys.cpp - Stable names of a function's onnx nodes -------------===//

#include "NodeKeys.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::kiln;

std::string mlir::kiln::onnxNodeName(Operation *op) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto n = dyn_cast<NameLoc>(loc)) {
      name = n.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

StringRef mlir::kiln::onnxOpType(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (!name.consume_front("onnx."))
    return "";
  return name;
}

NodeKeys mlir::kiln::computeNodeKeys(func::FuncOp func) {
  NodeKeys keys;
  llvm::StringSet<> used;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::string name = "input_" + std::to_string(i);
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "kiln.name"))
      name = n.str();
    used.insert(name);
    keys.values[func.getArgument(i)] = name;
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (func.getResultAttr(i, "kiln.exposed"))
      continue;
    if (auto n = func.getResultAttrOfType<StringAttr>(i, "kiln.name"))
      used.insert(n.getValue());
  }
  if (func.getBody().empty())
    return keys;
  for (Operation &op : func.getBody().front()) {
    StringRef type = onnxOpType(&op);
    if (type.empty() || isa<onnxops::NoValueOp>(op))
      continue;
    std::string base = onnxNodeName(&op);
    if (base.empty())
      base = type.str();
    std::string key = base;
    for (int n = 2; used.contains(key); ++n)
      key = base + "#" + std::to_string(n);
    used.insert(key);
    keys.nodes[&op] = key;
    for (OpResult r : op.getResults())
      keys.values[r] = op.getNumResults() == 1
                           ? key
                           : key + ":" + std::to_string(r.getResultNumber());
  }
  return keys;
}
