#!/usr/bin/env python3
"""Do two builds of Kiln give bit-identical outputs on every test model?

  utils/compare_builds.py OLD_BUILD NEW_BUILD [--jobs 2]
      [--flags=--precision=fp16]... [--compile-only=--target=cuda]...
      [--corpus node,models,e2e,examples] [--filter REGEX] [--json FILE]

OLD_BUILD and NEW_BUILD are build folders (their bin/kilnc and bin/kiln-run).
The corpus:
  node      the ONNX backend node tests (utils/conformance.py's: shipped with
            onnx, or materialized into --cache), each on its own data sets
  models    the networks of the lit model tests (test/models/*.py, needs
            torch) on those tests' inputs
  e2e       the models of the lit end-to-end tests that go through
            kiln_tools.check (test/e2e, test/Import/Onnx) on their inputs
  examples  examples/mlp.onnx on seeded inputs
The models and e2e tests are recorded by running those test scripts with
KILN_TOOLS_CORPUS set: kiln_tools.check then writes each model and its
inputs instead of compiling them.

Every model is compiled by both kilncs with the same flags (none, and each
--flags set), each build's kiln-run runs it on the same inputs, and the
output files (TensorProto .pb) are compared byte for byte. Each
--compile-only set (e.g. --target=cuda, which needs a GPU to run) compares
what both kilncs print with those flags and --dump-after=llvm instead.

Prints a table per flag set (models, compiled by both, identical,
different, failed to compile in both / in one) and the differences; exits 1
when anything differs or compiles (or runs) in one build only, 2 when the
tool itself fails.
"""
import argparse
import concurrent.futures
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools import nodetests  # noqa: E402

ROOT = kiln_tools.ROOT
CORPORA = ["node", "models", "e2e", "examples"]
# Test scripts whose models kiln_tools.check records (KILN_TOOLS_CORPUS).
RECORDED = {"models": ["test/models"], "e2e": ["test/e2e", "test/Import/Onnx"]}
USES_CHECK = re.compile(r"kiln_tools\.check\(|collecting_check\(|model_util\.check_model\(")

# Outcomes of one model under one flag set.
IDENTICAL = "identical"
DIFFERENT = "different"
FAILED_BOTH = "failed to compile in both"
FAILED_ONE = "failed to compile in one"
RUN_FAILED_BOTH = "run failed in both"
RUN_FAILED_ONE = "run failed in one"
OUTCOMES = [IDENTICAL, DIFFERENT, FAILED_BOTH, FAILED_ONE, RUN_FAILED_BOTH, RUN_FAILED_ONE]
BAD = {DIFFERENT, FAILED_ONE, RUN_FAILED_ONE}


class Entry:
    """One model of the corpus: its file and its data sets (input files)."""

    def __init__(self, corpus, name, model, data_sets):
        self.corpus = corpus
        self.name = name
        self.model = model
        self.data_sets = data_sets


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------


def recorded_dir_entries(corpus, folder):
    """Entries of a folder in node-test layout (NAME/model.onnx, data sets)."""
    out = []
    for name in sorted(os.listdir(folder)):
        d = os.path.join(folder, name)
        if os.path.isfile(os.path.join(d, "model.onnx")):
            sets = [inputs for _, inputs, _ in nodetests.data_sets(d)]
            out.append(Entry(corpus, name, os.path.join(d, "model.onnx"), sets))
    return out


def node_entries(args):
    cases, source = nodetests.discover_cases(cache=args.cache, log=log)
    log(f"node tests: {len(cases)} from {source}")
    return [Entry("node", c.name, os.path.join(c.model_dir, "model.onnx"),
                  [inputs for _, inputs, _ in nodetests.data_sets(c.model_dir)]) for c in cases]


def has_torch():
    return subprocess.run([sys.executable, "-c", "import torch, torchvision"],
                          capture_output=True).returncode == 0


