#!/usr/bin/env python3
"""The whole GPU check of Kiln's NVIDIA target, in two halves.

  prepare   (this machine, which has LLVM/MLIR but no GPU): compiles with
            `kilnc --target=cuda` every ONNX backend node test that passes on
            the CPU target (or the CI subset) and the model tests, copies
            their data sets and kiln-run, and packs everything into one
            archive small enough to carry to the GPU machine. With the
            corpus (--corpus; by default when ~/.cache/kiln-corpus holds its
            models) also the real models of utils/models/corpus.py, compiled
            with `kilnc --target=cuda` and no other flag, their inputs at
            every size and onnxruntime's CPU outputs made here, and this
            kilnc's CPU result beside them (utils/models/corpus_gpu.py). Their
            .so files hold the weights (~200 MB), so they are packed apart:
            STAGE/corpus/part<k>/, at most --corpus-part-mib (40) each, listed
            in the stage's manifest under "corpus".
  run       (the GPU machine, which has the driver, torch and onnxruntime but
            no LLVM): unpacks, checks that torch.compile works, runs every
            case with kiln-run --expect (ONNX's tolerances), compares the
            models with onnxruntime (CPU), times the benchmarks (CUDA events
            for PyTorch, kiln-run --benchmark for Kiln), runs the corpus parts
            that were carried (max rel err vs the references, bar 1e-4; numpy
            and onnx only), prints a short table and writes full results as
            JSON (gpu_results.json; the corpus under "corpus").

  bench/gpu_check.py prepare [--stage .gpu] [--conformance all|ci|none]
      [--models small|none] [--no-attention] [--attention-flags FLAGS]
      [--no-differential] [--no-bench]
      [--corpus | --no-corpus] [--corpus-part-mib 40]
  bench/gpu_check.py run [--stage .gpu] [--out DIR] [--skip-conformance]
      [--skip-models] [--skip-attention] [--skip-bench] [--skip-differential] [--skip-corpus]
      [--corpus-only] [--corpus-parts 1,2] [--dry-run]

The archive is .gpu/stage.tar.xz (ignored by git); carry it to the device
tool and run `python3 bench/gpu_check.py run --out $OUT` there. The device
tool carries 64 MiB with the working tree (~7 MiB), so each corpus part
goes in a call of its own, with nothing else: carry `.gpu/corpus/part<k>`
and run `python3 bench/gpu_check.py run --corpus-only --out $OUT` (a part
holds its models, kiln-run and its manifest). `run --corpus-only --dry-run`
checks the carried parts' files without a GPU. Both halves import
python/kiln_tools from the working tree; the archive holds a copy of it as
of prepare (payload/python), next to the libraries it compiled.
The Python package is checked there too (bench/python_gpu.py: its runtime
module built with that machine's Python, torch CUDA tensors in and out
through DLPack with the data pointers compared, streams, errors).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools import nodetests  # noqa: E402


DIFFERENTIAL = os.path.join(ROOT, "test", "hardening", "differential.py")


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------
# prepare (here)
# --------------------------------------------------------------------------


def cpu_passing_cases():
    """Cases that pass on the CPU target, from the last full conformance run
    (utils/conformance.py --json build/conformance/full.json)."""
    path = os.path.join(ROOT, "build", "conformance", "full.json")
    if not os.path.exists(path):
        sys.exit(f"gpu_check: {path} is missing: run "
                 f"`.venv/bin/python utils/conformance.py --json {path}` first")
    results = json.load(open(path))["results"]
    return sorted(r["name"] for r in results if r["status"] == nodetests.PASSED)


def ci_cases():
    names = []
    for line in open(os.path.join(ROOT, "test", "conformance", "ci_subset.txt")):
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line)
    return names


def compile_one(kilnc, model, so, extra=()):
    os.makedirs(os.path.dirname(so), exist_ok=True)
    t0 = time.time()
    try:
        p = subprocess.run([kilnc, model, "--target=cuda", "-o", so, *extra],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "crash", "kilnc timed out", time.time() - t0
    dt = time.time() - t0
    if p.returncode < 0:
        return "crash", f"kilnc killed by signal {-p.returncode}", dt
    if p.returncode != 0:
        first = next((l for l in p.stderr.splitlines() if "error" in l), p.stderr.strip()[:300])
        return nodetests.COMPILE_ERROR, first.replace(model, "<model>")[:400], dt
    return "ok", "", dt


SMALL_MODELS = ["resnet50", "mobilenetv2", "bert", "gpt2", "lstm", "unet"]


def prepare_models(args, kilnc, payload, manifest):
    """The small variants of the six networks (utils/models/make_models.py
    --small): ONNX (with weights, for onnxruntime there) and the cuda .so."""
    # utils/models/make_models.py (needs Debian's torch here)
    make_models = kiln_tools.project_module("utils/models/make_models.py")

    names = args.model_names.split(",") if args.model_names else SMALL_MODELS
    for name in names:
        d = os.path.join(payload, "models", name)
        os.makedirs(d, exist_ok=True)
        onnx_path = os.path.join(d, "model.onnx")
        make_models.export(name, onnx_path, small=True)
        # fp32, and fp16 (half contractions on tensor cores) against the
        # same fp32 reference.
        for precision, so in (("fp32", "model.so"), ("fp16", "model_fp16.so")):
            status, reason, dt = compile_one(kilnc, onnx_path, os.path.join(d, so),
                                             [f"--precision={precision}"])
            log(f"  model {name} (small, {precision}): {status} {reason} ({dt:.1f} s)")
            manifest["models"].append({"name": name, "precision": precision, "so": so,
                                       "compile": status, "reason": reason,
                                       "compile_s": round(dt, 2)})


ATTENTION_BOUND = 2e-3  # max rel err of fp16 attention vs onnxruntime fp32
# The int8 BERT-like layer's (kilnc --precision=int8 --calibrate: the four
# projections' inputs in uint8 over their calibrated ranges; the
# attention's Q, K and V too unless --int8-attention=false): its end-to-end
# error against fp32. The CPU build of the same model and calibration (no
# fused attention, so float Q, K, V) has max rel 0.187 (rel L2 2.4e-2) on
# these inputs: the bound leaves room for that quantization and catches a
# wrong kernel (errors of order 1).
INT8_ATTENTION_BOUND = 0.25


def prepare_attention(kilnc, payload, manifest, extra=()):
    """The fused attention kernel's cases (docs/gpu.md, "Fused attention";
    test/Target/NVPTX/Inputs/make_attention_models.py): opset-23 Attention
    nodes on fp16 Q, K, V (4-D and 3-D, masks, causal, grouped heads, cross
    attention) and a BERT-like layer compiled with --precision=fp16
    --fuse-attention (and without, for comparison) and with --precision=int8
    (8-bit Q, K and V in the fused kernel; and without), with onnxruntime's fp32
    outputs of the reference chains computed here on the seeded inputs.
    `extra` (--attention-flags) goes to every case's kilnc, e.g. a
    --gpu-attention-block to check."""
    import numpy as np

    mam = kiln_tools.project_module("test/Target/NVPTX/Inputs/make_attention_models.py")
    d = os.path.join(payload, "attention")
    cases = mam.make(d)
    for name, ((model, ref), flags) in cases.items():
        so = os.path.join(d, name + ".so")
        flags = [*flags, *extra]
        status, reason, dt = compile_one(kilnc, model, so, flags)
        feeds = mam.feeds(name, model)
        refs = kiln_tools.ort_run(ref, {k: v.astype(np.float32) for k, v in feeds.items()})
        inputs = [os.path.relpath(f, d) for _, f in
                  kiln_tools.write_inputs(feeds, os.path.join(d, name + "_in"))]
        np.savez(os.path.join(d, name + ".ref.npz"), *refs)
        log(f"  attention {name} {' '.join(flags)}: {status} {reason} ({dt:.1f} s)")
        manifest.setdefault("attention", []).append(
            {"name": name, "so": name + ".so", "flags": flags, "inputs": inputs,
             "compile": status, "reason": reason})
    for f in os.listdir(d):  # the models travel compiled; onnx files stay here
        if f.endswith(".onnx"):
            os.remove(os.path.join(d, f))


def run_attention(payload, manifest):
    """kiln-run on each case, on the image the GPU takes (sm_90a on an H200)
    and on the portable sm_80 image (KILN_CUDA_CHIP=sm_80); max rel err vs
    the fp32 references, bound ATTENTION_BOUND."""
    import numpy as np

    kiln_run = os.path.join(payload, "bin", "kiln-run")
    d = os.path.join(payload, "attention")
    rows = []
    for c in manifest.get("attention", []):
        for chip in ("", "sm_80"):
            row = {"name": c["name"], "flags": " ".join(c["flags"]), "chip": chip or "default"}
            rows.append(row)
            if c["compile"] != "ok":
                row["error"] = "cuda compile: " + c["reason"]
                continue
            refs = list(np.load(os.path.join(d, c["name"] + ".ref.npz")).values())
            cmd = [kiln_run, os.path.join(d, c["so"])]
            for f in c["inputs"]:
                cmd += ["--input", os.path.join(d, f)]
            outdir = os.path.join(d, f"out_{c['name']}_{row['chip']}")
            os.makedirs(outdir, exist_ok=True)
            env = dict(os.environ, **({"KILN_CUDA_CHIP": chip} if chip else {}))
            p = subprocess.run(cmd + ["--output-dir", outdir], capture_output=True, text=True,
                               timeout=300, env=env)
            if p.returncode != 0:
                row["error"] = "kiln-run: " + (p.stderr.strip().splitlines() or ["failed"])[-1][:200]
                continue
            try:
                outs = kiln_tools.read_outputs(outdir)
                row["max_rel"] = kiln_tools.max_rel_errors(outs, refs)
                a, b = (np.asarray(outs[0][1], np.float64), np.asarray(refs[0], np.float64))
                row["rel_l2"] = float(np.sqrt(((a - b) ** 2).sum() / max((b ** 2).sum(), 1e-300)))
                bound = (INT8_ATTENTION_BOUND if "--precision=int8" in c["flags"]
                         else ATTENTION_BOUND)
                row["bound"] = bound
                row["ok"] = row["max_rel"] <= bound
            except ValueError as e:
                row["error"] = str(e)
    return rows


EXTW = [("resnet50,bert", "fp32"), ("bert", "fp16")]


def prepare_external_weights(payload, manifest):
    """Full ResNet-50 and BERT-base with --external-weights (weightless
    graph + .so; the weights regenerated there from a seed), once more in
    fp16, whose weight casts run at load (kiln_model_init)."""
    out = os.path.join(payload, "extw")
    script = os.path.join(ROOT, "utils", "models", "check_external_weights.py")
    for models, precision in EXTW:
        t0 = time.time()
        p = subprocess.run([sys.executable, script, "build", out, "--models", models,
                            "--target", "cuda", "--precision", precision],
                           capture_output=True, text=True)
        log(f"  external weights {models} {precision}: "
            f"{'ok' if p.returncode == 0 else 'FAILED ' + p.stderr[-300:]} ({time.time() - t0:.0f} s)")
        if p.returncode != 0:
            return
    manifest["external_weights"] = os.path.relpath(out, payload)


def run_external_weights(payload, manifest):
    script = os.path.join(ROOT, "utils", "models", "check_external_weights.py")
    p = subprocess.run([sys.executable, script, "run",
                        os.path.join(payload, manifest["external_weights"]),
                        "--kiln-run", os.path.join(payload, "bin", "kiln-run")],
                       capture_output=True, text=True, timeout=900)
    lines = (p.stdout + p.stderr).strip().splitlines()
    for line in lines:
        log("  " + line)
    return {"ok": p.returncode == 0, "output": lines[-20:]}


def prepare_corpus(args, stage, manifest):
    """The real models of utils/models/corpus.py, for cuda: STAGE/corpus/part<k>/
    (utils/models/corpus_gpu.py), outside stage.tar.xz since their .so files
    hold the weights (~200 MB): carry one part per device call."""
    corpus_gpu = kiln_tools.project_module("utils/models/corpus_gpu.py")
    names = corpus_gpu.cached()
    if args.corpus is None and not names:  # the default: only when the cache has them
        log(f"corpus: no model in {corpus_gpu.CACHE} (run utils/models/corpus.py once to fill it): skipped")
        return
    missing = [e["name"] for e in corpus_gpu.entries() if e["name"] not in names]
    if args.corpus is None and missing:
        log(f"corpus: not in the cache, left out: {', '.join(missing)}")
    log(f"corpus: {len(names)} cached models for cuda (CPU result too) ...")
    t0 = time.time()
    manifest["corpus"] = corpus_gpu.prepare_gpu(stage, names if args.corpus is None else None,
                                                part_mib=args.corpus_part_mib, log=log)
    bad = [c for c in manifest["corpus"] if c["compile"] != "ok"]
    log(f"  corpus prepared in {time.time() - t0:.0f} s; {len(bad)} not compiled for cuda")


def prepare(args):
    stage = os.path.abspath(args.stage)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    kiln_run = os.path.join(ROOT, "build", "bin", "kiln-run")
    payload = os.path.join(stage, "payload")
    shutil.rmtree(payload, ignore_errors=True)
    os.makedirs(os.path.join(payload, "bin"))
    shutil.copy2(kiln_run, os.path.join(payload, "bin", "kiln-run"))
    manifest = {"conformance": [], "models": []}

    if args.conformance != "none":
        names = cpu_passing_cases() if args.conformance == "all" else ci_cases()
        if args.filter:
            import re
            names = [n for n in names if re.search(args.filter, n)]
        node_dir = nodetests.shipped_node_dir()
        log(f"compiling {len(names)} node tests for cuda ({args.jobs} jobs) ...")
        t0 = time.time()

        def one(name):
            src = os.path.join(node_dir, name)
            dst = os.path.join(payload, "conformance", name)
            status, reason, dt = compile_one(kilnc, os.path.join(src, "model.onnx"),
                                             os.path.join(dst, "model.so"))
            if status == "ok":
                shutil.copy2(os.path.join(src, "model.onnx"), dst)
                for d in os.listdir(src):
                    if d.startswith("test_data_set_"):
                        shutil.copytree(os.path.join(src, d), os.path.join(dst, d))
            rtol, atol = nodetests.DEFAULT_RTOL, nodetests.DEFAULT_ATOL
            dj = os.path.join(src, "data.json")
            if os.path.exists(dj):
                d = json.load(open(dj))
                rtol, atol = d.get("rtol", rtol), d.get("atol", atol)
            return {"name": name, "compile": status, "reason": reason,
                    "compile_s": round(dt, 2), "rtol": rtol, "atol": atol}

        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            manifest["conformance"] = list(pool.map(one, names))
        bad = [c for c in manifest["conformance"] if c["compile"] != "ok"]
        log(f"  compiled in {time.time() - t0:.0f} s; {len(bad)} failed to compile for cuda")
        for c in bad[:20]:
            log(f"    {c['name']}: {c['reason']}")

    if args.models != "none":
        prepare_models(args, kilnc, payload, manifest)
        prepare_external_weights(payload, manifest)
    if args.attention:
        prepare_attention(kilnc, payload, manifest, args.attention_flags.split())
    if args.differential:
        # Run-time errors on the device: every differential case compiled
        # for cuda, onnxruntime's outcome saved beside it.
        t0 = time.time()
        p = subprocess.run([sys.executable, DIFFERENTIAL, "--target", "cuda", "--prepare-only",
                            "--workdir", os.path.join(payload, "differential")],
                           capture_output=True, text=True)
        log(f"  differential cases: {(p.stdout or p.stderr).strip().splitlines()[-1]} "
            f"({time.time() - t0:.0f} s)")
        if p.returncode == 0:
            manifest["differential"] = "differential"
    if args.corpus is not False:
        prepare_corpus(args, stage, manifest)
    if args.bench:
        import gpu_bench
        gpu_bench.prepare(kilnc, payload, manifest, compile_one, log)
    # The Python package on the device: its runtime module built there,
    # CUDA tensors in and out through DLPack (bench/python_gpu.py).
    python_gpu = kiln_tools.project_module("bench/python_gpu.py")
    python_gpu.prepare(os.path.join(payload, "pygpu"))
    manifest["python_gpu"] = "pygpu"
    # The loader library, for timing through the C API (ctypes) there.
    for lib in ("libkiln_runtime.so",):
        shutil.copy2(os.path.join(ROOT, "build", "lib", lib), os.path.join(payload, "bin", lib))
    # The scripts' package (kiln_tools: node-test runner, seeded feeds, the
    # ctypes binding), as of this prepare, next to what it wrote.
    shutil.copytree(os.path.join(ROOT, "python", "kiln_tools"),
                    os.path.join(payload, "python", "kiln_tools"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    json.dump(manifest, open(os.path.join(payload, "manifest.json"), "w"), indent=1)
    archive = os.path.join(stage, "stage.tar.xz")
    log("packing ...")
    subprocess.run(["tar", "-C", stage, "-cJf", archive, "payload"], check=True,
                   env={**os.environ, "XZ_OPT": "-6 -T2"})
    log(f"{archive}: {os.path.getsize(archive) / 2**20:.1f} MiB")


# --------------------------------------------------------------------------
# run (on the GPU machine)
# --------------------------------------------------------------------------


def check_torch():
    info = {}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.is_available()
        info["device"] = torch.cuda.get_device_name(0) if info["cuda"] else None
        f = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1)
        x = torch.randn(1024, device="cuda")
        ok = torch.allclose(f(x), torch.nn.functional.gelu(x) * 2 + 1, atol=1e-5)
        info["torch_compile"] = "ok" if ok else "wrong result"
    except Exception as e:  # report, do not stop the check
        info["torch_compile"] = f"failed: {type(e).__name__}: {e}"[:300]
    return info


def run_conformance(payload, manifest, jobs):
    kiln_run = os.path.join(payload, "bin", "kiln-run")
    work = os.path.join(payload, "work")
    results = []

    def one(c):
        if c["compile"] != "ok":
            return {"name": c["name"], "status": c["compile"], "reason": "cuda compile: " + c["reason"]}
        d = os.path.join(payload, "conformance", c["name"])
        r = nodetests.run_case(c["name"], d, c["rtol"], c["atol"], None, kiln_run, work, True,
                                 prebuilt=os.path.join(d, "model.so"))
        return {k: r.get(k) for k in ("name", "status", "reason", "run_s")}

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, manifest["conformance"]))
    return results


def run_models(payload, manifest):
    import numpy as np

    kiln_run = os.path.join(payload, "bin", "kiln-run")
    rows = []
    for m in manifest["models"]:
        row = {"name": m["name"], "precision": m.get("precision", "fp32")}
        rows.append(row)
        if m["compile"] != "ok":
            row["error"] = "cuda compile: " + m["reason"]
            continue
        d = os.path.join(payload, "models", m["name"])
        onnx_path = os.path.join(d, "model.onnx")
        # The small transformers' max_len is 64.
        feeds = kiln_tools.seeded_inputs(onnx_path, np.random.default_rng(0), {"seq": 16})
        try:
            refs = kiln_tools.ort_run(onnx_path, feeds)
        except Exception as e:
            row["error"] = f"onnxruntime: {e}"[:200]
            continue
        cmd = [kiln_run, os.path.join(d, m.get("so", "model.so"))]
        for _, f in kiln_tools.write_inputs(feeds, d):
            cmd += ["--input", f]
        outdir = os.path.join(d, "out_" + row["precision"])
        os.makedirs(outdir, exist_ok=True)
        p = subprocess.run(cmd + ["--output-dir", outdir], capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            row["error"] = "kiln-run: " + (p.stderr.strip().splitlines() or ["failed"])[-1][:200]
            continue
        try:
            row["max_rel"] = kiln_tools.max_rel_errors(kiln_tools.read_outputs(outdir), refs)
        except ValueError as e:
            row["error"] = str(e)
    return rows


def run(args):
    stage = os.path.abspath(args.stage)
    payload = os.path.join(stage, "payload")
    archive = os.path.join(stage, "stage.tar.xz")
    mpath = os.path.join(payload, "manifest.json")
    if os.path.exists(archive) and not (args.corpus_only and os.path.exists(mpath)):
        shutil.rmtree(payload, ignore_errors=True)
        with tarfile.open(archive) as t:
            t.extractall(stage)
    # A call that carries only corpus parts has no payload.
    manifest = json.load(open(mpath)) if os.path.exists(mpath) else {"conformance": [], "models": []}
    out = args.out or os.path.join(stage, "results")
    os.makedirs(out, exist_ok=True)
    report = {"host": os.uname().nodename}
    if args.corpus_only:
        args.skip_conformance = args.skip_models = args.skip_bench = args.skip_differential = True
        args.skip_attention = True
    else:
        report["env"] = check_torch()
        log(f"torch {report['env'].get('torch')} on {report['env'].get('device')}: "
            f"torch.compile {report['env']['torch_compile']}")

    if manifest["conformance"] and not args.skip_conformance:
        t0 = time.time()
        conf = run_conformance(payload, manifest, args.jobs)
        report["conformance"] = conf
        counts = {}
        for r in conf:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        log(f"conformance on cuda: {len(conf)} cases in {time.time() - t0:.0f} s: " +
            ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        for r in conf:
            if r["status"] != nodetests.PASSED:
                log(f"  {r['status']}: {r['name']}: {(r.get('reason') or '')[:160]}")
    if manifest.get("models") and not args.skip_models:
        report["models"] = run_models(payload, manifest)
        for r in report["models"]:
            err = r.get("error")
            log(f"model {r['name']:12s} {r['precision']} " + (f"ERROR {err}" if err else
                f"max rel err vs onnxruntime {r['max_rel']:.2e}"))
    if manifest.get("attention") and not args.skip_attention:
        report["attention"] = run_attention(payload, manifest)
        for r in report["attention"]:
            err = r.get("error")
            log(f"attention {r['name']:20s} {r['chip']:7s} " + (
                f"ERROR {err}" if err else f"max rel err vs onnxruntime fp32 {r['max_rel']:.2e} "
                f"rel L2 {r['rel_l2']:.1e} "
                f"({'ok' if r['ok'] else 'OVER'} {r['bound']:g})"))
    if manifest.get("external_weights") and not args.skip_models:
        log("external weights (regenerated here, loaded at run time):")
        report["external_weights"] = run_external_weights(payload, manifest)
    if manifest.get("differential") and not args.skip_differential:
        p = subprocess.run([sys.executable, DIFFERENTIAL, "--run-prepared",
                            os.path.join(payload, manifest["differential"]),
                            "--kiln-run", os.path.join(payload, "bin", "kiln-run"),
                            "--report-only", "--out", os.path.join(out, "differential.md")],
                           capture_output=True, text=True, timeout=900)
        lines = p.stdout.strip().splitlines()
        fails = [line for line in lines if line.endswith("| FAIL |")]
        log(f"differential on cuda: {lines[-1] if lines else p.stderr[-300:]}")
        for line in fails:
            log("  " + line[:240])
        report["differential"] = {"summary": lines[-1] if lines else "", "table": lines}
    if manifest.get("bench") and not args.skip_bench:
        import gpu_bench
        report["bench"] = gpu_bench.run(payload, manifest, log, out)
    if manifest.get("python_gpu") and not args.skip_models:
        python_gpu = kiln_tools.project_module("bench/python_gpu.py")
        log("python package (kiln._runtime built here, torch CUDA tensors through DLPack):")
        try:
            rc = python_gpu.run(os.path.join(payload, manifest["python_gpu"]), out)
            with open(os.path.join(out, "python_gpu.json")) as f:
                report["python_gpu"] = dict(json.load(f), rc=rc)
            log(f"  {'all checks passed' if rc == 0 else 'FAILED'} "
                f"(details: {os.path.join(out, 'python_gpu.json')})")
        except Exception as ex:  # noqa: BLE001 - recorded in the report
            report["python_gpu"] = {"error": str(ex)[:500]}
            log(f"  ERROR {ex}")
    if not args.skip_corpus and (manifest.get("corpus") or os.path.isdir(os.path.join(stage, "corpus"))):
        # numpy and onnx only: inputs and onnxruntime's outputs came from prepare.
        corpus_gpu = kiln_tools.project_module("utils/models/corpus_gpu.py")
        kiln_run = os.path.join(payload, "bin", "kiln-run")
        report["corpus"] = corpus_gpu.run_gpu(stage, manifest.get("corpus"),
                                              kiln_run if os.path.exists(kiln_run) else None,
                                              dry_run=args.dry_run, log=log, parts=[
                                                  int(k) for k in args.corpus_parts.split(",") if k])
        for line in corpus_gpu.table(report["corpus"]):
            log(line)
    json.dump(report, open(os.path.join(out, "gpu_results.json"), "w"), indent=1)
    log(f"results: {os.path.join(out, 'gpu_results.json')}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--stage", default=os.path.join(ROOT, ".gpu"))
    pp.add_argument("--conformance", choices=["all", "ci", "none"], default="all")
    pp.add_argument("--filter", help="only node tests matching this regex")
    pp.add_argument("--jobs", type=int, default=2)
    pp.add_argument("--models", choices=["small", "none"], default="small")
    pp.add_argument("--model-names", help="comma-separated subset of the small models "
                    "(the .so of --target=cuda holds two images: ResNet-50's fp32 one "
                    "is 29 MB, which may not fit a device call's 64 MiB)")
    pp.add_argument("--attention", action=argparse.BooleanOptionalAction, default=True,
                    help="the fused attention kernel's cases (fp16 Attention nodes, a "
                         "BERT-like layer with --fuse-attention)")
    pp.add_argument("--attention-flags", default="", metavar="FLAGS",
                    help="more kilnc flags for every attention case (e.g. "
                         "--gpu-attention-block=8x32/3)")
    pp.add_argument("--differential", action=argparse.BooleanOptionalAction, default=True,
                    help="the run-time error cases (test/hardening/differential.py) for cuda")
    pp.add_argument("--bench", action=argparse.BooleanOptionalAction, default=True,
                    help="ResNet-50 and BERT-base benchmarks (bench/gpu_bench.py)")
    pp.add_argument("--corpus", action=argparse.BooleanOptionalAction, default=None,
                    help="the real models of utils/models/corpus.py (default: those in the cache)")
    pp.add_argument("--corpus-part-mib", type=float, default=40,
                    help="most MiB of packed corpus models per part (one part per device call)")
    pr = sub.add_parser("run")
    pr.add_argument("--stage", default=os.path.join(ROOT, ".gpu"))
    pr.add_argument("--out", default=os.environ.get("OUT"))
    pr.add_argument("--jobs", type=int, default=8)
    pr.add_argument("--skip-conformance", action="store_true")
    pr.add_argument("--skip-models", action="store_true")
    pr.add_argument("--skip-attention", action="store_true")
    pr.add_argument("--skip-bench", action="store_true")
    pr.add_argument("--skip-differential", action="store_true")
    pr.add_argument("--skip-corpus", action="store_true")
    pr.add_argument("--corpus-only", action="store_true",
                    help="only the carried corpus parts (no torch check, nothing else)")
    pr.add_argument("--corpus-parts", default="", help="corpus: only these parts (e.g. 2 or 1,3)")
    pr.add_argument("--dry-run", action="store_true",
                    help="corpus: only check that every file is there (no GPU needed)")
    args = p.parse_args(argv)
    return prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
