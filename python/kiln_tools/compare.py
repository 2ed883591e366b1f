"""Comparing Kiln's outputs: with onnxruntime (the project's max relative
error) and between two builds (error statistics)."""
import os

import numpy as np
import onnx

from kiln_tools.tensors import write_inputs
from kiln_tools.tools import Error, compile_model, run_model

# Set by utils/compare_builds.py: check() then only records its models and
# inputs into this folder (node-test layout) and compiles nothing.
CORPUS_ENV = "KILN_TOOLS_CORPUS"


class CheckFailure(Error):
    """An output of Kiln differs from onnxruntime's beyond the tolerance."""


def ort_run(model, feeds):
    """onnxruntime's (CPU provider) outputs of `model` (path or ModelProto)."""
    import onnxruntime as ort

    src = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, feeds)


def max_rel_error(got, ref):
    """The project's error of one output: max|got - ref| / max|ref| (the
    plain max|got - ref| where ref is all zeros), computed in float64; inf
    when `got` has NaN/Inf and `ref` has none. Raises ValueError when the
    shapes differ."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        raise ValueError(f"shape {got.shape} != {ref.shape}")
    if np.isfinite(ref).all() and not np.isfinite(got).all():
        return float("inf")
    if not ref.size:
        return 0.0
    denom = float(np.max(np.abs(ref)))
    err = float(np.max(np.abs(got.astype(np.float64) - ref)))
    return err / denom if denom > 0 else err


def max_rel_errors(gots, refs):
    """The largest max_rel_error over paired outputs (arrays, or (name,
    array) pairs as run_model returns them). ValueError names the output."""
    worst = 0.0
    if len(gots) != len(refs):
        raise ValueError(f"{len(gots)} outputs, the reference has {len(refs)}")
    for i, (got, ref) in enumerate(zip(gots, refs)):
        got = got[1] if isinstance(got, tuple) else got
        try:
            worst = max(worst, max_rel_error(got, ref))
        except ValueError as e:
            raise ValueError(f"output {i}: {e}") from None
    return worst


def error_stats(ref, got):
    """Errors of `got` against `ref` (e.g. a reduced-precision build against
    the fp32 build) over the positions finite in both: rel_l2 (||got - ref||
    / ||ref||), max_abs, max_rel (max_abs / max|ref|), and nonfinite (NaN/Inf
    in `got` where `ref` is finite)."""
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


def _record(corpus, model, feeds_list, name):
    """check() under CORPUS_ENV: DIR/NAME/model.onnx, test_data_set_N/."""
    d = os.path.join(corpus, name)
    n = 1
    while os.path.exists(d):  # a name checked twice
        n += 1
        d = os.path.join(corpus, f"{name}_{n}")
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, feeds in enumerate(feeds_list):
        write_inputs(feeds, os.path.join(d, f"test_data_set_{i}"))
    print(f"recorded {name} into {d}")


def check(model, workdir, feeds_list, name, max_rel=1e-4, flags=(), bindir=None):
    """The end-to-end check: compiles `model` (ModelProto) with kilnc FLAGS,
    runs it with kiln-run on each feeds dict and compares every output with
    onnxruntime: same shape and dtype, no NaN/Inf the reference does not have,
    max_rel_error <= max_rel. Prints one line per output; returns the worst
    error; raises CheckFailure (or ToolError when a tool fails)."""
    corpus = os.environ.get(CORPUS_ENV)
    if corpus:
        _record(corpus, model, feeds_list, name)
        return 0.0
    os.makedirs(workdir, exist_ok=True)
    model_path = os.path.join(workdir, name + ".onnx")
    so_path = os.path.join(workdir, name + ".so")
    onnx.save(model, model_path)
    compile_model(model_path, so_path, flags, bindir=bindir)
    worst = 0.0
    for n, feeds in enumerate(feeds_list):
        d = os.path.join(workdir, f"{name}_set{n}")
        files = write_inputs(feeds, d)
        outs = run_model(so_path, [p for _, p in files], os.path.join(d, "out"), bindir=bindir)
        refs = ort_run(model_path, feeds)
        if len(outs) != len(refs):
            raise CheckFailure(f"FAIL {name} set {n}: {len(outs)} outputs, onnxruntime gives "
                               f"{len(refs)}")
        for i, ((_, got), ref) in enumerate(zip(outs, refs)):
            try:
                rel = max_rel_error(got, ref)
            except ValueError as e:
                raise CheckFailure(f"FAIL {name} set {n} output {i}: {e}") from None
            if got.dtype != ref.dtype:
                raise CheckFailure(f"FAIL {name} set {n} output {i}: dtype {got.dtype} != "
                                   f"{ref.dtype}")
            if rel == float("inf"):
                raise CheckFailure(f"FAIL {name} set {n} output {i}: NaN/Inf where the reference "
                                   "has none")
            worst = max(worst, rel)
            print(f"{name} set {n} output {i} shape {tuple(got.shape)}: max_rel_err={rel:.3e}")
            if rel > max_rel:
                raise CheckFailure(f"FAIL {name}: max relative error {rel:.3e} > {max_rel:.0e}")
    print(f"PASS {name} max_rel_err={worst:.3e}")
    return worst


def collecting_check(workdir, failures):
    """check() for a test of many cases: a failing case is printed and its
    name appended to `failures` instead of stopping the test."""
    def check_case(name, model, feeds_list, max_rel=1e-4):
        try:
            return check(model, workdir, feeds_list, name, max_rel=max_rel)
        except Error as e:
            print(e if str(e).startswith("FAIL") else f"FAIL {name}: {e}")
            failures.append(name)
            return None
    return check_case


def format_stats(e):
    """One line of error_stats()."""
    s = f"rel L2 {e['rel_l2']:.2e}, max abs {e['max_abs']:.2e}, max rel {e['max_rel']:.2e}"
    return s + (f", {e['nonfinite']} new NaN/Inf" if e["nonfinite"] else ", no new NaN/Inf")
