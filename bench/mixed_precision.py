#!/usr/bin/env python3
"""Accuracy of Kiln's mixed-precision builds on this CPU; prints the tables of
docs/mixed-precision.md.

  .venv/bin/python bench/mixed_precision.py models [--models resnet50,mobilenetv2,bert]
      [--small] [--seq 128] [--workdir /tmp/kiln-mp] [--json FILE]
  .venv/bin/python bench/mixed_precision.py conformance
      [--subset test/conformance/ci_subset.txt | --all] [--precision fp16] [--json FILE]

models: each network of utils/models/make_models.py (fixed seeds, batch-norm
statistics from data) is compiled in fp32, fp16 and bf16 (kilnc -O2, batch 1,
BERT at --dim seq=N) and run with kiln-run on one seeded random input; the
reduced builds are compared with the fp32 build (kiln_tools.error_stats, as in kiln_accuracy.py:
relative L2 error, max abs, max |diff| / max |fp32|, new NaN/Inf). Targets:
rel L2 <= 5e-3 (fp16) and <= 2e-2 (bf16), no NaN/Inf. The compile report of
each reduced build gives the nodes per precision and the casts.

conformance: every ONNX backend node test of the subset is compiled with
--precision=fp32 and with --precision=fp16 and each data set is run on both;
a case fails when the fp16 build gives NaN/Inf where the fp32 build gives a
finite value (or fails to compile or run where fp32 works). Also counts the
cases the pass changed (some node in half) and how many of those still meet
ONNX's tolerance against the expected outputs.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools import nodetests  # noqa: E402

ROOT = kiln_tools.ROOT
BIN = os.path.join(ROOT, "build", "bin")
TARGET = {"fp16": 5e-3, "bf16": 2e-2}


def kilnc(model, so, precision, dims=(), report=None, timeout=1800, keep=""):
    cmd = [os.path.join(BIN, "kilnc"), model, "-o", so, f"--precision={precision}"]
    if keep and precision != "fp32":
        cmd.append(f"--keep-fp32={keep}")
    cmd += [f"--dim={d}" for d in dims]
    if report:
        cmd.append(f"--report={report}")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.perf_counter() - t0


def run_so(so, files, outdir, timeout=1800):
    t0 = time.perf_counter()
    outs = kiln_tools.run_model(so, files, outdir, bindir=BIN, timeout=timeout)
    return outs, time.perf_counter() - t0


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def bench_models(args):
    make_models = kiln_tools.project_module("utils/models/make_models.py")

    rows = []
    for name in args.models.split(","):
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, name + ".onnx")
        if not os.path.exists(path):
            make_models.export(name, path, small=args.small)
        dims = [f"seq={args.seq}", "batch=1"] if name in ("bert", "gpt2") else []
        files = kiln_tools.write_inputs(
            kiln_tools.seeded_inputs(path, 0, {"seq": args.seq, "batch": 1}),
            os.path.join(work, "inputs"))
        builds = {}
        for prec in ["fp32", "fp16", "bf16"]:
            so = os.path.join(work, f"{prec}.so")
            report = os.path.join(work, f"{prec}.report.json") if prec != "fp32" else None
            p, secs = kilnc(path, so, prec, dims, report, keep=args.keep_fp32)
            if p.returncode != 0:
                sys.exit(f"kilnc {name} {prec} failed:\n{p.stderr}")
            outs, run_s = run_so(so, files, os.path.join(work, f"out_{prec}"))
            builds[prec] = (outs, secs, run_s, report)
            print(f"{name} {prec}: compile {secs:.1f} s, run {run_s:.1f} s", flush=True)
        ref = dict(builds["fp32"][0])
        rows.append({"model": name, "precision": "fp32", "compile_s": builds["fp32"][1],
                     "run_s": builds["fp32"][2]})
        for prec in ["fp16", "bf16"]:
            outs, secs, run_s, report = builds[prec]
            errs = [kiln_tools.error_stats(ref[n], v) for n, v in outs if n in ref]
            worst = max(errs, key=lambda e: e["rel_l2"])
            with open(report) as f:
                rep = json.load(f).get("precision", {})
            rows.append({"model": name, "precision": prec, "compile_s": secs, "run_s": run_s,
                         "rel_l2": worst["rel_l2"], "max_abs": worst["max_abs"],
                         "max_rel": worst["max_rel"],
                         "nonfinite": sum(e["nonfinite"] for e in errs),
                         "counts": rep.get("counts", {}), "casts": rep.get("casts", 0),
                         "fp32_reasons": rep.get("fp32_reasons", {}),
                         "fp32_nonfinite": int(sum(np.sum(~np.isfinite(v)) for v in ref.values())),
                         "target": TARGET[prec]})
    return rows


def print_models(rows, args):
    print(f"\nMeasured {datetime.date.today()} with `.venv/bin/python bench/mixed_precision.py "
          f"models --models {args.models}{' --small' if args.small else ''} --seq {args.seq}"
          f"{' --keep-fp32 ' + args.keep_fp32 if args.keep_fp32 else ''}`"
          " (batch 1, kilnc -O2, one seeded random input):\n")
    print("| model | precision | rel L2 vs fp32 | max abs | max rel | NaN/Inf | target | "
          "nodes half / fp32 (fp32 reasons) | casts | compile | run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["precision"] == "fp32":
            print(f"| {r['model']} | fp32 | – | – | – | – | – | – | – | {r['compile_s']:.1f} s | "
                  f"{r['run_s']:.1f} s |")
            continue
        half = r["counts"].get(r["precision"], 0)
        fp32 = r["counts"].get("fp32", 0)
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["fp32_reasons"].items()))
        ok = r["rel_l2"] <= r["target"] and r["nonfinite"] == 0
        print(f"| {r['model']} | {r['precision']} | {r['rel_l2']:.2e} | {r['max_abs']:.2e} | "
              f"{r['max_rel']:.2e} | {r['nonfinite']} | ≤ {r['target']:g} "
              f"{'ok' if ok else 'MISSED'} | {half} / {fp32} ({reasons}) | {r['casts']} | "
              f"{r['compile_s']:.1f} s | {r['run_s']:.1f} s |")


# --------------------------------------------------------------------------
# Conformance
# --------------------------------------------------------------------------


def conformance_case(case, work, precision):
    """One node test: fp32 and reduced builds on every data set."""
    res = {"case": case.name}
    model = os.path.join(case.model_dir, "model.onnx")
    os.makedirs(work, exist_ok=True)
    sos = {}
    for prec in ["fp32", precision]:
        so = os.path.join(work, f"{prec}.so")
        rep = os.path.join(work, f"{prec}.json")
        try:
            p, _ = kilnc(model, so, prec, report=rep if prec != "fp32" else None, timeout=120)
        except subprocess.TimeoutExpired:
            p = None
        if p is None or p.returncode != 0:
            res[prec] = "compile error"
            if prec == "fp32":
                return res
            res["status"] = "reduced build fails to compile"
            return res
        sos[prec] = so
    with open(os.path.join(work, f"{precision}.json")) as f:
        counts = json.load(f).get("precision", {}).get("counts", {})
    res["changed"] = counts.get(precision, 0) > 0
    res["status"] = "ok"
    within = True
    for ds, ins, outs in nodetests.data_sets(case.model_dir):
        files = [(kiln_tools.read_pb_named(f)[0], f) for f in ins]
        got = {}
        for prec, so in sos.items():
            try:
                got[prec] = kiln_tools.run_model(so, files, os.path.join(work, "out_" + prec),
                                                 bindir=BIN)
            except kiln_tools.ToolError:
                got[prec] = None
        if got["fp32"] is None:
            res["status"] = "fp32 build fails to run"
            return res
        if got[precision] is None:
            res["status"] = "reduced build fails to run"
            return res
        for (_, a), (_, b) in zip(got["fp32"], got[precision]):
            if a.dtype.kind == "f" and b.dtype.kind == "f":
                if np.any(np.isfinite(a) & ~np.isfinite(b)):
                    res["status"] = "new NaN/Inf"
                    return res
        for (_, b), exp in zip(got[precision], outs):
            e = kiln_tools.read_pb(exp)
            if b.shape != e.shape or b.dtype.kind != "f":
                continue
            if not np.allclose(b, e, rtol=case.rtol, atol=case.atol, equal_nan=True):
                within = False
    res["within_tolerance"] = within
    return res


def bench_conformance(args):
    cases, source = nodetests.discover_cases(log=print)
    if not args.all:
        with open(args.subset) as f:
            wanted = [l.split("#", 1)[0].strip() for l in f]
        known = {c.name: c for c in cases}
        cases = [known[w] for w in dict.fromkeys(w for w in wanted if w) if w in known]
    work = os.path.join(args.workdir, "conformance")
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = [pool.submit(conformance_case, c, os.path.join(work, c.name), args.precision)
                for c in cases]
        for fut in futs:
            results.append(fut.result())
    return results, len(cases)


def print_conformance(results, n, args):
    run = [r for r in results if r.get("fp32") != "compile error"]
    changed = [r for r in run if r.get("changed")]
    bad = [r for r in run if r.get("status") not in ("ok",)]
    within = [r for r in changed if r.get("status") == "ok" and r.get("within_tolerance")]
    src = "--all" if args.all else f"--subset {os.path.relpath(args.subset, ROOT)}"
    print(f"\nMeasured {datetime.date.today()} with `.venv/bin/python bench/mixed_precision.py "
          f"conformance {src} --precision {args.precision}`:\n")
    print(f"- {n} node tests; {len(run)} compile in fp32 (the others are not supported yet)")
    print(f"- {len(changed)} of those run some node in {args.precision} (the others have no f32 "
          f"compute, e.g. integer or double tests, or only ops kept fp32)")
    print(f"- NaN/Inf in {args.precision} where fp32 is finite, or a {args.precision} build that "
          f"fails where fp32 works: {len(bad)}")
    for r in bad:
        print(f"  - {r['case']}: {r['status']}")
    print(f"- {len(within)} of the {len(changed)} changed cases still meet ONNX's own "
          f"(fp32) tolerance against the expected outputs")


def main():
    global BIN
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["models", "conformance"])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--workdir", default="/tmp/kiln-mp")
    ap.add_argument("--subset", default=os.path.join(ROOT, "test", "conformance", "ci_subset.txt"))
    ap.add_argument("--all", action="store_true", help="every node test, not the subset")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep-fp32", default="",
                    help="models: passed to the reduced builds' kilnc --keep-fp32 (e.g. "
                         "LayerNormalization: the f32 residual stream of before 2026-12-05)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--bin", default=BIN, help="folder of kilnc and kiln-run (default build/bin)")
    args = ap.parse_args()
    BIN = os.path.abspath(args.bin)
    if args.what == "models":
        rows = bench_models(args)
        print_models(rows, args)
        out = rows
    else:
        results, n = bench_conformance(args)
        print_conformance(results, n, args)
        out = results
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
