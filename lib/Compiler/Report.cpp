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
#include "kiln/Dialect/Kiln/Transforms/Chunk.h"
#include "kiln/Dialect/Kiln/Transforms/KernelCost.h"
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

static int64_t memrefBytes(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m ? bufferBytes(m) : 0;
}

/// The `precision` section from the plan kiln-mixed-precision or
/// kiln-onnx-insert-qdq leaves on the module (`attrName`): the mode, every
/// decided node with its precision (and why, when fp32), counts per
/// precision and per reason, casts and converted weights.
static std::optional<llvm::json::Object>
precisionReport(ModuleOp module, StringRef attrName = "kiln.precision_plan") {
  auto plan = module->getAttrOfType<DictionaryAttr>(attrName);
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
      // int8 (kiln-onnx-insert-qdq): the activation's range and
      // quantization, the weights' channels and scales.
      for (NamedAttribute f : d) {
        StringRef k = f.getName().getValue();
        if (n.find(k) != n.end())
          continue;
        if (auto s = dyn_cast<StringAttr>(f.getValue()))
          n[k] = s.str();
        else if (auto i = dyn_cast<IntegerAttr>(f.getValue()))
          n[k] = i.getInt();
        else if (auto x = dyn_cast<FloatAttr>(f.getValue()))
          n[k] = x.getValueAsDouble();
        else if (auto a = dyn_cast<ArrayAttr>(f.getValue())) {
          llvm::json::Array values;
          for (Attribute e : a)
            if (auto x = dyn_cast<FloatAttr>(e))
              values.push_back(x.getValueAsDouble());
          n[k] = std::move(values);
        }
      }
      nodes.push_back(std::move(n));
    }
  }
  llvm::json::Object counts, reasons;
  for (auto &[k, v] : perPrecision)
    counts[k] = v;
  for (auto &[k, v] : perReason)
    reasons[k] = v;
  llvm::json::Object section{
      {"mode", str(plan.get("precision"))},
      {"nodes", std::move(nodes)},
      {"counts", std::move(counts)},
      {"fp32_reasons", std::move(reasons)},
      {"casts", num("casts")},
      {"converted_constants", num("converted_constants")},
      {"converted_bytes", num("converted_bytes")},
  };
  if (Attribute m = plan.get("calibration_method"))
    section["calibration_method"] = str(m);
  return section;
}

/// The live bytes of the arena at each launch (kiln-plan-memory's ranges
/// and in-place reuse): [{step, kernel, live_bytes}].
static llvm::json::Array memoryTimeline(func::FuncOp host) {
  MemoryPlan plan = computeLiveRanges(host, /*inPlace=*/true);
  SmallVector<int64_t> live = liveBytesTimeline(plan);
  llvm::json::Array timeline;
  int64_t step = 0;
  for (auto [t, op] : llvm::enumerate(plan.ops))
    if (auto launch = dyn_cast<LaunchOp>(op))
      timeline.push_back(llvm::json::Object{{"step", step++},
                                            {"kernel", launch.getKernel()},
                                            {"live_bytes", live[t]}});
  return timeline;
}

