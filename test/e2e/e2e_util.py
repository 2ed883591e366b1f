"""Helpers of Kiln's end-to-end tests: compile a model with kilnc, run it
with kiln-run on seeded random inputs, and compare with onnxruntime."""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if expect_ok and p.returncode != 0:
        sys.stderr.write(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}\n")
        sys.exit(1)
    return p


def ort_run(model_path, feeds):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def compile_model(model_path, so_path, extra=()):
    run(["kilnc", model_path, "-o", so_path, *extra])


def check(model, workdir, feeds_list, name, max_rel=1e-4):
    """Compiles `model` (ModelProto), runs it on each feeds dict and compares
    every output with onnxruntime: max|a-b|/max|b| <= max_rel, no NaN/Inf."""
    os.makedirs(workdir, exist_ok=True)
    model_path = os.path.join(workdir, name + ".onnx")
    so_path = os.path.join(workdir, name + ".so")
    onnx.save(model, model_path)
    compile_model(model_path, so_path)
    worst = 0.0
    for n, feeds in enumerate(feeds_list):
        d = os.path.join(workdir, f"{name}_set{n}")
        os.makedirs(d, exist_ok=True)
        args = ["kiln-run", so_path]
        for i, (k, v) in enumerate(feeds.items()):
            p = os.path.join(d, f"input_{i}.pb")
            with open(p, "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
            args += ["--input", p]
        outdir = os.path.join(d, "out")
        os.makedirs(outdir, exist_ok=True)
        run(args + ["--output-dir", outdir])
        refs = ort_run(model_path, feeds)
        for i, ref in enumerate(refs):
            t = onnx.TensorProto()
            with open(os.path.join(outdir, f"output_{i}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            got = numpy_helper.to_array(t)
            if got.shape != ref.shape:
                print(f"FAIL {name} set {n} output {i}: shape {got.shape} != {ref.shape}")
                sys.exit(1)
            if np.isfinite(ref).all() and not np.isfinite(got).all():
                print(f"FAIL {name} set {n} output {i}: NaN/Inf where the reference has none")
                sys.exit(1)
            denom = float(np.max(np.abs(ref))) if ref.size else 0.0
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
            rel = err / denom if denom > 0 else err
            worst = max(worst, rel)
            print(f"{name} set {n} output {i} shape {tuple(got.shape)}: max_rel_err={rel:.3e}")
            if rel > max_rel:
                print(f"FAIL {name}: max relative error {rel:.3e} > {max_rel:.0e}")
                sys.exit(1)
    print(f"PASS {name} max_rel_err={worst:.3e}")
    return worst


def ort_run_model(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
