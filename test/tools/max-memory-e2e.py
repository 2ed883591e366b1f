# RUN: %python %s %t
"""kilnc --max-memory=0.6x on a small U-Net-like model (docs/remat.md): a
skip connection `a = Relu(x)`, long-lived across a pooled middle of wider
convolutions, is cheap to recompute. The constrained build recomputes it
before its late use (the report names the node and the FLOPs added), its
planned arena is within the budget, its outputs are bit-identical to the
unconstrained build's (the same kernels on the same inputs), and
utils/memory_timeline.py plots both timelines. At 0.3x, below what
recomputation reaches, runs are launched in bands of rows (bit-identical
too). An unreachable budget's error names a budget that fits (checked), and
with external weights the buffers kiln_model_init fills count in the arena
and the budget."""
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln_tools import run_tool as run

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, "..", "..", "utils", "memory_timeline.py")
work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

rng = np.random.default_rng(0)
f32 = lambda a: a.astype(np.float32)
C, S, M = 16, 32, 44  # skip channels, resolution, middle channels
inits = [
    numpy_helper.from_array(f32(rng.standard_normal((M, C, 3, 3)) * 0.1), "w1"),
    numpy_helper.from_array(f32(rng.standard_normal((M, M, 3, 3)) * 0.05), "w2"),
    numpy_helper.from_array(f32(rng.standard_normal((8, M, 1, 1)) * 0.1), "w3"),
    numpy_helper.from_array(f32(rng.standard_normal((4, 8 + C, 3, 3)) * 0.1), "w4"),
    numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
]
nodes = [
    helper.make_node("Relu", ["x"], ["a"], name="skip_relu"),
    helper.make_node("MaxPool", ["a"], ["p"], name="pool", kernel_shape=[2, 2],
                     strides=[2, 2]),
    helper.make_node("Conv", ["p", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
    helper.make_node("Resize", ["c3", "", "scales"], ["u"], name="up", mode="nearest"),
    helper.make_node("Concat", ["u", "a"], ["cat"], name="cat", axis=1),
    helper.make_node("Conv", ["cat", "w4"], ["y"], name="head", pads=[1, 1, 1, 1]),
]
graph = helper.make_graph(
    nodes, "skip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, S, S])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, S, S])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, "skip.onnx")
x = f32(rng.standard_normal((1, C, S, S)))
with open("x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())

run(["kilnc", "skip.onnx", "-o", "full.so", "--report=full.json"])
out = run(["kilnc", "skip.onnx", "-o", "small.so", "--max-memory=0.6x",
           "--report=small.json"]).stdout
full, small = json.load(open("full.json")), json.load(open("small.json"))
remat = small["remat"]
natural = full["peak_live_bytes"]
print(f"natural peak {natural}, budget {remat['budget_bytes']}, peak "
      f"{remat['peak_before']} -> {remat['peak_after']}, arena "
      f"{remat['arena_before']} -> {remat['arena_after']}, +{remat['extra_flops']} FLOPs")
assert remat["peak_before"] == natural and remat["arena_before"] == full["arena_bytes"], remat
assert remat["budget_bytes"] == int(0.6 * natural), remat
assert small["arena_bytes"] <= remat["budget_bytes"], (small["arena_bytes"], remat)
assert remat["arena_after"] == small["arena_bytes"], remat
recomputed = [n for k in remat["recomputed"] for n in k["onnx_nodes"]]
assert recomputed == ["skip_relu"], remat["recomputed"]
assert remat["extra_flops"] == C * S * S, remat  # one max per element
assert [k["remat"] for k in small["kernels"] if "remat" in k] == ["recompute"]
assert len(small["timeline"]) == len(full["timeline"]) + 1
assert max(t["live_bytes"] for t in small["timeline"]) == small["peak_live_bytes"]
assert remat["timeline_before"] == full["timeline"], "the timeline before remat"
assert "recomputed main_graph_kernel_0: skip_relu" in out, out

# Bit-identical outputs.
os.makedirs("ref", exist_ok=True)
run(["kiln-run", "full.so", "--input", "x.pb", "--output-dir", "ref"])
check = run(["kiln-run", "small.so", "--input", "x.pb", "--expect", "ref/output_0.pb",
             "--rtol", "0", "--atol", "0"]).stdout
assert "max_abs_err=0" in check, check
print(check.strip())

# The plot: both timelines and the budget.
run([sys.executable, PLOT, "small.json", "-o", "timeline.svg"])
svg = open("timeline.svg").read()
assert svg.startswith("<svg") and svg.count("<path") == 2 and "budget" in svg, svg[:400]
print("timeline.svg: before/after and the budget")

# Below what recomputation reaches (0.58x), bands of rows: at 0.3x the
# batch is 1, so the run around the peak (the recomputed skip_relu, the
# head convolution reading it and the upsampled conv3, the output's
# transpose) and the encoder's run are launched a band of rows at a time,
# each kernel on the rows its band needs (with the 3x3 halos); the arena
# fits, the halos are counted in the extra FLOPs, and the outputs are still
# bit-identical.
out = run(["kilnc", "skip.onnx", "-o", "rows.so", "--max-memory=0.3x",
           "--report=rows.json"]).stdout
rows = json.load(open("rows.json"))
banded = [c for c in rows["remat"]["chunked"] if c.get("rows")]
assert rows["arena_bytes"] <= rows["remat"]["budget_bytes"], rows["remat"]
assert banded and all(c["chunks"] >= 2 for c in banded), rows["remat"]["chunked"]
assert {"head", "skip_relu"} <= {n for c in banded for n in c["onnx_nodes"]}, banded
assert rows["remat"]["extra_flops"] > C * S * S, "the halos add FLOPs"
assert rows["remat"]["extra_flops"] == rows["total_flops"] - full["total_flops"]
assert " bands of rows, " in out, out
check = run(["kiln-run", "rows.so", "--input", "x.pb", "--expect", "ref/output_0.pb",
             "--rtol", "0", "--atol", "0"]).stdout
assert "max_abs_err=0" in check, check
print(f"0.3x: {len(banded)} launches in bands of rows, arena {rows['arena_bytes']}, "
      f"+{rows['remat']['extra_flops']} FLOPs, bit-identical")

# Unreachable: the error's smallest arena is a budget that fits.
p = run(["kilnc", "skip.onnx", "-o", "tight.so", "--max-memory=0.1x"], check=False)
assert p.returncode == 1 and "cannot be met" in p.stderr, p.stderr
hint = re.search(r"\(--max-memory=(\d+) or ([0-9.]+x) fits\)", p.stderr)
assert hint and "into bands of rows" in p.stderr, p.stderr
for budget in hint.groups():
    run(["kilnc", "skip.onnx", "-o", "hint.so", f"--max-memory={budget}"])
print(f"unreachable at 0.1x; --max-memory={hint.group(1)} and {hint.group(2)} fit")

# Weights prepared at load (external weights: kiln_model_init's persistent
# buffers) count in the arena and in the budget; still bit-identical.
ew = ["--external-weights", "--external-weights-min-bytes=64"]
run(["kilnc", "skip.onnx", "-o", "ew.so", "--report=ew.json", *ew])
run(["kilnc", "skip.onnx", "-o", "ew_small.so", "--report=ew_small.json",
     "--max-memory=0.75x", *ew])
ew_full, ew_small = json.load(open("ew.json")), json.load(open("ew_small.json"))
persistent = ew_full["arena_bytes"] - ew_full["peak_live_bytes"]
assert persistent > 0, "no persistent buffers: nothing hoisted"
assert ew_small["remat"]["budget_bytes"] == int(0.75 * ew_full["arena_bytes"])
assert ew_small["arena_bytes"] <= ew_small["remat"]["budget_bytes"], ew_small["remat"]
os.makedirs("ew_ref", exist_ok=True)
run(["kiln-run", "ew.so", "--input", "x.pb", "--output-dir", "ew_ref"])
run(["kiln-run", "ew_small.so", "--input", "x.pb", "--expect", "ew_ref/output_0.pb",
     "--rtol", "0", "--atol", "0"])
print(f"external weights: arena {ew_full['arena_bytes']} -> {ew_small['arena_bytes']} "
      f"({persistent} persistent), bit-identical")
