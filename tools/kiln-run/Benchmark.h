//===- Benchmark.h - kiln-run's timed runs ---------------------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_BENCHMARK_H
#define KILN_TOOLS_KILN_RUN_BENCHMARK_H

#include "Options.h"
#include "kiln-c/runtime.h"

#include <string>
#include <vector>

namespace kiln::run {

/// Mean, extremes and nearest-rank percentiles of some times.
struct Stats {
  double mean = 0, min = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
Stats summarize(std::vector<double> values);

struct BenchmarkResult {
  long warmupRuns = 0;
  double warmupMs = 0;
  double totalS = 0; // wall time of the timed runs
  /// Per timed run: its start (ms since the first) and host latency; for
  /// device models the device time of its phases (`phases` set).
  std::vector<double> startMs, latencyMs, h2dMs, computeMs, d2hMs;
  bool phases = false;
  std::string phasesMissing; // why a device model has no phases
};

/// Warm-up for opts.warmupMs, then opts.iterations runs (or runs for
/// opts.duration seconds) of `instance` on `inputs`; a device model's runs
/// also measure their phases (KILN_PROFILE_PHASES: four device events per
/// run; graphs stay on). False with `error` when a run fails.
bool runBenchmark(const Options &opts, kiln_instance_t *instance,
                  const std::vector<kiln_tensor_view_t> &inputs,
                  size_t numOutputs, bool onDevice, BenchmarkResult &result,
                  std::string &error);

/// The table: iterations, throughput, latency (and phase) statistics.
void printBenchmark(const BenchmarkResult &result);

/// Writes every timed run and the summary as JSON (--export-times).
bool exportTimes(const std::string &path, const Options &opts,
                 const std::string &device, const BenchmarkResult &result,
                 std::string &error);

} // namespace kiln::run

#endif // KILN_TOOLS_KILN_RUN_BENCHMARK_H
