#!/usr/bin/env python3
"""The corpus of utils/models/corpus.py on the GPU (`kilnc --target=cuda`),
in the two halves of bench/gpu_check.py (which calls prepare_gpu / run_gpu).

  prepare   (here: kilnc, onnxruntime, the model cache ~/.cache/kiln-corpus)
            per model: the CPU result at every size (compiled once with no
            flags, as corpus.py does), then `kilnc --target=cuda` with no
            other flag; per size the inputs (set<n>/input_<i>.pb, kiln-run's
            format) and onnxruntime's CPU outputs (set<n>/ref.npz), so the
            GPU machine needs neither the .onnx files nor onnxruntime. The
            .so files hold the weights (~200 MB for the corpus), too much for
            one carry of the device tool (64 MiB with the working tree): each
            model is packed on its own (NAME.tar.xz) and the archives are
            grouped into parts of at most --part-mib (40): STAGE/corpus/
            part<k>/, each with kiln-run and its manifest.json. Carry one
            part per device call.
  run       (the GPU machine: numpy and onnx only) every part found under
            STAGE/corpus: unpack, kiln-run each size, max rel err vs the
            reference (max|a - b| / max|b|, NaN/Inf where the reference has
            none = inf), bar 1e-4; integer and bool outputs must be equal.
            --dry-run only checks that every file is there.

  .venv/bin/python utils/models/corpus_gpu.py prepare [--stage .gpu] [--only a,b] [--part-mib 40]
  python3 utils/models/corpus_gpu.py run [--stage .gpu] [--json F] [--dry-run]

(--target cpu on prepare builds the parts for the CPU: the run half
checked end to end on a machine without a GPU.)
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kiln_tools  # noqa: E402
from kiln_tools.tensors import numbered  # noqa: E402

MAX_REL = 1e-4
CACHE = os.path.expanduser("~/.cache/kiln-corpus")


def first_error(text):
    """The first line that says error, less the model's path and the tool's
    own name (kilnc: PATH.onnx:0:0: error: ...)."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    line = next((l for l in lines if "error" in l.lower()), lines[-1] if lines else "failed")
    return re.sub(r"^(\S+\.onnx:\d+:\d+: |<unknown>:\d+: |kiln-run: )+", "", line)[:240]


def compare(outs, refs):
    """Worst error over the outputs ([(name, array)] vs arrays), or raises
    ValueError naming one."""
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} outputs, onnxruntime gives {len(refs)}")
    worst = 0.0
    for i, ((_, got), ref) in enumerate(zip(outs, refs)):
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            raise ValueError(f"output {i}: shape {got.shape} != {ref.shape}")
        if got.dtype != ref.dtype:
            raise ValueError(f"output {i}: dtype {got.dtype} != {ref.dtype}")
        if ref.dtype.kind in "biu":
            bad = int(np.sum(got != ref))
            if bad:
                raise ValueError(f"output {i}: {bad} of {ref.size} values differ")
            continue
        rel = kiln_tools.max_rel_error(got, ref)
        if rel == float("inf"):
            raise ValueError(f"output {i}: NaN/Inf where onnxruntime has none")
        worst = max(worst, rel)
    return worst


def status_of(results):
    res = list(results.values())
    if any("error" in r for r in res):
        return "run"
    if any("err" not in r for r in res):
        return "dry-run"
    return "accuracy" if max(r["err"] for r in res) > MAX_REL else "pass"


# ---- prepare (here) ----------------------------------------------------------

def entries():
    """The models of utils/models/corpus.json."""
    return json.load(open(os.path.join(HERE, "corpus.json")))["models"]


def cached(cache=CACHE):
    """Names of the manifest's models whose file is in the cache already."""
    return [e["name"] for e in entries()
            if os.path.exists(os.path.join(cache, "models", f"{e['package']}-{e['version']}", e["file"]))]


def kilnc(model, so, flags, bindir, timeout):
    """(seconds, None) or (seconds, kilnc's output)."""
    t0 = time.perf_counter()
    try:
        kiln_tools.compile_model(model, so, flags, bindir=bindir, timeout=timeout)
    except kiln_tools.ToolError as e:
        if e.timeout is not None:
            return time.perf_counter() - t0, f"error: kilnc timed out after {timeout} s"
        return time.perf_counter() - t0, (e.stderr + e.stdout).strip() or str(e)
    return time.perf_counter() - t0, None


