//===- kiln-run.cpp - Run, check, benchmark and profile a Kiln model ------===//
//
//   kiln-run model.so [--input x.pb ...] [--shapes x:1x3x224x224] [--seed N]
//            [--expect y.pb ...] [--rtol R] [--atol A] [--output-dir DIR]
//            [--print] [--warmup-ms MS] [--duration S | --iterations N]
//            [--export-times F.json] [--profile F.json [--report R.json]]
//            [--verbose] [--weights FILE] [--verify-weights] [--threads N]
//
// One run whose outputs are printed, checked or written; then, when asked,
// the benchmark (Benchmark.cpp) and one profiled run (Trace.cpp). Every
// error is one line on stderr prefixed "kiln-run: " and exit code 1.
//
//===----------------------------------------------------------------------===//
#include "Benchmark.h"
#include "Inputs.h"
#include "Options.h"
#include "Outputs.h"
#include "Trace.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace kiln::run;

namespace {

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "kiln-run: %s\n", message.c_str());
  return 1;
}

std::string statusText(kiln_status_t *status) {
  std::string text = kiln_status_message(status);
  kiln_status_free(status);
  return text;
}

struct ModelDeleter {
  void operator()(kiln_model_t *m) const { kiln_model_release(m); }
};
struct InstanceDeleter {
  void operator()(kiln_instance_t *i) const { kiln_instance_release(i); }
};

int runMain(const Options &opts) {
  if (opts.threads > 0)
    kiln_set_num_threads(static_cast<int>(opts.threads));
  kiln_model_t *rawModel = nullptr;
  // Options go through the API; the runtime fills what is left unset from
  // the environment (docs/runtime.md, "Options and environment").
  kiln_model_options_t modelOptions;
  kiln_model_options_init(&modelOptions);
  if (!opts.weights.empty())
    modelOptions.weights_path = opts.weights.c_str();
  if (kiln_status_t *status = kiln_model_load_with_options(
          opts.model.c_str(), &modelOptions, &rawModel))
    return fail(statusText(status));
  std::unique_ptr<kiln_model_t, ModelDeleter> model(rawModel);
  std::string device = kiln_model_device(model.get());
  if (opts.verifyWeights) {
    const char *weights = kiln_model_weights_path(model.get());
    if (!*weights)
      return fail("--verify-weights: model '" + opts.model +
                  "' has no external weights (compiled without "
                  "--external-weights)");
    if (kiln_status_t *status = kiln_weights_verify(weights))
      return fail(statusText(status));
  }
  if (opts.verbose) {
    std::printf("device: %s\n", device.c_str());
    if (*kiln_model_weights_path(model.get()))
      std::printf("weights: %s\n", kiln_model_weights_path(model.get()));
    if (device == "cpu")
      std::printf("threads: %d\n", kiln_get_num_threads());
  }

  size_t numInputs = kiln_model_num_inputs(model.get());
  size_t numOutputs = kiln_model_num_outputs(model.get());
  std::vector<kiln_value_info_t> inputInfo(numInputs), outputInfo(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    if (kiln_status_t *status =
            kiln_model_input_info(model.get(), i, &inputInfo[i]))
      return fail(statusText(status));
  for (size_t i = 0; i < numOutputs; ++i)
    if (kiln_status_t *status =
            kiln_model_output_info(model.get(), i, &outputInfo[i]))
      return fail(statusText(status));
  if (!opts.expects.empty() && opts.expects.size() != numOutputs)
    return fail("model has " + std::to_string(numOutputs) + " output" +
                (numOutputs == 1 ? "" : "s") + ", got " +
                std::to_string(opts.expects.size()) + " --expect");

  Inputs inputs;
  std::string error;
  if (!prepareInputs(opts, inputInfo, inputs, error))
    return fail(error);
  std::vector<kiln::HostTensor> expected(opts.expects.size());
  for (size_t i = 0; i < expected.size(); ++i)
    if (!kiln::readTensorProtoFile(opts.expects[i], expected[i], error))
      return fail(error);
  if (opts.verbose)
    for (size_t i = 0; i < numInputs; ++i)
      if (inputs.random[i])
        std::printf("input %zu ('%s'): random %s %s (seed %llu)\n", i,
                    inputInfo[i].name, kiln_dtype_name(inputs.tensors[i].dtype),
                    shapeString(inputs.tensors[i].dims.data(),
                                inputs.tensors[i].dims.size())
                        .c_str(),
                    static_cast<unsigned long long>(opts.seed));

  std::vector<kiln_tensor_view_t> views(numInputs);
  for (size_t i = 0; i < numInputs; ++i) {
    const kiln::HostTensor &t = inputs.tensors[i];
    views[i] = {t.dtype, t.dims.size(), t.dims.data(), t.data.data()};
  }

  kiln_instance_t *rawInstance = nullptr;
  if (kiln_status_t *status = kiln_instance_create(model.get(), &rawInstance))
    return fail(statusText(status));
  std::unique_ptr<kiln_instance_t, InstanceDeleter> instance(rawInstance);

  Outputs outputs(numOutputs);
  if (kiln_status_t *status =
          kiln_instance_run(instance.get(), views.data(), views.size(),
                            outputs.tensors.data(), numOutputs))
    return fail(statusText(status));

  if (opts.benchmark) {
    BenchmarkResult result;
    if (!runBenchmark(opts, instance.get(), views, numOutputs, device != "cpu",
                      result, error))
      return fail(error);
    printBenchmark(result);
    if (!opts.exportTimes.empty() &&
        !exportTimes(opts.exportTimes, opts, device, result, error))
      return fail(error);
  }
  if (!opts.profile.empty()) {
    std::string summary;
    if (!writeProfile(opts, instance.get(), views, numOutputs, device, summary,
                      error))
      return fail(error);
    std::printf("%s\n", summary.c_str());
  }

  std::vector<OutputRef> refs(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i)
    refs[i] = {outputInfo[i].name, outputs.tensors[i]};
  if (!opts.outputDir.empty() && !writeOutputs(opts.outputDir, refs, error))
    return fail(error);

  bool showSummary =
      opts.print || (opts.expects.empty() && opts.outputDir.empty());
  if (showSummary)
    for (size_t i = 0; i < numOutputs; ++i)
      printOutput(i, refs[i], opts.print ? 16 : 8);

  size_t mismatches = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    mismatches += !compareOutput(i, refs[i], expected[i], opts.rtol, opts.atol);
  std::fflush(stdout);
  if (mismatches)
    return fail(std::to_string(mismatches) + " of " +
                std::to_string(numOutputs) + " output" +
                (numOutputs == 1 ? "" : "s") + " differ from --expect");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  bool help = false;
  std::string error;
  if (!parseArgs(argc, argv, opts, help, error))
    return fail(error);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    return runMain(opts);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}
