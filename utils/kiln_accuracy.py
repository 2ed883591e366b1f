#!/usr/bin/env python3
"""kiln-accuracy: how much a reduced-precision build of a model differs from
its fp32 build, and where the error comes from.

  .venv/bin/python utils/kiln_accuracy.py MODEL.onnx [--precision fp16|bf16|tf32]
      [--inputs DIR | --seed N] [--dim NAME=V ...] [--layers] [--top N]
      [--keep-fp32 LIST] [--calibrate DIR] [--workdir DIR] [--json FILE]
      [--max-rel-l2 X] [--bin DIR]

Both builds are compiled with kilnc (-O2) and run with kiln-run on the same
inputs: the files of --inputs (input_N.pb, or its test_data_set_0), else
seeded random ones (floats N(0, 1); integer token ids below the row count of
the model's embedding table). For every output it prints

  rel L2   ||reduced - fp32|| / ||fp32||
  max abs  max |reduced - fp32|
  max rel  max |reduced - fp32| / max |fp32|
  NaN/Inf  non-finite values where the fp32 build has none

With --layers both builds also return every intermediate float value
(kilnc --expose-intermediates=all, named by ONNX node) and the tool reports,
in program order, the first node whose rel L2 error exceeds --threshold and
the first node where the error jumps (more than --jump times the largest
error of the nodes before it and above the precision's unit roundoff), plus
the --top nodes with the largest error.

Exit status 1 when an output gains NaN/Inf or exceeds --max-rel-l2.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Unit roundoff of each precision: the smallest error worth calling a jump.
UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "tf32": 2.0 ** -11, "fp32": 2.0 ** -24}


def fail(msg):
    sys.stderr.write(f"kiln-accuracy: {msg}\n")
    sys.exit(2)


def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def parse_dims(dims):
    out = {}
    for d in dims or []:
        k, _, v = d.partition("=")
        if not k or not v.isdigit():
            fail(f"--dim expects NAME=VALUE, got '{d}'")
        out[k] = int(v)
    return out


def random_inputs(model_path, seed, dims):
    """Seeded inputs for the model's graph inputs (initializers excluded)."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = []
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                shape.append(1)
        et = tt.elem_type
        if et in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            # Token ids: below the smallest row count of a 2-D initializer
            # (the embedding tables).
            rows = [int(i.dims[0]) for i in m.graph.initializer if len(i.dims) == 2]
            vocab = min(rows) if rows else 100
            dtype = np.int64 if et == onnx.TensorProto.INT64 else np.int32
            feeds.append((inp.name, rng.integers(0, vocab, shape).astype(dtype)))
        elif et == onnx.TensorProto.BOOL:
            feeds.append((inp.name, rng.integers(0, 2, shape).astype(bool)))
        else:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(et)
            feeds.append((inp.name, rng.standard_normal(shape).astype(dtype)))
    return feeds


