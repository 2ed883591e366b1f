#!/usr/bin/env python3
"""Compiles each network of make_models.py with kilnc, runs it with kiln-run
on seeded random inputs, compares with onnxruntime and writes the table
(model, parameters, compile time, kilnc run time, onnxruntime time, max
relative error) into docs/models.md.

  .venv/bin/python utils/models/check_models.py [--small] [--only a,b]
      [--workdir /tmp/kiln-models] [--out docs/models.md] [--timeout 1800]

A model that fails (kilnc error, run error, timeout) gets its first error
line in the table instead of numbers. Relative error: max|kiln - ort| /
max|ort| over every output. Times: compile is kilnc's wall time; run times
are the median of --runs runs after a warm-up (kiln-run --iterations; the
onnxruntime CPU provider with default threading).
"""
import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kiln_tools  # noqa: E402

make_models = kiln_tools.project_module("utils/models/make_models.py")

# The sequence length / batch used for symbolic dims (the reduced
# transformers of --small hold 64 positions).
SYMBOLIC = {"seq": 128}
SMALL_SYMBOLIC = {"seq": 16}


def first_error(text):
    for line in text.splitlines():
        if "error" in line.lower():
            return line.strip()[:160]
    lines = [l for l in text.splitlines() if l.strip()]
    return (lines[-1] if lines else "failed")[:160]


def check(name, args, bindir):
    work = os.path.join(args.workdir, name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, name + ".onnx")
    params = make_models.export(name, path, small=args.small)
    row = {"model": name, "params": params}
    rng = np.random.default_rng(0)
    feeds = kiln_tools.seeded_inputs(path, rng, SMALL_SYMBOLIC if args.small else SYMBOLIC)

    # onnxruntime: reference outputs and time.
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    row["ort_ms"] = float(np.median(times))

    so = os.path.join(work, name + ".so")
    t0 = time.perf_counter()
    try:
        p = subprocess.run([os.path.join(bindir, "kilnc"), path, "-o", so], capture_output=True,
                           text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        row["error"] = f"kilnc timed out after {args.timeout} s"
        return row
    row["compile_s"] = time.perf_counter() - t0
    if p.returncode != 0:
        row["error"] = "kilnc: " + first_error(p.stderr + p.stdout)
        return row

    cmd = [os.path.join(bindir, "kiln-run"), so]
    for _, f in kiln_tools.write_inputs(feeds, work):
        cmd += ["--input", f]
    outdir = os.path.join(work, "out")
    os.makedirs(outdir, exist_ok=True)
    try:
        p = subprocess.run(cmd + ["--output-dir", outdir], capture_output=True, text=True,
                           timeout=args.timeout)
        if p.returncode == 0:
            try:
                row["kiln_ms"] = kiln_tools.tools.benchmark_ms(
                    so, cmd[3::2], args.runs, bindir=bindir, timeout=args.timeout)
            except kiln_tools.tools.Error:
                row["kiln_ms"] = None
    except subprocess.TimeoutExpired:
        row["error"] = f"kiln-run timed out after {args.timeout} s"
        return row
    if p.returncode != 0:
        row["error"] = "kiln-run: " + first_error(p.stderr + p.stdout)
        return row
    try:
        worst = kiln_tools.max_rel_errors(kiln_tools.read_outputs(outdir), refs)
    except ValueError as e:
        row["error"] = str(e)
        return row
    row["max_rel"] = worst
    return row


def fmt(row):
    params = f"{row['params'] / 1e6:.1f} M" if row["params"] >= 1e5 else f"{row['params']:,}"
    if "error" in row:
        return f"| {row['model']} | {params} | – | – | {row.get('ort_ms', 0):.1f} | {row['error']} |"
    kiln = f"{row['kiln_ms']:.1f}" if row.get("kiln_ms") is not None else "?"
    return (f"| {row['model']} | {params} | {row['compile_s']:.1f} | {kiln} | "
            f"{row['ort_ms']:.1f} | {row['max_rel']:.1e} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="the reduced variants")
    ap.add_argument("--only", default="")
    ap.add_argument("--workdir", default="/tmp/kiln-models")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "models.md"))
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per kilnc/kiln-run")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(make_models.MODELS)
    rows = []
    for n in names:
        print(f"== {n}", flush=True)
        row = check(n, args, args.bindir)
        print("  ", fmt(row), flush=True)
        rows.append(row)
    variant = "reduced variants (`--small`)" if args.small else "full size"
    lines = [
        "# Kiln on real networks",
        "",
        "Generated by `utils/models/check_models.py` (networks from `utils/models/make_models.py`,",
        "seeds fixed; inputs seeded random, symbolic sequence length "
        f"{(SMALL_SYMBOLIC if args.small else SYMBOLIC)['seq']}, batch 1). Regenerate with:",
        "",
        "```",
        ".venv/bin/python utils/models/check_models.py" + (" --small" if args.small else ""),
        "```",
        "",
        f"{variant}; {datetime.date.today().isoformat()}; times in ms are medians of "
        f"{args.runs} runs after a warm-up on this machine (onnxruntime: CPU provider, default "
        "threads); max rel err = max|kiln - onnxruntime| / max|onnxruntime| over all outputs.",
        "",
        "| model | params | kilnc compile (s) | kilnc run (ms) | onnxruntime (ms) | max rel err |",
        "|---|---|---|---|---|---|",
    ] + [fmt(r) for r in rows] + [""]
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines))
    print(f"wrote {args.out}")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
