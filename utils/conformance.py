#!/usr/bin/env python3
"""Runs ONNX's backend node tests through kilnc and kiln-run.

Every node test is compiled with kilnc and each of its data sets is run with
kiln-run --expect (ONNX's tolerances). Each case ends as one of

  passed          every data set matched
  wrong result    kiln-run reported a MISMATCH (values, shape or dtype)
  compile error   kilnc exited 1 with a message
  run error       kiln-run exited 1 with a message (or the case cannot be
                  given to kiln-run at all, e.g. sequence/optional values)
  crash           either tool was killed by a signal or timed out

and a Markdown report (--out) and optionally JSON (--json) are written.
Exit status: 0, or 1 when something crashed or the pass rate is below
--min-pass-rate, 2 when the runner itself failed.

With --compile-target TARGET (and --static-json, a CPU run's --json), only
the cases that passed in that run are compiled, with --target=TARGET, and
nothing is run: the check of a device that is not on this machine (e.g.
rocm:gfx942). Each case ends as compiled, compile error or crash, and the
report (default docs/conformance-<vendor>.md) groups the failures by what
kilnc said.

  utils/conformance.py [--jobs 2] [--filter REGEX] [--subset FILE]
                       [--out docs/conformance.md] [--json FILE]
  utils/conformance.py --compile-target rocm:gfx942 --static-json FILE
                       [--out docs/conformance-rocm.md] [--json FILE]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kiln_tools import nodetests  # noqa: E402
from kiln_tools.nodetests import (COMPILE_ERROR, COMPILE_STATUSES, COMPILE_TIMEOUT, COMPILED,  # noqa: E402
                                  CRASH, DEFAULT_ATOL, DEFAULT_RTOL, PASSED, RUN_ERROR, RUN_TIMEOUT,
                                  STATUSES, WRONG)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------
# Operator attribution
# --------------------------------------------------------------------------


def collect_results(futures, failed_status, ok_status, runner_errors, quiet):
    """Yields each finished case's result (futures: future -> case), a
    runner failure as `failed_status` recorded in runner_errors, printing a
    progress line per case unless quiet."""
    for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
        case = futures[fut]
        try:
            r = fut.result()
        except Exception as e:
            r = {"name": case.name, "status": None, "runner_error": f"{type(e).__name__}: {e}", "ops": []}
        if r.get("status") is None:
            runner_errors.append(f"{r['name']}: {r.get('runner_error')}")
            r["status"] = failed_status
            r["reason"] = f"conformance runner failed: {r.get('runner_error')}"
        if not quiet:
            tail = f": {r['reason']}" if r["status"] != ok_status else ""
            print(f"[{n}/{len(futures)}] {r['status'].upper()} {r['name']}{tail}", flush=True)
        yield r


def _norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _base_name(name):
    return re.sub(r"_expanded(_ver\d+)?$", "", name)


_SCHEMA_NAMES = None


def _schema_names():
    global _SCHEMA_NAMES
    if _SCHEMA_NAMES is None:
        import onnx.defs

        _SCHEMA_NAMES = sorted({s.name for s in onnx.defs.get_all_schemas_with_history()})
    return _SCHEMA_NAMES


def _longest_prefix(test_norm, names):
    best = None
    for n in names:
        nn = _norm(n)
        if nn and test_norm.startswith(nn) and (best is None or len(nn) > len(_norm(best))):
            best = n
    return best


def attribute_ops(results):
    """Sets result['op'] for every case: the operator the test is about."""
    by_name = {r["name"]: r for r in results}

    def direct(r):
        name = r["name"]
        test_norm = _norm(name[len("test_"):] if name.startswith("test_") else name)
        ops = r.get("ops") or []
        distinct = list(dict.fromkeys(o for o in ops if o != "Constant"))
        hit = _longest_prefix(test_norm, distinct)
        if hit:
            return hit
        if len(distinct) == 1 and name == _base_name(name):
            return distinct[0]
        hit = _longest_prefix(test_norm, _schema_names())
        if hit:
            return hit
        if distinct:
            return distinct[0]
        return ops[0] if ops else "(none)"

    for r in results:
        base = _base_name(r["name"])
        if base != r["name"] and base in by_name:
            r["op"] = direct(by_name[base])
        else:
            r["op"] = direct(r)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _md_escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def symbolic_section(results, static_path):
    """The --symbolic run against a static run's results (its --json): how
    many of the static passes pass with every input dim symbolic, and why the
    others fail."""
    with open(static_path) as f:
        static = {r["name"]: r["status"] for r in json.load(f)["results"]}
    passing = [r for r in results if static.get(r["name"]) == PASSED]
    kept = [r for r in passing if r["status"] == PASSED]
    lost = sorted((r for r in passing if r["status"] != PASSED), key=lambda r: r["name"])
    rate = 100.0 * len(kept) / len(passing) if passing else 0.0
    lines = ["## Against static shapes", "",
             f"Every dim of every graph input is a dim_param (`<input>_d<axis>`) and the outputs' "
             f"dims are unknown, as in a model exported with dynamic axes; one `.so` runs the "
             f"test's data. Of the {len(passing)} cases that pass with static shapes "
             f"(`{os.path.basename(static_path)}`, the run of docs/conformance.md), "
             f"**{len(kept)} pass ({rate:.1f}%)**; the dynamic-shapes issue's bar is 95%.", ""]
    if lost:
        lines += ["Static passes that fail here:", "",
                  "| Case | Result | First error |", "|---|---|---|"]
        for r in lost:
            lines.append(f"| {r['name']} | {r['status']} | {_md_escape(r['reason'][:200])} |")
        lines.append("")
    return lines


def write_markdown(path, results, meta, static_json=None):
    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}

    def pct(n):
        return f"{100.0 * n / total:.1f}%" if total else "n/a"

    lines = []
    lines.append("# ONNX node-test conformance" +
                 (", every input dim symbolic" if meta.get("symbolic") else ""))
    lines.append("")
    lines.append("Generated by `utils/conformance.py`; do not edit by hand.")
    lines.append("")
    if not meta.get("symbolic"):
        lines.append("The same tests with every input dim symbolic (`--symbolic`, one `.so` for "
                     "all sizes): docs/conformance-symbolic.md.")
        lines.append("")
    lines.append(f"- Command: `{meta['command']}`")
    lines.append(f"- Date: {meta['date']}")
    lines.append(f"- onnx version: {meta['onnx_version']}")
    lines.append(f"- Tests from: {meta['source']}")
    lines.append(f"- Jobs: {meta['jobs']}; wall time: {meta['wall_s']:.1f} s")
    lines.append(f"- Tolerances: ONNX's per-test rtol/atol (default rtol={DEFAULT_RTOL:g}, atol={DEFAULT_ATOL:g}), "
                 "elementwise |got - expected| <= atol + rtol*|expected|")
    lines.append("")
    lines.append("## Totals")
    lines.append("")
    lines.append("| Result | Cases | % of all |")
    lines.append("|---|---:|---:|")
    for s in STATUSES:
        lines.append(f"| {s} | {counts[s]} | {pct(counts[s])} |")
    lines.append(f"| **total** | **{total}** | 100% |")
    lines.append("")
    if static_json:
        lines += symbolic_section(results, static_json)

    per_op = {}
    for r in results:
        d = per_op.setdefault(r["op"], {s: 0 for s in STATUSES})
        d[r["status"]] += 1
    rows = []
    for op, d in per_op.items():
        cases = sum(d.values())
        failed = cases - d[PASSED]
        rows.append((op, cases, d[PASSED], failed, d))
    rows.sort(key=lambda t: (-t[3], t[0].lower()))
    lines.append("## Per operator")
    lines.append("")
    lines.append("Sorted by failing cases, descending. Expanded (function-body) tests count "
                 "towards the operator they expand.")
    lines.append("")
    lines.append("| Operator | Cases | Passed | Failed | Wrong result | Compile error | Run error | Crash |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for op, cases, passed, failed, d in rows:
        lines.append(f"| {op} | {cases} | {passed} | {failed} | {d[WRONG]} | {d[COMPILE_ERROR]} | "
                     f"{d[RUN_ERROR]} | {d[CRASH]} |")
    lines.append("")

    blocked = {}
    for r in results:
        if r["status"] == COMPILE_ERROR:
            m = re.search(r"operator '([^']+)' is not supported", r["reason"])
            if m:
                blocked.setdefault(m.group(1), []).append(r["name"])
    if blocked:
        lines.append("## Unsupported operators by cases blocked")
        lines.append("")
        lines.append("The operator kilnc first rejected as unsupported, counted over all cases "
                     "(an expanded test is often blocked by an operator other than its own).")
        lines.append("")
        lines.append("| Unsupported operator | Cases blocked |")
        lines.append("|---|---:|")
        for op, names in sorted(blocked.items(), key=lambda t: (-len(t[1]), t[0].lower())):
            lines.append(f"| {op} | {len(names)} |")
        lines.append("")

    failing = [r for r in results if r["status"] != PASSED]
    lines.append(f"## Failing cases ({len(failing)})")
    lines.append("")
    if failing:
        lines.append("| Case | Operator | Result | Reason |")
        lines.append("|---|---|---|---|")
        for r in sorted(failing, key=lambda r: r["name"]):
            lines.append(f"| {r['name']} | {r['op']} | {r['status']} | {_md_escape(r['reason'])} |")
    else:
        lines.append("None.")
    lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def reason_class(reason):
    """A failure's reason without its specifics (the node prefix, quoted
    ONNX names, numbers), keeping what names the missing piece: MLIR op
    names ('math.erf') and types. Failures are grouped by it."""
    r = re.sub(r"^kilnc (timed out|killed by \w+).*", r"kilnc \1", reason)
    r = re.sub(r"^node '[^']*' \([^,]+, opset \d+\): ", "", r)
    r = re.sub(r"'([^'.]*)'", "'…'", r)  # names without a dot: ONNX values and nodes
    r = re.sub(r"\b\d+\b", "N", r)
    return r[:160]


def device_code_section(results):
    """Where the compiled cases' kernels went, from kilnc --report: graph
    kernels left on the host, register spills, scratch memory."""
    compiled = [r for r in results if r["status"] == COMPILED and "kernels" in r]
    if not compiled:
        return []
    kernels = sum(r["kernels"] for r in compiled)
    host = [r for r in compiled if r["host_kernels"]]
    spilling = [r for r in compiled if r["spills"] or r["scratch_bytes"]]
    shared = sum(r.get("shared_kernels", 0) for r in compiled)
    host_text = (f"{sum(r['host_kernels'] for r in compiled)} graph kernels in {len(host)} cases have no "
                 f"device kernel (nothing is launched: their outputs are empty, or their work stays on "
                 f"the host)" if host else "every graph kernel has device code")
    spill_text = (f"{len(spilling)} cases have a device kernel that spills registers or uses scratch memory"
                  if spilling else "no device kernel spills registers or uses scratch memory")
    lines = ["## Device code", "",
             f"From each compile's `kilnc --report`: the {len(compiled)} compiled cases hold {kernels} graph "
             f"kernels ({shared} of them launch another kernel's code) and "
             f"{sum(r['device_kernels'] for r in compiled)} device kernels; {host_text}, and {spill_text}.", ""]
    if host:
        lines += ["Cases with graph kernels that have no device kernel:", "",
                  "| Case | Operator | Graph kernels | Without device kernel |", "|---|---|---:|---:|"]
        for r in host:
            lines.append(f"| {r['name']} | {r['op']} | {r['kernels']} | {r['host_kernels']} |")
        lines.append("")
    if spilling:
        lines += ["Cases with spills or scratch:", "",
                  "| Case | Operator | Device kernels | Registers spilled | Most scratch (bytes) |",
                  "|---|---|---:|---:|---:|"]
        for r in sorted(spilling, key=lambda r: (-r["scratch_bytes"], -r["spills"], r["name"])):
            lines.append(f"| {r['name']} | {r['op']} | {r['device_kernels']} | {r['spills']} | "
                         f"{r['scratch_bytes']} |")
        lines.append("")
    return lines


def write_compile_markdown(path, results, meta):
    """The report of a --compile-target run: totals over the CPU-passing
    cases, failures by reason class and operator, then every failure."""
    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in COMPILE_STATUSES}
    target = meta["compile_target"]

    def pct(n):
        return f"{100.0 * n / total:.1f}%" if total else "n/a"

    lines = [f"# ONNX node-test conformance, compiled for {target} (compile only)", "",
             "Generated by `utils/conformance.py --compile-target`; do not edit by hand.", "",
             f"No {target.split(':')[0]} device is here, so nothing runs: every node test that passes "
             f"on the CPU (`{meta['static_json']}`, the run of docs/conformance.md) is compiled with "
             f"`kilnc --target={target}` into a `.so` embedding the device code, and a case counts "
             f"as compiled when kilnc exits 0 with the library written. Whether the device code "
             f"computes the right values is not checked here.", "",
             f"- Command: `{meta['command']}`",
             f"- Date: {meta['date']}",
             f"- onnx version: {meta['onnx_version']}",
             f"- Tests from: {meta['source']}",
             f"- CPU results: `{meta['static_command']}` ({meta['static_date']}): "
             f"{meta['static_passed']} of {meta['static_total']} cases passed",
             f"- kilnc arguments: `{' '.join(meta['kilnc_args'])}` (and `--report`, for the device code's counts)",
             f"- Jobs: {meta['jobs']}; wall time: {meta['wall_s']:.1f} s"]
    if meta.get("tool_changed"):
        retried = sum(1 for r in results if r.get("tool_retries"))
        lines.append(f"- kilnc or its runtime archive was rebuilt during the run; a case that failed "
                     f"while it changed was compiled again (cases compiled again: {retried})")
    lines += ["", "## Totals", "",
              f"Of the {total} cases that pass on the CPU, **{counts[COMPILED]} compile for {target} "
              f"({pct(counts[COMPILED])})**.", "",
              "| Result | Cases | % of CPU-passing |", "|---|---:|---:|"]
    for s in COMPILE_STATUSES:
        lines.append(f"| {s} | {counts[s]} | {pct(counts[s])} |")
    lines += [f"| **total** | **{total}** | 100% |", ""]

    failing = [r for r in results if r["status"] != COMPILED]
    classes = {}
    for r in failing:
        classes.setdefault(reason_class(r["reason"]), []).append(r)
    order = sorted(classes, key=lambda c: (-len(classes[c]), c))
    if failing:
        lines += ["## Failures by reason", "",
                  "kilnc's first error line with the node, quoted ONNX names and numbers taken out; "
                  "the operators are those of the failing cases.", "",
                  "| Reason class | Cases | Operators | Example |", "|---|---:|---|---|"]
        for c in order:
            rs = classes[c]
            ops = ", ".join(sorted({r["op"] for r in rs}, key=str.lower))
            lines.append(f"| {_md_escape(c)} | {len(rs)} | {_md_escape(ops)} | "
                         f"{rs[0]['name']}: {_md_escape(rs[0]['reason'][:200])} |")
        lines.append("")

        per_op = {}
        for r in results:
            d = per_op.setdefault(r["op"], [0, 0])
            d[0] += 1
            d[1] += r["status"] == COMPILED
        rows = sorted(((op, n, ok) for op, (n, ok) in per_op.items() if ok < n),
                      key=lambda t: (-(t[1] - t[2]), t[0].lower()))
        lines += ["## Operators with failures", "",
                  "| Operator | CPU-passing cases | Compiled | Failed |", "|---|---:|---:|---:|"]
        for op, n, ok in rows:
            lines.append(f"| {op} | {n} | {ok} | {n - ok} |")
        lines.append("")

    lines += device_code_section(results)
    lines += [f"## Failing cases ({len(failing)})", ""]
    if not failing:
        lines += ["None.", ""]
    for c in order:
        lines += [f"### {_md_escape(c)} ({len(classes[c])})", "",
                  "| Case | Operator | Result | Reason |", "|---|---|---|---|"]
        for r in sorted(classes[c], key=lambda r: r["name"]):
            lines.append(f"| {r['name']} | {r['op']} | {r['status']} | {_md_escape(r['reason'][:300])} |")
        lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description="Run ONNX backend node tests through kilnc and kiln-run.")
    p.add_argument("--jobs", "-j", type=int, default=2, help="parallel cases (default 2)")
    p.add_argument("--filter", help="only cases whose name matches this regex (re.search)")
    p.add_argument("--subset", help="file listing case names, one per line ('#' comments)")
    p.add_argument("--kilnc", default=os.path.join(ROOT, "build", "bin", "kilnc"))
    p.add_argument("--kiln-run", dest="kiln_run", default=os.path.join(ROOT, "build", "bin", "kiln-run"))
    p.add_argument("--out", help="Markdown report (default docs/conformance.md; with --compile-target "
                   "docs/conformance-<vendor>.md)")
    p.add_argument("--json", help="write full per-case results here")
    p.add_argument("--cache", default=nodetests.DEFAULT_CACHE,
                   help="work folder: compiled models, materialized tests (default build/conformance)")
    p.add_argument("--data-dir", help="a folder of node tests (<name>/model.onnx, test_data_set_N/) to use instead")
    p.add_argument("--materialize", action="store_true",
                   help="generate the node tests into the cache even if onnx ships them")
    p.add_argument("--compile-timeout", type=float, default=COMPILE_TIMEOUT,
                   help=f"seconds per kilnc run before it counts as a crash (default {COMPILE_TIMEOUT})")
    p.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT,
                   help=f"seconds per kiln-run run (one data set) before it counts as a crash (default {RUN_TIMEOUT})")
    p.add_argument("--keep", action="store_true", help="keep compiled models under CACHE/work")
    p.add_argument("--kilnc-arg", dest="kilnc_arg", action="append", default=[],
                   help="an extra kilnc argument for every case (repeat), e.g. --target=cpu:x86-64-v3")
    p.add_argument("--static-json",
                   help="with --symbolic: the --json of a static run, to report how many of its "
                        "passes pass with symbolic dims (and which do not); with --compile-target: "
                        "the CPU run whose passing cases are compiled")
    p.add_argument("--compile-target", dest="compile_target", metavar="TARGET",
                   help="compile only, with --target=TARGET (e.g. rocm:gfx942), the cases that passed "
                        "in --static-json; nothing is run")
    p.add_argument("--symbolic", action="store_true",
                   help="make every input dim of every case symbolic before compiling (outputs' "
                   "dims unknown), as a model with dynamic shapes would have them")
    p.add_argument("--min-pass-rate", type=float, default=None,
                   help="exit 1 if passed/total is below this fraction (0..1)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the totals")
    return p.parse_args(argv)


def _rel(path):
    return os.path.relpath(path, ROOT) if os.path.abspath(path).startswith(ROOT + os.sep) else path


def _command(argv):
    return " ".join(shlex.quote(a) for a in ["utils/conformance.py"] + [_rel(a) for a in argv])


def _date():
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def compile_only(args, argv, cases, source, static, start, log):
    """--compile-target: compiles `cases` (the CPU run's passes) for the
    target, writes the report and JSON, prints the totals."""
    import onnx

    work_root = os.path.join(args.cache, "work")
    os.makedirs(work_root, exist_ok=True)
    kilnc_args = args.kilnc_arg + [f"--target={args.compile_target}"]
    log(f"conformance: compiling {len(cases)} CPU-passing node tests for {args.compile_target}, "
        f"{args.jobs} jobs")
    static_op = {r["name"]: r.get("op") for r in static["results"]}
    stamp = nodetests.tool_stamp(args.kilnc)
    results = []
    runner_errors = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(nodetests.compile_case_safe, c.name, c.model_dir, args.kilnc, work_root,
                               args.keep, args.compile_timeout, kilnc_args): c
                   for c in cases}
        for r in collect_results(futures, COMPILE_ERROR, COMPILED, runner_errors, args.quiet):
            r["op"] = static_op.get(r["name"]) or "(none)"
            results.append(r)
    results.sort(key=lambda r: r["name"])
    wall = time.monotonic() - start

    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in COMPILE_STATUSES}
    smeta = static["meta"]
    meta = {
        "command": _command(argv),
        "date": _date(),
        "onnx_version": onnx.__version__,
        "source": source if not source.startswith("/") else _rel(source),
        "jobs": args.jobs,
        "wall_s": wall,
        "compile_target": args.compile_target,
        "kilnc_args": kilnc_args,
        "static_json": _rel(args.static_json),
        "static_command": smeta.get("command", "?"),
        "static_date": smeta.get("date", "?"),
        "static_total": len(static["results"]),
        "static_passed": sum(1 for r in static["results"] if r["status"] == PASSED),
        "tool_changed": nodetests.tool_stamp(args.kilnc) != stamp,
    }
    write_compile_markdown(args.out, results, meta)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "totals": counts, "results": results}, f, indent=1)

    print(f"conformance: {total} CPU-passing cases compiled for {args.compile_target} in {wall:.1f} s")
    for s in COMPILE_STATUSES:
        print(f"  {s + ':':15s}{counts[s]:6d}  ({100.0 * counts[s] / total:.1f}%)")
    crashes = [r["name"] for r in results if r["status"] == CRASH]
    if crashes:
        print("crashes: " + ", ".join(crashes))
    print(f"report: {args.out}")
    if runner_errors:
        for e in runner_errors:
            print(f"conformance: runner error: {e}", file=sys.stderr)
        return 2
    status = 1 if crashes else 0
    rate = counts[COMPILED] / total
    if args.min_pass_rate is not None and rate < args.min_pass_rate:
        print(f"conformance: compile rate {rate:.4f} is below --min-pass-rate {args.min_pass_rate}",
              file=sys.stderr)
        status = 1
    return status


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()

    def log(msg):
        if not args.quiet:
            print(msg, flush=True)

    def fail(msg):
        print(f"conformance: error: {msg}", file=sys.stderr)
        return 2

    if args.compile_target:
        if not args.static_json:
            return fail("--compile-target needs --static-json (the CPU run whose passes to compile)")
        if args.symbolic:
            return fail("--compile-target does not combine with --symbolic")
    if args.out is None:
        name = f"conformance-{args.compile_target.split(':')[0]}.md" if args.compile_target else "conformance.md"
        args.out = os.path.join(ROOT, "docs", name)
    for tool in (args.kilnc,) if args.compile_target else (args.kilnc, args.kiln_run):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            return fail(f"{tool} is not an executable (build Kiln first, or pass --kilnc/--kiln-run)")
    if args.jobs < 1:
        return fail("--jobs must be at least 1")
    args.cache = os.path.abspath(args.cache)
    args.kilnc = os.path.abspath(args.kilnc)
    args.kiln_run = os.path.abspath(args.kiln_run)

    import onnx

    try:
        cases, source = nodetests.discover_cases(args.data_dir, args.materialize, args.cache, log)
    except Exception as e:
        return fail(f"cannot load the ONNX node tests: {type(e).__name__}: {e}")
    if args.subset:
        try:
            with open(args.subset) as f:
                wanted = [l.split("#", 1)[0].strip() for l in f]
        except OSError as e:
            return fail(f"cannot read --subset: {e}")
        wanted = [w for w in wanted if w]
        known = {c.name: c for c in cases}
        missing = [w for w in wanted if w not in known]
        if missing:
            return fail(f"--subset names unknown tests: {', '.join(missing)}")
        cases = [known[w] for w in dict.fromkeys(wanted)]
    if args.filter:
        try:
            rx = re.compile(args.filter)
        except re.error as e:
            return fail(f"bad --filter: {e}")
        cases = [c for c in cases if rx.search(c.name)]
    if args.compile_target:
        try:
            with open(args.static_json) as f:
                static = json.load(f)
        except (OSError, ValueError) as e:
            return fail(f"cannot read --static-json: {e}")
        if static["meta"].get("symbolic"):
            return fail("--static-json is a --symbolic run; give a static CPU run's --json")
        passed = {r["name"]: r for r in static["results"] if r["status"] == PASSED}
        cases = [c for c in cases if c.name in passed]
    if not cases:
        return fail("no test cases selected")
    if args.compile_target:
        return compile_only(args, argv, cases, source, static, start, log)

    work_root = os.path.join(args.cache, "work")
    os.makedirs(work_root, exist_ok=True)
    log(f"conformance: {len(cases)} node tests from {source}, {args.jobs} jobs")

    results = []
    runner_errors = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(nodetests.run_case_safe, c.name, c.model_dir, c.rtol, c.atol, args.kilnc, args.kiln_run,
                        work_root, args.keep, args.compile_timeout, args.run_timeout,
                        args.kilnc_arg, None, args.symbolic): c
            for c in cases
        }
        results.extend(collect_results(futures, RUN_ERROR, PASSED, runner_errors, args.quiet))

    results.sort(key=lambda r: r["name"])
    attribute_ops(results)
    wall = time.monotonic() - start

    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    meta = {
        "command": _command(argv),
        "date": _date(),
        "onnx_version": onnx.__version__,
        "source": source if not source.startswith("/") else _rel(source),
        "jobs": args.jobs,
        "wall_s": wall,
        "symbolic": args.symbolic,
    }
    write_markdown(args.out, results, meta, args.static_json if args.symbolic else None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "totals": counts, "results": results}, f, indent=1)

    print(f"conformance: {total} cases in {wall:.1f} s")
    for s in STATUSES:
        pct = 100.0 * counts[s] / total
        print(f"  {s + ':':15s}{counts[s]:6d}  ({pct:.1f}%)")
    crashes = [r["name"] for r in results if r["status"] == CRASH]
    if crashes:
        print("crashes: " + ", ".join(crashes))
    print(f"report: {args.out}")

    if runner_errors:
        for e in runner_errors:
            print(f"conformance: runner error: {e}", file=sys.stderr)
        return 2
    status = 0
    if crashes:
        status = 1
    rate = counts[PASSED] / total
    if args.min_pass_rate is not None and rate < args.min_pass_rate:
        print(f"conformance: pass rate {rate:.4f} is below --min-pass-rate {args.min_pass_rate}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))