def write_inputs(feeds, directory):
    os.makedirs(directory, exist_ok=True)
    files = []
    for i, (name, value) in enumerate(feeds):
        path = os.path.join(directory, f"input_{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
        files.append((name, path))
    return files


def input_files(directory):
    """(name, path) of DIR/input_N.pb, or of DIR/test_data_set_0/input_N.pb."""
    for d in (directory, os.path.join(directory, "test_data_set_0")):
        names = sorted((f for f in os.listdir(d) if f.startswith("input_") and f.endswith(".pb")),
                       key=lambda f: int(f[6:-3]))
        if names:
            out = []
            for f in names:
                t = onnx.TensorProto()
                with open(os.path.join(d, f), "rb") as fh:
                    t.ParseFromString(fh.read())
                out.append((t.name, os.path.join(d, f)))
            return out
    fail(f"'{directory}' holds no input_N.pb files")


def compile_model(bindir, model, so, precision, dims, layers, extra=()):
    cmd = [os.path.join(bindir, "kilnc"), model, "-o", so, f"--precision={precision}"]
    cmd += [f"--dim={k}={v}" for k, v in dims.items()]
    if layers:
        cmd.append("--expose-intermediates=all")
    cmd += list(extra)
    run(cmd, "kilnc")


def run_model(bindir, so, files, outdir):
    """Runs `so`; returns [(output name, array)] in signature order."""
    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    cmd = [os.path.join(bindir, "kiln-run"), so]
    for name, path in files:
        cmd += ["--input", f"{name}={path}" if name else path]
    run(cmd + ["--output-dir", outdir], "kiln-run")
    outs = []
    i = 0
    while os.path.exists(os.path.join(outdir, f"output_{i}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(outdir, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        outs.append((t.name, numpy_helper.to_array(t)))
        i += 1
    return outs


def compare(ref, got):
    """Errors of `got` against `ref` (fp32 build)."""
    r = ref.astype(np.float64).ravel()
    g = got.astype(np.float64).ravel()
    new_nonfinite = int(np.sum(~np.isfinite(g) & np.isfinite(r)))
    finite = np.isfinite(r) & np.isfinite(g)
    d = g[finite] - r[finite]
    norm = float(np.linalg.norm(r[finite])) if finite.any() else 0.0
    diff = float(np.linalg.norm(d)) if finite.any() else 0.0
    max_abs = float(np.max(np.abs(d))) if d.size else 0.0
    max_ref = float(np.max(np.abs(r[finite]))) if finite.any() else 0.0
    return {
        "rel_l2": diff / norm if norm > 0 else diff,
        "max_abs": max_abs,
        "max_rel": max_abs / max_ref if max_ref > 0 else max_abs,
        "nonfinite": new_nonfinite,
    }


def fmt_err(e):
    s = f"rel L2 {e['rel_l2']:.2e}, max abs {e['max_abs']:.2e}, max rel {e['max_rel']:.2e}"
    return s + (f", {e['nonfinite']} new NaN/Inf" if e["nonfinite"] else ", no new NaN/Inf")


def evaluate(model, precision, workdir, bindir=None, dims=None, seed=0, inputs=None,
             layers=False, extra=(), fp32_so=None):
    """Builds (or reuses `fp32_so`) and compares. Returns the result dict."""
    bindir = bindir or os.path.join(ROOT, "build", "bin")
    dims = dims or {}
    os.makedirs(workdir, exist_ok=True)
    files = input_files(inputs) if inputs else write_inputs(
        random_inputs(model, seed, dims), os.path.join(workdir, "inputs"))
    if fp32_so is None:
        fp32_so = os.path.join(workdir, "fp32.so")
        compile_model(bindir, model, fp32_so, "fp32", dims, layers)
    red_so = os.path.join(workdir, f"{precision}.so")
    compile_model(bindir, model, red_so, precision, dims, layers, extra)
    ref = run_model(bindir, fp32_so, files, os.path.join(workdir, "out_fp32"))
    got = run_model(bindir, red_so, files, os.path.join(workdir, f"out_{precision}"))
    got_by_name = dict(got)
    m = onnx.load(model, load_external_data=False)
    model_outputs = [o.name for o in m.graph.output]
    result = {"model": os.path.basename(model), "precision": precision, "outputs": [], "layers": []}
    for name, value in ref:
        if name not in got_by_name:
            continue
        e = compare(value, got_by_name[name])
        e.update(name=name, shape=list(value.shape))
        (result["outputs"] if name in model_outputs else result["layers"]).append(e)
    return result


def analyze_layers(layers, precision, threshold, jump):
    """First node above `threshold`, first jump, in program order."""
    u = UNIT_ROUNDOFF.get(precision, 2.0 ** -11)
    first_above = first_jump = None
    worst_before = 0.0
    for e in layers:
        err = e["rel_l2"] if not e["nonfinite"] else float("inf")
        if first_above is None and err > threshold:
            first_above = e
        if first_jump is None and err > u and err > jump * max(worst_before, u):
            first_jump = dict(e, before=worst_before)
        worst_before = max(worst_before, err)
    return first_above, first_jump


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "tf32"])
    ap.add_argument("--inputs", help="folder of input_N.pb (or test_data_set_0/)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--dim", action="append", help="NAME=VALUE for symbolic dims (kilnc --dim)")
    ap.add_argument("--layers", action="store_true", help="compare every intermediate value")
    ap.add_argument("--threshold", type=float, default=None,
                    help="layer error reported as too large (default 5e-3 fp16/tf32, 2e-2 bf16)")
    ap.add_argument("--jump", type=float, default=10.0,
                    help="error growth over the nodes before that counts as a jump")
    ap.add_argument("--top", type=int, default=10, help="list the N layers with the largest error")
    ap.add_argument("--keep-fp32", help="kilnc --keep-fp32 for the reduced build")
    ap.add_argument("--calibrate", help="kilnc --calibrate=DIR for the reduced build")
    ap.add_argument("--workdir", help="keep builds and outputs here (default: a temporary folder)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="kilnc and kiln-run")
    ap.add_argument("--json", help="write the full results here")
    ap.add_argument("--max-rel-l2", type=float, help="exit 1 when an output's rel L2 exceeds this")
    args = ap.parse_args()

    extra = []
    if args.keep_fp32:
        extra.append(f"--keep-fp32={args.keep_fp32}")
    if args.calibrate:
        extra.append(f"--calibrate={args.calibrate}")
    threshold = args.threshold if args.threshold is not None else (
        2e-2 if args.precision == "bf16" else 5e-3)
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-accuracy-")
    res = evaluate(args.model, args.precision, workdir, bindir=args.bin,
                   dims=parse_dims(args.dim), seed=args.seed, inputs=args.inputs,
                   layers=args.layers, extra=extra)
    src = f"inputs {args.inputs}" if args.inputs else f"random inputs, seed {args.seed}"
    print(f"kiln-accuracy: {res['model']}, {args.precision} vs fp32, {src}")
    bad = False
    for e in res["outputs"]:
        print(f"  output '{e['name']}' {e['shape']}: {fmt_err(e)}")
        bad |= e["nonfinite"] > 0
        if args.max_rel_l2 is not None and e["rel_l2"] > args.max_rel_l2:
            bad = True
    if args.layers:
        layers = res["layers"]
        above, jumped = analyze_layers(layers, args.precision, threshold, args.jump)
        print(f"  {len(layers)} intermediate values compared (program order)")
        if above:
            print(f"  first above {threshold:g}: '{above['name']}' {fmt_err(above)}")
        else:
            print(f"  no intermediate value above {threshold:g}")
        if jumped:
            print(f"  first jump (> {args.jump:g}x the largest error before it, "
                  f"{jumped['before']:.2e}): '{jumped['name']}' {fmt_err(jumped)}")
        res["first_above"] = above["name"] if above else None
        res["first_jump"] = jumped["name"] if jumped else None
        ranked = sorted(layers, key=lambda e: (-e["nonfinite"], -e["rel_l2"]))[: args.top]
        if ranked:
            print(f"  largest errors:")
            for e in ranked:
                print(f"    {e['name']}: {fmt_err(e)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
