#!/usr/bin/env python3
"""Kiln's CPU code against onnxruntime and OpenBLAS, on this machine.

  .venv/bin/python bench/cpu.py [--models resnet50,mobilenetv2,bert]
      [--matmul 512,1024,2048] [--runs N] [--workdir DIR] [--json FILE]

Networks (utils/models/make_models.py, seeds fixed; BERT-base at batch 1,
sequence 128): compiled by `kilnc -O2 --target=cpu` (this machine's CPU),
checked against onnxruntime (PyPI, CPUExecutionProvider,
intra_op_num_threads=2) on the same seeded input (max relative error), then
timed in the same run: Kiln through `kiln-run --benchmark N --threads 2` and
`--threads 1`, onnxruntime's median of N runs after warm-up, in 4 rounds that
alternate the three (the machine is shared and its speed drifts; each figure
is the median of its rounds' medians). A model whose check fails is reported
and not timed.

Single matmuls (fp32, n x n by n x n, both inputs fed at run time): Kiln with
2 threads against numpy from PyPI with its bundled OpenBLAS on 2 threads
(a virtual environment of its own under the workdir, since Debian's numpy
uses the reference BLAS; threadpoolctl confirms OpenBLAS runs and with how
many threads), in GFLOP/s and as a share of this CPU's FMA peak (2 cores x
2 FMA units x the widest vector's f32 lanes x 2 FLOP x the nominal clock in
/proc/cpuinfo).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402

ROOT = kiln_tools.ROOT
BIN = os.path.join(ROOT, "build", "bin")
DIMS = {"bert": ["--dim", "seq=128", "--dim", "batch=1"]}
ROUNDS = 4

NUMPY_TIMER = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
n, runs = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
with threadpool_limits(limits=2):
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    for _ in range(3):
        a @ b
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        t.append(time.perf_counter() - t0)
print(json.dumps({"median_s": float(np.median(t)), "blas": info}))
"""


def kiln_ms(so, inputs, runs, threads):
    return kiln_tools.tools.benchmark_ms(so, inputs, runs, bindir=BIN,
                                         flags=["--threads", str(threads)])


ort_session = kiln_tools.tools.ort_session
ort_ms = kiln_tools.tools.ort_ms


def fma_peak_gflops():
    flags, mhz = "", 0.0
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags") and not flags:
            flags = line
        if line.startswith("cpu MHz") and not mhz:
            mhz = float(line.split(":")[1])
    lanes = 16 if " avx512f" in flags else 8 if " avx" in flags else 4
    cores = len(os.sched_getaffinity(0))
    return cores * 2 * lanes * 2 * mhz / 1e3, cores, lanes, mhz


