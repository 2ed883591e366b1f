//===- Report.cpp - The compile report -------------------------------------===//
//
// After the host stage: each kernel with the ONNX nodes it contains, its
// estimated FLOPs and bytes moved, and the arena against the sum of all
// intermediates and the largest set of buffers live at once. With mixed
// precision (kiln-mixed-precision), each node's compute type and, for the
// nodes kept fp32, why.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/MemoryPlan.h"
#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"
#include "kiln/Target/Target.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include <algorithm>
#include <map>
#include <set>
#include <vector>

using namespace mlir;
using namespace mlir::kiln;

/// FLOPs of a linalg op: iterations × arithmetic ops in its body (-1 when a
/// loop range is dynamic).
static int64_t linalgFlops(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t iterations = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return -1;
    iterations *= r;
  }
  int64_t perIteration = 0;
  op->walk([&](Operation *inner) {
    if (inner == op.getOperation())
      return;
    if (isa<arith::ArithDialect, math::MathDialect>(inner->getDialect()) &&
        !isa<arith::ConstantOp, arith::IndexCastOp>(inner))
      ++perIteration;
  });
  if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    perIteration = 2;
  return iterations * perIteration;
}

static int64_t memrefBytes(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m ? bufferBytes(m) : 0;
}

/// The `precision` section from the plan kiln-mixed-precision leaves on the
/// module: the mode, every decided node with its precision (and why, when
/// fp32), counts per precision and per reason, casts and converted weights.
static std::optional<llvm::json::Object> precisionReport(ModuleOp module) {
  auto plan = module->getAttrOfType<DictionaryAttr>("kiln.precision_plan");
  if (!plan)
    return std::nullopt;
  auto str = [](Attribute a) {
    auto s = dyn_cast_or_null<StringAttr>(a);
    return s ? s.str() : std::string();
  };
  auto num = [&](StringRef key) -> int64_t {
    auto i = plan.getAs<IntegerAttr>(key);
    return i ? i.getInt() : 0;
  };
  llvm::json::Array nodes;
  std::map<std::string, int64_t> perPrecision, perReason;
  if (auto arr = plan.getAs<ArrayAttr>("nodes")) {
    for (Attribute a : arr) {
      auto d = dyn_cast<DictionaryAttr>(a);
      if (!d)
        continue;
      llvm::json::Object n{{"node", str(d.get("node"))},
                           {"op", str(d.get("op"))},
                           {"precision", str(d.get("precision"))}};
      ++perPrecision[str(d.get("precision"))];
      if (Attribute r = d.get("reason")) {
        std::string reason = str(r);
        n["reason"] = reason;
        ++perReason[reason.substr(0, reason.find(':'))];
      }
      nodes.push_back(std::move(n));
    }
  }
  llvm::json::Object counts, reasons;
  for (auto &[k, v] : perPrecision)
    counts[k] = v;
  for (auto &[k, v] : perReason)
    reasons[k] = v;
  return llvm::json::Object{
      {"mode", str(plan.get("precision"))},
      {"nodes", std::move(nodes)},
      {"counts", std::move(counts)},
      {"fp32_reasons", std::move(reasons)},
      {"casts", num("casts")},
      {"converted_constants", num("converted_constants")},
      {"converted_bytes", num("converted_bytes")},
  };
}

llvm::json::Value mlir::kiln::buildCompileReport(ModuleOp module) {
  llvm::json::Array kernels;
  func::FuncOp host;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr("kiln.signature_io"))
      host = fn;
  SymbolTable symbols(module);
  int64_t totalFlops = 0, totalBytes = 0;
  bool flopsKnown = true, bytesKnown = true;
  if (host) {
    host.walk([&](LaunchOp launch) {
      auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
      llvm::SetVector<std::string, std::vector<std::string>,
                      std::set<std::string>>
          nodes;
      int64_t flops = 0;
      if (fn) {
        collectNodeNames(fn, nodes);
        fn.walk([&](linalg::LinalgOp op) {
          int64_t f = linalgFlops(op);
          flops = (f < 0 || flops < 0) ? -1 : flops + f;
        });
      }
      int64_t bytes = 0;
      for (Value arg : launch.getArgs()) {
        int64_t b = memrefBytes(arg.getType());
        if (b < 0) {
          bytes = -1;
          break;
        }
        bytes += b;
      }
      flopsKnown &= flops >= 0;
      bytesKnown &= bytes >= 0;
      totalFlops += std::max<int64_t>(flops, 0);
      totalBytes += std::max<int64_t>(bytes, 0);
      llvm::json::Array nodeArray;
      for (const std::string &n : nodes)
        nodeArray.push_back(n);
      kernels.push_back(llvm::json::Object{
          {"name", launch.getKernel().str()},
          {"onnx_nodes", std::move(nodeArray)},
          {"flops", flops},
          {"bytes", bytes},
      });
    });
  }
  auto attr = [&](StringRef name) -> int64_t {
    if (auto a = module->getAttrOfType<IntegerAttr>(name))
      return a.getInt();
    return 0;
  };
  int64_t numKernels = kernels.size();
  llvm::json::Object report{
      {"kernels", std::move(kernels)},
      {"num_kernels", numKernels},
      {"total_flops", flopsKnown ? totalFlops : -1},
      {"total_bytes", bytesKnown ? totalBytes : -1},
      {"arena_bytes", attr("kiln.arena_size")},
      {"intermediate_bytes", attr("kiln.intermediate_bytes")},
      {"peak_live_bytes", attr("kiln.peak_live_bytes")},
  };
  if (std::optional<llvm::json::Object> p = precisionReport(module))
    report["precision"] = std::move(*p);
  return report;
}

