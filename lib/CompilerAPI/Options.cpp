//===- Options.cpp - kiln_compile_options_set's table ---------------------===//
//
// One row per option, named as kilnc's flag without the dashes; each row
// checks its value and applies it to the CompileOptions / import options
// that kilnc fills from the same flags.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "kiln/Dialect/Onnx/Transforms/CalibrationMethods.h"
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
       // CompileOptions::verify's message, as kilnc prints it.
       CompileOptions c;
       c.precision = v.str();
       if (failed(c.verify(e)))
         return false;
       o.compile.precision = v.str();
       return true;
     }},
    {"layout", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       CompileOptions c;
       c.layout = v.str();
       if (failed(c.verify(e)))
         return false;
       o.compile.layout = v.str();
       return true;
     }},
    {"O", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       int64_t level;
       if (!parseInt("O", v, 0, 3, level, e)) {
         e = "-O must be 0, 1, 2 or 3";
         return false;
       }
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
       // 1/0, or the weights file's path.
       std::string ignored;
       if (parseBool("external-weights", v, o.externalWeights, ignored)) {
         o.externalWeightsFile.clear();
         return true;
       }
       if (v.empty()) {
         e = "external-weights expects 1 or 0, or the weights file's path";
         return false;
       }
       o.externalWeights = true;
       o.externalWeightsFile = v.str();
       return true;
     }},
    {"external-weights-min-bytes", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       long long n = 0;
       if (v.getAsInteger(10, n)) {
         e = "--external-weights-min-bytes expects an integer, got '" +
             v.str() + "'";
         return false;
       }
       if (n < 0) {
         e = "--external-weights-min-bytes must be non-negative";
         return false;
       }
       o.externalWeightsMinBytes = n;
       o.externalWeightsMinBytesSet = true;
       return true;
     }},
    {"expose-intermediates", true,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       SmallVector<StringRef> names;
       v.split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
       for (StringRef n : names)
         o.exposeIntermediates.push_back(n.str());
       setExposeIntermediates(o.compile, o.exposeIntermediates);
       return true;
     }},
    {"calibrate", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       o.calibrateDir = v.str();
       return true;
     }},
    {"calibration-method", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       int8::Method method;
       if (!int8::parseMethod(v, method, e))
         return false;
       o.compile.calibrationMethod = v.str();
       return true;
     }},
    {"int8-exclude", true,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       SmallVector<StringRef> names;
       v.split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
       if (names.empty()) {
         e = "int8-exclude expects ONNX node names or op types";
         return false;
       }
       for (StringRef n : names)
         o.compile.int8Exclude.push_back(n.str());
       return true;
     }},
    {"int8-keep-fp32", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseInt("int8-keep-fp32", v, 0, INT32_MAX,
                       o.compile.int8KeepFp32, e);
     }},
    {"int8-float", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       if (!llvm::is_contained({"auto", "fp32", "fp16", "bf16"}, v)) {
         e = "unknown int8-float '" + v.str() +
             "' (expected auto, fp32, fp16 or bf16)";
         return false;
       }
       o.compile.int8Float = v.str();
       return true;
     }},
    {"int8-residuals", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("int8-residuals", v, o.compile.int8Residuals, e);
     }},
    {"int8-attention", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("int8-attention", v, o.compile.int8Attention, e);
     }},
    {"f32-constant-division", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       bool on = false;
       if (!parseBool("f32-constant-division", v, on, e))
         return false;
       o.compile.f32ConstantDivision = on;
       return true;
     }},
    {"calibration-ranges", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       o.compile.calibrationRanges = v.str();
       return true;
     }},
    {"dump-after", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       auto stages = getStageNames();
       if (!v.empty() && !llvm::is_contained(stages, v)) {
         e = "unknown stage '" + v.str() +
             "' for --dump-after (stages: " + llvm::join(stages, " ") + ")";
         return false;
       }
       o.compile.dumpAfter = v.str();
       return true;
     }},
    {"print-pipeline", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       auto stages = getStageNames();
       if (!v.empty() && !llvm::is_contained(stages, v)) {
         e = "unknown stage '" + v.str() + "' for --print-pipeline (stages: " +
             llvm::join(stages.drop_front(), " ") + ")";
         return false;
       }
       if (v == "import") {
         e = "--print-pipeline: 'import' is not a pass pipeline "
             "(kiln-translate --import-onnx)";
         return false;
       }
       o.compile.printPipeline = v.str();
       return true;
     }},
    {"report", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       o.reportFile = v.str();
       return true;
     }},
    {"save-device-image", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       o.deviceImageFile = v.str();
       return true;
     }},
    {"timing", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("timing", v, o.timing, e);
     }},
    {"S", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("S", v, o.emitAssembly, e);
     }},
    {"model-runtime", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       o.modelRuntime = v.str();
       return true;
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
    {"max-memory-weights", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("max-memory-weights", v, o.compile.maxMemoryWeights, e);
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
    {"fuse-attention", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       bool on = false;
       if (!parseBool("fuse-attention", v, on, e))
         return false;
       o.compile.fuseAttention = on;
       return true;
     }},
    {"gpu-row-fusion", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-row-fusion", v, o.compile.gpu.rowFusion, e);
     }},
    {"gpu-dependent-launch", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-dependent-launch", v,
                        o.compile.gpu.dependentLaunch, e);
     }},
    {"gpu-tensor-cores", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-tensor-cores", v, o.compile.gpu.tensorCores, e);
     }},
    {"gpu-async-copy", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseBool("gpu-async-copy", v, o.compile.gpu.asyncCopy, e);
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
    {"gpu-persistent", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       std::optional<PersistentKernels> p = parsePersistentKernels(v);
       if (!p) {
         e = "gpu-persistent must be off, on or auto, not '" + v.str() + "'";
         return false;
       }
       o.compile.gpu.persistent = *p;
       return true;
     }},
    {"gpu-split-k", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       if (v != "auto" && v != "off") {
         e = "gpu-split-k must be auto or off, not '" + v.str() + "'";
         return false;
       }
       o.compile.gpu.splitK = v == "auto";
       return true;
     }},
    {"gpu-tiles", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseContractionTiles(v, o.compile.gpu.tiles, e);
     }},
    {"gpu-attention-block", false,
     [](kiln_compile_options &o, llvm::StringRef v, std::string &e) {
       return parseAttentionBlock(v, o.compile.gpu.attentionBlock, e);
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
