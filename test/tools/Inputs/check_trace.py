"""Checks a `kiln-run --profile` trace of a CPU model against the model's
`kilnc --report` and its LLVM-dialect dump (kilnc --dump-after=llvm):

  check_trace.py TRACE.json REPORT.json MODEL.ll.mlir

- the trace is valid JSON in the Chrome trace-event format: {"traceEvents":
  [...]}, every "X" (complete) event with name, ph, ts, dur (microseconds),
  pid, tid and args;
- one "X" event per kernel launch of the profiled run. That run is not the
  instance's first, so the kernels kiln-hoist-weight-kernels moved into
  kiln_model_init (run once per instance) do not run in it; kiln_model_main
  has no loop around a launch (each call site of kiln_rt_launch_cpu runs
  once per run), so the run makes exactly as many launches as
  kiln_model_main has kiln_rt_launch_cpu call sites in the dump, which is
  also the number of kernels the report lists, in the same order;
- launch i is the report's kernel i (its name, or that of the kernel whose
  code it runs after kiln-dedup-kernels: code_of) and its args name the
  ONNX nodes the report gives that kernel, none empty;
- the events follow each other on the host's track without overlapping and
  fit in the run.
Prints one line; exits 1 naming the first thing that is wrong."""
import json
import re
import sys


def call_sites(dump, function):
    """kiln_rt_launch_cpu call sites in `function` of the LLVM dialect dump."""
    inside, count = False, 0
    for line in open(dump):
        if line.startswith("  llvm.func @"):
            inside = line.startswith(f"  llvm.func @{function}(")
        elif inside and "llvm.call @kiln_rt_launch_cpu(" in line:
            count += 1
    return count


def main():
    trace_path, report_path, dump = sys.argv[1:4]
    trace = json.load(open(trace_path))  # valid JSON or an exception
    kernels = json.load(open(report_path))["kernels"]
    events = trace["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    for e in complete:
        missing = [k for k in ("name", "ph", "ts", "dur", "pid", "tid", "args") if k not in e]
        if missing:
            sys.exit(f"event {e} lacks {missing}")
    main_sites = call_sites(dump, "kiln_model_main")
    init_sites = call_sites(dump, "kiln_model_init")
    if not (len(complete) == main_sites == len(kernels)):
        sys.exit(f"{len(complete)} X events, {main_sites} launch sites in kiln_model_main, "
                 f"{len(kernels)} kernels in the report")
    end = 0.0
    for i, (e, k) in enumerate(zip(complete, kernels)):
        if e["args"].get("launch") != i:
            sys.exit(f"event {i} is launch {e['args'].get('launch')}")
        if e["name"] not in (k["name"], k.get("code_of")):
            sys.exit(f"launch {i} runs {e['name']}, the report's kernel {i} is {k['name']} "
                     f"(code of {k.get('code_of')})")
        nodes = e["args"].get("onnx_nodes")
        if not nodes or nodes != k["onnx_nodes"]:
            sys.exit(f"launch {i} ({e['name']}) names nodes {nodes}, the report {k['onnx_nodes']}")
        if e["cat"] != "kernel" or e["tid"] != 1 or e["dur"] <= 0 or e["ts"] < end:
            sys.exit(f"launch {i} ({e['name']}): cat {e['cat']}, tid {e['tid']}, ts {e['ts']}, "
                     f"dur {e['dur']} (the previous one ended at {end})")
        end = e["ts"] + e["dur"]
    run_us = trace["otherData"]["run_us"]
    if end > run_us:
        sys.exit(f"the kernels end at {end} us, after the run's {run_us} us")
    shared = sum(1 for e in complete if "report_kernel" in e["args"])
    print(f"trace: {len(complete)} X events, one per kernel launch of the profiled run "
          f"({main_sites} launch sites in kiln_model_main, {len(kernels)} report kernels; "
          f"{init_sites} in kiln_model_init, run once before); {shared} run shared code; "
          f"every event names its ONNX nodes; {end / 1000:.1f} ms of kernels in a "
          f"{run_us / 1000:.1f} ms run")


if __name__ == "__main__":
    main()
