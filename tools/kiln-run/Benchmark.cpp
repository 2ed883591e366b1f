//===- Benchmark.cpp - kiln-run's timed runs ------------------------------===//
//
// Like trtexec: a warm-up by time, then the timed runs (a count or a
// duration), each one kiln_instance_run on the same host inputs; latency is
// the host's time of the call (inputs copied in, outputs copied out and
// allocated), throughput the runs per second of wall time. On a device the
// runtime also measures each run's input copies, compute and output copies
// with device events (kiln_instance_set_profiling's KILN_PROFILE_PHASES).
//
//===----------------------------------------------------------------------===//
#include "Benchmark.h"

#include "Json.h"
#include "Outputs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace kiln::run {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

std::string takeStatus(kiln_status_t *status) {
  std::string text = kiln_status_message(status);
  kiln_status_free(status);
  return text;
}

} // namespace

Stats summarize(std::vector<double> values) {
  Stats s;
  if (values.empty())
    return s;
  std::sort(values.begin(), values.end());
  auto percentile = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * values.size()));
    return values[std::min(values.size() - 1, rank ? rank - 1 : 0)];
  };
  for (double v : values)
    s.mean += v / static_cast<double>(values.size());
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  return s;
}

bool runBenchmark(const Options &opts, kiln_instance_t *instance,
                  const std::vector<kiln_tensor_view_t> &inputs,
                  size_t numOutputs, bool onDevice, BenchmarkResult &result,
                  std::string &error) {
  if (onDevice) {
    kiln_status_t *status =
        kiln_instance_set_profiling(instance, KILN_PROFILE_PHASES);
    result.phases = status == nullptr;
    if (status)
      result.phasesMissing = takeStatus(status);
  }
  Outputs outputs(numOutputs);
  auto runOnce = [&]() {
    kiln_status_t *status =
        kiln_instance_run(instance, inputs.data(), inputs.size(),
                          outputs.tensors.data(), numOutputs);
    if (status) {
      error = takeStatus(status);
      return false;
    }
    return true;
  };

  Clock::time_point warmStart = Clock::now();
  while (msSince(warmStart, Clock::now()) < opts.warmupMs) {
    if (!runOnce())
      return false;
    outputs.clear();
    ++result.warmupRuns;
  }
  result.warmupMs = msSince(warmStart, Clock::now());

  Clock::time_point start = Clock::now();
  double durationMs = 1000.0 * opts.duration;
  for (long r = 0;; ++r) {
    if (opts.iterations > 0
            ? r >= opts.iterations
            : r > 0 && msSince(start, Clock::now()) >= durationMs)
      break;
    Clock::time_point begin = Clock::now();
    if (!runOnce())
      return false;
    Clock::time_point end = Clock::now();
    result.startMs.push_back(msSince(start, begin));
    result.latencyMs.push_back(msSince(begin, end));
    outputs.clear();
    if (result.phases) {
      kiln_run_profile_t p;
      p.struct_size = sizeof(p);
      if (kiln_status_t *status = kiln_instance_last_profile(instance, &p)) {
        error = takeStatus(status);
        return false;
      }
      result.h2dMs.push_back(p.h2d_us / 1000.0);
      result.computeMs.push_back(p.compute_us / 1000.0);
      result.d2hMs.push_back(p.d2h_us / 1000.0);
      if (p.h2d_us < 0 || p.compute_us < 0 || p.d2h_us < 0) {
        // Timing stopped (a failed event call): no phases from here on.
        result.phases = false;
        result.phasesMissing =
            *p.stopped ? p.stopped : "the device events were not recorded";
        result.h2dMs.clear();
        result.computeMs.clear();
        result.d2hMs.clear();
      }
    }
  }
  result.totalS = msSince(start, Clock::now()) / 1000.0;
  if (onDevice)
    takeStatus(kiln_instance_set_profiling(instance, KILN_PROFILE_OFF));
  return true;
}

