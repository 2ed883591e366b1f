# RUN: %python %s %t
"""A model where plain fp16 overflows: a MatMul whose weights fit fp16 (|w| <
65504) computes activations around 1e5 before a LayerNormalization, and a Mul
by a constant 2e5 feeds another one. With --precision=fp16 alone the MatMul
runs in half, overflows to Inf and the output is NaN; with --calibrate the
MatMul (and the bias add reading its result) stay fp32 and the output matches
the fp32 build; the Mul stays fp32 in both (its constant exceeds 65504). The
compile report names each node kept fp32 and why."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
import kiln_tools

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
BIN = os.path.dirname(subprocess.run(["which", "kilnc"], capture_output=True, text=True).stdout.strip())
rng = np.random.default_rng(0)
K, N = 256, 64
w1 = (rng.standard_normal((K, N)) * 8000).astype(np.float32)  # |w| < 65504
assert np.abs(w1).max() < 65504
inits = [
    numpy_helper.from_array(w1, "w1"),
    numpy_helper.from_array((rng.standard_normal(N) * 10).astype(np.float32), "b1"),
    numpy_helper.from_array(np.ones(N, np.float32), "g1"),
    numpy_helper.from_array(np.zeros(N, np.float32), "z1"),
    numpy_helper.from_array((rng.standard_normal((N, N)) / 8).astype(np.float32), "w2"),
    numpy_helper.from_array(np.array(2e5, np.float32), "big"),
]
n = helper.make_node
nodes = [
    n("MatMul", ["x", "w1"], ["h"], name="mm_big"),
    n("Add", ["h", "b1"], ["hb"], name="bias_big"),
    n("LayerNormalization", ["hb", "g1", "z1"], ["ln1"], name="ln1", axis=-1),
    n("MatMul", ["ln1", "w2"], ["m2"], name="mm2"),
    n("Relu", ["m2"], ["r"], name="relu"),
    n("Mul", ["r", "big"], ["s"], name="scale_big"),
    n("LayerNormalization", ["s", "g1", "z1"], ["y"], name="ln2", axis=-1),
]
graph = helper.make_graph(nodes, "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, N])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
path = os.path.join(work, "overflow.onnx")
onnx.save(model, path)

# Calibration samples (two data sets) and a different evaluation input.
for i in range(2):
    kiln_tools.write_inputs([("x", rng.standard_normal((4, K)).astype(np.float32))],
                               os.path.join(work, "calib", f"test_data_set_{i}"))
x = rng.standard_normal((4, K)).astype(np.float32)
files = kiln_tools.write_inputs([("x", x)], os.path.join(work, "eval"))


def build(name, *flags):
    so = os.path.join(work, name + ".so")
    rep = os.path.join(work, name + ".json")
    p = kiln_tools.run_tool(["kilnc", path, "-o", so, f"--report={rep}", *flags])
    out = kiln_tools.run_model(so, files, os.path.join(work, "out_" + name))[0][1]
    with open(rep) as f:
        report = json.load(f)
    return out, report, p.stdout


ref, _, _ = build("fp32")
ort = kiln_tools.ort_run(model, {"x": x})[0]
if np.abs(ref - ort).max() > 1e-4 * np.abs(ort).max() or not np.isfinite(ref).all():
    sys.exit("FAIL: the fp32 build does not match onnxruntime")
h = x.astype(np.float64) @ w1.astype(np.float64)
print(f"max |x·w1| = {np.abs(h).max():.3g} (fp16 max 65504)")
assert np.abs(h).max() > 65504

plain, plain_rep, _ = build("fp16_static", "--precision=fp16")
print(f"fp16 without calibration: {int(np.sum(~np.isfinite(plain)))} NaN/Inf of {plain.size}")
if np.isfinite(plain).all():
    sys.exit("FAIL: expected plain fp16 to overflow (the test model is too tame)")

cal, cal_rep, summary = build("fp16_cal", "--precision=fp16", f"--calibrate={os.path.join(work, 'calib')}",
                              f"--calibration-ranges={os.path.join(work, 'ranges.json')}")
e = kiln_tools.error_stats(ref, cal)
print(f"fp16 with calibration vs fp32: {kiln_tools.format_stats(e)}")
if e["nonfinite"] or e["rel_l2"] > 5e-3:
    sys.exit("FAIL: the calibrated fp16 build is not accurate")
print(summary)

nodes = {n["node"]: n for n in cal_rep["precision"]["nodes"]}


def expect(node, precision, reason_prefix=None):
    got = nodes.get(node, {})
    if got.get("precision") != precision or (
            reason_prefix and not got.get("reason", "").startswith(reason_prefix)):
        sys.exit(f"FAIL: '{node}' expected {precision} ({reason_prefix}), got {got}")


expect("mm_big", "fp32", "calibration: result 'mm_big' reaches")
expect("bias_big", "fp32")  # follows its fp32 input (also over range)
expect("ln1", "fp32", "inputs: follows its fp32 inputs")  # bias_big is fp32
expect("mm2", "fp16")
expect("relu", "fp16")
expect("scale_big", "fp32", "constant range: constant operand 1 reaches |x| = 200000")
expect("ln2", "fp32", "inputs: follows its fp32 inputs")  # scale_big is fp32
for line in ["fp32 mm_big (MatMul): calibration:", "fp32 scale_big (Mul): constant range:"]:
    if line not in summary:
        sys.exit(f"FAIL: the terminal summary lacks '{line}'")
# Without calibration the Mul is still kept (static rule), the MatMul is not.
static = {n["node"]: n for n in plain_rep["precision"]["nodes"]}
assert static["mm_big"]["precision"] == "fp16", static["mm_big"]
assert static["scale_big"]["precision"] == "fp32", static["scale_big"]
ranges = json.load(open(os.path.join(work, "ranges.json")))
print(f"recorded range of mm_big: {ranges['tensors']['mm_big']}")
assert ranges["samples"] == 2 and ranges["tensors"]["mm_big"]["absmax"] > 65504
print("PASS overflow")
