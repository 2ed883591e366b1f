//===- kilnc.cpp - Kiln's ahead-of-time compiler --------------------------===//
//
//   kilnc model.onnx -o model.so [--target=cpu|cuda[:sm_90a]] [--dump-after=STAGE] [-O N]
//         [--external-weights[=FILE]] [--external-weights-min-bytes=N]
//   kilnc --check model.onnx
//   kilnc --print-pipeline=STAGE [flags]
//
// A client of the compiler's C API (kiln-c/compiler.h), as any embedding
// application is: it reads its command line, sets each flag given as the
// option of the same name, and compiles the model into its output through
// a compiler without a cache (it writes the files asked for). The API's
// text goes to stdout (dumps, pipelines, the report's summary) and stderr
// (diagnostics, --timing); any other failure is printed as "kilnc: ...".
//
//===----------------------------------------------------------------------===//

#include "kiln-c/compiler.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::init(""));
static cl::opt<bool> emitAssembly(
    "S",
    cl::desc("Write the host code's assembly to -o instead of linking "
             "the shared library (CPU kernels' instructions)"),
    cl::init(false));
static cl::opt<std::string> outputFile("o", cl::desc("Output shared library"),
                                       cl::value_desc("model.so"));
static cl::opt<std::string> target("target",
                                   cl::desc("Target: cpu, cuda (one .so "
                                            "with an sm_90a and an sm_80 "
                                            "image, picked at load), "
                                            "cuda:<chip> (one image)"),
                                   cl::init("cpu"));
static cl::opt<bool> gpuTiledContractions(
    "gpu-tiled-contractions",
    cl::desc("GPU targets: two-operand contractions as shared-memory tiled "
             "products (default on)"),
    cl::init(true));
static cl::opt<bool> gpuWarpReductions(
    "gpu-warp-reductions",
    cl::desc("GPU targets: one warp per output for row reductions (default "
             "on; =false: one thread per output)"),
    cl::init(true));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("Rewrite exported attention chains (MatMul, scale, mask, "
             "Softmax, MatMul) into one onnx.Attention each (default: on "
             "for fp16/bf16 builds of targets that run attention as one "
             "kernel, NVIDIA sm_80 and newer; off elsewhere)"),
    cl::init(false));
static cl::opt<bool> gpuRowFusion(
    "gpu-row-fusion",
    cl::desc("GPU targets: chains of row-local ops around row reductions "
             "(normalizations, softmax) as one launch of a block per row "
             "(default on)"),
    cl::init(true));
static cl::opt<bool> gpuDependentLaunch(
    "gpu-dependent-launch",
    cl::desc("GPU targets: every kernel waits for the previous one itself, "
             "and the runtime launches it while that one still runs "
             "(NVIDIA sm_90 and newer: griddepcontrol and programmatic "
             "launches; default off: no gain measured yet, docs/gpu.md)"),
    cl::init(false));
static cl::opt<bool> gpuTensorCores(
    "gpu-tensor-cores",
    cl::desc("GPU targets: f16/bf16 contractions (--precision=fp16|bf16) "
             "and TF32 ones (--precision=tf32) on tensor cores: mma.sync on "
             "sm_80 and newer, wgmma on sm_90a (default on)"),
    cl::init(true));
static cl::opt<bool> gpuAsyncCopy(
    "gpu-async-copy",
    cl::desc("GPU targets: tiled contractions on the matrix instruction "
             "stage their operands through a multi-stage ring of shared "
             "buffers filled by asynchronous copies and read with matrix "
             "fragment loads (cp.async and ldmatrix on sm_80 and newer; "
             "default off)"),
    cl::init(false));
static cl::opt<int64_t> gpuBlockSize(
    "gpu-block-size",
    cl::desc("GPU targets: threads per block of a parallel loop nest (a "
             "multiple of the warp size, at most 1024; default 256)"),
    cl::init(256));
static cl::opt<int64_t> gpuFillBlocks(
    "gpu-fill-blocks",
    cl::desc("GPU targets: blocks that fill the GPU; tiled contractions with "
             "fewer split their K (default 0: the chip's, two per "
             "multiprocessor or compute unit, e.g. 264 for cuda, 608 for "
             "rocm:gfx942)"),
    cl::init(0));
static cl::opt<int64_t> gpuMinThreads(
    "gpu-min-threads",
    cl::desc("GPU targets: unroll a reduction's outputs per thread only "
             "while at least this many threads remain (default 32768)"),
    cl::init(32768));
