//===- kiln-run.cpp - Run a compiled Kiln model on .pb tensors ------------===//
//
//   kiln-run model.so --input x.pb ... [--expect y.pb ...] [--rtol R]
//            [--atol A] [--output-dir DIR] [--benchmark N] [--print]
//            [--verbose] [--weights FILE] [--verify-weights] [--profile FILE]
//            [--threads N]
//
// Every error is one line on stderr prefixed "kiln-run: " and exit code 1.
//
//===----------------------------------------------------------------------===//
#include "TensorProto.h"
#include "kiln-c/runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using kiln::HostTensor;

namespace {

const char kUsage[] =
    "usage: kiln-run MODEL.so [options]\n"
    "\n"
    "Runs a model compiled by kilnc on ONNX TensorProto (.pb) inputs.\n"
    "\n"
    "options:\n"
    "  --input FILE.pb        an input, in signature order (repeat per "
    "input);\n"
    "  --input NAME=FILE.pb   or the input named NAME\n"
    "  --expect FILE.pb       expected output, in signature order (repeat);\n"
    "                         exit code 1 on mismatch\n"
    "  --rtol R, --atol A     tolerances: |got - expected| <= A + "
    "R*|expected|\n"
    "                         (defaults 1e-4 and 1e-5)\n"
    "  --output-dir DIR       write outputs to DIR/output_<i>.pb\n"
    "  --benchmark N          time N runs after warm-up; print median, p90,\n"
    "                         p99 and min in ms\n"
    "  --print                print each output's shape and first values\n"
    "                         (the default without --expect/--output-dir)\n"
    "  --verbose              print the device the model runs on (and its\n"
    "                         weights file)\n"
    "  --weights FILE         the weights file of a model compiled with\n"
    "                         kilnc --external-weights (default: "
    "KILN_WEIGHTS,\n"
    "                         else the one kilnc wrote next to the model)\n"
    "  --verify-weights       check the weights file's data against the\n"
    "                         CRC-32 in its header before running (reads\n"
    "                         the whole file; loading checks the header)\n"
    "  --profile FILE         device models: time every kernel launch with\n"
    "                         device events (no graphs) and append a JSON\n"
    "                         line of per-kernel times to FILE (the instance\n"
    "                         option profile_path)\n"
    "  --threads N            CPU models: run kernels on N threads (the\n"
    "                         process's pool; default KILN_NUM_THREADS, else\n"
    "                         the cores this process may use)\n"
    "  --help                 show this message\n";

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> expects;
  double rtol = 1e-4;
  double atol = 1e-5;
  std::string outputDir;
  std::string weights;
  std::string profile;
  long benchmark = 0;
  long threads = 0;
  bool print = false;
  bool verbose = false;
  bool verifyWeights = false;
};

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: %s\n", message.c_str());
  return 1;
}

bool parseDouble(const std::string &text, double &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && errno == 0 && std::isfinite(out) &&
         out >= 0;
}

