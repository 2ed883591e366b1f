#!/usr/bin/env python3
"""Writes docs/benchmarks.md from the files `bench/gpu_check.py run` wrote on
the GPU machine (gpu_results.json, and where the time goes: every kernel's
time per benchmark with its ONNX nodes).

Where the time goes comes from `kiln-run --profile` traces when RESULTS_DIR
has them (traces/<label>.json, spaces as _; or --traces DIR): Chrome traces
of one run with every launch timed by CUDA events, each naming its ONNX
nodes, written on the GPU machine by

  kiln-run <build>.so --shapes ... --profile traces/<label>.json --report <label>.json

(the report from `--make-reports`, compiled here). Without traces it comes
from profiles.jsonl (the per-kernel sums of the instance option
profile_path) and `kilnc --report` files of the same builds (kernel -> ONNX
nodes), which `--make-reports` writes.

  python3 bench/gpu_report.py RESULTS_DIR --make-reports DIR   # kilnc here
  python3 bench/gpu_report.py RESULTS_DIR [--traces DIR | --reports DIR] [--out docs/benchmarks.md] [--commit SHA]
"""
import argparse
import datetime
import glob
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def fmt_ms(v):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


def trace_profile(path):
    """A `kiln-run --profile` trace as gpu_bench's profile record (per run:
    run_ms from the first launch's start to the last one's end, kernel_ms,
    launches_per_run, every kernel by time) with each kernel's ONNX nodes
    from the trace's args."""
    trace = json.load(open(path))
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    kernels = {}
    for e in events:
        k = kernels.setdefault(e["name"], {"name": e["name"], "ms": 0.0, "launches": 0,
                                           "nodes": []})
        k["ms"] += e["dur"] / 1000.0
        k["launches"] += 1
        for n in e["args"].get("onnx_nodes", []):
            if n not in k["nodes"]:
                k["nodes"].append(n)
    top = sorted(kernels.values(), key=lambda k: -k["ms"])
    start = min((e["ts"] for e in events), default=0.0)
    end = max((e["ts"] + e["dur"] for e in events), default=0.0)
    return {"run_ms": (end - start) / 1000.0, "kernel_ms": sum(k["ms"] for k in top),
            "launches_per_run": len(events), "top": top,
            "nodes_from": trace.get("otherData", {}).get("onnx_nodes_from", "")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "docs", "benchmarks.md"))
    ap.add_argument("--commit", default="")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--reports", help="folder of `kilnc --report` JSON files named <label>.json "
                    "(spaces as _), to name each kernel's ONNX ops")
    ap.add_argument("--traces", help="folder of `kiln-run --profile` traces named <label>.json "
                    "(spaces as _; default RESULTS_DIR/traces): each kernel's time and ONNX "
                    "nodes, instead of profiles.jsonl and --reports")
    ap.add_argument("--make-reports", metavar="DIR",
                    help="compile the benchmarks' builds with --report into DIR and stop "
                    "(needs the payload `prepare` left in .gpu/payload)")
    a = ap.parse_args()
    if a.make_reports:
        return make_reports(a.make_reports)
    r = json.load(open(os.path.join(a.results, "gpu_results.json")))
    env = r.get("env", {})
    rows = [b for b in r.get("bench", []) if b.get("precision", "fp32") == "fp32"]
    half = [b for b in r.get("bench", []) if b.get("precision", "fp32") != "fp32"]
    L = []
    L.append("# Benchmarks on the H200 (NVIDIA target)\n")
    L.append(f"Measured {a.date}{' at commit ' + a.commit if a.commit else ''} on {env.get('device')} "
             f"(torch {env.get('torch')}; torch.compile {env.get('torch_compile')}), in one run of "
             "`bench/gpu_check.py` (prepare here, `run` there; docs/gpu.md). float32, TF32 off for "
             "PyTorch; median of 30 runs after warm-up, CUDA events on the same stream. Kiln runs "
             "through the C API on device buffers (`kiln_instance_run_device`, CUDA graph replay), "
             "its weights as graph inputs regenerated from a seed; PyTorch eager and torch.compile "
             "run the same architecture (utils/models/make_models.py). Correctness first: Kiln's "
             "output against onnxruntime (CPU) on the same weights and inputs.\n")
    L.append("| model | Kiln (ms) | PyTorch eager (ms) | torch.compile (ms) | Kiln / eager | max rel. err. vs onnxruntime |")
    L.append("|---|---|---|---|---|---|")
    for b in rows:
        if "error" in b:
            L.append(f"| {b['label']} | error: {b['error'][:80]} | | | | |")
            continue
        L.append(f"| {b['label']} | {fmt_ms(b.get('kiln_ms'))} | {fmt_ms(b.get('eager_ms'))} | "
                 f"{fmt_ms(b.get('compile_ms'))} | {b.get('kiln_vs_eager', float('nan')):.2f}x | "
                 f"{b.get('max_rel', float('nan')):.1e} |")
    L.append("")
    if half:
        L.append("## Half precision and codegen variants\n")
        L.append("Same run; error is the output's relative L2 (and max relative) error against "
                 "onnxruntime's float32 output on the same weights; speed-up against Kiln's own "
                 "default float32 build of the same shape. Half-precision contractions run on "
                 "tensor cores (mma.sync); the weights are graph inputs here, so their casts "
                 "(and ResNet-50's batch-norm folding) run every time (docs/mixed-precision.md).\n")
        L.append("| model | Kiln (ms) | vs Kiln fp32 | rel. L2 err. | max rel. err. |")
        L.append("|---|---|---|---|---|")
        for b in half:
            if "error" in b:
                L.append(f"| {b['label']} | error: {b['error'][:80]} | | | |")
                continue
            L.append(f"| {b['label']} | {fmt_ms(b.get('kiln_ms'))} | "
                     f"{b.get('speedup_vs_fp32', float('nan')):.2f}x | {b.get('rel_l2', float('nan')):.1e} | "
                     f"{b.get('max_rel', float('nan')):.1e} |")
        L.append("")
    traces_dir = a.traces or os.path.join(a.results, "traces")
    traces = {}
    for b in rows + half:
        path = os.path.join(traces_dir, b["label"].replace(" ", "_") + ".json")
        if os.path.exists(path):
            traces[b["label"]] = trace_profile(path)
    L.append("## Where the time goes\n")
    if traces:
        L.append("Per-kernel times from `kiln-run --profile` traces: one run after the timed ones, "
                 "every launch between two CUDA events (no graphs), each launch naming its ONNX "
                 "nodes (docs/runtime.md, \"kiln-run\"). Kernel names are `<kernel "
                 "function>_kernel[_N]`.\n")
    else:
        L.append("Per-kernel times from the runtime's own CUDA events (instance option "
                 "`profile_path`, no graphs, averaged over 6 runs). Kernel names are `<kernel "
                 "function>_kernel[_N]`; `kilnc --report` maps kernel functions to ONNX nodes.\n")
    def ops_of(label):
        if not a.reports:
            return {}
        path = os.path.join(a.reports, label.replace(" ", "_") + ".json")
        if not os.path.exists(path):
            return {}
        out = {}
        for k in json.load(open(path)).get("kernels", []):
            names = [n.get("name", str(n)) if isinstance(n, dict) else str(n)
                     for n in k.get("onnx_nodes", [])]
            out[k["name"]] = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return out

    # Every kernel's time, by the kind of ONNX op it computes.
    profiles = {}
    path = os.path.join(a.results, "profiles.jsonl")
    if os.path.exists(path):
        for line in open(path):
            rec = json.loads(line)
            profiles[rec["label"]] = rec
    kinds = [("Conv/MatMul/Gemm (+ fused ops)", r"^(Conv|ConvTranspose|MatMul|Gemm|Einsum)$"),
             ("LayerNormalization", r"^LayerNormalization$"), ("Softmax", r"^Softmax$"),
             ("pooling", r"Pool$")]

    def kind_of(nodes):
        types = [re.sub(r"_\d+$", "", n.split("/")[-1]) for n in nodes]
        for name, pat in kinds:
            if any(re.search(pat, t) for t in types):
                return name
        return "other (casts, elementwise, data movement)"

    cols = [k for k, _ in kinds] + ["other (casts, elementwise, data movement)"]
    if traces:
        L.append("Time per run by what the kernels compute (all kernels of the trace):\n")
        L.append("| model | " + " | ".join(cols) + " |")
        L.append("|---|" + "---|" * len(cols))
        for b in rows + half:
            t = traces.get(b["label"])
            if not t:
                continue
            total = {c: 0.0 for c in cols}
            for k in t["top"]:
                total[kind_of(k["nodes"])] += k["ms"]
            L.append(f"| {b['label']} | " + " | ".join(f"{total[c]:.2f} ms" for c in cols) + " |")
        L.append("")
    elif profiles and a.reports:
        L.append("Time per run by what the kernels compute (all kernels of the profile):\n")
        L.append("| model | " + " | ".join(cols) + " |")
        L.append("|---|" + "---|" * len(cols))
        for b in rows + half:
            rec = profiles.get(b["label"])
            rep = os.path.join(a.reports, b["label"].replace(" ", "_") + ".json")
            if not rec or not os.path.exists(rep):
                continue
            nodes = {k["name"]: [n.get("name", str(n)) if isinstance(n, dict) else str(n)
                                 for n in k.get("onnx_nodes", [])]
                     for k in json.load(open(rep)).get("kernels", [])}
            runs = max(1, rec["runs"])
            total = {c: 0.0 for c in cols}
            for k in rec["kernels"]:
                m = re.match(r"^(.*_kernel_\d+)_kernel(_\d+)?$", k["name"])
                total[kind_of(nodes.get(m.group(1) if m else k["name"], []))] += k["total_ms"] / runs
            L.append(f"| {b['label']} | " + " | ".join(f"{total[c]:.2f} ms" for c in cols) + " |")
        L.append("")

    for b in rows + half:
        t = traces.get(b["label"])
        if t:
            L.append(f"**{b['label']}**: {t['run_ms']:.2f} ms per run on the GPU, "
                     f"{t['kernel_ms']:.2f} ms in kernels, {t['launches_per_run']} launches.\n")
            L.append("| kernel | ONNX nodes | ms per run | launches |")
            L.append("|---|---|---|---|")
            for k in t["top"][:8]:
                nodes = ", ".join(k["nodes"][:3]) + (", ..." if len(k["nodes"]) > 3 else "")
                L.append(f"| {k['name']} | {nodes} | {k['ms']:.3f} | {k['launches']} |")
            L.append("")
            continue
        p = b.get("profile")
        if not p:
            continue
        ops = ops_of(b["label"])
        L.append(f"**{b['label']}**: {p['run_ms']:.2f} ms per run on the GPU, {p['kernel_ms']:.2f} ms in "
                 f"kernels, {p['launches_per_run']:.0f} launches.\n")
        L.append("| kernel | ONNX nodes | ms per run | launches |")
        L.append("|---|---|---|---|")
        for k in p["top"]:
            m = re.match(r"^(.*_kernel_\d+)_kernel(_\d+)?$", k["name"])
            fn = m.group(1) if m else k["name"]
            L.append(f"| {k['name']} | {ops.get(fn, '')} | {k['ms']:.3f} | {k['launches']:.0f} |")
        L.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"wrote {a.out}")


def make_reports(out):
    """The benchmarks' builds again with --report (same flags as
    gpu_bench.prepare), one <label>.json each."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    import gpu_bench  # bench/, this script's folder
    os.makedirs(out, exist_ok=True)
    kilnc = os.path.join(root, "build", "bin", "kilnc")
    for net, dims, label, precision in gpu_bench.BENCH:
        prec, _, flag = precision.partition("+")
        model = os.path.join(root, ".gpu", "payload", "bench", net, "model.onnx")
        cmd = [kilnc, model, "--target=cuda", "-o", os.path.join(out, "model.so"),
               f"--precision={prec}", "--report", os.path.join(out, label.replace(" ", "_") + ".json")]
        cmd += [f"--dim={k}={v}" for k, v in dims.items()] + ([flag] if flag else [])
        subprocess.run(cmd, check=True, capture_output=True)
        print(f"{label}: report written")
    os.remove(os.path.join(out, "model.so"))


if __name__ == "__main__":
    main()