def prepare_gpu(stage, only=None, cache=CACHE, part_mib=40, target="cuda", cpu=True, bindir=None,
                timeout=900, log=print):
    """Builds STAGE/corpus/part<k>/ (see the docstring); returns one manifest
    entry per model (also those that failed, with the reason)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import corpus  # onnx, onnxruntime, Pillow: here only

    bindir = bindir or os.path.join(ROOT, "build", "bin")
    todo = entries()
    if only:
        unknown = set(only) - {e["name"] for e in todo}
        if unknown:
            raise ValueError(f"not in the corpus manifest: {', '.join(sorted(unknown))}")
        todo = [e for e in todo if e["name"] in only]
    root, work = os.path.join(stage, "corpus"), os.path.join(stage, "corpus-work")
    for d in (root, work):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    flags = [] if target == "cpu" else [f"--target={target}"]
    cpu_args = types.SimpleNamespace(bindir=bindir, run_timeout=600)
    out = []
    for e in todo:
        rec = {k: e[k] for k in ("name", "package", "version", "category")}
        out.append(rec)
        try:
            model_path, extras, _ = corpus.fetch(e, cache)
        except corpus.Failure as x:
            rec.update(compile="skipped", reason=str(x), sizes=[])
            log(f"  corpus {e['name']}: skipped: {x}")
            continue
        cases = corpus.make_cases(e, model_path, extras)
        rec["sizes"] = [c[0] for c in cases]
        rec["input_names"] = list(cases[0][1])
        d = os.path.join(work, e["name"])
        if cpu:  # the CPU result next to it, from the same kilnc
            cso = os.path.join(work, "cpu", e["name"], "model.so")
            os.makedirs(os.path.dirname(cso))
            secs, err = kilnc(model_path, cso, [], bindir, timeout)
            rec["cpu"] = {"compile_s": round(secs, 2)}
            if err:
                rec["cpu"]["error"] = "kilnc: " + first_error(err)
            else:
                rec["cpu"]["results"] = {label: corpus.run_size(cso, feeds, refs, os.path.join(
                    work, "cpu", e["name"], f"set{n}"), cpu_args) for n, (label, feeds, refs) in enumerate(cases)}
        os.makedirs(d)
        secs, err = kilnc(model_path, os.path.join(d, "model.so"), flags, bindir, timeout)
        rec["compile_s"] = round(secs, 2)
        if err:
            rec.update(compile="error", reason="kilnc: " + first_error(err),
                       stderr=[l.replace(model_path, "<model>") for l in err.splitlines()[:20]])
            shutil.rmtree(d)
            log(f"  corpus {e['name']}: {target} compile FAILED ({secs:.1f} s): {rec['reason']}")
            continue
        rec["compile"] = "ok"
        for n, (label, feeds, refs) in enumerate(cases):
            s = os.path.join(d, f"set{n}")
            kiln_tools.write_inputs(feeds, s)
            np.savez(os.path.join(s, "ref.npz"), *[np.asarray(r) for r in refs])
        arc = os.path.join(root, e["name"] + ".tar.xz")
        subprocess.run(["tar", "-C", work, "-cJf", arc, e["name"]], check=True,
                       env={**os.environ, "XZ_OPT": "-6 -T2"})
        rec["so_mib"] = round(os.path.getsize(os.path.join(d, "model.so")) / 2**20, 2)
        rec["archive_mib"] = round(os.path.getsize(arc) / 2**20, 2)
        shutil.rmtree(d)
        log(f"  corpus {e['name']}: {target} .so {rec['so_mib']} MiB, packed with inputs and references "
            f"{rec['archive_mib']} MiB ({secs:.1f} s)")
    # First fit, largest first, into parts of at most part_mib.
    parts = []
    for rec in sorted((r for r in out if r["compile"] == "ok"), key=lambda r: -r["archive_mib"]):
        part = next((p for p in parts if p["mib"] + rec["archive_mib"] <= part_mib), None)
        if part is None:
            part = {"mib": 0.0, "models": []}
            parts.append(part)
        part["mib"] += rec["archive_mib"]
        part["models"].append(rec)
    for k, part in enumerate(parts, 1):
        pdir = os.path.join(root, f"part{k}")
        os.makedirs(pdir)
        shutil.copy2(os.path.join(bindir, "kiln-run"), pdir)
        for rec in part["models"]:
            rec["part"] = k
            os.replace(os.path.join(root, rec["name"] + ".tar.xz"), os.path.join(pdir, rec["name"] + ".tar.xz"))
        json.dump({"target": target, "models": part["models"]}, open(os.path.join(pdir, "manifest.json"), "w"),
                  indent=1)
        log(f"  corpus part{k}: {part['mib']:.1f} MiB: {', '.join(r['name'] for r in part['models'])}")
    shutil.rmtree(work)
    return out


# ---- run (on the GPU machine) ------------------------------------------------

def carried_parts(stage, parts=None):
    """{model name: (part folder, manifest entry)} of the parts present (of
    `parts`, numbers, when given)."""
    found = {}
    for m in sorted(glob.glob(os.path.join(stage, "corpus", "part*", "manifest.json"))):
        if parts and int(os.path.basename(os.path.dirname(m))[4:]) not in parts:
            continue
        for e in json.load(open(m))["models"]:
            found[e["name"]] = (os.path.dirname(m), e)
    return found


def run_gpu(stage, entries=None, kiln_run=None, dry_run=False, parts=None, timeout=600, log=print):
    """Runs every carried model (of `parts`) at every size; `entries` (the
    full list from the stage's manifest) adds the models that did not
    compile or were not carried. Returns one row per model."""
    carried = carried_parts(stage, parts)
    entries = entries or [e for _, e in carried.values()]
    rows = []
    for e in entries:
        row = {k: e.get(k) for k in ("name", "package", "version", "category", "sizes", "cpu", "part")}
        row["results"] = {}
        rows.append(row)
        if e["compile"] != "ok":
            row.update(status="compile" if e["compile"] == "error" else e["compile"], error=e["reason"])
            continue
        if e["name"] not in carried:
            row.update(status="not carried", error=f"in part{e.get('part')}, not run")
            continue
        pdir, e = carried[e["name"]]
        d = os.path.join(stage, "corpus-run", e["name"])
        shutil.rmtree(d, ignore_errors=True)
        try:
            with tarfile.open(os.path.join(pdir, e["name"] + ".tar.xz")) as t:
                t.extractall(os.path.dirname(d), **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        except (OSError, tarfile.TarError) as x:
            row.update(status="run", error=f"unpacking: {x}"[:240])
            continue
        so = os.path.join(d, "model.so")
        # The part's own kiln-run (built with its .so files) before the stage's.
        bindir = pdir if os.path.exists(os.path.join(pdir, "kiln-run")) else os.path.dirname(kiln_run or pdir)
        exe = os.path.join(bindir, "kiln-run")
        if os.path.exists(exe) and not os.access(exe, os.X_OK):
            os.chmod(exe, 0o755)  # a carried folder may lose the mode
        for n, label in enumerate(e["sizes"]):
            s = os.path.join(d, f"set{n}")
            inputs = numbered(s, "input")
            with np.load(os.path.join(s, "ref.npz")) as z:
                refs = [z[f"arr_{i}"] for i in range(len(z.files))]
            if dry_run:
                missing = [p for p in [so, os.path.join(bindir, "kiln-run")] if not os.path.exists(p)]
                ok = not missing and len(inputs) == len(e["input_names"]) and refs
                row["results"][label] = {"dry_run": f"{len(inputs)} inputs, {len(refs)} references"} if ok else \
                    {"error": f"dry run: missing {missing}, {len(inputs)} inputs, {len(refs)} references"}
                continue
            t0 = time.perf_counter()
            try:
                outs = kiln_tools.run_model(so, list(zip(e["input_names"], inputs)), os.path.join(s, "out"),
                                            bindir=bindir, timeout=timeout)
                row["results"][label] = {"err": compare(outs, refs)}
            except kiln_tools.Error as x:
                row["results"][label] = {"error": f"kiln-run timed out after {timeout} s" if getattr(
                    x, "timeout", None) else "kiln-run: " + first_error(getattr(x, "stderr", "") + getattr(
                        x, "stdout", "") or str(x))}
            except ValueError as x:
                row["results"][label] = {"error": str(x)}
            row["results"][label]["kiln_run_s"] = round(time.perf_counter() - t0, 3)
        row["status"] = status_of(row["results"])
        log(f"  corpus {e['name']}: {row['status']}")
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(os.path.join(stage, "corpus-run"), ignore_errors=True)
    return rows


def table(rows):
    """A short table: one line per model and size, CPU result in brackets."""
    def res(r):
        return f"{r['err']:.1e}" if "err" in r else r.get("dry_run") or r.get("error", "?")

    lines = [f"corpus (bar {MAX_REL:.0e}; (cpu ...) is this kilnc on the CPU, from prepare):"]
    for r in rows:
        if not r["results"]:
            lines.append(f"  {r['name']:24s} {r['status'].upper()}: {r['error'][:150]}")
            continue
        cpu = r.get("cpu") or {}
        for label, v in r["results"].items():
            c = cpu.get("results", {}).get(label)
            c = f" (cpu {res(c)[:60]})" if c else f" (cpu {cpu['error'][:60]})" if "error" in cpu else ""
            lines.append(f"  {r['name']:24s} {label:22s} {res(v)[:150]}{c}")
        lines.append(f"  {r['name']:24s} -> {r['status']}")
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines.append(f"corpus: {len(rows)} models: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["prepare", "run"])
    ap.add_argument("--stage", default=os.path.join(ROOT, ".gpu"))
    ap.add_argument("--only", default="", help="prepare: comma-separated model names")
    ap.add_argument("--cache", default=CACHE)
    ap.add_argument("--part-mib", type=float, default=40)
    ap.add_argument("--target", default="cuda", help="prepare: cuda, or cpu to test the run half here")
    ap.add_argument("--no-cpu", action="store_true", help="prepare: skip the CPU result")
    ap.add_argument("--json", help="run: write the rows here")
    ap.add_argument("--dry-run", action="store_true", help="run: only check that the files are there")
    ap.add_argument("--parts", default="", help="run: only these parts (numbers, comma-separated)")
    args = ap.parse_args()
    stage = os.path.abspath(args.stage)
    if args.cmd == "prepare":
        entries = prepare_gpu(stage, [n for n in args.only.split(",") if n] or None, args.cache, args.part_mib,
                              args.target, not args.no_cpu)
        json.dump(entries, open(os.path.join(stage, "corpus", "entries.json"), "w"), indent=1)
        return 0
    rows = run_gpu(stage, dry_run=args.dry_run, parts=[int(k) for k in args.parts.split(",") if k])
    print("\n".join(table(rows)))
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0 if all(r["status"] in ("pass", "dry-run") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
