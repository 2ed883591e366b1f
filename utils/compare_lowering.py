#!/usr/bin/env python3
"""Compares the IR two kilnc builds produce for ONNX's backend node tests.

Compiles every node test model (onnx/backend/test/data/node/<case>/model.onnx,
or --data-dir) with a reference kilnc and a candidate kilnc at each of the
given --dump-after stages, and compares stdout, stderr and the exit status.
A refactoring of the lowering must leave all of them identical.

    utils/compare_lowering.py --ref /work/base/build/bin/kilnc \\
        --new build/bin/kilnc --stages lower,kernels -j 2

The reference outputs are cached under --cache (keyed by the reference
binary's path, size and mtime), so a rerun only compiles with the candidate.
Exit status 0 when every case matches, 1 otherwise; differing cases are
listed, and --diff-dir writes both outputs of each for `diff`.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys


def node_dir():
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test",
                        "data", "node")


def run(kilnc, model, stage, timeout):
    try:
        p = subprocess.run([kilnc, model, f"--dump-after={stage}"],
                           capture_output=True, timeout=timeout)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = b"", b"<timeout>", -1
    # Paths of the models differ only by where they live: keep them as is
    # (both builds read the same files), but drop the binary's own path from
    # messages such as "kilnc: ...".
    # Only a digest of the IR is kept (the cache stays small); stderr, which
    # holds the error messages, is kept as text.
    return {"rc": rc, "out": hashlib.sha256(out).hexdigest(),
            "err": err.decode("utf-8", "replace").replace(kilnc, "kilnc")}


def ref_key(kilnc):
    st = os.stat(kilnc)
    h = hashlib.sha1(f"{os.path.realpath(kilnc)}:{st.st_size}:{st.st_mtime_ns}"
                     .encode()).hexdigest()[:12]
    return h


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", default="/work/base/build/bin/kilnc",
                   help="reference kilnc (default: the baseline build)")
    p.add_argument("--new", default="build/bin/kilnc", help="candidate kilnc")
    p.add_argument("--stages", default="lower,kernels",
                   help="comma-separated --dump-after stages (default lower,kernels)")
    p.add_argument("--data-dir", help="folder of <case>/model.onnx (default: onnx's node tests)")
    p.add_argument("--filter", help="only cases matching this regex (re.search)")
    p.add_argument("--jobs", "-j", type=int, default=2)
    p.add_argument("--timeout", type=int, default=120, help="seconds per kilnc run")
    p.add_argument("--cache", default="build/compare-lowering",
                   help="folder for the cached reference outputs")
    p.add_argument("--diff-dir", help="write <case>.<stage>.{ref,new} of differing cases here")
    args = p.parse_args()

    data = args.data_dir or node_dir()
    cases = sorted(c for c in os.listdir(data)
                   if os.path.isfile(os.path.join(data, c, "model.onnx")))
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c)]
    stages = [s for s in args.stages.split(",") if s]
    os.makedirs(args.cache, exist_ok=True)
    cache_file = os.path.join(args.cache, f"ref-{ref_key(args.ref)}.json")
    cache = {}
    if os.path.exists(cache_file):
        with open(cache_file) as f:
            cache = json.load(f)

    jobs = [(c, s) for c in cases for s in stages]

    def work(job):
        case, stage = job
        model = os.path.join(data, case, "model.onnx")
        key = f"{case}:{stage}"
        ref = cache.get(key)
        if ref is None:
            ref = run(args.ref, model, stage, args.timeout)
        new = run(args.new, model, stage, args.timeout)
        return key, ref, new

    same = differ = errors_same = 0
    diffs = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for key, ref, new in ex.map(work, jobs):
            cache[key] = ref
            if ref == new:
                same += 1
                if ref["rc"] != 0:
                    errors_same += 1
            else:
                differ += 1
                diffs.append(key)
                if args.diff_dir:
                    os.makedirs(args.diff_dir, exist_ok=True)
                    base = os.path.join(args.diff_dir, key.replace(":", "."))
                    case, stage = key.split(":")
                    model = os.path.join(data, case, "model.onnx")
                    for tag, kilnc in (("ref", args.ref), ("new", args.new)):
                        r = subprocess.run([kilnc, model, f"--dump-after={stage}"],
                                           capture_output=True, timeout=args.timeout)
                        with open(f"{base}.{tag}", "wb") as f:
                            f.write(b"rc=%d\n--- stderr\n" % r.returncode + r.stderr
                                    + b"\n--- stdout\n" + r.stdout)
    with open(cache_file, "w") as f:
        json.dump(cache, f)

    for key in diffs:
        print(f"DIFFERS {key}")
    print(f"{len(cases)} cases x {len(stages)} stages ({','.join(stages)}): "
          f"{same} identical ({same - errors_same} compiled, {errors_same} "
          f"failed with the same status and messages), {differ} differ")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