/// Returns false with `error` set on bad arguments; `help` when --help.
bool parseArgs(int argc, char **argv, Options &opts, bool &help,
               std::string &error) {
  help = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInlineValue = true;
      }
    }
    auto takeValue = [&](std::string &out) {
      if (hasInlineValue) {
        out = value;
        return true;
      }
      if (i + 1 >= argc) {
        error = "option " + arg + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      help = true;
      return true;
    }
    if (arg == "--input" || arg == "--expect" || arg == "--output-dir" ||
        arg == "--rtol" || arg == "--atol" || arg == "--benchmark" ||
        arg == "--weights" || arg == "--profile" || arg == "--threads") {
      std::string v;
      if (!takeValue(v))
        return false;
      if (arg == "--input") {
        opts.inputs.push_back(v);
      } else if (arg == "--expect") {
        opts.expects.push_back(v);
      } else if (arg == "--output-dir") {
        opts.outputDir = v;
      } else if (arg == "--weights") {
        if (v.empty()) {
          error = "--weights needs a file";
          return false;
        }
        opts.weights = v;
      } else if (arg == "--profile") {
        if (v.empty()) {
          error = "--profile needs a file";
          return false;
        }
        opts.profile = v;
      } else if (arg == "--rtol" || arg == "--atol") {
        double d;
        if (!parseDouble(v, d)) {
          error = arg + " expects a non-negative number, got '" + v + "'";
          return false;
        }
        (arg == "--rtol" ? opts.rtol : opts.atol) = d;
      } else {
        char *end = nullptr;
        errno = 0;
        long n = std::strtol(v.c_str(), &end, 10);
        long limit = arg == "--threads" ? 256 : 100000000;
        if (v.empty() || *end || errno || n <= 0 || n > limit) {
          error = arg + " expects a positive integer" +
                  (arg == "--threads" ? " up to 256" : "") + ", got '" + v +
                  "'";
          return false;
        }
        (arg == "--threads" ? opts.threads : opts.benchmark) = n;
      }
      continue;
    }
    if (arg == "--print" && !hasInlineValue) {
      opts.print = true;
      continue;
    }
    if (arg == "--verbose" && !hasInlineValue) {
      opts.verbose = true;
      continue;
    }
    if (arg == "--verify-weights" && !hasInlineValue) {
      opts.verifyWeights = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      error =
          "unknown option '" + std::string(argv[i]) + "' (see kiln-run --help)";
      return false;
    }
    if (!opts.model.empty()) {
      error = "unexpected argument '" + arg + "' (one model at a time)";
      return false;
    }
    opts.model = arg;
  }
  if (opts.model.empty()) {
    error = "no model given (usage: kiln-run MODEL.so --input X.pb ...)";
    return false;
  }
  return true;
}