static cl::opt<std::string> gpuPersistent(
    "gpu-persistent",
    cl::desc("GPU targets: persistent contraction kernels, one block per "
             "multiprocessor looping over output tiles (sm_90a warpgroup "
             "MMA): off, on, or auto (8-bit products of at most 128 "
             "columns, more tiles than multiprocessors, at most 32 K steps, "
             "whose tile's staged "
             "epilogue fits beside the ring; the default)"),
    cl::init("auto"));
static cl::opt<std::string> gpuSplitK(
    "gpu-split-k",
    cl::desc("GPU targets: the target's own contraction kernels (sm_90a "
             "warpgroup MMA) split K over more blocks when their tiles leave "
             "most multiprocessors idle, a second launch adding the parts: "
             "auto (the target's rule, the default) or off"),
    cl::init("auto"));
static cl::opt<std::string> gpuTiles(
    "gpu-tiles",
    cl::desc("GPU targets: the output tiles (BMxBN[/2|/pingpong|/multicast], "
             "comma-separated) the target's own contraction kernels may "
             "choose from (sm_90a warpgroup MMA: 256x128, 128x128, 256x64, "
             "128x64, 192x128; /multicast: clusters of two blocks sharing "
             "an operand tile; default: all measured ones, by the cost "
             "model)"),
    cl::init(""));
static cl::opt<std::string> gpuAttentionBlock(
    "gpu-attention-block",
    cl::desc("GPU targets: the fused attention kernel's block, "
             "WARPSxKEYS[/BLOCKS]: warps (a power of two up to 16, each 16 "
             "query rows on NVIDIA), keys a step (a multiple of 16 up to "
             "256) and optionally the blocks a multiprocessor must take (a "
             "register bound); default: the kernel's own (4x64, /4 where it "
             "quantizes its output)"),
    cl::init(""));
static cl::opt<std::string>
    dumpAfter("dump-after",
              cl::desc("Print the IR after a stage (import, graph, lower, "
                       "kernels, host, bufferize, codegen, llvm) to stdout"),
              cl::init(""));
static cl::opt<std::string> printPipeline(
    "print-pipeline",
    cl::desc("Print the pass pipeline of a stage (graph, lower, kernels, host, "
             "bufferize, codegen, llvm) as the other flags build it, in "
             "kiln-opt's --dump-pass-pipeline form, to stdout; without a "
             "model, only that"),
    cl::value_desc("STAGE"), cl::init(""));
static cl::opt<std::string>
    reportFile("report",
               cl::desc("Write the compile report (kernels, ONNX nodes, "
                        "FLOPs, bytes, arena) as JSON to this file and print "
                        "a summary"),
               cl::value_desc("FILE.json"), cl::init(""));
static cl::opt<std::string> deviceImageFile(
    "save-device-image",
    cl::desc("Also write the device code the model embeds (cuda: a fatbin, "
             "rocm: an AMDGPU code object) to this file, e.g. for a "
             "disassembler"),
    cl::value_desc("FILE"), cl::init(""));
static cl::list<std::string>
    boundDims("dim",
              cl::desc("Fix a symbolic dimension (ONNX dim_param, or "
                       "<input>:<axis> for an unnamed one) at compile time, "
                       "e.g. --dim seq=128 (repeatable)"),
              cl::value_desc("NAME=VALUE"));
static cl::list<std::string> inputShapes(
    "shapes",
    cl::desc("Fix the shapes of inputs at compile time, e.g. --shapes "
             "x:1x3x48x320,mask:1x48 (repeatable; an input name may contain "
             "':', the shape follows the last one)"),
    cl::value_desc("NAME:DxDx..[,NAME:...]"));
static cl::opt<int> optLevel("O", cl::desc("Optimization level (0-3)"),
                             cl::init(2), cl::Prefix);
static cl::opt<bool>
    checkOnly("check",
              cl::desc("List the model's operators (type, opset, count) and "
                       "whether Kiln supports each, without compiling; exit "
                       "1 if any is unsupported"),
              cl::init(false));
static cl::opt<std::string>
    precision("precision",
              cl::desc("Compute precision: fp32 (default), tf32 (fp32 "
                       "storage; contractions on NVIDIA tensor cores, sm_80 "
                       "and newer, with operands cut to TF32's 10-bit "
                       "mantissa and fp32 accumulation; exact fp32 "
                       "elsewhere), fp16 or bf16 (mixed: half with fp32 "
                       "accumulation and fp32 islands; "
                       "docs/mixed-precision.md), int8 (Conv, MatMul, Gemm "
                       "as int8 products, needs --calibrate; docs/int8.md)"),
              cl::init("fp32"));
