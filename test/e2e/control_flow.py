# RUN: %python %s %t
"""Control flow (If with a run-time condition, Loop with a trip count and
scan outputs, Scan) and Einsum compiled by kilnc and compared with
onnxruntime (ir_version 8) on seeded random inputs."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(777)
F32, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def model(name, nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          ir_version=8)
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


# If: then = relu(x) @ w, else = x * 2 - 1; the condition is an input.
then_g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"]),
     helper.make_node("MatMul", ["r", "w"], ["t_out"])],
    "then", [], [vi("t_out", F32, [3, 4])])
two = helper.make_tensor("two", F32, [], [2.0])
one = helper.make_tensor("one", F32, [], [1.0])
else_g = helper.make_graph(
    [helper.make_node("Constant", [], ["c2"], value=two),
     helper.make_node("Constant", [], ["c1"], value=one),
     helper.make_node("Mul", ["x4", "c2"], ["m"]),
     helper.make_node("Sub", ["m", "c1"], ["e_out"])],
    "else", [], [vi("e_out", F32, [3, 4])])
m = model("if_runtime",
          [helper.make_node("Slice", ["x", "st", "en", "ax"], ["x4"]),
           helper.make_node("If", ["cond"], ["y"], then_branch=then_g,
                            else_branch=else_g)],
          [vi("cond", B, []), vi("x", F32, [3, 5]), vi("w", F32, [5, 4])],
          [vi("y", F32, [3, 4])])
m.graph.initializer.extend([
    onnx.numpy_helper.from_array(np.array([0], np.int64), "st"),
    onnx.numpy_helper.from_array(np.array([4], np.int64), "en"),
    onnx.numpy_helper.from_array(np.array([1], np.int64), "ax")])
x = rng.standard_normal((3, 5)).astype(np.float32)
w = rng.standard_normal((5, 4)).astype(np.float32)
check("if_runtime", m, [{"cond": np.array(True), "x": x, "w": w},
                        {"cond": np.array(False), "x": x, "w": w}])

# Loop: acc = tanh(acc + x) for M steps, each step's acc as a scan output;
# the loop stops when cond is false.
body = helper.make_graph(
    [helper.make_node("Identity", ["c_in"], ["c_out"]),
     helper.make_node("Add", ["acc_in", "x"], ["s"]),
     helper.make_node("Tanh", ["s"], ["acc_out"]),
     helper.make_node("Identity", ["acc_out"], ["scan"])],
    "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F32, [2, 3])],
    [vi("c_out", B, []), vi("acc_out", F32, [2, 3]), vi("scan", F32, [2, 3])])
m = model("loop", [helper.make_node("Loop", ["M", "cond", "acc0"],
                                    ["acc", "scans"], body=body)],
          [vi("M", I64, []), vi("cond", B, []), vi("acc0", F32, [2, 3]),
           vi("x", F32, [2, 3])],
          [vi("acc", F32, [2, 3]), vi("scans", F32, [4, 2, 3])])
check("loop", m, [{"M": np.array(4, np.int64), "cond": np.array(True),
                   "acc0": rng.standard_normal((2, 3)).astype(np.float32),
                   "x": rng.standard_normal((2, 3)).astype(np.float32)}])

# Scan (opset 9+): running sum forward, and a reversed scan input.
body = helper.make_graph(
    [helper.make_node("Add", ["s_in", "e"], ["s_out"]),
     helper.make_node("Mul", ["s_out", "e2"], ["o"])],
    "scan_body", [vi("s_in", F32, [3]), vi("e", F32, [3]), vi("e2", F32, [3])],
    [vi("s_out", F32, [3]), vi("o", F32, [3])])
m = model("scan", [helper.make_node("Scan", ["s0", "xs", "xs"], ["s", "os"],
                                    body=body, num_scan_inputs=2,
                                    scan_input_directions=[0, 1])],
          [vi("s0", F32, [3]), vi("xs", F32, [5, 3])],
          [vi("s", F32, [3]), vi("os", F32, [5, 3])])
check("scan", m, [{"s0": rng.standard_normal(3).astype(np.float32),
                   "xs": rng.standard_normal((5, 3)).astype(np.float32)}])

# Einsum: batched contraction with an ellipsis, a trace, implicit output.
m = model("einsum",
          [helper.make_node("Einsum", ["a", "b"], ["y1"], equation="...ij,...jk->...ik"),
           helper.make_node("Einsum", ["c"], ["y2"], equation="ii"),
           helper.make_node("Einsum", ["a", "b"], ["y3"], equation="bij,bjk")],
          [vi("a", F32, [2, 3, 4]), vi("b", F32, [2, 4, 5]), vi("c", F32, [4, 4])],
          [vi("y1", F32, [2, 3, 5]), vi("y2", F32, []), vi("y3", F32, [3, 5])])
check("einsum", m, [{"a": rng.standard_normal((2, 3, 4)).astype(np.float32),
                     "b": rng.standard_normal((2, 4, 5)).astype(np.float32),
                     "c": rng.standard_normal((4, 4)).astype(np.float32)}])

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all control-flow cases match onnxruntime")
