#!/usr/bin/env python3
"""Kiln compiled several ways, against each other and onnxruntime, in one run.

  .venv/bin/python bench/cpu_ab.py MODEL [--runs N] [--workdir DIR]
      LABEL:FLAG[,FLAG...] [LABEL:FLAG...]

e.g. `bench/cpu_ab.py resnet50 nchw:--layout=nchw nhwc:--layout=nhwc`.
MODEL is one of utils/models/make_models.py's (made on first use, seeds
fixed; BERT at batch 1, sequence 128, as bench/cpu.py). Each variant is
`kilnc -O2` with its flags, checked against onnxruntime on the same seeded
input (max relative error; a variant above 1e-4 is not timed), then all are
timed in 3 rounds that alternate onnxruntime (intra_op_num_threads=2) and
each variant with 2 threads and 1 thread (`kiln-run --benchmark N`): the
table gives the median of the rounds' medians and each variant's 2-thread
time over onnxruntime's. Compile time and peak memory per variant too.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu  # noqa: E402  (bench/cpu.py: the same timers and settings)

kiln_tools = cpu.kiln_tools
ROUNDS = 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("variants", nargs="+", help="LABEL:FLAG[,FLAG...]")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workdir", default=os.path.join(cpu.ROOT, "build", "bench-cpu"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    name = args.model
    path = os.path.join(args.workdir, name + ".onnx")
    if not os.path.exists(path):
        kiln_tools.run_tool([sys.executable, os.path.join(cpu.ROOT, "utils", "models",
                                                          "make_models.py"),
                             args.workdir, "--only", name])
    feeds = kiln_tools.seeded_inputs(path, 0, {"seq": 128}, int_high=1000)
    inputs = [p for _, p in kiln_tools.write_inputs(
        feeds, os.path.join(args.workdir, f"{name}_inputs"))]
    sess = cpu.ort_session(path)
    ref = sess.run(None, feeds)
    rows = []
    for v in args.variants:
        label, _, flags = v.partition(":")
        flags = [f for f in flags.split(",") if f]
        so = os.path.join(args.workdir, f"{name}_ab_{label}.so")
        seconds, peak = cpu.timed_compile(
            [kiln_tools.find_tool("kilnc", cpu.BIN), path, "-o", so, "-O2",
             *cpu.DIMS.get(name, []), *flags])
        outs = kiln_tools.run_model(so, inputs, os.path.join(args.workdir,
                                                             f"{name}_ab_{label}_out"),
                                    bindir=cpu.BIN)
        err = kiln_tools.max_rel_errors(outs, ref)
        rows.append({"label": label, "flags": flags, "so": so, "compile_s": seconds,
                     "compile_peak_mb": peak, "max_rel_err": err, 2: [], 1: []})
    ort = []
    for _ in range(ROUNDS):
        ort.append(cpu.ort_ms(sess, feeds, args.runs))
        for r in rows:
            if r["max_rel_err"] > 1e-4:
                continue
            for threads in (2, 1):
                r[threads].append(cpu.kiln_ms(r["so"], inputs, args.runs, threads))
    ort_ms = float(np.median(ort))
    print(f"{name}: onnxruntime (2 threads) {ort_ms:.2f} ms; "
          f"medians of {ROUNDS} rounds of {args.runs} runs")
    print("| variant | flags | max rel err | Kiln 2T ms | Kiln 1T ms | 2T / ORT | "
          "compile s | compile MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    out = []
    for r in rows:
        if r[2]:
            t2, t1 = float(np.median(r[2])), float(np.median(r[1]))
            timed = f"{t2:.2f} | {t1:.2f} | {t2 / ort_ms:.2f}"
        else:
            t2 = t1 = None
            timed = "not timed (accuracy) | | "
        print(f"| {r['label']} | {' '.join(r['flags'])} | {r['max_rel_err']:.1e} | {timed} | "
              f"{r['compile_s']:.1f} | {r['compile_peak_mb']:.0f} |")
        out.append({"label": r["label"], "flags": r["flags"], "kiln2_ms": t2, "kiln1_ms": t1,
                    "max_rel_err": r["max_rel_err"], "compile_s": r["compile_s"]})
    print(json.dumps({"model": name, "ort_ms": ort_ms, "variants": out}), file=sys.stderr)


if __name__ == "__main__":
    main()