static cl::opt<std::string>
    layout("layout",
           cl::desc("Layout of convolutions and pools: target (default: the "
                    "target's choice), nchw or nhwc (channels-last; the "
                    "model's inputs and outputs keep ONNX's layout; "
                    "docs/layout.md)"),
           cl::init("target"));
static cl::list<std::string>
    keepFp32("keep-fp32",
             cl::desc("Keep these ONNX node names or op types in fp32 "
                      "(comma-separated, repeatable)"),
             cl::CommaSeparated, cl::value_desc("NODE|OPTYPE,..."));
static cl::opt<std::string>
    calibrateDir("calibrate",
                 cl::desc("Run the fp32 model on the samples in DIR "
                          "(input_N.pb, or test_data_set_*/input_N.pb) and "
                          "keep in fp32 the ops whose values would overflow "
                          "the half type; with --precision=int8, quantize "
                          "the activations over the ranges seen"),
                 cl::value_desc("DIR"), cl::init(""));
static cl::opt<std::string> calibrationMethod(
    "calibration-method",
    cl::desc("--precision=int8: the activations' ranges from the "
             "calibration: minmax, percentile (99.99% of |x|), "
             "percentile:P or entropy (TensorRT's KL threshold); default "
             "percentile"),
    cl::value_desc("METHOD"), cl::init(""));
static cl::list<std::string>
    int8Exclude("int8-exclude",
                cl::desc("--precision=int8: keep these ONNX node names or op "
                         "types in fp32 (comma-separated, repeatable)"),
                cl::CommaSeparated, cl::value_desc("NODE|OPTYPE,..."));
static cl::opt<int64_t> int8KeepFp32(
    "int8-keep-fp32",
    cl::desc("--precision=int8: keep the N contractions of the largest "
             "estimated quantization error (from the calibration "
             "histograms and the weights) in fp32"),
    cl::value_desc("N"), cl::init(0));
static cl::opt<bool> int8Residuals(
    "int8-residuals",
    cl::desc("--precision=int8: residual Adds (two activations of one shape) "
             "read the quantized value of an activation that contractions "
             "read quantized, so a block's end writes 8 bits only "
             "(default on)"),
    cl::init(true));
static cl::opt<bool> int8Attention(
    "int8-attention",
    cl::desc("--precision=int8 on a target with a fused attention kernel: "
             "quantize attention's Q, K and V to uint8 too (the kernel reads "
             "8-bit operands; default off: not yet faster, docs/int8.md)"),
    cl::init(false));
static cl::opt<bool> f32ConstantDivision(
    "f32-constant-division",
    cl::desc("f32 divisions by a constant (QuantizeLinear's x / scale, "
             "GELU's x / sqrt(2)) as the product by the reciprocal with one "
             "FMA correction: the IEEE quotient for |x| >= 2^-104, within an "
             "ulp below (default on with --precision=int8, off otherwise; a "
             "division that is only rounded to an integer, QuantizeLinear's, "
             "takes it always: there it is exact)"),
    cl::init(false));
static cl::opt<std::string> int8Float(
    "int8-float",
    cl::desc("--precision=int8: what the ops left in float compute in: "
             "auto (default: fp16 on GPU targets, whose half products run on "
             "tensor cores, with fp32 islands as --precision=fp16 makes "
             "them; fp32 on the CPU), fp32, fp16 or bf16"),
    cl::value_desc("TYPE"), cl::init("auto"));
static cl::opt<std::string> calibrationRanges(
    "calibration-ranges",
    cl::desc("With --calibrate: write the recorded ranges to FILE.json; "
             "without it: use the ranges in FILE.json"),
    cl::value_desc("FILE.json"), cl::init(""));
static cl::list<std::string> exposeIntermediates(
    "expose-intermediates",
    cl::desc("Also return intermediate float values as outputs: all of them "
             "(=all), or the values of these nodes"),
    cl::CommaSeparated, cl::value_desc("all|NODE,..."));

static cl::opt<std::string> maxMemory(
    "max-memory",
    cl::desc("Recompute intermediate tensors instead of keeping them until "
             "the arena fits SIZE: bytes with an optional K, M or G suffix "
             "(powers of 1024), or a fraction of the unconstrained peak such "
             "as 0.6x; needs static shapes (--dim, --shapes); "
             "docs/remat.md"),
    cl::value_desc("SIZE"), cl::init(""));
