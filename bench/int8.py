#!/usr/bin/env python3
"""Kiln int8 against Kiln fp32 and onnxruntime int8 on this machine's CPU.

  .venv/bin/python bench/int8.py [--models resnet50,bert] [--threads 1,2]
      [--runs N] [--workdir DIR] [--json FILE] [--profile]

Networks (utils/models/make_models.py, seeds fixed; ResNet-50 at batch 1,
224x224; BERT-base at batch 1, sequence 128) are quantized by onnxruntime's
quantize_static in QDQ form (kiln_tools.quantize: per-channel int8 weights,
uint8 activations, min-max calibration on 8 seeded inputs). The same QDQ
model is compiled by `kilnc -O2` (this machine's CPU; its quantized layers
become integer products, docs/int8.md) and run by onnxruntime (PyPI,
CPUExecutionProvider: its QDQ fusions and int8 kernels); the float model is
compiled by kilnc and run by onnxruntime for the fp32 columns.

Checks first, on one seeded input: Kiln int8 against onnxruntime int8 (the
largest difference in steps of the output's quantization scale, and how
many outputs differ), Kiln fp32 against onnxruntime fp32 (max relative
error), and int8 against fp32 (max relative error; top-1 agreement over the
batch for the classifier). Then, per thread count, 4 rounds that alternate
onnxruntime int8, Kiln int8, Kiln fp32 and onnxruntime fp32 (the machine is
shared and its speed drifts): each figure is the median of the rounds'
medians. Kiln runs through `kiln-run --benchmark N --threads T`,
onnxruntime with intra_op_num_threads=T. --profile adds where Kiln int8's
time goes (one profiled run per kernel, 1 thread, the kernels' ONNX nodes).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools.quantize import quantize_qdq  # noqa: E402

ROOT = kiln_tools.ROOT
BIN = os.path.join(ROOT, "build", "bin")
DIMS = {"bert": {"seq": 128, "batch": 1}}
ROUNDS = 4


def dim_flags(name):
    flags = []
    for k, v in DIMS.get(name, {}).items():
        flags += ["--dim", f"{k}={v}"]
    return flags


ort_session = kiln_tools.tools.ort_session
ort_ms = kiln_tools.tools.ort_ms


def output_step(qdq_path):
    """The scale of the DequantizeLinear writing the first output."""
    m = onnx.load(qdq_path, load_external_data=False)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out and n.input[1] in inits:
            return float(inits[n.input[1]].reshape(-1)[0])
    return None


def compile_timed(path, so, report, flags):
    t0 = time.time()
    kiln_tools.run_tool([kiln_tools.find_tool("kilnc", BIN), path, "-o", so, "-O2",
                         f"--report={report}", *flags])
    return time.time() - t0


def profile(so, inputs, report, workdir, top=12):
    """Kiln's per-kernel time (1 thread), largest first, with ONNX nodes."""
    trace = os.path.join(workdir, "profile.json")
    kiln_tools.run_tool([kiln_tools.find_tool("kiln-run", BIN), so, "--threads", "1",
                         "--iterations", "5", "--profile", trace,
                         *[a for p in inputs for a in ("--input", p)]])
    events = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X"]
    total = {}
    for e in events:
        total[e["name"]] = total.get(e["name"], 0.0) + e["dur"]
    nodes = {k["name"]: k.get("onnx_nodes", []) for k in json.load(open(report))["kernels"]}
    runs = max(1, sum(1 for e in events if e["name"] == events[0]["name"]))
    whole = sum(total.values())
    rows = []
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        rows.append({"kernel": name, "ms": us / runs / 1e3, "share": us / whole,
                     "nodes": nodes.get(name, [])[:4]})
    return rows, whole / runs / 1e3


