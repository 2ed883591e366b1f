//===- Trace.h - kiln-run --profile: a Chrome trace of one run -*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_TRACE_H
#define KILN_TOOLS_KILN_RUN_TRACE_H

#include "Options.h"
#include "kiln-c/runtime.h"

#include <string>
#include <vector>

namespace kiln::run {

/// One kernel of a kilnc --report: its name, the kernel whose code it runs
/// (kiln-dedup-kernels; "" for its own) and its ONNX nodes.
struct ReportKernel {
  std::string name, codeOf;
  std::vector<std::string> nodes;
};

/// The "kernels" of a kilnc --report file, in launch-site order.
bool readReport(const std::string &path, std::vector<ReportKernel> &kernels,
                std::string &error);

/// Where each launch's ONNX nodes come from (per launch: an index into
/// `kernels`, or -1) when the model does not name them: by launch order
/// when the launches are the report's kernels one after another (on a
/// device each kernel's device kernels), else by kernel name. Returns how
/// ("launch order", "kernel name").
std::string matchReport(const std::vector<kiln_kernel_event_t> &events,
                        const std::vector<ReportKernel> &kernels,
                        std::vector<int> &match);

/// One more run of `instance` with every kernel launch timed
/// (kiln_instance_set_profiling), written to opts.profile as a Chrome
/// trace; `summary` says what was written.
bool writeProfile(const Options &opts, kiln_instance_t *instance,
                  const std::vector<kiln_tensor_view_t> &inputs,
                  size_t numOutputs, const std::string &device,
                  std::string &summary, std::string &error);

} // namespace kiln::run

#endif // KILN_TOOLS_KILN_RUN_TRACE_H