def record_entries(corpus, work, problems):
    """Runs the test scripts of `corpus` in recording mode; their entries."""
    if corpus == "models" and not has_torch():
        problems.append("models: torch is not installed, the model tests were not recorded")
        return []
    scripts = []
    for folder in RECORDED[corpus]:
        for f in sorted(os.listdir(os.path.join(ROOT, folder))):
            path = os.path.join(ROOT, folder, f)
            text = open(path).read() if f.endswith(".py") else ""
            # Lit tests, not helpers, and not the tests of recording itself.
            if "# RUN:" in text and USES_CHECK.search(text) and "CORPUS_ENV" not in text:
                scripts.append(path)
    entries = []
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in (os.path.join(ROOT, "python"),
                                                     os.environ.get("PYTHONPATH")) if p)}
    for path in scripts:
        tag = os.path.relpath(path, ROOT)[len("test/"):-len(".py")].replace("/", "_")
        out = os.path.join(work, "recorded", tag)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        env[kiln_tools.compare.CORPUS_ENV] = out
        p = subprocess.run([sys.executable, path, os.path.join(work, "scratch", tag)], env=env,
                           capture_output=True, text=True, cwd=os.path.dirname(path))
        found = recorded_dir_entries(corpus, out)
        for e in found:
            e.name = f"{tag}/{e.name}"
        if p.returncode != 0:
            problems.append(f"{corpus}: {os.path.relpath(path, ROOT)} failed while recording "
                            f"({p.returncode}): {(p.stderr.strip().splitlines() or [''])[-1]}")
        entries += found
    log(f"{corpus}: {len(entries)} models recorded from {len(scripts)} test scripts")
    return entries


def example_entries(work):
    model = os.path.join(ROOT, "examples", "mlp.onnx")
    files = kiln_tools.write_inputs(kiln_tools.seeded_inputs(model, 0),
                                    os.path.join(work, "examples", "mlp"))
    return [Entry("examples", "mlp", model, [[p for _, p in files]])]


# --------------------------------------------------------------------------
# Comparing one model
# --------------------------------------------------------------------------


def _failure(rc, err, timed_out, timeout):
    if timed_out:
        return f"timed out after {timeout:g} s"
    first = next((l.strip() for l in err.splitlines() if "error" in l.lower()),
                 (err.strip().splitlines() or [""])[0])
    return f"exit {rc}: {first[:200]}"


def compile_both(entry, builds, command, timeout):
    """Runs command(side, bindir) for both builds: ({side: stdout}, None)
    when both succeed, else (None, (outcome, detail))."""
    outs, failed = {}, {}
    for side, bindir in builds.items():
        rc, out, err, _, timed_out = nodetests.run_with_timeout(command(side, bindir), timeout)
        if rc == 0:
            outs[side] = out
        else:
            failed[side] = _failure(rc, err, timed_out, timeout)
    if len(failed) == 2:
        return None, (FAILED_BOTH, failed["old"])
    if failed:
        side, why = next(iter(failed.items()))
        return None, (FAILED_ONE, f"{side} build: {why}")
    return outs, None


def compare_run(entry, flags, builds, work, timeout):
    """(outcome, detail): compile with both, run both on every data set,
    compare the output files."""
    sos = {side: os.path.join(work, f"{side}.so") for side in builds}
    _, failed = compile_both(
        entry, builds, lambda side, bindir: [os.path.join(bindir, "kilnc"), entry.model, "-o",
                                             sos[side], *flags], timeout)
    if failed:
        return failed
    for n, inputs in enumerate(entry.data_sets):
        outdirs, run_failed = {}, {}
        for side, bindir in builds.items():
            outdir = os.path.join(work, f"{side}_out_{n}")
            shutil.rmtree(outdir, ignore_errors=True)
            os.makedirs(outdir)
            cmd = [os.path.join(bindir, "kiln-run"), sos[side]]
            for f in inputs:
                cmd += ["--input", f]
            rc, _, err, _, timed_out = nodetests.run_with_timeout(cmd + ["--output-dir", outdir],
                                                                  timeout)
            if rc != 0:
                run_failed[side] = _failure(rc, err, timed_out, timeout)
            outdirs[side] = outdir
        if len(run_failed) == 2:
            return RUN_FAILED_BOTH, f"data set {n}: {run_failed['old']}"
        if run_failed:
            side, why = next(iter(run_failed.items()))
            return RUN_FAILED_ONE, f"data set {n}, {side} build: {why}"
        files = {side: sorted(os.listdir(d)) for side, d in outdirs.items()}
        if files["old"] != files["new"]:
            return DIFFERENT, f"data set {n}: outputs {files['old']} vs {files['new']}"
        for f in files["old"]:
            a, b = (os.path.join(outdirs[s], f) for s in ("old", "new"))
            if not filecmp.cmp(a, b, shallow=False):
                return DIFFERENT, f"data set {n}: {f} differs ({value_diff(a, b)})"
    return IDENTICAL, ""


