# RUN: %python %s %t
"""kiln-accuracy --precision int8 --layers (docs/int8.md, "Sensitive layers"):
each int8 layer's measured effect on the output, on a small float conv net
(int8_calibrate.py's: Conv + Relu, MaxPool, a strided Conv + Relu, a 1x1
Conv with a residual Add, GlobalAveragePool, Gemm; 4 contractions, seeded
weights), 16 calibration pictures, 8 evaluation batches of 4.

What must hold:
- the table (stdout and --json) lists every int8 layer of the default
  build's report, each with its estimated rank and, measured, the output rel
  L2 with that layer alone fp32: finite and positive (3 layers stay int8);
- each measured reduction is >= 0: keeping a layer fp32 removes its rounding
  noise, independent of the others', so it lowers the expected squared
  error by that layer's share (8% to 64% here; a negative value means the
  build is not what the table says), and the largest is > 0;
- --threshold 0.0045 lies between the all-int8 build's error (0.0098) and
  the fp32 build's (0), so some layers must go: the recommended
  --int8-exclude set is a non-empty prefix of the measured ranking, the tool
  says it meets the threshold, and a build of that set made here on the
  saved ranges (kilnc --calibration-ranges, kiln-run) has rel L2 <= 0.0045
  over the same 8 inputs, equal to the tool's figure (within 1e-4: the same
  builds, run by kiln-run here and by the kiln package there);
- with --int8-keep-fp32 1 --candidates 2 in the same --workdir (the saved
  ranges: no calibration; the first run's measurements: no int8 build), 2
  layers are measured and the other 2 listed as not, and the recommendation
  is the measured first of the two;
- a wrong option is a clear error (exit 2) before any build."""
import json
import os
import re
import subprocess
import sys

import numpy as np

import kiln_tools
from kiln_tools.quantize import int8_convnet

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)
HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "utils", "kiln_accuracy.py")
BIN = os.path.dirname(kiln_tools.find_tool("kilnc"))
THRESHOLD = 0.0045

model = int8_convnet(os.path.join(work, "convnet.onnx"), rng)

failures = []


def accuracy(*args):
    p = subprocess.run([sys.executable, TOOL, model, "--bin", BIN, *args],
                       capture_output=True, text=True)
    print(f"$ kiln_accuracy.py {' '.join(args)}  (exit {p.returncode})\n{p.stdout}{p.stderr}")
    return p


# Wrong options: exit 2 with a message, before any build.
for args, message in [
        (["--precision", "int8", "--calibrate-samples", "2", "--layers", "--candidates", "0"],
         "--candidates needs a positive count of layers or 'all', got '0'"),
        (["--precision", "fp16", "--candidates", "2"],
         "--candidates is for --precision int8 --layers"),
        (["--precision", "int8", "--calibrate-samples", "2", "--layers", "--threshold", "0.01",
          "--int8-keep-fp32", "2"],
         "--threshold and --int8-keep-fp32 both choose the recommended set with --layers"),
        (["--precision", "int8", "--layers", "--samples", "8"],
         "--precision int8 needs --calibrate DIR")]:
    p = accuracy(*args)
    if p.returncode != 2 or f"kiln-accuracy: {message}" not in p.stderr:
        failures.append(f"{' '.join(args)}: exit {p.returncode}, expected 2 and '{message}'")

# The measured ranking and the recommendation for --threshold.
wd = os.path.join(work, "wd")
result = os.path.join(work, "layers.json")
p = accuracy("--precision", "int8", "--calibrate-samples", "16", "--samples", "8", "--layers",
             "--threshold", str(THRESHOLD), "--workdir", wd, "--json", result)
if p.returncode != 0:
    sys.exit(f"FAIL: kiln-accuracy --layers exited {p.returncode}")
plan = json.load(open(os.path.join(wd, "int8.so.json")))["precision"]["nodes"]
int8 = sorted(n["node"] for n in plan if n["precision"] == "int8")
if int8 != ["conv1", "conv2", "conv3", "fc"]:
    failures.append(f"default build: int8 layers {int8}, expected conv1..3 and fc")
r = json.load(open(result))["int8_layers"]
e0 = r["all_int8"]["rel_l2"]
layers = {x["node"]: x for x in r["layers"]}
if sorted(layers) != int8:
    failures.append(f"--json lists {sorted(layers)}, the report's int8 layers are {int8}")
row = re.compile(r"^ +(\d+) +(\d+) +\S+ +(\S+) +(\S+) +(\S+)% +\S+% +(\S+) \((Conv|Gemm)\)$")
rows = {m.group(6): m for m in map(row.match, p.stdout.splitlines()) if m}
if sorted(rows) != int8:
    failures.append(f"the table's measured rows are {sorted(rows)}, expected {int8}")
