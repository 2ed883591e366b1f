//===- Precision.cpp - Mixed precision in the driver ----------------------===//
//
// The calibration run of `--calibrate` (the precision passes themselves are
// built with the graph stage, Pipelines.cpp): the fp32 model is compiled
// with every intermediate float value exposed as an output, loaded through the runtime's public C API (kiln-c/runtime.h:
// the samples are read with kiln_tensor_read_file, the weights file is the
// weights_path load option), run on the sample inputs, and each tensor's
// range is written as JSON for kiln-mixed-precision; for --precision=int8
// the samples run twice, the second time for histograms of |x| that
// kiln-onnx-insert-qdq's percentile and entropy methods read.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Dialect/Onnx/Transforms/CalibrationMethods.h"
#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "kiln-c/runtime.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// input_N.pb files of one sample, ordered by N.
using Sample = std::vector<std::string>;

/// The input_N.pb files directly in `dir`, by N.
Sample inputFiles(StringRef dir) {
  std::map<long, std::string> byIndex;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    long n;
    if (name.consume_front("input_") && name.consume_back(".pb") &&
        !name.getAsInteger(10, n))
      byIndex[n] = it->path();
  }
  Sample s;
  for (auto &[n, path] : byIndex)
    s.push_back(path);
  return s;
}

struct TensorStats {
  double min = INFINITY, max = -INFINITY, absmax = 0;
  int64_t count = 0, nonfinite = 0;
  /// int8 calibration: counts of |x| in equal bins over [0, absmax] (the
  /// second run, once absmax is known).
  std::vector<int64_t> hist;
  void add(double x) {
    ++count;
    if (!std::isfinite(x)) {
      ++nonfinite;
      return;
    }
    min = std::min(min, x);
    max = std::max(max, x);
    absmax = std::max(absmax, std::fabs(x));
  }
  void addToHistogram(double x) {
    if (!std::isfinite(x) || hist.empty())
      return;
    double bins = static_cast<double>(hist.size());
    double at = absmax > 0 ? std::fabs(x) / absmax * bins : 0;
    ++hist[static_cast<size_t>(std::clamp(at, 0.0, bins - 1))];
  }
};

bool isFloatDtype(kiln_dtype_t t) {
  return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F16 || t == KILN_DTYPE_BF16 ||
         t == KILN_DTYPE_F64;
}

/// Calls `fn` with each value of a float tensor, as a double.
template <typename Fn>
void forEachValue(kiln_dtype_t dtype, const void *data, size_t n, Fn fn) {
  if (dtype == KILN_DTYPE_F32) {
    const float *f = static_cast<const float *>(data);
    for (size_t i = 0; i < n; ++i)
      fn(f[i]);
    return;
  }
  if (dtype == KILN_DTYPE_F64) {
    const double *d = static_cast<const double *>(data);
    for (size_t i = 0; i < n; ++i)
      fn(d[i]);
    return;
  }
  // f16, bf16: widened exactly.
  const llvm::fltSemantics &sem = dtype == KILN_DTYPE_F16
                                      ? llvm::APFloat::IEEEhalf()
                                      : llvm::APFloat::BFloat();
  const uint16_t *bits = static_cast<const uint16_t *>(data);
  for (size_t i = 0; i < n; ++i) {
    llvm::APFloat f(sem, llvm::APInt(16, bits[i]));
    bool lost = false;
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    fn(f.convertToDouble());
  }
}

/// Owns a runtime tensor.
struct TensorDeleter {
  void operator()(kiln_tensor_t *t) const { kiln_tensor_release(t); }
};
using TensorPtr = std::unique_ptr<kiln_tensor_t, TensorDeleter>;

/// Takes the message of a non-null status and frees it.
std::string takeMessage(kiln_status_t *st) {
  std::string m = kiln_status_message(st);
  kiln_status_free(st);
  return m;
}

} // namespace