def value_diff(a, b):
    """What differs between two TensorProto files, in words."""
    try:
        (na, x), (nb, y) = kiln_tools.read_pb_named(a), kiln_tools.read_pb_named(b)
    except Exception as e:  # not parseable: the bytes are all we know
        return f"unreadable: {e}"
    if na != nb or x.dtype != y.dtype or x.shape != y.shape:
        return f"{na} {x.dtype}{list(x.shape)} vs {nb} {y.dtype}{list(y.shape)}"
    if x.dtype.kind in "fc":
        d = abs(x.astype("float64") - y.astype("float64"))
        return f"max abs difference {float(d.max()) if d.size else 0.0:.3e}"
    return f"{int((x != y).sum())} of {x.size} values"


def compare_ir(entry, flags, builds, work, timeout):
    """(outcome, detail): what both kilncs print with FLAGS --dump-after=llvm."""
    outs, failed = compile_both(
        entry, builds, lambda side, bindir: [os.path.join(bindir, "kilnc"), entry.model, *flags,
                                             "--dump-after=llvm"], timeout)
    if failed:
        return failed
    if outs["old"] != outs["new"]:
        a, b = outs["old"].splitlines(), outs["new"].splitlines()
        n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return DIFFERENT, f"IR differs from line {n + 1}"
    return IDENTICAL, ""


def compare_one(entry, flagset, builds, work_root, timeout, keep):
    mode, flags = flagset
    work = tempfile.mkdtemp(prefix="case-", dir=work_root)
    try:
        fn = compare_ir if mode == "ir" else compare_run
        return fn(entry, flags, builds, work, timeout)
    except Exception as e:  # the tool's own failure on this model
        return None, f"{type(e).__name__}: {e}"
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def flagset_name(flagset):
    mode, flags = flagset
    text = " ".join(flags) or "(default flags)"
    return f"{text} [compile only: --dump-after=llvm]" if mode == "ir" else text


