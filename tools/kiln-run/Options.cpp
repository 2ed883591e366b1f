//===- Options.cpp - kiln-run's command line ------------------------------===//
#include "Options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace kiln::run {

const char kUsage[] =
    "usage: kiln-run MODEL.so [options]\n"
    "\n"
    "Runs a model compiled by kilnc on ONNX TensorProto (.pb) inputs, or on\n"
    "seeded random data for the inputs without one; checks, prints or\n"
    "writes its outputs, benchmarks it and profiles its kernels.\n"
    "\n"
    "inputs:\n"
    "  --input FILE.pb        an input, in signature order (repeat per "
    "input);\n"
    "  --input NAME=FILE.pb   or the input named NAME\n"
    "  --shapes NAME:DxD...   the run shape of an input without a file:\n"
    "                         e.g. x:1x3x224x224,mask:1x48 (repeatable; a "
    "name\n"
    "                         may contain ':', the shape follows the last "
    "one)\n"
    "  --seed N               seed of the random inputs (default 0)\n"
    "outputs:\n"
    "  --expect FILE.pb       expected output, in signature order (repeat);\n"
    "                         exit code 1 on mismatch\n"
    "  --rtol R, --atol A     tolerances: |got - expected| <= A + "
    "R*|expected|\n"
    "                         (defaults 1e-4 and 1e-5)\n"
    "  --output-dir DIR       write outputs to DIR/output_<i>.pb\n"
    "  --print                print each output's shape and first values\n"
    "                         (the default without --expect/--output-dir)\n"
    "benchmark (on when any of these is given):\n"
    "  --warmup-ms MS         run for MS ms before timing (default 200)\n"
    "  --duration S           time runs for S seconds (default 3)\n"
    "  --iterations N         or exactly N runs (--benchmark N: the same)\n"
    "  --export-times F.json  every timed run's latency and the summary\n"
    "profile:\n"
    "  --profile F.json       after the rest, one more run that times every\n"
    "                         kernel launch, written as a Chrome trace\n"
    "                         (chrome://tracing, ui.perfetto.dev)\n"
    "  --report F.json        kilnc --report of the model: names the ONNX\n"
    "                         nodes of each kernel in the trace\n"
    "model:\n"
    "  --weights FILE         the weights file of a model compiled with\n"
    "                         kilnc --external-weights (default: "
    "KILN_WEIGHTS,\n"
    "                         else the one kilnc wrote next to the model)\n"
    "  --verify-weights       check the weights file's data against the\n"
    "                         CRC-32 in its header before running\n"
    "  --threads N            CPU models: run kernels on N threads (the\n"
    "                         process's pool; default KILN_NUM_THREADS, else\n"
    "                         the cores this process may use)\n"
    "  --verbose              print the device the model runs on (and its\n"
    "                         weights file)\n"
    "  --help                 show this message\n";

namespace {

bool parseDouble(const std::string &text, double &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && errno == 0 && std::isfinite(out) &&
         out >= 0;
}

/// A non-negative decimal integer of at most 18 digits (no sign, no
/// spaces), as kilnc --shapes takes it.
bool parseDim(const std::string &text, int64_t &out) {
  if (text.empty() || text.size() > 18)
    return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

} // namespace

bool parseShapes(const std::string &list, std::vector<InputShape> &shapes,
                 std::string &error) {
  size_t start = 0;
  for (;;) {
    size_t comma = list.find(',', start);
    std::string entry = list.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      error = "--shapes expects NAME:DxDx... (e.g. x:1x3x224x224), got '" +
              entry + "'";
      return false;
    }
    InputShape shape{entry.substr(0, colon), {}, entry};
    std::string dims = entry.substr(colon + 1);
    for (size_t at = 0; !dims.empty();) {
      size_t x = dims.find('x', at);
      std::string part =
          dims.substr(at, x == std::string::npos ? std::string::npos : x - at);
      int64_t v = 0;
      if (!parseDim(part, v)) {
        error = "--shapes: '" + entry +
                "' has a dim that is not a non-negative integer ('" + part +
                "')";
        return false;
      }
      shape.dims.push_back(v);
      if (x == std::string::npos)
        break;
      at = x + 1;
    }
    for (const InputShape &other : shapes)
      if (other.name == shape.name) {
        error = "--shapes gives input '" + shape.name + "' twice";
        return false;
      }
    shapes.push_back(std::move(shape));
    if (comma == std::string::npos)
      return true;
    start = comma + 1;
  }
}

bool parseArgs(int argc, char **argv, Options &opts, bool &help,
               std::string &error) {
  help = false;
  bool iterationsGiven = false;
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
    auto positive = [&](const std::string &v, long limit, long &out) {
      char *end = nullptr;
      errno = 0;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || errno || n <= 0 || n > limit) {
        error = arg + " expects a positive integer" +
                (limit < 1000 ? " up to " + std::to_string(limit) : "") +
                ", got '" + v + "'";
        return false;
      }
      out = n;
      return true;
    };
    auto file = [&](const std::string &v, std::string &out) {
      if (v.empty()) {
        error = arg + " needs a file";
        return false;
      }
      out = v;
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      help = true;
      return true;
    }
    static const char *const kWithValue[] = {
        "--input",     "--expect",    "--output-dir", "--rtol",
        "--atol",      "--benchmark", "--iterations", "--duration",
        "--warmup-ms", "--weights",   "--profile",    "--report",
        "--threads",   "--shapes",    "--seed",       "--export-times"};
    bool withValue = false;
    for (const char *name : kWithValue)
      withValue |= arg == name;
    if (withValue) {
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
        if (!file(v, opts.weights))
          return false;
      } else if (arg == "--profile") {
        if (!file(v, opts.profile))
          return false;
      } else if (arg == "--report") {
        if (!file(v, opts.report))
          return false;
      } else if (arg == "--export-times") {
        if (!file(v, opts.exportTimes))
          return false;
        opts.benchmark = true;
      } else if (arg == "--shapes") {
        if (!parseShapes(v, opts.shapes, error))
          return false;
      } else if (arg == "--seed") {
        char *end = nullptr;
        errno = 0;
        unsigned long long n = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || v[0] == '-') {
          error = "--seed expects a non-negative integer, got '" + v + "'";
          return false;
        }
        opts.seed = n;
      } else if (arg == "--rtol" || arg == "--atol" || arg == "--duration" ||
                 arg == "--warmup-ms") {
        double d;
        if (!parseDouble(v, d) || (arg == "--duration" && d == 0)) {
          error = arg + " expects a " +
                  (arg == "--duration" ? "positive" : "non-negative") +
                  " number, got '" + v + "'";
          return false;
        }
        if (arg == "--rtol")
          opts.rtol = d;
        else if (arg == "--atol")
          opts.atol = d;
        else if (arg == "--duration")
          opts.duration = d, opts.durationGiven = true, opts.benchmark = true;
        else
          opts.warmupMs = d, opts.benchmark = true;
      } else if (arg == "--threads") {
        if (!positive(v, 256, opts.threads))
          return false;
      } else {
        if (!positive(v, 100000000, opts.iterations))
          return false;
        iterationsGiven = opts.benchmark = true;
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
    error = "no model given (usage: kiln-run MODEL.so [--input X.pb ...])";
    return false;
  }
  if (iterationsGiven && opts.durationGiven) {
    error = "--iterations (--benchmark) and --duration both say how long to "
            "time; give one";
    return false;
  }
  if (!opts.report.empty() && opts.profile.empty()) {
    error = "--report names the kernels of --profile's trace; give --profile "
            "too";
    return false;
  }
  return true;
}

} // namespace kiln::run
