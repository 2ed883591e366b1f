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

  utils/conformance.py [--jobs 2] [--filter REGEX] [--subset FILE]
                       [--out docs/conformance.md] [--json FILE]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PASSED = "passed"
WRONG = "wrong result"
COMPILE_ERROR = "compile error"
RUN_ERROR = "run error"
CRASH = "crash"
STATUSES = [PASSED, WRONG, COMPILE_ERROR, RUN_ERROR, CRASH]
# Which status a case gets when its data sets disagree: the worst.
SEVERITY = {PASSED: 0, WRONG: 1, RUN_ERROR: 2, COMPILE_ERROR: 3, CRASH: 4}

COMPILE_TIMEOUT = 60  # seconds, per kilnc run (--compile-timeout)
RUN_TIMEOUT = 60  # seconds, per kiln-run run (--run-timeout)
DEFAULT_RTOL = 1e-3  # onnx.backend.test.loader's defaults
DEFAULT_ATOL = 1e-7


# --------------------------------------------------------------------------
# Test discovery
# --------------------------------------------------------------------------


class Case:
    def __init__(self, name, model_dir, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL):
        self.name = name
        self.model_dir = model_dir
        self.rtol = rtol
        self.atol = atol


def shipped_node_dir():
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def _write_value(path, value, type_proto, name):
    """Writes one data-set value the way onnx's cmd_tools generate-data does."""
    from onnx import TensorProto, numpy_helper

    if type_proto.HasField("map_type"):
        proto = numpy_helper.from_dict(value, name)
    elif type_proto.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif type_proto.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def materialize_node_tests(cache_node_dir, log):
    """Generates the node tests into cache_node_dir (for onnx packages that
    do not ship backend/test/data/node). Returns the directory."""
    import onnx

    stamp = os.path.join(cache_node_dir, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
        return cache_node_dir
    log(f"materializing ONNX node tests into {cache_node_dir} ...")
    import onnx.backend.test.case.node as node_test

    if os.path.isdir(cache_node_dir):
        shutil.rmtree(cache_node_dir)
    os.makedirs(cache_node_dir)
    for case in node_test.collect_testcases(None):
        case_dir = os.path.join(cache_node_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        model = case.model
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            with open(os.path.join(case_dir, "data.json"), "w") as f:
                json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for j, value in enumerate(inputs):
                vi = model.graph.input[j]
                _write_value(os.path.join(ds, f"input_{j}.pb"), value, vi.type, vi.name)
            for j, value in enumerate(outputs):
                vi = model.graph.output[j]
                _write_value(os.path.join(ds, f"output_{j}.pb"), value, vi.type, vi.name)
    with open(stamp, "w") as f:
        f.write(onnx.__version__ + "\n")
    return cache_node_dir


def discover_cases(args, log):
    from onnx.backend.test import loader

    if args.data_dir:
        node_dir = os.path.abspath(args.data_dir)
        source = node_dir
    elif os.path.isdir(shipped_node_dir()) and not args.materialize:
        node_dir = shipped_node_dir()
        source = "onnx package (backend/test/data/node)"
    else:
        node_dir = materialize_node_tests(os.path.join(args.cache, "node"), log)
        source = f"materialized into {node_dir}"
    # load_model_tests reads <data_dir>/<kind>/ and picks up per-test
    # rtol/atol overrides from data.json.
    tests = loader.load_model_tests(data_dir=os.path.dirname(node_dir), kind=os.path.basename(node_dir))
    cases = [Case(t.name, t.model_dir, t.rtol, t.atol) for t in tests if t.model_dir]
    cases.sort(key=lambda c: c.name)
    return cases, source


# --------------------------------------------------------------------------
# Running one case (in a worker process)
# --------------------------------------------------------------------------


def _value_kind(type_proto):
    which = type_proto.WhichOneof("value")
    return {
        "tensor_type": "tensor",
        "sequence_type": "sequence",
        "optional_type": "optional",
        "map_type": "map",
        "sparse_tensor_type": "sparse tensor",
        None: "untyped",
    }.get(which, which)


def _signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except (ValueError, AttributeError):
        return f"signal {-rc}"


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _kilnc_message(stderr, model_path):
    """First error line of kilnc's output, without the file path prefix."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    chosen = next((l for l in lines if "error:" in l), lines[0] if lines else "")
    chosen = chosen.replace(model_path, "<model>")
    chosen = re.sub(r"^<model>(:\d+)*:\s*", "", chosen)
    chosen = re.sub(r"^(kilnc:\s*)?error:\s*", "", chosen)
    return chosen.strip() or "(no message)"


def _run(cmd, timeout):
    """Runs cmd in its own process group; on timeout kills the whole group."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        timed_out = True
    rc = None if timed_out else p.returncode
    return rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start, timed_out


def run_case(case_name, model_dir, rtol, atol, kilnc, kiln_run, work_root, keep,
             compile_timeout=COMPILE_TIMEOUT, run_timeout=RUN_TIMEOUT,
             kilnc_args=(), prebuilt=None):
    """Compiles (with `kilnc_args`, e.g. --target=cuda) and runs one case.
    With `prebuilt`, runs that model.so instead of compiling (the GPU check
    runs libraries compiled on another machine)."""
    import onnx

    model_path = os.path.join(model_dir, "model.onnx")
    result = {
        "name": case_name,
        "status": None,
        "reason": "",
        "ops": [],
        "rtol": rtol,
        "atol": atol,
        "compile_s": None,
        "run_s": 0.0,
        "data_sets": [],
    }
    non_tensor = []
    try:
        model = onnx.load(model_path, load_external_data=False)
        result["ops"] = [n.op_type for n in model.graph.node]
        initializers = {i.name for i in model.graph.initializer}
        for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
            for v in values:
                if kind == "input" and v.name in initializers:
                    continue
                k = _value_kind(v.type)
                if k != "tensor":
                    non_tensor.append(f"{kind} '{v.name}' is {'an' if k[0] in 'aeiou' else 'a'} {k}")
    except Exception as e:  # a model onnx cannot load is still counted
        result["ops"] = []
        result["load_error"] = str(e)

    work = os.path.join(work_root, case_name)
    os.makedirs(work, exist_ok=True)
    so = prebuilt or os.path.join(work, "model.so")
    if not prebuilt and os.path.exists(so):
        os.remove(so)
    try:
        if prebuilt:
            rc, out, err, dt, timed_out = 0, "", "", 0.0, False
        else:
            rc, out, err, dt, timed_out = _run([kilnc, model_path, "-o", so, *kilnc_args],
                                               compile_timeout)
        result["compile_s"] = round(dt, 3)
        if timed_out:
            result.update(status=CRASH, reason=f"kilnc timed out after {compile_timeout:g} s")
            return result
        if rc < 0:
            result.update(status=CRASH, reason=f"kilnc killed by {_signal_name(rc)}: {_kilnc_message(err, model_path)}",
                          stderr=err[-4000:])
            return result
        if rc != 0:
            msg = _kilnc_message(err, model_path)
            if rc != 1:
                msg = f"(kilnc exit code {rc}) {msg}"
            if non_tensor:
                msg += f" [{'; '.join(non_tensor)}]"
            result.update(status=COMPILE_ERROR, reason=msg, stderr=err[-4000:])
            return result
        if not os.path.exists(so):
            result.update(status=COMPILE_ERROR, reason="kilnc exited 0 but wrote no library")
            return result
        if non_tensor:
            # kiln-run reads TensorProto only; the data set holds
            # SequenceProto/OptionalProto/MapProto files for these.
            result.update(status=RUN_ERROR,
                          reason="kiln-run cannot feed or check non-tensor values: " + "; ".join(non_tensor))
            return result

        data_sets = sorted(glob.glob(os.path.join(model_dir, "test_data_set_*")),
                           key=lambda p: int(p.rsplit("_", 1)[1]) if p.rsplit("_", 1)[1].isdigit() else 0)
        if not data_sets:
            result.update(status=RUN_ERROR, reason="test has no data sets")
            return result
        worst = PASSED
        worst_reason = ""
        for ds in data_sets:
            def numbered(prefix):
                files = glob.glob(os.path.join(ds, prefix + "_*.pb"))
                return sorted(files, key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))
            cmd = [kiln_run, so]
            for f in numbered("input"):
                cmd += ["--input", f]
            for f in numbered("output"):
                cmd += ["--expect", f]
            cmd += ["--rtol", repr(rtol), "--atol", repr(atol)]
            rc, out, err, dt, timed_out = _run(cmd, run_timeout)
            result["run_s"] = round(result["run_s"] + dt, 3)
            ds_name = os.path.basename(ds)
            if timed_out:
                status, reason = CRASH, f"kiln-run timed out after {run_timeout:g} s"
            elif rc < 0:
                status, reason = CRASH, f"kiln-run killed by {_signal_name(rc)}"
            elif rc == 0:
                status, reason = PASSED, ""
            else:
                mismatch = next((l.strip() for l in out.splitlines() if "MISMATCH" in l), None)
                if rc == 1 and mismatch:
                    status, reason = WRONG, mismatch
                else:
                    msg = _first_line(err).replace(so, "<model.so>").replace(model_dir + os.sep, "")
                    status = RUN_ERROR
                    reason = msg or "(no message)"
                    if rc != 1:
                        reason = f"(kiln-run exit code {rc}) {reason}"
            entry = {"data_set": ds_name, "status": status, "reason": reason, "seconds": round(dt, 3)}
            if status != PASSED:
                entry["stdout"] = out[-2000:]
                entry["stderr"] = err[-2000:]
            result["data_sets"].append(entry)
            if SEVERITY[status] > SEVERITY[worst]:
                worst = status
                worst_reason = reason if len(data_sets) == 1 else f"{ds_name}: {reason}"
        result.update(status=worst, reason=worst_reason)
        return result
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def run_case_safe(*args):
    try:
        return run_case(*args)
    except Exception as e:  # the runner's own failure for this case
        return {"name": args[0], "status": None, "runner_error": f"{type(e).__name__}: {e}", "ops": []}


# --------------------------------------------------------------------------
# Operator attribution
# --------------------------------------------------------------------------


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


def write_markdown(path, results, meta):
    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}

    def pct(n):
        return f"{100.0 * n / total:.1f}%" if total else "n/a"

    lines = []
    lines.append("# ONNX node-test conformance")
    lines.append("")
    lines.append("Generated by `utils/conformance.py`; do not edit by hand.")
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
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "conformance.md"), help="Markdown report")
    p.add_argument("--json", help="write full per-case results here")
    p.add_argument("--cache", default=os.path.join(ROOT, "build", "conformance"),
                   help="work folder: compiled models, materialized tests (default build/conformance)")
    p.add_argument("--data-dir", help="a folder of node tests (<name>/model.onnx, test_data_set_N/) to use instead")
    p.add_argument("--materialize", action="store_true",
                   help="generate the node tests into the cache even if onnx ships them")
    p.add_argument("--compile-timeout", type=float, default=COMPILE_TIMEOUT,
                   help=f"seconds per kilnc run before it counts as a crash (default {COMPILE_TIMEOUT})")
    p.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT,
                   help=f"seconds per kiln-run run (one data set) before it counts as a crash (default {RUN_TIMEOUT})")
    p.add_argument("--keep", action="store_true", help="keep compiled models under CACHE/work")
    p.add_argument("--min-pass-rate", type=float, default=None,
                   help="exit 1 if passed/total is below this fraction (0..1)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the totals")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    start = time.monotonic()

    def log(msg):
        if not args.quiet:
            print(msg, flush=True)

    def fail(msg):
        print(f"conformance: error: {msg}", file=sys.stderr)
        return 2

    for tool in (args.kilnc, args.kiln_run):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            return fail(f"{tool} is not an executable (build Kiln first, or pass --kilnc/--kiln-run)")
    if args.jobs < 1:
        return fail("--jobs must be at least 1")
    args.cache = os.path.abspath(args.cache)
    args.kilnc = os.path.abspath(args.kilnc)
    args.kiln_run = os.path.abspath(args.kiln_run)

    import onnx

    try:
        cases, source = discover_cases(args, log)
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
    if not cases:
        return fail("no test cases selected")

    work_root = os.path.join(args.cache, "work")
    os.makedirs(work_root, exist_ok=True)
    log(f"conformance: {len(cases)} node tests from {source}, {args.jobs} jobs")

    results = []
    runner_errors = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(run_case_safe, c.name, c.model_dir, c.rtol, c.atol, args.kilnc, args.kiln_run,
                        work_root, args.keep, args.compile_timeout, args.run_timeout): c
            for c in cases
        }
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            case = futures[fut]
            try:
                r = fut.result()
            except Exception as e:
                r = {"name": case.name, "status": None, "runner_error": f"{type(e).__name__}: {e}", "ops": []}
            if r.get("status") is None:
                runner_errors.append(f"{r['name']}: {r.get('runner_error')}")
                r["status"] = RUN_ERROR
                r["reason"] = f"conformance runner failed: {r.get('runner_error')}"
            results.append(r)
            if not args.quiet:
                tail = f": {r['reason']}" if r["status"] != PASSED else ""
                print(f"[{n}/{len(cases)}] {r['status'].upper()} {r['name']}{tail}", flush=True)

    results.sort(key=lambda r: r["name"])
    attribute_ops(results)
    wall = time.monotonic() - start

    total = len(results)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    rel = lambda p: os.path.relpath(p, ROOT) if os.path.abspath(p).startswith(ROOT + os.sep) else p
    command = " ".join(shlex.quote(a) for a in ["utils/conformance.py"] + [rel(a) for a in argv])
    meta = {
        "command": command,
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "onnx_version": onnx.__version__,
        "source": source if not source.startswith("/") else rel(source),
        "jobs": args.jobs,
        "wall_s": wall,
    }
    write_markdown(args.out, results, meta)
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
