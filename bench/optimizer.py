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
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
DIMS = {"bert": ["--dim", "seq=128", "--dim", "batch=1"]}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def make_inputs(model_path, name, seed=0):
    m = onnx.load(model_path, load_external_data=False)
    rng = np.random.default_rng(seed)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else
                         (128 if d.dim_param == "seq" else 1))
        if tt.elem_type == onnx.TensorProto.INT64:
            feeds[inp.name] = rng.integers(0, 1000, size=shape).astype(np.int64)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def median_ms(out):
    for line in out.splitlines():
        if line.startswith("benchmark:"):
            return float(line.split("median")[1].split("ms")[0])
    raise RuntimeError("no benchmark line in:\n" + out)


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
            run([sys.executable, os.path.join(ROOT, "utils", "models", "make_models.py"),
                 args.workdir, "--only", name])
        feeds = make_inputs(path, name)
        inputs = []
        for i, (k, v) in enumerate(feeds.items()):
            p = os.path.join(args.workdir, f"{name}_input_{i}.pb")
            with open(p, "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
            inputs += ["--input", p]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)
        row = {"model": name}
        for level in ("O0", "O2"):
            so = os.path.join(args.workdir, f"{name}_{level}.so")
            rep = os.path.join(args.workdir, f"{name}_{level}.json")
            t0 = time.time()
            run([os.path.join(BIN, "kilnc"), path, "-o", so, f"-{level}",
                 f"--report={rep}", *DIMS.get(name, [])])
            row[f"compile_s_{level}"] = time.time() - t0
            report = json.load(open(rep))
            row[f"kernels_{level}"] = report["num_kernels"]
            row[f"arena_MiB_{level}"] = report["arena_bytes"] / 2**20
            row[f"peak_live_MiB_{level}"] = report["peak_live_bytes"] / 2**20
            row[f"intermediates_MiB_{level}"] = report["intermediate_bytes"] / 2**20
            outdir = os.path.join(args.workdir, f"{name}_{level}_out")
            os.makedirs(outdir, exist_ok=True)
            run([os.path.join(BIN, "kiln-run"), so, *inputs, "--output-dir", outdir])
            worst = 0.0
            for i, r in enumerate(ref):
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(outdir, f"output_{i}.pb"), "rb").read())
                got = numpy_helper.to_array(t)
                worst = max(worst, float(np.max(np.abs(got - r)) / max(np.max(np.abs(r)), 1e-30)))
            row[f"max_rel_err_{level}"] = worst
        if max(row["max_rel_err_O0"], row["max_rel_err_O2"]) > 1e-4:
            row["note"] = "accuracy check failed: not timed"
            rows.append(row)
            continue
        for level in ("O0", "O2"):
            so = os.path.join(args.workdir, f"{name}_{level}.so")
            out = run([os.path.join(BIN, "kiln-run"), so, *inputs,
                       "--benchmark", str(args.runs)])
            row[f"median_ms_{level}"] = median_ms(out)
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