bool mlir::kiln::addCodegenToReport(llvm::json::Value &report, ModuleOp module,
                                    const Target *target, std::string &error) {
  llvm::json::Object *obj = report.getAsObject();
  llvm::json::Array *kernels = obj ? obj->getArray("kernels") : nullptr;
  if (!kernels)
    return true;
  llvm::json::Array device;
  if (target) {
    device = target->describeDeviceKernels(module, error);
    if (!error.empty())
      return false;
  }
  SymbolTable symbols(module);
  // Kernels kiln-dedup-kernels folded into an identical one: its code.
  llvm::StringMap<func::FuncOp> aliasOf;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto names = fn->getAttrOfType<ArrayAttr>("kiln.kernel_aliases"))
      for (auto n : names.getAsRange<StringAttr>())
        aliasOf[n.getValue()] = fn;
  for (llvm::json::Value &k : *kernels) {
    llvm::json::Object *ko = k.getAsObject();
    std::optional<StringRef> name = ko ? ko->getString("name") : std::nullopt;
    auto fn = name ? symbols.lookup<func::FuncOp>(*name) : func::FuncOp();
    if (!fn && name && aliasOf.count(*name)) {
      fn = aliasOf[*name];
      (*ko)["code_of"] = fn.getSymName().str();
    }
    if (!fn)
      continue;
    if (auto bits = fn->getAttrOfType<IntegerAttr>("kiln.cpu_vector_bits"))
      (*ko)["vector_bits"] = bits.getInt();
    if (auto par = fn->getAttrOfType<IntegerAttr>("kiln.cpu_parallel"))
      (*ko)["parallel_ops"] = par.getInt();
    // GPU targets: each tiled contraction's problem, tile and instruction.
    if (auto tiles = fn->getAttrOfType<ArrayAttr>("kiln.gpu_contractions")) {
      llvm::json::Array list;
      for (auto t : tiles.getAsRange<StringAttr>())
        list.push_back(t.getValue().str());
      (*ko)["gpu_contractions"] = std::move(list);
    }
    // A kernel whose outputs are all 0-d (a full reduction: a run-time
    // check's min and max of some indices) has no output dim to split.
    if (auto outs = fn->getAttrOfType<IntegerAttr>("kiln.num_outputs")) {
      ArrayRef<Type> args = fn.getArgumentTypes();
      int64_t n = outs.getInt();
      bool scalars = n > 0 && n <= static_cast<int64_t>(args.size());
      for (int64_t i = args.size() - n; scalars && i < (int64_t)args.size();
           ++i) {
        auto t = dyn_cast<MemRefType>(args[i]);
        scalars = t && t.getRank() == 0;
      }
      if (scalars)
        (*ko)["scalar_outputs"] = true;
    }
  }
  if (device.empty())
    return true;
  // A kernel's launches are named <kernel>_kernel, <kernel>_kernel_0, ...
  for (llvm::json::Value &k : *kernels) {
    llvm::json::Object *ko = k.getAsObject();
    std::optional<StringRef> name = ko ? ko->getString("name") : std::nullopt;
    if (!name)
      continue;
    std::string prefix = (*name + "_kernel").str();
    llvm::json::Array mine;
    for (const llvm::json::Value &d : device) {
      StringRef dn = d.getAsObject()->getString("name").value_or("");
      if (dn == prefix || dn.starts_with(prefix + "_"))
        mine.push_back(d);
    }
    if (!mine.empty())
      (*ko)["device_kernels"] = std::move(mine);
  }
  (*obj)["device_kernels"] = std::move(device);
  return true;
}

