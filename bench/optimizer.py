#!/usr/bin/env python3
"""Kiln's graph optimizer on real networks, on this machine's CPU.

  .venv/bin/python bench/optimizer.py [--models resnet50,mobilenetv2,bert]
      [--runs N] [--workdir DIR] [--json FILE]

For each model (written by utils/models/make_models.py, seeds fixed; BERT at
batch 1, sequence 128 through `kilnc --dim`): compiles at -O0 (no graph
optimizer) and -O2 (simplification + fusion), checks both against
onnxruntime on the same seeded input (max relative error), then times them
with `kiln-run --benchmark` and onnxruntime in the same run, and prints a
table: kernels, arena vs the largest live set, compile time, median latency
and the speed-up of -O2 over -O0. Correctness is checked before anything is
timed; a model whose check fails is reported and not timed.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402

ROOT = kiln_tools.ROOT
BIN = os.path.join(ROOT, "build", "bin")
DIMS = {"bert": ["--dim", "seq=128", "--dim", "batch=1"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        path = os.path.join(args.workdir, name + ".onnx")
        if not os.path.exists(path):
            kiln_tools.run_tool([sys.executable, os.path.join(ROOT, "utils", "models",
                                                              "make_models.py"),
                                 args.workdir, "--only", name])
        # Token ids below 1000, the sequence 128 (batch 1, as DIMS).
        feeds = kiln_tools.seeded_inputs(path, 0, {"seq": 128}, int_high=1000)
        inputs = [p for _, p in kiln_tools.write_inputs(
            feeds, os.path.join(args.workdir, f"{name}_inputs"))]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)
        row = {"model": name}
        for level in ("O0", "O2"):
            so = os.path.join(args.workdir, f"{name}_{level}.so")
            rep = os.path.join(args.workdir, f"{name}_{level}.json")
            t0 = time.time()
            kiln_tools.compile_model(path, so, [f"-{level}", f"--report={rep}",
                                                *DIMS.get(name, [])], bindir=BIN)
            row[f"compile_s_{level}"] = time.time() - t0
            report = json.load(open(rep))
            row[f"kernels_{level}"] = report["num_kernels"]
            row[f"arena_MiB_{level}"] = report["arena_bytes"] / 2**20
            row[f"peak_live_MiB_{level}"] = report["peak_live_bytes"] / 2**20
            row[f"intermediates_MiB_{level}"] = report["intermediate_bytes"] / 2**20
            outs = kiln_tools.run_model(so, inputs, os.path.join(args.workdir, f"{name}_{level}_out"),
                                        bindir=BIN)
            row[f"max_rel_err_{level}"] = kiln_tools.max_rel_errors(outs, ref)
        if max(row["max_rel_err_O0"], row["max_rel_err_O2"]) > 1e-4:
            row["note"] = "accuracy check failed: not timed"
            rows.append(row)
            continue
        for level in ("O0", "O2"):
            so = os.path.join(args.workdir, f"{name}_{level}.so")
            row[f"median_ms_{level}"] = kiln_tools.tools.benchmark_ms(so, inputs, args.runs,
                                                                    bindir=BIN)
        times = []
        for _ in range(3):
            sess.run(None, feeds)
        for _ in range(max(args.runs, 5)):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        row["median_ms_ort"] = float(np.median(times))
        row["speedup_O2_over_O0"] = row["median_ms_O0"] / row["median_ms_O2"]
        rows.append(row)

    hdr = ("| model | kernels -O0 / -O2 | arena / largest live set (-O2) | compile -O2 | "
           "max rel err -O2 | median -O0 | median -O2 | -O2 speed-up | onnxruntime | Kiln -O2 / ORT |")
    print(hdr)
    print("|" + "---|" * 10)
    for r in rows:
        if "note" in r:
            print(f"| {r['model']} | {r['kernels_O0']} / {r['kernels_O2']} | | | "
                  f"{r['max_rel_err_O2']:.2e} | {r['note']} | | | | |")
            continue
        ratio = r["arena_MiB_O2"] / r["peak_live_MiB_O2"] if r["peak_live_MiB_O2"] else float("nan")
        print(f"| {r['model']} | {r['kernels_O0']} / {r['kernels_O2']} | "
              f"{r['arena_MiB_O2']:.2f} / {r['peak_live_MiB_O2']:.2f} MiB ({ratio:.2f}x) | "
              f"{r['compile_s_O2']:.1f} s | {r['max_rel_err_O2']:.2e} | "
              f"{r['median_ms_O0']:.1f} ms | {r['median_ms_O2']:.1f} ms | "
              f"{r['speedup_O2_over_O0']:.2f}x | {r['median_ms_ort']:.1f} ms | "
              f"{r['median_ms_O2'] / r['median_ms_ort']:.1f}x |")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
