//===- Options.h - kiln-run's command line ---------------------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_OPTIONS_H
#define KILN_TOOLS_KILN_RUN_OPTIONS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::run {

extern const char kUsage[];

/// One input's run shape from --shapes NAME:DxDx...
struct InputShape {
  std::string name;
  std::vector<int64_t> dims;
  std::string spelling; // the NAME:DxD... given, for messages
};

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<InputShape> shapes;
  uint64_t seed = 0;
  std::vector<std::string> expects;
  double rtol = 1e-4;
  double atol = 1e-5;
  std::string outputDir;
  std::string weights;
  long threads = 0;
  bool print = false;
  bool verbose = false;
  bool verifyWeights = false;
  // Benchmark: on when any of its flags is given.
  bool benchmark = false;
  long iterations = 0;   // --iterations / --benchmark; 0: by duration
  double duration = 3.0; // seconds (--duration)
  bool durationGiven = false;
  double warmupMs = 200;
  std::string exportTimes;
  // One profiled run, written as a Chrome trace.
  std::string profile;
  std::string report;
};

/// Returns false with `error` set on bad arguments; `help` for --help.
bool parseArgs(int argc, char **argv, Options &opts, bool &help,
               std::string &error);

/// Parses the value of one --shapes (NAME:DxDx...[,NAME:...]; the name may
/// contain ':', the shape follows the last one; as kilnc --shapes) into
/// `shapes`; false with `error` set.
bool parseShapes(const std::string &list, std::vector<InputShape> &shapes,
                 std::string &error);

} // namespace kiln::run

#endif // KILN_TOOLS_KILN_RUN_OPTIONS_H