/// The terminal lines of the precision section: counts, then the nodes kept
/// fp32 with their reasons (at most `kMaxListed`).
static void printPrecisionSummary(const llvm::json::Object &p,
                                  llvm::raw_ostream &os) {
  constexpr size_t kMaxListed = 40;
  os << "  precision " << p.getString("mode").value_or("?") << ":";
  if (const llvm::json::Object *counts = p.getObject("counts")) {
    std::vector<std::pair<std::string, int64_t>> sorted;
    for (const auto &[k, v] : *counts)
      sorted.push_back({k.str(), v.getAsInteger().value_or(0)});
    std::sort(sorted.begin(), sorted.end());
    bool first = true;
    for (auto &[k, v] : sorted) {
      os << (first ? " " : ", ") << v << " nodes " << k;
      first = false;
    }
  }
  if (const llvm::json::Object *reasons = p.getObject("fp32_reasons");
      reasons && !reasons->empty()) {
    std::vector<std::pair<std::string, int64_t>> sorted;
    for (const auto &[k, v] : *reasons)
      sorted.push_back({k.str(), v.getAsInteger().value_or(0)});
    std::sort(sorted.begin(), sorted.end());
    os << " (fp32:";
    bool first = true;
    for (auto &[k, v] : sorted) {
      os << (first ? " " : ", ") << k << " " << v;
      first = false;
    }
    os << ")";
  }
  os << "; " << p.getInteger("casts").value_or(0) << " casts; "
     << p.getInteger("converted_constants").value_or(0)
     << " constants converted ("
     << llvm::format("%.2f", p.getInteger("converted_bytes").value_or(0) / 1e6)
     << " MB)\n";
  const llvm::json::Array *nodes = p.getArray("nodes");
  if (!nodes)
    return;
  size_t listed = 0, kept = 0;
  for (const llvm::json::Value &n : *nodes) {
    const llvm::json::Object *o = n.getAsObject();
    if (!o || !o->getString("reason"))
      continue;
    ++kept;
    if (listed == kMaxListed)
      continue;
    ++listed;
    os << "    fp32 " << o->getString("node").value_or("?") << " ("
       << o->getString("op").value_or("?")
       << "): " << o->getString("reason").value_or("") << "\n";
  }
  if (kept > listed)
    os << "    ... and " << (kept - listed)
       << " more nodes kept fp32 (listed in the JSON report)\n";
}

void mlir::kiln::printReportSummary(const llvm::json::Value &report,
                                    llvm::raw_ostream &os) {
  const llvm::json::Object *obj = report.getAsObject();
  if (!obj)
    return;
  auto num = [&](StringRef key) { return obj->getInteger(key).value_or(0); };
  auto mib = [](int64_t b) { return b / (1024.0 * 1024.0); };
  os << "kilnc report: " << num("num_kernels") << " kernels";
  if (num("total_flops") >= 0)
    os << ", " << llvm::format("%.3f", num("total_flops") / 1e9) << " GFLOP";
  os << "\n  arena " << llvm::format("%.2f", mib(num("arena_bytes")))
     << " MiB; all intermediates "
     << llvm::format("%.2f", mib(num("intermediate_bytes")))
     << " MiB; largest live set "
     << llvm::format("%.2f", mib(num("peak_live_bytes"))) << " MiB\n";
  if (const llvm::json::Object *p = obj->getObject("precision"))
    printPrecisionSummary(*p, os);
  if (const llvm::json::Array *kernels = obj->getArray("kernels")) {
    for (const llvm::json::Value &k : *kernels) {
      const llvm::json::Object *ko = k.getAsObject();
      if (!ko)
        continue;
      os << "  " << ko->getString("name").value_or("?") << ": ";
      if (const llvm::json::Array *nodes = ko->getArray("onnx_nodes")) {
        bool first = true;
        for (const llvm::json::Value &n : *nodes) {
          os << (first ? "" : ", ") << n.getAsString().value_or("");
          first = false;
        }
      }
      int64_t flops = ko->getInteger("flops").value_or(-1);
      int64_t bytes = ko->getInteger("bytes").value_or(-1);
      os << "  [";
      if (flops >= 0)
        os << llvm::format("%.3f", flops / 1e6) << " MFLOP, ";
      else
        os << "? FLOP, ";
      if (bytes >= 0)
        os << llvm::format("%.3f", bytes / 1e6) << " MB";
      else
        os << "? MB";
      if (std::optional<int64_t> bits = ko->getInteger("vector_bits"))
        os << (*bits ? ", " + std::to_string(*bits) + "-bit vectors"
                     : std::string(", scalar"));
      if (std::optional<int64_t> par = ko->getInteger("parallel_ops"))
        os << (*par ? ", " + std::to_string(*par) + " ops on threads"
                    : std::string(", one thread"));
      if (ko->getBoolean("scalar_outputs").value_or(false))
        os << ", 0-d outputs";
      os << "]\n";
      if (const llvm::json::Array *tiles = ko->getArray("gpu_contractions"))
        for (const llvm::json::Value &t : *tiles)
          os << "    contraction " << t.getAsString().value_or("") << "\n";
      // Device kernels: registers, shared memory, occupancy as the target
      // words them (its "summary").
      if (const llvm::json::Array *dev = ko->getArray("device_kernels"))
        for (const llvm::json::Value &d : *dev)
          if (const llvm::json::Object *dobj = d.getAsObject())
            os << "    " << dobj->getString("name").value_or("?") << ": "
               << dobj->getString("summary").value_or("") << "\n";
    }
  }
}
