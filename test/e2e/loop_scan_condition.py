# RUN: %python %s %t
"""A Loop whose body computes its condition and that has scan outputs (a
decoder that stops on a data-dependent test, as exported while-loops do,
often with M = INT64_MAX): the number of steps is known only once the loop
has run, so the lowering runs the body twice, once for the carried values
and the step count (read on the host), once over that many steps writing
the scan outputs sized by it. One .so, several stopping points and trip
counts (0 steps, M below the stop, M = INT64_MAX), against onnxruntime."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

F = TensorProto.FLOAT
work = sys.argv[1]


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


# Carried: acc (grows by x each step) and h (a running product); stops when
# sum(acc) reaches `limit`. Scans: 2 * acc and h each step, and the step.
body = helper.make_graph(
    [helper.make_node("Add", ["acc_in", "x"], ["acc"]),
     helper.make_node("Mul", ["h_in", "decay"], ["h"]),
     helper.make_node("ReduceSum", ["acc"], ["s"], keepdims=0),
     helper.make_node("Less", ["s", "limit"], ["cond_out"]),
     helper.make_node("Mul", ["acc", "two"], ["scan_acc"]),
     helper.make_node("Identity", ["h"], ["scan_h"]),
     helper.make_node("Identity", ["i"], ["scan_i"])],
    "body",
    [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
     vi("acc_in", F, [3]), vi("h_in", F, [2, 2])],
    [vi("cond_out", TensorProto.BOOL, []), vi("acc", F, [3]), vi("h", F, [2, 2]),
     vi("scan_acc", F, [3]), vi("scan_h", F, [2, 2]), vi("scan_i", TensorProto.INT64, [])],
    [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
     numpy_helper.from_array(np.array([[0.9, 1.1], [0.5, 1.0]], np.float32), "decay")])
graph = helper.make_graph(
    [helper.make_node("Loop", ["M", "go", "acc0", "h0"],
                      ["acc_final", "h_final", "accs", "hs", "steps"], body=body, name="decode")],
    "loop_scan_condition",
    [vi("M", TensorProto.INT64, []), vi("go", TensorProto.BOOL, []), vi("acc0", F, [3]),
     vi("h0", F, [2, 2]), vi("x", F, [3]), vi("limit", F, [])],
    [vi("acc_final", F, [3]), vi("h_final", F, [2, 2]), vi("accs", F, ["T", 3]),
     vi("hs", F, ["T", 2, 2]), vi("steps", TensorProto.INT64, ["T"])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
rng = np.random.default_rng(3)


def feed(m, go, limit):
    return {"M": np.array(m, np.int64), "go": np.array(go),
            "acc0": np.zeros(3, np.float32), "h0": rng.standard_normal((2, 2)).astype(np.float32),
            "x": np.array([1.0, 0.5, 0.25], np.float32), "limit": np.array(limit, np.float32)}


feeds = [feed(100, True, 7.0),             # stops after 4 steps
         feed(100, True, 30.0),            # 18 steps
         feed(5, True, 30.0),              # M stops it first
         feed(2**63 - 1, True, 12.0),      # an exported while loop
         feed(100, False, 30.0),           # no step at all
         feed(100, True, -1.0)]            # stops after the first step
kiln_tools.check(model, work, feeds, "loop_scan_condition")
print("loop with a computed condition and scan outputs: all feeds match onnxruntime")

# The same loop for the GPUs: the while loop runs as one device thread whose
# scan outputs' rows are views at a loop-dependent offset (their expansion
# left affine ops in the device code, which no GPU target could translate).
import os  # noqa: E402

import onnx  # noqa: E402

path = os.path.join(work, "loop_scan_condition.onnx")
onnx.save(model, path)
targets = ["rocm:gfx942"]
if os.path.exists(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")):
    targets.append("cuda")
for target in targets:
    p = kiln_tools.compile_model(path, os.path.join(work, f"lsc_{target.split(':')[0]}.so"),
                                 flags=[f"--target={target}"])
    assert p.returncode == 0, (target, p.stderr)
    print(f"loop with a computed condition and scan outputs: compiles for {target}")