static cl::opt<bool> maxMemoryWeights(
    "max-memory-weights",
    cl::desc("With --max-memory: the budget covers the weights too "
             "(embedded and external); the arena gets SIZE less their bytes, "
             "a fraction is of the unconstrained peak plus the weights, and "
             "weights that alone reach SIZE are an error"),
    cl::init(false));

static cl::opt<bool>
    timing("timing",
           cl::desc("Print to stderr where the compile's time went: import, "
                    "each stage's passes, LLVM's translation, optimizer and "
                    "code generator, the link"),
           cl::init(false));

static cl::opt<std::string> externalWeights(
    "external-weights",
    cl::desc("Keep the initializers of at least --external-weights-min-bytes "
             "bytes in FILE (default: the output's path with .weights for "
             ".so), memory-mapped at model load, plus a manifest FILE.json; "
             "new weights of the same shapes drop in without recompiling "
             "(utils/models/fill_weights.py writes such files)"),
    cl::value_desc("FILE"), cl::ValueOptional, cl::init(""));
static cl::opt<long> externalWeightsMinBytes(
    "external-weights-min-bytes",
    cl::desc("With --external-weights: smaller initializers stay embedded "
             "(and may be folded), default 1024"),
    cl::value_desc("N"), cl::init(1024));

static cl::opt<std::string> modelRuntime(
    "model-runtime",
    cl::desc("The model runtime archive linked into model.so (default: "
             "../lib/libKilnModelRuntime.a next to kilnc); a sanitized "
             "build's, for testing (utils/sanitize.sh)"),
    cl::value_desc("FILE"), cl::Hidden, cl::init(""));

