//===- Options.cpp - kiln_compile_options_set's table ---------------------===//
//
// One row per option, named as kilnc's flag without the dashes; each row
// checks its value and applies it to the CompileOptions / import options
// that kilnc fills from the same flags.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "kiln/Target/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct OptionRow {
  const char *name;
  bool repeatable;
  bool (*apply)(kiln_compile_options &o, llvm::StringRef value,
                std::string &error);
};

bool parseBool(llvm::StringRef name, llvm::StringRef value, bool &out,
               std::string &error) {
  if (value == "1" || value == "true" || value == "on")
    return out = true, true;
  if (value == "0" || value == "false" || value == "off")
    return out = false, true;
  error =
      name.str() + " expects 1 or 0 (true/false), got '" + value.str() + "'";
  return false;
}

bool parseInt(llvm::StringRef name, llvm::StringRef value, int64_t lo,
              int64_t hi, int64_t &out, std::string &error) {
  long long v = 0;
  if (value.getAsInteger(10, v) || v < lo || v > hi) {
    error = name.str() + " expects an integer in [" + std::to_string(lo) +
            ", " + std::to_string(hi) + "], got '" + value.str() + "'";
    return false;
  }
  out = v;
  return true;
}

bool oneOf(llvm::StringRef name, llvm::StringRef value,
           llvm::ArrayRef<llvm::StringRef> allowed, std::string &error) {
  if (llvm::is_contained(allowed, value))
    return true;
  error = name.str() + " expects one of " + llvm::join(allowed, ", ") +
          ", got '" + value.str() + "'";
  return false;
}

const OptionRow kOptions[] = {
    {"target", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       // parseTarget's message lists the kinds and chips.
       if (!parseTarget(v, e, o.compile.gpu))
         return false;
       o.compile.target = v.str();
       return true;
     }},
    {"precision", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       if (!oneOf("precision", v, {"fp32", "tf32", "fp16", "bf16"}, e))
         return false;
       o.compile.precision = v.str();
       return true;
     }},
    {"layout", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       if (!oneOf("layout", v, {"target", "nchw", "nhwc"}, e))
         return false;
       o.compile.layout = v.str();
       return true;
     }},
    {"O", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       int64_t level;
       if (!parseInt("O", v, 0, 3, level, e))
         return false;
       o.compile.optLevel = level;
       return true;
     }},
    {"dim", true,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return addBoundDim(o.import, v, e);
     }},
    {"shapes", true,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return addInputShapes(o.import, v, e);
     }},
    {"keep-fp32", true,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       if (v.empty()) {
         e = "keep-fp32 expects an ONNX node name or op type";
         return false;
       }
       o.compile.keepFp32.push_back(v.str());
       return true;
     }},
    {"external-weights", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("external-weights", v, o.externalWeights, e);
     }},
    {"max-memory", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       int64_t bytes;
       double fraction;
       if (!parseMaxMemory(v, bytes, fraction, e))
         return false;
       o.compile.maxMemory = v.str();
       return true;
     }},
    {"gpu-tiled-contractions", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-tiled-contractions", v,
                        o.compile.gpu.tiledContractions, e);
     }},
    {"gpu-warp-reductions", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-warp-reductions", v, o.compile.gpu.warpReductions,
                        e);
     }},
    {"gpu-tensor-cores", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-tensor-cores", v, o.compile.gpu.tensorCores, e);
     }},
    {"gpu-block-size", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseInt("gpu-block-size", v, 1, 1024, o.compile.gpu.blockSize,
                       e);
     }},
    {"gpu-fill-blocks", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseInt("gpu-fill-blocks", v, 0, INT32_MAX,
                       o.compile.gpu.fillBlocks, e);
     }},
    {"gpu-min-threads", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseInt("gpu-min-threads", v, 0, INT32_MAX,
                       o.compile.gpu.minThreads, e);
     }},
};
} // namespace

bool capi::setOption(kiln_compile_options &options, llvm::StringRef name,
                     llvm::StringRef value, std::string &error) {
  const OptionRow *row = llvm::find_if(
      kOptions, [&](const OptionRow &r) { return name == r.name; });
  if (row == std::end(kOptions)) {
    SmallVector<StringRef> names;
    for (const OptionRow &r : kOptions)
      names.push_back(r.name);
    error = "unknown compile option '" + name.str() +
            "' (known: " + llvm::join(names, ", ") + ")";
    return false;
  }
  // Applied to a copy: a bad value leaves the options unchanged.
  kiln_compile_options updated = options;
  if (!row->apply(updated, value, error))
    return false;
  // A target set after gpu-* options: their values are kept (parseTarget
  // only checked the spelling).
  auto &settings = updated.settings;
  if (!row->repeatable)
    llvm::erase_if(settings, [&](auto &s) { return s.first == row->name; });
  settings.emplace_back(row->name, value.str());
  options = std::move(updated);
  return true;
}