std::string shapeString(const int64_t *dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool isFloat(kiln_dtype_t dtype) {
  return dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16 ||
         dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F64 ||
         dtype == KILN_DTYPE_F8E4M3FN || dtype == KILN_DTYPE_F8E4M3FNUZ ||
         dtype == KILN_DTYPE_F8E5M2 || dtype == KILN_DTYPE_F8E5M2FNUZ;
}

std::string formatValue(kiln_dtype_t dtype, double v) {
  char buf[64];
  if (isFloat(dtype))
    std::snprintf(buf, sizeof(buf), "%.6g", v);
  else if (dtype == KILN_DTYPE_BOOL)
    return v != 0 ? "true" : "false";
  else
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

std::string indexString(size_t flat, const std::vector<int64_t> &dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? static_cast<int64_t>(flat % dims[d]) : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
  return shapeString(idx.data(), idx.size());
}

struct OutputRef {
  std::string name;
  kiln_tensor_t *tensor;
};

void printOutput(size_t i, const OutputRef &out, size_t count) {
  kiln_dtype_t dtype = kiln_tensor_dtype(out.tensor);
  size_t n = kiln_tensor_num_elements(out.tensor);
  std::string values;
  for (size_t k = 0; k < n && k < count; ++k)
    values += (k ? ", " : "") +
              formatValue(dtype, kiln::elementAsDouble(
                                     dtype, kiln_tensor_data(out.tensor), k));
  if (n > count)
    values += ", ...";
  std::printf(
      "output %zu ('%s'): %s %s = [%s]\n", i, out.name.c_str(),
      kiln_dtype_name(dtype),
      shapeString(kiln_tensor_dims(out.tensor), kiln_tensor_rank(out.tensor))
          .c_str(),
      values.c_str());
}

/// Compares one output with its expected tensor and prints one line.
bool compareOutput(size_t i, const OutputRef &out, const HostTensor &expected,
                   double rtol, double atol) {
  kiln_dtype_t dtype = kiln_tensor_dtype(out.tensor);
  const int64_t *dims = kiln_tensor_dims(out.tensor);
  size_t rank = kiln_tensor_rank(out.tensor);
  std::printf("output %zu ('%s'): ", i, out.name.c_str());
  if (dtype != expected.dtype) {
    std::printf("MISMATCH dtype %s, expected %s\n", kiln_dtype_name(dtype),
                kiln_dtype_name(expected.dtype));
    return false;
  }
  if (rank != expected.dims.size() ||
      !std::equal(expected.dims.begin(), expected.dims.end(), dims)) {
    std::printf(
        "MISMATCH shape %s, expected %s\n", shapeString(dims, rank).c_str(),
        shapeString(expected.dims.data(), expected.dims.size()).c_str());
    return false;
  }
  size_t n = kiln_tensor_num_elements(out.tensor);
  const void *got = kiln_tensor_data(out.tensor);
  size_t bad = 0, nanInf = 0, firstBad = 0;
  double maxAbs = 0, maxRef = 0, firstGot = 0, firstWant = 0;
  for (size_t k = 0; k < n; ++k) {
    double a = kiln::elementAsDouble(dtype, got, k);
    double b = kiln::elementAsDouble(dtype, expected.data.data(), k);
    bool ok;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
      nanInf += !ok;
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
      nanInf += !ok;
    } else {
      double diff = std::fabs(a - b);
      maxAbs = std::max(maxAbs, diff);
      maxRef = std::max(maxRef, std::fabs(b));
      ok = diff <= atol + rtol * std::fabs(b);
    }
    if (!ok && bad++ == 0) {
      firstBad = k;
      firstGot = a;
      firstWant = b;
    }
  }
  double maxRel = maxRef > 0 ? maxAbs / maxRef : (maxAbs > 0 ? INFINITY : 0);
  if (bad == 0) {
    std::printf("OK max_rel_err=%.3g max_abs_err=%.3g\n", maxRel, maxAbs);
    return true;
  }
  std::printf("MISMATCH %zu of %zu elements differ (first at %s: got %s, "
              "expected %s)",
              bad, n, indexString(firstBad, expected.dims).c_str(),
              formatValue(dtype, firstGot).c_str(),
              formatValue(dtype, firstWant).c_str());
  if (nanInf)
    std::printf(", %zu NaN/Inf mismatches", nanInf);
  std::printf(", max_rel_err=%.3g max_abs_err=%.3g (rtol=%g atol=%g)\n", maxRel,
              maxAbs, rtol, atol);
  return false;
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

/// Outputs of one run, released on scope exit.
struct Outputs {
  std::vector<kiln_tensor_t *> tensors;
  explicit Outputs(size_t n) : tensors(n, nullptr) {}
  ~Outputs() { clear(); }
  void clear() {
    for (kiln_tensor_t *&t : tensors) {
      kiln_tensor_release(t);
      t = nullptr;
    }
  }
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
    std::printf("device: %s\n", kiln_model_device(model.get()));
    if (*kiln_model_weights_path(model.get()))
      std::printf("weights: %s\n", kiln_model_weights_path(model.get()));
    if (std::strcmp(kiln_model_device(model.get()), "cpu") == 0)
      std::printf("threads: %d\n", kiln_get_num_threads());
  }
  kiln_instance_options_t instanceOptions;
  kiln_instance_options_init(&instanceOptions);
  if (!opts.profile.empty()) {
    if (std::strcmp(kiln_model_device(model.get()), "cpu") == 0)
      return fail("--profile times device kernels; this model runs on the "
                  "cpu");
    instanceOptions.profile_path = opts.profile.c_str();
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

  // Assign --input files to signature slots: NAME=FILE by name, the others in
  // order into the slots left.
  std::vector<std::string> files(numInputs);
  std::vector<std::string> positional;
  for (const std::string &spec : opts.inputs) {
    size_t eq = spec.find('=');
    size_t slot = numInputs;
    if (eq != std::string::npos)
      for (size_t i = 0; i < numInputs; ++i)
        if (spec.compare(0, eq, inputInfo[i].name) == 0 &&
            std::strlen(inputInfo[i].name) == eq)
          slot = i;
    if (slot == numInputs) {
      positional.push_back(spec);
      continue;
    }
    if (!files[slot].empty())
      return fail("input " + std::to_string(slot) + " ('" +
                  inputInfo[slot].name + "') given twice");
    files[slot] = spec.substr(eq + 1);
  }
  size_t next = 0;
  for (const std::string &file : positional) {
    while (next < numInputs && !files[next].empty())
      ++next;
    if (next == numInputs) {
      next = numInputs + 1;
      break;
    }
    files[next++] = file;
  }
  if (opts.inputs.size() != numInputs || next > numInputs) {
    std::string names;
    for (size_t i = 0; i < numInputs; ++i)
      names += (i ? ", " : "") + std::string(inputInfo[i].name);
    return fail("model has " + std::to_string(numInputs) + " input" +
                (numInputs == 1 ? "" : "s") + " (" + names + "), got " +
                std::to_string(opts.inputs.size()) + " --input");
  }
  if (!opts.expects.empty() && opts.expects.size() != numOutputs)
    return fail("model has " + std::to_string(numOutputs) + " output" +
                (numOutputs == 1 ? "" : "s") + ", got " +
                std::to_string(opts.expects.size()) + " --expect");

  std::vector<HostTensor> inputs(numInputs), expected(opts.expects.size());
  std::string error;
  for (size_t i = 0; i < numInputs; ++i)
    if (!kiln::readTensorProtoFile(files[i], inputs[i], error))
      return fail(error);
  for (size_t i = 0; i < expected.size(); ++i)
    if (!kiln::readTensorProtoFile(opts.expects[i], expected[i], error))
      return fail(error);

  std::vector<kiln_tensor_view_t> views(numInputs);
  for (size_t i = 0; i < numInputs; ++i)
    views[i] = {inputs[i].dtype, inputs[i].dims.size(), inputs[i].dims.data(),
                inputs[i].data.data()};

  kiln_instance_t *rawInstance = nullptr;
  if (kiln_status_t *status = kiln_instance_create_with_options(
          model.get(), &instanceOptions, &rawInstance))
    return fail(statusText(status));
  std::unique_ptr<kiln_instance_t, InstanceDeleter> instance(rawInstance);

  Outputs outputs(numOutputs);
  if (kiln_status_t *status =
          kiln_instance_run(instance.get(), views.data(), views.size(),
                            outputs.tensors.data(), numOutputs))
    return fail(statusText(status));

  if (opts.benchmark > 0) {
    long warmup = std::max(3L, opts.benchmark / 10);
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(opts.benchmark));
    Outputs scratch(numOutputs);
    for (long r = 0; r < warmup + opts.benchmark; ++r) {
      auto start = std::chrono::steady_clock::now();
      kiln_status_t *status =
          kiln_instance_run(instance.get(), views.data(), views.size(),
                            scratch.tensors.data(), numOutputs);
      auto end = std::chrono::steady_clock::now();
      if (status)
        return fail(statusText(status));
      scratch.clear();
      if (r >= warmup)
        ms.push_back(
            std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::sort(ms.begin(), ms.end());
    auto percentile = [&](double p) {
      size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * ms.size()));
      return ms[std::min(ms.size() - 1, rank ? rank - 1 : 0)];
    };
    double mean = 0;
    for (double v : ms)
      mean += v / ms.size();
    std::printf("benchmark: %ld runs after %ld warm-up: median %.4f ms, "
                "p90 %.4f ms, p99 %.4f ms, min %.4f ms, mean %.4f ms\n",
                opts.benchmark, warmup, percentile(50), percentile(90),
                percentile(99), ms.front(), mean);
  }

  std::vector<OutputRef> refs(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i)
    refs[i] = {outputInfo[i].name, outputs.tensors[i]};

  if (!opts.outputDir.empty()) {
    for (size_t i = 0; i < numOutputs; ++i) {
      HostTensor t;
      t.dtype = kiln_tensor_dtype(refs[i].tensor);
      const int64_t *dims = kiln_tensor_dims(refs[i].tensor);
      t.dims.assign(dims, dims + kiln_tensor_rank(refs[i].tensor));
      t.name = refs[i].name;
      const uint8_t *data =
          static_cast<const uint8_t *>(kiln_tensor_data(refs[i].tensor));
      t.data.assign(data, data + kiln_tensor_byte_size(refs[i].tensor));
      std::string path =
          opts.outputDir + "/output_" + std::to_string(i) + ".pb";
      if (!kiln::writeTensorProtoFile(path, t, error))
        return fail(error);
    }
  }

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