void printBenchmark(const BenchmarkResult &r) {
  size_t n = r.latencyMs.size();
  char took[32];
  if (r.totalS >= 1)
    std::snprintf(took, sizeof(took), "%.3f s", r.totalS);
  else
    std::snprintf(took, sizeof(took), "%.3f ms", 1000 * r.totalS);
  std::printf("benchmark: %zu iteration%s in %s after %ld warm-up run%s "
              "(%.0f ms)\n",
              n, n == 1 ? "" : "s", took, r.warmupRuns,
              r.warmupRuns == 1 ? "" : "s", r.warmupMs);
  std::printf("throughput: %.2f inferences/s\n",
              r.totalS > 0 ? static_cast<double>(n) / r.totalS : 0.0);
  std::printf("%-10s %10s %10s %10s %10s %10s %10s %10s\n", "time (ms)", "mean",
              "min", "p50", "p90", "p95", "p99", "max");
  auto row = [](const char *name, const std::vector<double> &values) {
    Stats s = summarize(values);
    std::printf("%-10s %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f\n",
                name, s.mean, s.min, s.p50, s.p90, s.p95, s.p99, s.max);
  };
  row("latency", r.latencyMs);
  if (r.phases) {
    row("h2d", r.h2dMs);
    row("compute", r.computeMs);
    row("d2h", r.d2hMs);
    std::printf("(latency: host time of each run; h2d, compute, d2h: device "
                "time between events on its stream)\n");
  } else if (!r.phasesMissing.empty()) {
    std::printf("(no h2d/compute/d2h split: %s)\n", r.phasesMissing.c_str());
  }
}

bool exportTimes(const std::string &path, const Options &opts,
                 const std::string &device, const BenchmarkResult &r,
                 std::string &error) {
  using json::number;
  using json::quote;
  size_t n = r.latencyMs.size();
  auto stats = [](const std::vector<double> &values) {
    Stats s = summarize(values);
    return "{\"mean\": " + number(s.mean, 6) +
           ", \"min\": " + number(s.min, 6) + ", \"p50\": " + number(s.p50, 6) +
           ", \"p90\": " + number(s.p90, 6) + ", \"p95\": " + number(s.p95, 6) +
           ", \"p99\": " + number(s.p99, 6) + ", \"max\": " + number(s.max, 6) +
           "}";
  };
  std::string text = "{\n  \"model\": " + quote(opts.model) +
                     ",\n  \"device\": " + quote(device);
  if (device == "cpu")
    text += ",\n  \"threads\": " + std::to_string(kiln_get_num_threads());
  text += ",\n  \"warmup\": {\"runs\": " + std::to_string(r.warmupRuns) +
          ", \"ms\": " + number(r.warmupMs) + "}";
  text += ",\n  \"iterations\": " + std::to_string(n) +
          ",\n  \"duration_s\": " + number(r.totalS, 6) +
          ",\n  \"throughput_per_s\": " +
          number(r.totalS > 0 ? static_cast<double>(n) / r.totalS : 0, 3);
  text += ",\n  \"summary\": {\n    \"latency_ms\": " + stats(r.latencyMs);
  if (r.phases)
    text += ",\n    \"h2d_ms\": " + stats(r.h2dMs) +
            ",\n    \"compute_ms\": " + stats(r.computeMs) +
            ",\n    \"d2h_ms\": " + stats(r.d2hMs);
  text += "\n  },\n  \"times\": [";
  for (size_t i = 0; i < n; ++i) {
    text += std::string(i ? ",\n" : "\n") +
            "    {\"start_ms\": " + number(r.startMs[i], 6) +
            ", \"latency_ms\": " + number(r.latencyMs[i], 6);
    if (r.phases)
      text += ", \"h2d_ms\": " + number(r.h2dMs[i], 6) +
              ", \"compute_ms\": " + number(r.computeMs[i], 6) +
              ", \"d2h_ms\": " + number(r.d2hMs[i], 6);
    text += "}";
  }
  text += "\n  ]\n}\n";
  return json::writeFile(path, text, error);
}

} // namespace kiln::run