if not e0 > THRESHOLD:
    failures.append(f"all-int8 rel L2 {e0:.4g} is not above the threshold {THRESHOLD}: the "
                    "test needs a threshold between it and fp32's 0")
for name, x in layers.items():
    if not (x.get("estimate_rank") and x.get("measured_rank")):
        failures.append(f"{name}: ranks {x.get('estimate_rank')}, {x.get('measured_rank')}")
        continue
    if not (np.isfinite(x["rel_l2"]) and 0 < x["rel_l2"] <= e0 and x["reduction"] >= 0 and
            0 <= x["share"] <= 1):
        failures.append(f"{name}: rel L2 {x['rel_l2']:.4g}, reduction {x['reduction']:.3g}, "
                        f"share {x['share']:.3g} (all int8: {e0:.4g})")
ranked = sorted(layers.values(), key=lambda x: x.get("measured_rank", 99))
if not ranked[0].get("reduction", 0) > 0:
    failures.append("the most sensitive layer's measured reduction is not > 0")
rec = r["recommended"]
order = [x["node"] for x in ranked]
if not (rec["exclude"] and rec["exclude"] == order[:len(rec["exclude"])] and rec["met"] and
        rec["rel_l2"] <= THRESHOLD and rec["checks"][-1]["count"] == len(rec["exclude"])):
    failures.append(f"recommended {rec}: expected a non-empty prefix of {order} meeting "
                    f"{THRESHOLD}, checked by its own build")
if f"--int8-exclude={','.join(rec['exclude'])}" not in p.stdout:
    failures.append("stdout lacks the recommended --int8-exclude= list")
if r.get("estimate", {}).get("count") != len(rec["exclude"]):
    failures.append(f"no comparison with the estimate's top {len(rec['exclude'])}")

# The recommended set built here on the saved ranges, on the tool's samples
# (seeds 0-7, kiln_tools.image_inputs' pictures).
so = os.path.join(work, "recommended.so")
kiln_tools.compile_model(model, so, ["--precision=int8",
                                     f"--calibration-ranges={os.path.join(wd, 'ranges.json')}",
                                     f"--int8-exclude={','.join(rec['exclude'])}"])
evals = [kiln_tools.write_inputs(kiln_tools.image_inputs(model, i), os.path.join(work, f"eval{i}"))
         for i in range(8)]
ref = np.stack([kiln_tools.run_model(os.path.join(wd, "fp32.so"), e,
                                     os.path.join(work, "o32"))[0][1] for e in evals])
got = np.stack([kiln_tools.run_model(so, e, os.path.join(work, "o8"))[0][1] for e in evals])
err = kiln_tools.error_stats(ref, got)["rel_l2"]
print(f"recommended {rec['exclude']}: rel L2 {err:.4g} here, {rec['rel_l2']:.4g} by the tool, "
      f"all int8 {e0:.4g}")
if not (err <= THRESHOLD and abs(err - rec["rel_l2"]) <= 1e-4 * err):
    failures.append(f"the recommended set's own build: rel L2 {err:.4g} (tool: "
                    f"{rec['rel_l2']:.4g}, threshold {THRESHOLD})")

# --int8-keep-fp32 1 with 2 candidates, on the saved ranges, in the same
# --workdir: every measurement is one of the first run's.
result2 = os.path.join(work, "keep.json")
p = accuracy("--precision", "int8", "--calibration-ranges", os.path.join(wd, "ranges.json"),
             "--samples", "8", "--layers", "--int8-keep-fp32", "1", "--candidates", "2",
             "--workdir", wd, "--json", result2)
if p.returncode != 0:
    failures.append(f"--int8-keep-fp32 1 --candidates 2: exit {p.returncode}")
else:
    r2 = json.load(open(result2))["int8_layers"]
    done = [x for x in r2["layers"] if "measured_rank" in x]
    rest = sorted(x["node"] for x in r2["layers"] if "measured_rank" not in x)
    by_est = sorted(layers.values(), key=lambda x: x["estimate_rank"])
    if sorted(x["node"] for x in done) != sorted(x["node"] for x in by_est[:2]):
        failures.append(f"--candidates 2 measured {[x['node'] for x in done]}, expected the "
                        f"estimate's first two {[x['node'] for x in by_est[:2]]}")
    if rest != sorted(x["node"] for x in by_est[2:]) or p.stdout.count("not measured") != 2:
        failures.append(f"--candidates 2: unmeasured {rest} not listed as such")
    if r2["recommended"]["exclude"] != [done[0]["node"]]:
        failures.append(f"--int8-keep-fp32 1 recommends {r2['recommended']['exclude']}, "
                        f"expected the measured first, {done[0]['node']}")
    if "(calibration)" in p.stderr or r2["builds"] != 0 or r2["reused"] != 2:
        failures.append(f"the saved ranges and measurements were not reused: "
                        f"{r2['builds']} builds, {r2['reused']} reused")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("OK")