namespace {
struct StatusDeleter {
  void operator()(kiln_status_t *s) const { kiln_status_free(s); }
};
using Status = std::unique_ptr<kiln_status_t, StatusDeleter>;

/// One error line, kilnc's way; returns 1 for `return fail(...)`.
int fail(llvm::StringRef message) {
  llvm::errs() << "kilnc: " << message << "\n";
  return 1;
}

/// The API's text: listings to stdout, diagnostics and timing to stderr.
/// Remembers whether an error was printed (the failed status carries the
/// same messages, not printed twice).
struct Output {
  bool errorPrinted = false;
  static void write(void *user, kiln_compile_output_kind_t kind,
                    const char *text, size_t size) {
    llvm::StringRef s(text, size);
    if (kind == KILN_COMPILE_OUTPUT_LISTING) {
      llvm::outs() << s;
      return;
    }
    llvm::outs().flush();
    llvm::errs() << s;
    if (kind == KILN_COMPILE_OUTPUT_ERROR)
      static_cast<Output *>(user)->errorPrinted = true;
  }
};

/// `kilnc --check`: the operators of the model and whether Kiln supports
/// each; exit 1 when one is not.
int checkModel(const std::string &path) {
  char *report = nullptr;
  size_t unsupported = 0;
  if (Status s{kiln_compiler_check_file(path.c_str(), &report, &unsupported)})
    return fail(kiln_status_message(s.get()));
  llvm::outs() << report;
  kiln_compiler_string_free(report);
  return unsupported ? 1 : 0;
}

/// Sets each flag given on the command line as the API option of its name
/// (the API checks the values, with kilnc's messages); false after printing
/// the first error.
bool setOptions(kiln_compile_options_t *options) {
  auto set = [&](const char *name, const std::string &value) {
    Status s{kiln_compile_options_set(options, name, value.c_str())};
    return s ? (fail(kiln_status_message(s.get())), false) : true;
  };
  auto given = [](const cl::Option &o) { return o.getNumOccurrences() > 0; };
  auto setBool = [&](const char *name, const cl::opt<bool> &flag) {
    return !given(flag) || set(name, flag ? "1" : "0");
  };
  auto setString = [&](const char *name, const cl::opt<std::string> &flag) {
    return !given(flag) || flag.getValue().empty() ||
           set(name, flag.getValue());
  };
  auto setInt = [&](const char *name, const auto &flag) {
    return !given(flag) || set(name, std::to_string(flag.getValue()));
  };
  auto setList = [&](const char *name, const cl::list<std::string> &flag) {
    for (const std::string &v : flag)
      if (!set(name, v))
        return false;
    return true;
  };
  // In the order kilnc has always checked them.
  if (!setString("dump-after", dumpAfter) ||
      !setString("print-pipeline", printPipeline) ||
      !setString("target", target) || !setInt("O", optLevel) ||
      !setString("precision", precision) || !setString("layout", layout) ||
      !setString("max-memory", maxMemory) ||
      !setBool("max-memory-weights", maxMemoryWeights) ||
      !setList("keep-fp32", keepFp32) ||
      !setString("calibration-ranges", calibrationRanges) ||
      !setString("calibrate", calibrateDir) ||
      !setString("calibration-method", calibrationMethod) ||
      !setList("int8-exclude", int8Exclude) ||
      !setInt("int8-keep-fp32", int8KeepFp32) ||
      !setString("int8-float", int8Float) ||
      !setBool("int8-residuals", int8Residuals) ||
      !setBool("int8-attention", int8Attention) ||
      !setBool("f32-constant-division", f32ConstantDivision) ||
      !setBool("gpu-tiled-contractions", gpuTiledContractions) ||
      !setBool("gpu-warp-reductions", gpuWarpReductions) ||
      !setBool("gpu-row-fusion", gpuRowFusion) ||
      !setBool("gpu-dependent-launch", gpuDependentLaunch) ||
      !setBool("fuse-attention", fuseAttention) ||
      !setBool("gpu-tensor-cores", gpuTensorCores) ||
      !setBool("gpu-async-copy", gpuAsyncCopy) ||
      !setInt("gpu-block-size", gpuBlockSize) ||
      !setInt("gpu-fill-blocks", gpuFillBlocks) ||
      !setInt("gpu-min-threads", gpuMinThreads) ||
      !setString("gpu-persistent", gpuPersistent) ||
      !setString("gpu-tiles", gpuTiles) ||
      !setString("gpu-split-k", gpuSplitK) ||
      !setString("gpu-attention-block", gpuAttentionBlock))
    return false;
  // Nodes to expose: one value per node (the flag splits at commas).
  if (given(exposeIntermediates) &&
      !setList("expose-intermediates", exposeIntermediates))
    return false;
  if (printPipeline.empty() && inputFile.empty())
    return fail("no input model (kilnc model.onnx -o model.so)"), false;
  if (outputFile.empty() && dumpAfter.empty() && printPipeline.empty())
    return fail("no output file (-o model.so)"), false;
  if (!setList("dim", boundDims) || !setList("shapes", inputShapes))
    return false;
  if (given(externalWeights) &&
      !set("external-weights",
           externalWeights.empty() ? "1" : externalWeights.getValue()))
    return false;
  return setInt("external-weights-min-bytes", externalWeightsMinBytes) &&
         setString("report", reportFile) &&
         setString("save-device-image", deviceImageFile) &&
         setBool("timing", timing) && setBool("S", emitAssembly) &&
         setString("model-runtime", modelRuntime);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Kiln: ONNX to shared library\n");
  if (checkOnly)
    return checkModel(inputFile);

  kiln_compile_options_t *rawOptions = nullptr;
  if (Status s{kiln_compile_options_create(&rawOptions)})
    return fail(kiln_status_message(s.get()));
  std::unique_ptr<kiln_compile_options_t, void (*)(kiln_compile_options_t *)>
      options(rawOptions, kiln_compile_options_free);
  if (!setOptions(options.get()))
    return 1;

  // --print-pipeline without a model: only the stage's passes.
  if (inputFile.empty()) {
    char *text = nullptr;
    if (Status s{kiln_compile_options_pipeline(options.get(),
                                               printPipeline.c_str(), &text)})
      return fail(kiln_status_message(s.get()));
    llvm::outs() << text;
    kiln_compiler_string_free(text);
    return 0;
  }

  Output output;
  if (Status s{kiln_compile_options_set_output(options.get(), Output::write,
                                               &output)})
    return fail(kiln_status_message(s.get()));
  // No cache: kilnc writes the files it is asked for, every time.
  kiln_compiler_t *rawCompiler = nullptr;
  if (Status s{kiln_compiler_create("", &rawCompiler)})
    return fail(kiln_status_message(s.get()));
  std::unique_ptr<kiln_compiler_t, void (*)(kiln_compiler_t *)> compiler(
      rawCompiler, kiln_compiler_free);
  Status s{kiln_compiler_compile_file_to_file(
      compiler.get(), inputFile.c_str(), options.get(),
      outputFile.empty() ? nullptr : outputFile.c_str())};
  if (!s)
    return 0;
  // Errors at a location were printed as they came; anything else now.
  if (!output.errorPrinted)
    fail(kiln_status_message(s.get()));
  return 1;
}