def print_table(results, flagsets, corpora):
    log("")
    log("| flags | corpus | models | compiled by both | identical | different | "
        "failed to compile in both | failed to compile in one | run failed in both | "
        "run failed in one |")
    log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fs in flagsets:
        for corpus in corpora + ["total"]:
            rows = [r for r in results if r["flags"] == flagset_name(fs) and
                    (corpus == "total" or r["corpus"] == corpus)]
            if not rows and corpus != "total":
                continue
            c = {o: sum(1 for r in rows if r["outcome"] == o) for o in OUTCOMES}
            both = len(rows) - c[FAILED_BOTH] - c[FAILED_ONE]
            name = f"**{corpus}**" if corpus == "total" else corpus
            log(f"| {flagset_name(fs)} | {name} | {len(rows)} | {both} | {c[IDENTICAL]} | "
                f"{c[DIFFERENT]} | {c[FAILED_BOTH]} | {c[FAILED_ONE]} | {c[RUN_FAILED_BOTH]} | "
                f"{c[RUN_FAILED_ONE]} |")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("old", help="the old build folder (holds bin/kilnc, bin/kiln-run)")
    p.add_argument("new", help="the new build folder")
    p.add_argument("--jobs", "-j", type=int, default=2, help="models compared at once (default 2)")
    p.add_argument("--flags", action="append", default=[],
                   help="one more kilnc flag set to compile and run with (space separated; "
                        "write --flags=--precision=fp16)")
    p.add_argument("--compile-only", action="append", default=[],
                   help="a kilnc flag set whose --dump-after=llvm output is compared")
    p.add_argument("--no-default", action="store_true",
                   help="skip the run with kilnc's default flags")
    p.add_argument("--corpus", default=",".join(CORPORA),
                   help=f"comma-separated subset of {','.join(CORPORA)}")
    p.add_argument("--filter", help="only models whose corpus/name matches this regex")
    p.add_argument("--cache", default=nodetests.DEFAULT_CACHE,
                   help="where node tests are materialized when onnx ships none "
                        "(default build/conformance, shared with utils/conformance.py)")
    p.add_argument("--work", help="work folder (default: a temporary one, removed at the end)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per kilnc/kiln-run run")
    p.add_argument("--keep", action="store_true", help="keep the builds and outputs (with --work)")
    p.add_argument("--json", help="write every model's outcome here")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()
    builds = {"old": os.path.join(os.path.abspath(args.old), "bin"),
              "new": os.path.join(os.path.abspath(args.new), "bin")}
    for bindir in builds.values():
        for tool in ("kilnc", "kiln-run"):
            path = os.path.join(bindir, tool)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                print(f"compare_builds: error: {path} is not an executable", file=sys.stderr)
                return 2
    corpora = [c for c in args.corpus.split(",") if c]
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown or args.jobs < 1:
        print(f"compare_builds: error: unknown corpus {', '.join(unknown)} (known: "
              f"{', '.join(CORPORA)})" if unknown else "compare_builds: error: --jobs < 1",
              file=sys.stderr)
        return 2
    flagsets = ([] if args.no_default else [("run", [])])
    flagsets += [("run", f.split()) for f in args.flags]
    flagsets += [("ir", f.split()) for f in args.compile_only]
    if not flagsets:
        print("compare_builds: error: no flag set left to compare", file=sys.stderr)
        return 2

    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="kiln-compare-")
    os.makedirs(work, exist_ok=True)
    problems = []
    entries = []
    for corpus in corpora:
        if corpus == "node":
            entries += node_entries(args)
        elif corpus == "examples":
            entries += example_entries(work)
        else:
            entries += record_entries(corpus, work, problems)
    if args.filter:
        rx = re.compile(args.filter)
        entries = [e for e in entries if rx.search(f"{e.corpus}/{e.name}")]
    log(f"comparing {len(entries)} models x {len(flagsets)} flag sets: {builds['old']} vs "
        f"{builds['new']}, {args.jobs} jobs")

    cases_root = os.path.join(work, "cases")
    os.makedirs(cases_root, exist_ok=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(compare_one, e, fs, builds, cases_root, args.timeout, args.keep):
                   (e, fs) for fs in flagsets for e in entries}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            e, fs = futures[fut]
            outcome, detail = fut.result()
            if outcome is None:
                problems.append(f"{e.corpus}/{e.name} [{flagset_name(fs)}]: {detail}")
                continue
            results.append({"corpus": e.corpus, "name": e.name, "flags": flagset_name(fs),
                            "outcome": outcome, "detail": detail})
            if outcome in BAD:
                log(f"[{n}/{len(futures)}] {outcome.upper()} {e.corpus}/{e.name} "
                    f"[{flagset_name(fs)}]: {detail}")
            elif n % 200 == 0:
                log(f"[{n}/{len(futures)}] ...")
    results.sort(key=lambda r: (r["flags"], r["corpus"], r["name"]))
    print_table(results, flagsets, corpora)
    bad = [r for r in results if r["outcome"] in BAD]
    if bad:
        log(f"\n{len(bad)} models differ between the builds:")
        for r in bad:
            log(f"  {r['outcome']}: {r['corpus']}/{r['name']} [{r['flags']}]: {r['detail']}")
    for p in problems:
        print(f"compare_builds: {p}", file=sys.stderr)
    wall = time.monotonic() - start
    log(f"\ncompare_builds: {len(results)} comparisons in {wall:.0f} s; "
        f"{'no differences' if not bad else f'{len(bad)} DIFFERENCES'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"old": args.old, "new": args.new, "wall_s": round(wall, 1),
                       "problems": problems, "results": results}, f, indent=1)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    if bad:
        return 1
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
