//===- Check.cpp - Which operators of a model Kiln supports ---------------===//
//
// `kilnc --check`, kiln_compiler_check and kiln.check: the model's
// operators (subgraphs included) with their opset and count, and whether
// the onnx -> linalg lowering has each (Constant nodes are imported as
// constants). Reads only the ModelProto; nothing is compiled.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Conversion/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::checkOnnxModel(llvm::StringRef bytes, llvm::StringRef name,
                                std::string &report, int64_t &unsupported,
                                std::string &error) {
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error = "'" + name.str() + "' is not an ONNX model";
    return false;
  }
  std::map<std::string, int64_t> opsets;
  for (const auto &o : model.opset_import())
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  // (domain, op type) -> count, in name order.
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  std::function<void(const ::onnx::GraphProto &)> visit =
      [&](const ::onnx::GraphProto &g) {
        for (const auto &n : g.node()) {
          std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
          ++counts[{domain, n.op_type()}];
          for (const auto &a : n.attribute()) {
            if (a.has_g())
              visit(a.g());
            for (const auto &sub : a.graphs())
              visit(sub);
          }
        }
      };
  visit(model.graph());

  auto isSupported = [](const std::string &domain, const std::string &type) {
    return domain.empty() && (type == "Constant" || isOnnxOpLowered(type));
  };
  size_t width = 8;
  for (const auto &[key, n] : counts)
    width = std::max(width, key.second.size() +
                                (key.first.empty() ? 0 : key.first.size() + 1));
  llvm::raw_string_ostream os(report);
  os << llvm::left_justify("operator", width)
     << llvm::formatv("  {0,5}  {1,5}  {2}\n", "opset", "count", "supported");
  int64_t nodes = 0;
  SmallVector<std::string> missing;
  for (const auto &[key, n] : counts) {
    const auto &[domain, type] = key;
    std::string op = domain.empty() ? type : domain + "." + type;
    auto it = opsets.find(domain);
    std::string opset = it == opsets.end() ? "?" : std::to_string(it->second);
    bool ok = isSupported(domain, type);
    if (!ok)
      missing.push_back(op);
    nodes += n;
    os << llvm::left_justify(op, width)
       << llvm::formatv("  {0,5}  {1,5}  {2}\n", opset, n, ok ? "yes" : "NO");
  }
  os << counts.size() << " operators, " << nodes << " nodes: ";
  if (missing.empty()) {
    os << "all supported\n";
  } else {
    os << missing.size() << " unsupported (";
    llvm::interleaveComma(missing, os);
    os << ")\n";
  }
  unsupported = missing.size();
  return true;
}
