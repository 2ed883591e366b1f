//===- Trace.cpp - kiln-run --profile: a Chrome trace of one run ----------===//
//
// After the other runs (so that timed runs stay clean), one run with
// KILN_PROFILE_KERNELS: every kernel launch becomes one complete ("X")
// event of the Chrome trace-event format (chrome://tracing, Perfetto), on
// the host's track for CPU kernels and the device stream's track for device
// kernels, with the ONNX nodes the launch computes in its args: from the
// model's `launch` records when it has them, else from a kilnc --report.
//
//===----------------------------------------------------------------------===//
#include "Trace.h"

#include "Json.h"
#include "Outputs.h"

#include <cstdio>

namespace kiln::run {

namespace {

std::string takeStatus(kiln_status_t *status) {
  std::string text = kiln_status_message(status);
  kiln_status_free(status);
  return text;
}

/// The kernel function a launch belongs to: a CPU kernel is its function;
/// a device kernel is named <function>_kernel or <function>_kernel_<N> (a
/// kernel function may launch several).
std::string functionOf(const kiln_kernel_event_t &e) {
  std::string name = e.kernel;
  if (!e.on_device)
    return name;
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
    --end;
  if (end < name.size() && end > 0 && name[end - 1] == '_')
    name.resize(end - 1); // _<N>
  const std::string suffix = "_kernel";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return e.kernel;
}

bool runsCodeOf(const ReportKernel &k, const std::string &function) {
  return function == k.name || (!k.codeOf.empty() && function == k.codeOf);
}

} // namespace

bool readReport(const std::string &path, std::vector<ReportKernel> &kernels,
                std::string &error) {
  std::string text;
  if (!json::readFile(path, text, error))
    return false;
  json::Value report;
  if (!json::parse(text, report, error)) {
    error = "--report '" + path + "' is not JSON (" + error + ")";
    return false;
  }
  const json::Value *list = report.get("kernels");
  if (!list || list->kind != json::Value::Array) {
    error = "--report '" + path +
            "' has no \"kernels\" list (expected a kilnc --report file)";
    return false;
  }
  for (const json::Value &k : list->array) {
    const json::Value *name = k.get("name");
    if (!name || name->kind != json::Value::String) {
      error = "--report '" + path + "': a kernel without a \"name\"";
      return false;
    }
    ReportKernel kernel{name->string, "", {}};
    if (const json::Value *code = k.get("code_of"))
      if (code->kind == json::Value::String)
        kernel.codeOf = code->string;
    if (const json::Value *nodes = k.get("onnx_nodes"))
      for (const json::Value &n : nodes->array) {
        const json::Value *nodeName = n.get("name"); // older reports
        if (n.kind == json::Value::String)
          kernel.nodes.push_back(n.string);
        else if (nodeName && nodeName->kind == json::Value::String)
          kernel.nodes.push_back(nodeName->string);
      }
    kernels.push_back(std::move(kernel));
  }
  return true;
}

std::string matchReport(const std::vector<kiln_kernel_event_t> &events,
                        const std::vector<ReportKernel> &kernels,
                        std::vector<int> &match) {
  // By launch order: each CPU launch is the next kernel; the device
  // kernels of one kernel function follow each other, and a device kernel
  // seen before in the current function's group starts the next one.
  match.assign(events.size(), -1);
  bool ordered = !kernels.empty();
  size_t j = 0;
  std::vector<std::string> group;
  for (size_t i = 0; i < events.size() && ordered; ++i) {
    const kiln_kernel_event_t &e = events[i];
    std::string function = functionOf(e);
    bool repeat = !e.on_device || i == 0;
    for (const std::string &g : group)
      repeat |= g == e.kernel;
    bool stay = i > 0 && !repeat && runsCodeOf(kernels[j], function);
    if (!stay) {
      if (i > 0)
        ++j;
      group.clear();
      ordered = j < kernels.size() && runsCodeOf(kernels[j], function);
    }
    group.push_back(e.kernel);
    match[i] = static_cast<int>(j);
  }
  if (ordered && j + 1 == kernels.size())
    return "launch order";
  // By name: the report's kernel of that name (a kernel whose code others
  // share gives its own nodes for their launches too).
  for (size_t i = 0; i < events.size(); ++i) {
    match[i] = -1;
    std::string function = functionOf(events[i]);
    for (size_t k = 0; k < kernels.size() && match[i] < 0; ++k)
      if (kernels[k].name == function)
        match[i] = static_cast<int>(k);
  }
  return "kernel name";
}

bool writeProfile(const Options &opts, kiln_instance_t *instance,
                  const std::vector<kiln_tensor_view_t> &inputs,
                  size_t numOutputs, const std::string &device,
                  std::string &summary, std::string &error) {
  std::vector<ReportKernel> report;
  if (!opts.report.empty() && !readReport(opts.report, report, error))
    return false;
  bool onDevice = device != "cpu";
  int flags = KILN_PROFILE_KERNELS | (onDevice ? KILN_PROFILE_PHASES : 0);
  if (kiln_status_t *status = kiln_instance_set_profiling(instance, flags)) {
    error = "--profile: " + takeStatus(status);
    return false;
  }
  Outputs outputs(numOutputs);
  kiln_status_t *status =
      kiln_instance_run(instance, inputs.data(), inputs.size(),
                        outputs.tensors.data(), numOutputs);
  kiln_run_profile_t p;
  p.struct_size = sizeof(p);
  if (!status)
    status = kiln_instance_last_profile(instance, &p);
  if (status) {
    error = takeStatus(status);
    return false;
  }
  std::vector<kiln_kernel_event_t> events(p.events, p.events + p.num_events);
  std::string nodesFrom = "none";
  std::vector<int> match(events.size(), -1);
  bool fromModel = !events.empty();
  for (const kiln_kernel_event_t &e : events)
    fromModel &= e.nodes != nullptr;
  if (fromModel)
    nodesFrom = "the model's launch records";
  else if (!report.empty())
    nodesFrom =
        opts.report + " (by " + matchReport(events, report, match) + ")";

  using json::number;
  using json::quote;
  std::string process = "kiln-run " + opts.model + " (" + device + ")";
  std::string text =
      "{\"traceEvents\": [\n"
      "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, "
      "\"args\": {\"name\": " +
      quote(process) +
      "}},\n"
      "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, "
      "\"args\": {\"name\": \"host\"}}";
  if (onDevice)
    text += ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, "
            "\"tid\": 2, \"args\": {\"name\": " +
            quote(device + " stream") + "}}";
  size_t named = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const kiln_kernel_event_t &e = events[i];
    std::string args = "\"launch\": " + std::to_string(i);
    if (e.index >= 0)
      args += ", \"kernel_index\": " + std::to_string(e.index);
    if (e.site >= 0)
      args += ", \"site\": " + std::to_string(e.site);
    std::vector<std::string> nodes;
    if (e.nodes) {
      nodes.assign(e.nodes, e.nodes + e.num_nodes);
    } else if (match[i] >= 0) {
      const ReportKernel &k = report[match[i]];
      nodes = k.nodes;
      if (k.name != functionOf(e))
        args += ", \"report_kernel\": " + quote(k.name);
    }
    if (e.nodes || match[i] >= 0) {
      args += ", \"onnx_nodes\": [";
      for (size_t n = 0; n < nodes.size(); ++n)
        args += (n ? ", " : "") + quote(nodes[n]);
      args += "]";
      named += !nodes.empty();
    }
    text += ",\n{\"name\": " + quote(*e.kernel ? e.kernel : "(unknown)") +
            ", \"cat\": \"kernel\", \"ph\": \"X\", \"ts\": " +
            number(e.start_us, 3) + ", \"dur\": " + number(e.duration_us, 3) +
            ", \"pid\": 1, \"tid\": " + (e.on_device ? "2" : "1") +
            ", \"args\": {" + args + "}}";
  }
  auto phase = [&](double us) { return us >= 0 ? number(us, 3) : "null"; };
  text += "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"model\": " +
          quote(opts.model) + ", \"device\": " + quote(device) +
          ", \"launches\": " + std::to_string(events.size()) +
          ", \"run_us\": " + number(p.run_us, 3) +
          ", \"h2d_us\": " + phase(p.h2d_us) +
          ", \"compute_us\": " + phase(p.compute_us) +
          ", \"d2h_us\": " + phase(p.d2h_us) +
          ", \"onnx_nodes_from\": " + quote(nodesFrom) +
          ", \"stopped\": " + quote(p.stopped) + "}}\n";
  takeStatus(kiln_instance_set_profiling(instance, KILN_PROFILE_OFF));
  if (!json::writeFile(opts.profile, text, error))
    return false;
  char line[512];
  std::snprintf(line, sizeof(line),
                "profile: %zu kernel launch%s in one run of %.3f ms written "
                "to %s (ONNX nodes of %zu: from %s)",
                events.size(), events.size() == 1 ? "" : "es",
                p.run_us / 1000.0, opts.profile.c_str(), named,
                nodesFrom.c_str());
  summary = line;
  if (*p.stopped)
    summary += "; device timing stopped: " + std::string(p.stopped);
  return true;
}

} // namespace kiln::run