def timed_compile(cmd):
    """Runs kilnc: (wall seconds, its peak resident memory in MB)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.time() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if status != 0:
        raise kiln_tools.Error(f"{' '.join(cmd)} failed:\n{err}")
    return seconds, usage.ru_maxrss / 1024


def networks(args, rows):
    for name in args.models.split(","):
        if not name:
            continue
        path = os.path.join(args.workdir, name + ".onnx")
        if not os.path.exists(path):
            kiln_tools.run_tool([sys.executable, os.path.join(ROOT, "utils", "models",
                                                              "make_models.py"),
                                 args.workdir, "--only", name])
        feeds = kiln_tools.seeded_inputs(path, 0, {"seq": 128}, int_high=1000)
        inputs = [p for _, p in kiln_tools.write_inputs(
            feeds, os.path.join(args.workdir, f"{name}_inputs"))]
        sess = ort_session(path)
        ref = sess.run(None, feeds)
        so = os.path.join(args.workdir, f"{name}_cpu.so")
        rep = os.path.join(args.workdir, f"{name}_cpu.json")
        seconds, peak_mb = timed_compile(
            [kiln_tools.find_tool("kilnc", BIN), path, "-o", so, "-O2", f"--report={rep}",
             *DIMS.get(name, [])])
        row = {"model": name, "compile_s": seconds, "compile_peak_mb": peak_mb}
        report = json.load(open(rep))
        kernels = report["kernels"]
        row["kernels"] = len(kernels)
        row["vectorized"] = sum(1 for k in kernels if k.get("vector_bits", 0) > 0)
        row["parallel"] = sum(1 for k in kernels if k.get("parallel_ops", 0) > 0)
        outs = kiln_tools.run_model(so, inputs, os.path.join(args.workdir, f"{name}_cpu_out"),
                                    bindir=BIN)
        row["max_rel_err"] = kiln_tools.max_rel_errors(outs, ref)
        if row["max_rel_err"] > 1e-4:
            row["note"] = "accuracy check failed: not timed"
            rows.append(row)
            continue
        # Rounds that alternate the three, so each sees the same machine
        # (this one is shared and its speed drifts): the median of the
        # rounds' medians.
        per = max(args.runs // ROUNDS, 5)
        t = {"ort_ms": [], "kiln2_ms": [], "kiln1_ms": []}
        for _ in range(ROUNDS):
            t["ort_ms"].append(ort_ms(sess, feeds, per))
            t["kiln2_ms"].append(kiln_ms(so, inputs, per, 2))
            t["kiln1_ms"].append(kiln_ms(so, inputs, per, 1))
        for k, v in t.items():
            row[k] = float(np.median(v))
            row[k + "_rounds"] = v
        rows.append(row)
        print(f"# {name}: {row}", file=sys.stderr)


def numpy_env(workdir):
    env = os.path.join(workdir, "numpy-openblas")
    py = os.path.join(env, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", env], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "numpy", "threadpoolctl"],
                       check=True)
    return py


def matmuls(args, rows):
    py = numpy_env(args.workdir)
    for n in [int(x) for x in args.matmul.split(",") if x]:
        path = os.path.join(args.workdir, f"matmul{n}.onnx")
        g = helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")], "matmul",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        rng = np.random.default_rng(1)
        feeds = {"a": rng.standard_normal((n, n), dtype=np.float32),
                 "b": rng.standard_normal((n, n), dtype=np.float32)}
        inputs = [p for _, p in kiln_tools.write_inputs(
            feeds, os.path.join(args.workdir, f"matmul{n}_inputs"))]
        so = os.path.join(args.workdir, f"matmul{n}.so")
        kiln_tools.compile_model(path, so, ["-O2"], bindir=BIN)
        outs = kiln_tools.run_model(so, inputs, os.path.join(args.workdir, f"matmul{n}_out"),
                                    bindir=BIN)
        ref = feeds["a"].astype(np.float64) @ feeds["b"].astype(np.float64)
        row = {"n": n, "max_rel_err": kiln_tools.max_rel_errors(outs, [ref])}
        if row["max_rel_err"] > 1e-4:
            row["note"] = "accuracy check failed: not timed"
            rows.append(row)
            continue
        flop = 2.0 * n ** 3
        per = max(args.runs // ROUNDS, 5)
        kiln, numpy_s = [], []
        for _ in range(ROUNDS):
            kiln.append(kiln_ms(so, inputs, per, 2))
            res = json.loads(subprocess.run([py, "-c", NUMPY_TIMER, str(n), str(per)],
                                            check=True, capture_output=True, text=True).stdout)
            numpy_s.append(res["median_s"])
        row["kiln_gflops"] = flop / (float(np.median(kiln)) * 1e6)
        res["median_s"] = float(np.median(numpy_s))
        blas = res["blas"]
        row["blas"] = ", ".join(f"{b.get('internal_api')} {b.get('version')} "
                                f"{b.get('num_threads')} threads" for b in blas)
        row["numpy_gflops"] = flop / (res["median_s"] * 1e9)
        rows.append(row)
        print(f"# matmul {n}: {row}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    ap.add_argument("--matmul", default="512,1024,2048")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    nets, mms = [], []
    networks(args, nets)
    matmuls(args, mms)
    peak, cores, lanes, mhz = fma_peak_gflops()

    print(f"CPU: {cores} cores, f32 x{lanes} FMA, {mhz:.0f} MHz nominal: "
          f"FMA peak {peak:.0f} GFLOP/s; median of {args.runs} runs after warm-up\n")
    print("| model | kernels (vectorized / on threads) | compile -O2 (peak memory) | max rel err | "
          "onnxruntime 2T | Kiln 2T | Kiln 1T | Kiln 2T / ORT | 1T / 2T |")
    print("|" + "---|" * 9)
    for r in nets:
        head = (f"| {r['model']} | {r['kernels']} ({r['vectorized']} / {r['parallel']}) | "
                f"{r['compile_s']:.1f} s ({r['compile_peak_mb']:.0f} MB) | "
                f"{r['max_rel_err']:.1e} |")
        if "note" in r:
            print(head + f" {r['note']} | | | | |")
            continue
        print(head + f" {r['ort_ms']:.2f} ms | {r['kiln2_ms']:.2f} ms | {r['kiln1_ms']:.2f} ms | "
              f"{r['kiln2_ms'] / r['ort_ms']:.2f}x | {r['kiln1_ms'] / r['kiln2_ms']:.2f}x |")
    print("\n| matmul fp32 | max rel err | Kiln 2T | % of FMA peak | numpy (OpenBLAS) 2T | "
          "Kiln / numpy | BLAS (threadpoolctl) |")
    print("|" + "---|" * 7)
    for r in mms:
        if "note" in r:
            print(f"| {r['n']}³ | {r['max_rel_err']:.1e} | {r['note']} | | | | |")
            continue
        print(f"| {r['n']}³ | {r['max_rel_err']:.1e} | {r['kiln_gflops']:.1f} GFLOP/s | "
              f"{100 * r['kiln_gflops'] / peak:.0f}% | {r['numpy_gflops']:.1f} GFLOP/s | "
              f"{r['kiln_gflops'] / r['numpy_gflops']:.2f}x | {r['blas']} |")
    if args.json:
        json.dump({"networks": nets, "matmul": mms, "peak_gflops": peak}, open(args.json, "w"),
                  indent=2)


if __name__ == "__main__":
    main()