/// What kiln-remat did (kilnc --max-memory): the budget, peak and arena
/// before and after, the launches it added (recomputed, or moved to a later
/// use) with their FLOPs, the launches it split into batch chunks (each
/// once, with the number of chunks), the timeline before, and with
/// --max-memory-weights the weights counted and weights + arena.
static std::optional<llvm::json::Object>
rematReport(ModuleOp module, const llvm::json::Object &report) {
  auto remat = module->getAttrOfType<DictionaryAttr>("kiln.remat");
  if (!remat)
    return std::nullopt;
  auto num = [&](StringRef key) -> int64_t {
    auto i = remat.getAs<IntegerAttr>(key);
    return i ? i.getInt() : 0;
  };
  llvm::json::Array recomputed, moved, chunked;
  // A chunked launch is one entry, from its first chunk (the others add
  // their FLOPs to a recomputed or moved one's): its chunks follow it with
  // the same kernel of origin, count and remat.
  std::map<std::tuple<std::string, int64_t, std::string>,
           std::pair<llvm::json::Array *, size_t>>
      open;
  int64_t recomputedFlops = 0;
  if (const llvm::json::Array *kernels = report.getArray("kernels"))
    for (const llvm::json::Value &k : *kernels) {
      const llvm::json::Object *ko = k.getAsObject();
      std::string what = ko->getString("remat").value_or("").str();
      int64_t flops = std::max<int64_t>(ko->getInteger("flops").value_or(0), 0);
      if (what == "recompute")
        recomputedFlops += flops;
      llvm::json::Array *list = what == "recompute" ? &recomputed
                                : what.empty()      ? nullptr
                                                    : &moved;
      const llvm::json::Array *chunk = ko->getArray("chunk");
      if (chunk && chunk->size() == 2) {
        int64_t c = (*chunk)[1].getAsInteger().value_or(0);
        std::string of = ko->getString("chunk_of").value_or("").str();
        auto key = std::make_tuple(of, c, what);
        if ((*chunk)[0].getAsInteger() != 0) {
          if (auto it = open.find(key); list && it != open.end()) {
            llvm::json::Object *entry =
                (*it->second.first)[it->second.second].getAsObject();
            (*entry)["flops"] = entry->getInteger("flops").value_or(0) + flops;
          }
          continue;
        }
        llvm::json::Object entry{{"kernel", of},
                                 {"chunk_kernel", *ko->getString("name")},
                                 {"onnx_nodes", *ko->get("onnx_nodes")},
                                 {"chunks", c}};
        if (ko->get("rows"))
          entry["rows"] = true;
        chunked.push_back(std::move(entry));
        if (list) {
          list->push_back(
              llvm::json::Object{{"kernel", of},
                                 {"onnx_nodes", *ko->get("onnx_nodes")},
                                 {"flops", flops},
                                 {"chunks", c}});
          open[key] = {list, list->size() - 1};
        }
        continue;
      }
      if (!list)
        continue;
      list->push_back(llvm::json::Object{{"kernel", *ko->getString("name")},
                                         {"onnx_nodes", *ko->get("onnx_nodes")},
                                         {"flops", flops}});
    }
  // Every FLOP added (recomputations, and the rows two bands compute) when
  // the pass recorded the program's FLOPs before.
  int64_t extra = recomputedFlops;
  if (auto before = remat.getAs<IntegerAttr>("program_flops_before");
      before && report.getInteger("total_flops").value_or(-1) >= 0)
    extra = *report.getInteger("total_flops") - before.getInt();
  llvm::json::Array before;
  if (auto list = remat.getAs<ArrayAttr>("timeline_before"))
    for (auto [step, a] : llvm::enumerate(list)) {
      auto d = dyn_cast<DictionaryAttr>(a);
      if (!d)
        continue;
      auto kernel = d.getAs<StringAttr>("kernel");
      auto live = d.getAs<IntegerAttr>("live_bytes");
      before.push_back(
          llvm::json::Object{{"step", static_cast<int64_t>(step)},
                             {"kernel", kernel ? kernel.str() : std::string()},
                             {"live_bytes", live ? live.getInt() : 0}});
    }
  int64_t arenaAfter = report.getInteger("arena_bytes").value_or(0);
  llvm::json::Object out{
      {"budget_bytes", num("budget_bytes")},
      {"peak_before", num("peak_before")},
      {"arena_before", num("arena_before")},
      {"peak_after", report.getInteger("peak_live_bytes").value_or(0)},
      {"arena_after", arenaAfter},
      {"recomputed", std::move(recomputed)},
      {"moved", std::move(moved)},
      {"chunked", std::move(chunked)},
      {"extra_flops", extra},
      {"timeline_before", std::move(before)},
  };
  // --max-memory-weights: the weights the budget counted, the arena's share
  // of the budget, and weights plus arena before and after.
  if (remat.get("weights_bytes")) {
    int64_t weights = num("weights_bytes");
    out["weights_bytes"] = weights;
    out["num_weights"] = num("num_weights");
    out["arena_budget_bytes"] = num("arena_budget_bytes");
    out["total_before"] = weights + num("arena_before");
    out["total_after"] = weights + arenaAfter;
  }
  return out;
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
        flops = estimateFlops(fn);
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
      llvm::json::Object k{
          {"name", launch.getKernel().str()},
          {"onnx_nodes", std::move(nodeArray)},
          {"flops", flops},
          {"bytes", bytes},
      };
      if (auto remat = launch->getAttrOfType<StringAttr>("kiln.remat"))
        k["remat"] = remat.str();
      if (auto chunk = launch->getAttrOfType<DenseI64ArrayAttr>(kChunkAttr);
          chunk && chunk.size() == 2) {
        k["chunk"] = llvm::json::Array{chunk[0], chunk[1]};
        if (auto of =
                fn ? fn->getAttrOfType<StringAttr>(kChunkOfAttr) : StringAttr())
          k["chunk_of"] = of.str();
        if (auto rows =
                launch->getAttrOfType<DenseI64ArrayAttr>(kChunkRowsAttr);
            rows && rows.size() == 3)
          k["rows"] = llvm::json::Array{rows[0], rows[1], rows[2]};
      }
      kernels.push_back(std::move(k));
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
  if (host && host.getBody().hasOneBlock()) {
    report["timeline"] = memoryTimeline(host);
    if (std::optional<llvm::json::Object> r = rematReport(module, report))
      report["remat"] = std::move(*r);
  }
  if (std::optional<llvm::json::Object> p = precisionReport(module))
    report["precision"] = std::move(*p);
  // --precision=int8 --int8-float=fp16|bf16: what the quantization left in
  // float, as kiln-mixed-precision decided it.
  if (std::optional<llvm::json::Object> p =
          precisionReport(module, "kiln.float_precision_plan"))
    report["float_precision"] = std::move(*p);
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
  // Device targets: the largest scratch a kernel allocates itself (padded
  // copies, split-K parts, im2col buffers), held while it runs on top of the
  // arena (docs/runtime.md).
  int64_t maxScratch = 0;
  std::string maxScratchKernel;
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
    if (auto sb = fn->getAttrOfType<IntegerAttr>("kiln.scratch_bytes")) {
      (*ko)["scratch_bytes"] = sb.getInt();
      if (sb.getInt() > maxScratch) {
        maxScratch = sb.getInt();
        maxScratchKernel = name->str();
      }
    }
    if (fn->hasAttr("kiln.scratch_dynamic"))
      (*ko)["scratch_dynamic"] = true;
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
  if (maxScratch > 0) {
    (*obj)["device_scratch_bytes"] = maxScratch;
    (*obj)["device_scratch_kernel"] = maxScratchKernel;
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
  bool int8 = p.getString("mode") == "int8";
  if (int8)
    os << "; calibration " << p.getString("calibration_method").value_or("?")
       << "; " << p.getInteger("converted_constants").value_or(0)
       << " weights quantized per channel ("
       << llvm::format("%.2f",
                       p.getInteger("converted_bytes").value_or(0) / 1e6)
       << " MB int8)\n";
  else
    os << "; " << p.getInteger("casts").value_or(0) << " casts; "
       << p.getInteger("converted_constants").value_or(0)
       << " constants converted ("
       << llvm::format("%.2f",
                       p.getInteger("converted_bytes").value_or(0) / 1e6)
       << " MB)\n";
  const llvm::json::Array *nodes = p.getArray("nodes");
  if (!nodes)
    return;
  // int8: each quantized contraction with its activation's range.
  size_t int8Listed = 0;
  for (const llvm::json::Value &n : *nodes) {
    const llvm::json::Object *o = n.getAsObject();
    const llvm::json::Array *range = o ? o->getArray("range") : nullptr;
    if (!int8 || !range || range->size() != 2 || int8Listed == kMaxListed)
      continue;
    ++int8Listed;
    os << "    int8 " << o->getString("node").value_or("?") << " ("
       << o->getString("op").value_or("?") << "): input '"
       << o->getString("input").value_or("?") << "' ["
       << llvm::format("%.4g", (*range)[0].getAsNumber().value_or(0)) << ", "
       << llvm::format("%.4g", (*range)[1].getAsNumber().value_or(0))
       << "] scale " << llvm::format("%.4g", o->getNumber("scale").value_or(0))
       << " zero point " << o->getInteger("zero_point").value_or(0) << "; "
       << o->getInteger("weight_channels").value_or(0) << " weight channels";
    if (std::optional<double> sens = o->getNumber("sensitivity"))
      os << "; sensitivity " << llvm::format("%.3g", *sens) << " (rank "
         << o->getInteger("sensitivity_rank").value_or(0) << ")";
    os << "\n";
  }
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

/// Bytes as KiB under a MiB, else MiB (2 decimals).
static std::string humanBytes(int64_t b) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (b < 1024 * 1024)
    os << llvm::format("%.2f", b / 1024.0) << " KiB";
  else
    os << llvm::format("%.2f", b / (1024.0 * 1024.0)) << " MiB";
  return s;
}

/// One line of a memory timeline: the peak and where, then the live MiB at
/// each step (at most kMaxShown numbers: more steps are shown as the
/// maximum of each run of steps).
static void printTimeline(StringRef label, const llvm::json::Array &timeline,
                          llvm::raw_ostream &os) {
  constexpr size_t kMaxShown = 48;
  if (timeline.empty())
    return;
  SmallVector<int64_t> live;
  int64_t peak = -1;
  size_t peakStep = 0;
  StringRef peakKernel;
  for (const llvm::json::Value &v : timeline) {
    const llvm::json::Object *o = v.getAsObject();
    int64_t b = o ? o->getInteger("live_bytes").value_or(0) : 0;
    if (b > peak) {
      peak = b;
      peakStep = live.size();
      peakKernel = o ? o->getString("kernel").value_or("") : "";
    }
    live.push_back(b);
  }
  size_t per = (live.size() + kMaxShown - 1) / kMaxShown;
  bool kib = peak < 1024 * 1024;
  os << "  " << label << ": " << live.size() << " steps, peak "
     << humanBytes(peak) << " at step " << peakStep << " (" << peakKernel
     << "); live " << (kib ? "KiB" : "MiB")
     << (per > 1 ? " (max of every " + std::to_string(per) + " steps)" : "")
     << ":";
  for (size_t i = 0; i < live.size(); i += per) {
    int64_t m = 0;
    for (size_t j = i; j < std::min(live.size(), i + per); ++j)
      m = std::max(m, live[j]);
    os << " "
       << llvm::format(kib ? "%.1f" : "%.2f", m / (kib ? 1024.0 : 1048576.0));
  }
  os << "\n";
}

/// The remat lines: budget, peak and arena before and after, what was
/// recomputed and what it costs.
static void printRematSummary(const llvm::json::Object &r, int64_t totalFlops,
                              llvm::raw_ostream &os) {
  auto num = [&](StringRef key) { return r.getInteger(key).value_or(0); };
  const llvm::json::Array *re = r.getArray("recomputed");
  const llvm::json::Array *mv = r.getArray("moved");
  const llvm::json::Array *ch = r.getArray("chunked");
  int64_t extra = num("extra_flops");
  os << "  memory budget " << humanBytes(num("budget_bytes")) << ": peak "
     << humanBytes(num("peak_before")) << " -> "
     << humanBytes(num("peak_after")) << ", arena "
     << humanBytes(num("arena_before")) << " -> "
     << humanBytes(num("arena_after")) << "; " << (re ? re->size() : 0)
     << " launches recomputed (+" << llvm::format("%.3f", extra / 1e9)
     << " GFLOP";
  if (totalFlops > extra && extra > 0)
    os << ", +" << llvm::format("%.1f", 100.0 * extra / (totalFlops - extra))
       << "%";
  os << "), " << (mv ? mv->size() : 0) << " moved";
  if (ch && !ch->empty())
    os << ", " << ch->size() << " chunked";
  os << "\n";
  if (r.get("weights_bytes"))
    os << "    weights in the budget: " << num("num_weights") << " weights "
       << humanBytes(num("weights_bytes")) << ", arena budget "
       << humanBytes(num("arena_budget_bytes")) << "; weights + arena "
       << humanBytes(num("total_before")) << " -> "
       << humanBytes(num("total_after")) << "\n";
  for (const llvm::json::Array *list : {re, mv, ch}) {
    if (!list)
      continue;
    for (const llvm::json::Value &k : *list) {
      const llvm::json::Object *ko = k.getAsObject();
      os << "    "
         << (list == re   ? "recomputed "
             : list == mv ? "moved "
                          : "chunked ")
         << ko->getString("kernel").value_or("?");
      int64_t chunks = ko->getInteger("chunks").value_or(0);
      if (list == ch && ko->get("rows"))
        os << " (" << chunks << " bands of rows, "
           << ko->getString("chunk_kernel").value_or("?") << "...)";
      else if (list == ch)
        os << " (" << chunks << " x "
           << ko->getString("chunk_kernel").value_or("?") << ")";
      else if (chunks)
        os << " (in " << chunks << " chunks)";
      os << ":";
      if (const llvm::json::Array *nodes = ko->getArray("onnx_nodes")) {
        bool first = true;
        for (const llvm::json::Value &n : *nodes) {
          os << (first ? " " : ", ") << n.getAsString().value_or("");
          first = false;
        }
      }
      if (list == ch) {
        os << "\n";
        continue;
      }
      os << " ["
         << llvm::format("%.3f", ko->getInteger("flops").value_or(0) / 1e6)
         << " MFLOP]\n";
    }
  }
  if (const llvm::json::Array *before = r.getArray("timeline_before"))
    printTimeline("timeline before remat", *before, os);
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
  if (num("device_scratch_bytes") > 0)
    os << "  device scratch: at most "
       << llvm::format("%.2f", mib(num("device_scratch_bytes")))
       << " MiB while one kernel runs ("
       << obj->getString("device_scratch_kernel").value_or("?")
       << "), on top of the arena\n";
  if (const llvm::json::Object *r = obj->getObject("remat"))
    printRematSummary(*r, num("total_flops"), os);
  if (const llvm::json::Array *t = obj->getArray("timeline"))
    printTimeline("timeline", *t, os);
  if (const llvm::json::Object *p = obj->getObject("precision"))
    printPrecisionSummary(*p, os);
  if (const llvm::json::Object *p = obj->getObject("float_precision"))
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