LogicalResult mlir::kiln::calibrateRanges(ModuleOp module, StringRef dir,
                                          StringRef rangesPath,
                                          const CompileOptions &options) {
  Location loc = module.getLoc();
  auto fail = [&](const Twine &msg) {
    return emitError(loc) << "--calibrate: " << msg, failure();
  };
  // Samples: DIR/input_N.pb and DIR/test_data_set_*/input_N.pb.
  std::vector<std::pair<std::string, Sample>> samples;
  if (!llvm::sys::fs::is_directory(dir))
    return fail("'" + dir + "' is not a directory");
  if (Sample s = inputFiles(dir); !s.empty())
    samples.push_back({dir.str(), s});
  std::vector<std::string> sets;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::filename(it->path()).starts_with("test_data_set_") &&
        llvm::sys::fs::is_directory(it->path()))
      sets.push_back(it->path());
  std::sort(sets.begin(), sets.end());
  for (const std::string &d : sets)
    if (Sample s = inputFiles(d); !s.empty())
      samples.push_back({d, s});
  if (samples.empty())
    return fail("'" + dir +
                "' holds no input_N.pb files and no test_data_set_* folders "
                "with them");

  // The fp32 model with every intermediate exposed, on the CPU.
  OwningOpRef<ModuleOp> clone = module.clone();
  CompileOptions o = options;
  o.target = "cpu";
  o.precision = "fp32";
  o.keepFp32.clear();
  o.calibrationRanges.clear();
  o.calibrationMethod.clear();
  o.int8Exclude.clear();
  o.int8KeepFp32 = 0;
  o.exposeIntermediates = true;
  o.exposeNodes.clear();
  o.dumpAfter.clear();
  o.dump = nullptr;
  o.printPipeline.clear();
  o.afterHost = nullptr;
  o.afterCodegen = nullptr;
  SmallString<128> so;
  if (llvm::sys::fs::createTemporaryFile("kiln-calibrate", "so", so))
    return fail("cannot create a temporary file");
  auto removeSo = llvm::scope_exit([&] { llvm::sys::fs::remove(so); });
  if (failed(compileToSharedLibrary(*clone, so, o)))
    return failure();

  // The calibration build lives in a temporary directory, its external
  // weights where kilnc wrote them.
  const std::string &weightsPath = options.externalWeightsPath;
  kiln_model_options_t loadOptions;
  kiln_model_options_init(&loadOptions);
  if (!weightsPath.empty())
    loadOptions.weights_path = weightsPath.c_str();
  kiln_model_t *model = nullptr;
  if (kiln_status_t *st =
          kiln_model_load_with_options(so.c_str(), &loadOptions, &model))
    return fail("cannot load the calibration build: " + takeMessage(st));
  auto releaseModel = llvm::scope_exit([&] { kiln_model_release(model); });
  kiln_instance_t *instance = nullptr;
  if (kiln_status_t *st = kiln_instance_create(model, &instance))
    return fail(takeMessage(st));
  auto releaseInstance =
      llvm::scope_exit([&] { kiln_instance_release(instance); });
  size_t numInputs = kiln_model_num_inputs(model);
  size_t numOutputs = kiln_model_num_outputs(model);
  std::vector<kiln_value_info_t> inInfo(numInputs), outInfo(numOutputs);
  for (size_t i = 0; i < numInputs; ++i)
    if (kiln_status_t *st = kiln_model_input_info(model, i, &inInfo[i]))
      return fail(takeMessage(st));
  for (size_t i = 0; i < numOutputs; ++i)
    if (kiln_status_t *st = kiln_model_output_info(model, i, &outInfo[i]))
      return fail(takeMessage(st));

  llvm::StringMap<TensorStats> ranges;
  std::vector<std::string> order;
  auto rangeOf = [&](const std::string &name) -> TensorStats & {
    auto [it, inserted] = ranges.try_emplace(name);
    if (inserted)
      order.push_back(name);
    return it->second;
  };
  // Runs every sample and calls `record` with each float tensor: the model's
  // inputs and outputs (the exposed intermediates among them).
  using Record =
      std::function<void(TensorStats &, kiln_dtype_t, const void *, size_t)>;
  auto runAll = [&](const Record &record) -> LogicalResult {
    for (const auto &[where, files] : samples) {
      if (files.size() != numInputs)
        return fail("'" + where + "' has " + Twine(files.size()) +
                    " input files, the model takes " + Twine(numInputs));
      // By name where the file's tensor names an input, else in order.
      std::vector<TensorPtr> tensors(files.size());
      std::vector<int> slotOf(files.size(), -1);
      std::vector<bool> taken(numInputs, false);
      for (size_t f = 0; f < files.size(); ++f) {
        kiln_tensor_t *tensor = nullptr;
        if (kiln_status_t *st =
                kiln_tensor_read_file(files[f].c_str(), &tensor))
          return fail(takeMessage(st));
        tensors[f].reset(tensor);
        for (size_t i = 0; i < numInputs; ++i)
          if (!taken[i] &&
              std::strcmp(kiln_tensor_name(tensor), inInfo[i].name) == 0) {
            slotOf[f] = i;
            taken[i] = true;
            break;
          }
      }
      for (size_t f = 0, next = 0; f < files.size(); ++f) {
        if (slotOf[f] >= 0)
          continue;
        while (taken[next])
          ++next;
        slotOf[f] = next;
        taken[next] = true;
      }
      std::vector<kiln_tensor_view_t> views(numInputs);
      for (size_t f = 0; f < files.size(); ++f) {
        const kiln_tensor_t *t = tensors[f].get();
        kiln_dtype_t dtype = kiln_tensor_dtype(t);
        const kiln_value_info_t &info = inInfo[slotOf[f]];
        if (dtype != info.dtype)
          return fail("input '" + Twine(info.name) + "' is " +
                      kiln_dtype_name(info.dtype) + " but '" + files[f] +
                      "' holds " + kiln_dtype_name(dtype));
        views[slotOf[f]] = kiln_tensor_as_view(t);
        if (isFloatDtype(dtype))
          record(rangeOf(info.name), dtype, kiln_tensor_data(t),
                 kiln_tensor_num_elements(t));
      }
      std::vector<kiln_tensor_t *> outs(numOutputs, nullptr);
      if (kiln_status_t *st = kiln_instance_run(
              instance, views.data(), numInputs, outs.data(), numOutputs))
        return fail("running '" + where + "': " + takeMessage(st));
      for (size_t i = 0; i < numOutputs; ++i) {
        kiln_dtype_t dt = kiln_tensor_dtype(outs[i]);
        if (isFloatDtype(dt))
          record(rangeOf(outInfo[i].name), dt, kiln_tensor_data(outs[i]),
                 kiln_tensor_num_elements(outs[i]));
        kiln_tensor_release(outs[i]);
      }
    }
    return success();
  };
  if (failed(runAll(
          [](TensorStats &r, kiln_dtype_t dt, const void *data, size_t n) {
            forEachValue(dt, data, n, [&](double x) { r.add(x); });
          })))
    return failure();
  // int8: a second run for the histograms of |x| over [0, absmax] that the
  // percentile and entropy methods read (int8::TensorRecord).
  bool histograms = options.precision == "int8";
  if (histograms) {
    for (auto &entry : ranges)
      entry.second.hist.assign(int8::kHistogramBins, 0);
    if (failed(runAll(
            [](TensorStats &r, kiln_dtype_t dt, const void *data, size_t n) {
              forEachValue(dt, data, n, [&](double x) { r.addToHistogram(x); });
            })))
      return failure();
  }

  llvm::json::Object tensors;
  for (const std::string &name : order) {
    const TensorStats &r = ranges[name];
    llvm::json::Object e{
        {"absmax", r.absmax}, {"count", r.count}, {"nonfinite", r.nonfinite}};
    if (r.count > r.nonfinite) {
      e["min"] = r.min;
      e["max"] = r.max;
    }
    if (histograms)
      e["hist"] = llvm::json::Array(r.hist);
    tensors[name] = std::move(e);
  }
  llvm::json::Object top{{"samples", static_cast<int64_t>(samples.size())},
                         {"tensors", std::move(tensors)}};
  std::error_code wec;
  llvm::raw_fd_ostream os(rangesPath, wec);
  if (wec)
    return fail("cannot write '" + rangesPath + "': " + wec.message());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  return success();
}