def bench_model(name, args):
    wd = args.workdir
    fp32 = os.path.join(wd, name + ".onnx")
    if not os.path.exists(fp32):
        kiln_tools.run_tool([sys.executable, os.path.join(ROOT, "utils", "models",
                                                          "make_models.py"), wd, "--only", name])
    qdq = os.path.join(wd, name + "_qdq.onnx")
    dims = DIMS.get(name, {})
    if not os.path.exists(qdq):
        quantize_qdq(fp32, qdq, calibration=8, seed=1, dims=dims)
    feeds = kiln_tools.seeded_inputs(fp32, 0, dims, int_high=1000)
    inputs = [p for _, p in kiln_tools.write_inputs(feeds, os.path.join(wd, f"{name}_inputs"))]
    row = {"model": name}
    builds = {}
    for kind, path in (("int8", qdq), ("fp32", fp32)):
        so = os.path.join(wd, f"{name}_{kind}.so")
        rep = os.path.join(wd, f"{name}_{kind}.json")
        row[f"compile_{kind}_s"] = compile_timed(path, so, rep, dim_flags(name))
        builds[kind] = (so, rep)

    # Checks.
    ref8 = ort_session(qdq, 2).run(None, feeds)
    ref32 = ort_session(fp32, 2).run(None, feeds)
    got8 = kiln_tools.run_model(builds["int8"][0], inputs, os.path.join(wd, f"{name}_o8"),
                                bindir=BIN)
    got32 = kiln_tools.run_model(builds["fp32"][0], inputs, os.path.join(wd, f"{name}_o32"),
                                 bindir=BIN)
    step = output_step(qdq)
    d = np.abs(got8[0][1].astype(np.float64) - ref8[0])
    row["int8_vs_ort_steps"] = float(d.max() / step) if step else float(d.max())
    row["int8_vs_ort_differ"] = f"{int((d > 1e-6 * (step or 1)).sum())} of {d.size}"
    row["fp32_vs_ort_rel"] = kiln_tools.max_rel_errors(got32, ref32)
    row["int8_vs_fp32_rel"] = kiln_tools.max_rel_error(got8[0][1], got32[0][1])
    if name in ("resnet50", "mobilenetv2"):
        row["top1_agree"] = float(np.mean(np.argmax(got8[0][1], -1) ==
                                          np.argmax(got32[0][1], -1)))
    print(f"# {name} checks: {row}", file=sys.stderr)

    per = max(args.runs // ROUNDS, 5)
    for threads in [int(t) for t in args.threads.split(",")]:
        s8, s32 = ort_session(qdq, threads), ort_session(fp32, threads)
        t = {"ort_int8": [], "kiln_int8": [], "kiln_fp32": [], "ort_fp32": []}
        for _ in range(ROUNDS):
            t["ort_int8"].append(ort_ms(s8, feeds, per))
            t["kiln_int8"].append(kiln_tools.tools.benchmark_ms(
                builds["int8"][0], inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
            t["kiln_fp32"].append(kiln_tools.tools.benchmark_ms(
                builds["fp32"][0], inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
            t["ort_fp32"].append(ort_ms(s32, feeds, per))
        for k, v in t.items():
            row[f"{k}_{threads}t_ms"] = float(np.median(v))
            row[f"{k}_{threads}t_rounds"] = v
        print(f"# {name} {threads}T: " + ", ".join(
            f"{k} {float(np.median(v)):.2f} ms" for k, v in t.items()), file=sys.stderr)
    if args.profile:
        row["profile"], row["profile_total_ms"] = profile(builds["int8"][0], inputs,
                                                          builds["int8"][1], wd)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench-int8"))
    ap.add_argument("--json", default="")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = [bench_model(n, args) for n in args.models.split(",") if n]

    flags = open("/proc/cpuinfo").read()
    isa = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f" {f}" in flags]
    print(f"CPU: {len(os.sched_getaffinity(0))} cores, {', '.join(isa)}; onnxruntime "
          f"{ort.__version__}; median of {ROUNDS} rounds' medians of {args.runs // ROUNDS} runs\n")
    print("| model | Kiln int8 vs ORT int8 | int8 vs fp32 (max rel) | threads | ORT int8 | "
          "Kiln int8 | Kiln fp32 | ORT fp32 | Kiln int8 / ORT int8 | Kiln fp32 / Kiln int8 |")
    print("|" + "---|" * 10)
    for r in rows:
        agree = f", top-1 {100 * r['top1_agree']:.0f}%" if "top1_agree" in r else ""
        for threads in args.threads.split(","):
            k = lambda s: r[f"{s}_{threads}t_ms"]  # noqa: E731
            print(f"| {r['model']} | {r['int8_vs_ort_steps']:.0f} steps ({r['int8_vs_ort_differ']} "
                  f"differ) | {r['int8_vs_fp32_rel']:.1e}{agree} | {threads} | "
                  f"{k('ort_int8'):.2f} ms | {k('kiln_int8'):.2f} ms | {k('kiln_fp32'):.2f} ms | "
                  f"{k('ort_fp32'):.2f} ms | {k('kiln_int8') / k('ort_int8'):.2f}x | "
                  f"{k('kiln_fp32') / k('kiln_int8'):.2f}x |")
    for r in rows:
        if "profile" not in r:
            continue
        print(f"\n{r['model']} int8, 1 thread, {r['profile_total_ms']:.2f} ms in kernels:")
        for p in r["profile"]:
            print(f"  {p['ms']:7.3f} ms {100 * p['share']:5.1f}%  {p['kernel']}: "
                  f"{', '.join(p['nodes'])}")
    if args.json:
        json.dump({"rows": rows, "isa": isa, "onnxruntime": ort.__version__},
                  open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
