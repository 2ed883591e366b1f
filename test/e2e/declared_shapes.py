# RUN: %python %s %t
"""Declared types that disagree with the computed ones (the dynamic-shapes
issue's tolerance), as onnxruntime takes them:

- a value_info that contradicts the inferred shape (rank-0 for a [1] value,
  a stale [3, 4] for a [2, 4] value): a warning naming the node, and the
  computed shape is used;
- a graph output declared with the wrong rank (ddddocr's recognizer declares
  [1, seqlen] for a [T, 1, C] output): a warning naming the output and its
  node, and the output has the computed shape;
- a value_info that fixes a dim inference leaves dynamic ([N, 4] declared as
  [2, 4]) is adopted, and a run where it does not hold fails naming the node
  instead of reading past the buffer;
- a declared element type that differs stays an error;
- dim_param placeholders ("?") are independent dims;
- a Loop body that yields its condition and a rank-0 carried value as [1].
All results are compared with onnxruntime.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

F = TensorProto.FLOAT
work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(5)


def model_of(nodes, inputs, outputs, value_info=(), inits=()):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits), value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def save(model, name):
    """Writes `model` as NAME.onnx; returns its path and that of NAME.so."""
    path = os.path.join(work, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, os.path.join(work, name + ".so")


def compile_warns(model, name, needles):
    path, so = save(model, name)
    p = subprocess.run([kiln_tools.find_tool("kilnc"), path, "-o", so], capture_output=True,
                       text=True)
    if p.returncode != 0 or not all(n in p.stderr for n in needles):
        sys.exit(f"FAIL {name}: exit {p.returncode}, expected a warning with {needles}: {p.stderr}")
    print(f"{name}: warns as expected")
    return path, so


def run_matches(path, so, feeds, name):
    d = os.path.join(work, name)
    files = kiln_tools.write_inputs(feeds, d)
    outs = kiln_tools.run_model(so, [p for _, p in files], os.path.join(d, "out"))
    refs = kiln_tools.ort_run(path, feeds)
    for (_, got), ref in zip(outs, refs):
        if got.shape != ref.shape or kiln_tools.max_rel_error(got, ref) > 1e-6:
            sys.exit(f"FAIL {name}: got {got.shape}, onnxruntime {ref.shape}")
    print(f"{name}: matches onnxruntime, shapes {[g.shape for _, g in outs]}")


# value_info contradicting inference: 'one' is [1] but declared rank-0;
# 'sum' is [2, 4] but declared [3, 4].
axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
m = model_of(
    [helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=0),
     helper.make_node("Unsqueeze", ["total", "axes"], ["one"], name="unsqueeze_one"),
     helper.make_node("Add", ["x", "one"], ["sum"], name="add_one"),
     helper.make_node("Relu", ["sum"], ["y"], name="relu")],
    [vi("x", F, [2, 4])], [vi("y", F, [2, 4])],
    value_info=[vi("one", F, []), vi("sum", F, [3, 4])], inits=[axes])
path, so = compile_warns(m, "stale_value_info", [
    "warning: node 'unsqueeze_one' (Unsqueeze, opset 17): output 0 is declared as "
    "'tensor<f32>' but computes 'tensor<1xf32>'; the computed shape is used",
    "warning: node 'add_one' (Add, opset 17): output 0 is declared as 'tensor<3x4xf32>' but "
    "computes 'tensor<2x4xf32>'"])
run_matches(path, so, {"x": rng.standard_normal((2, 4)).astype(np.float32)}, "stale_value_info")

# A graph output declared [1, L] that computes [T, 1, C].
m = model_of([helper.make_node("Transpose", ["x"], ["y"], name="to_tnc", perm=[1, 0, 2])],
             [vi("x", F, [1, "T", 6])], [vi("y", F, [1, "seqlen"])])
path, so = compile_warns(m, "output_rank", [
    "warning: graph output 'y' of node 'to_tnc' (Transpose, opset 17) is declared as "
    "'tensor<1x?xf32>' but computes 'tensor<?x1x6xf32>'; the computed shape is used"])
for t in (3, 7):
    run_matches(path, so, {"x": rng.standard_normal((1, t, 6)).astype(np.float32)},
                f"output_rank_t{t}")

# A value_info fixing a dim inference leaves dynamic: adopted, checked.
m = model_of([helper.make_node("Relu", ["x"], ["r"], name="relu_fixed"),
              helper.make_node("Neg", ["r"], ["y"], name="neg")],
             [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4])], value_info=[vi("r", F, [2, 4])])
path, so = save(m, "fixed_dim")
kiln_tools.compile_model(path, so)
run_matches(path, so, {"x": rng.standard_normal((2, 4)).astype(np.float32)}, "fixed_dim_n2")
bad = kiln_tools.write_inputs({"x": np.ones((3, 4), np.float32)}, os.path.join(work, "fixed_bad"))
p = subprocess.run([kiln_tools.find_tool("kiln-run"), so, "--input", bad[0][1]],
                   capture_output=True, text=True)
# (The elementwise lowering's own broadcast check or the result-type check
# catches it, whichever comes first; both name the node and the sizes.)
message = p.stdout + p.stderr
needles = ["model run failed: node 'relu_fixed' (Relu, opset 17)", "3", "2"]
if p.returncode != 1 or not all(n in message for n in needles):
    sys.exit(f"FAIL fixed_dim_n3: exit {p.returncode}, expected {needles}: {message}")
print("fixed_dim_n3: fails naming the node")

# A declared element type that differs is an error.
m = model_of([helper.make_node("Relu", ["x"], ["r"], name="relu_int"),
              helper.make_node("Neg", ["r"], ["y"], name="neg")],
             [vi("x", F, [2, 4])], [vi("y", F, [2, 4])],
             value_info=[vi("r", TensorProto.INT64, [2, 4])])
path, so = save(m, "elem_type")
p = subprocess.run([kiln_tools.find_tool("kilnc"), path, "-o", so],
                   capture_output=True, text=True)
needles = ["error: node 'relu_int' (Relu, opset 17): result #0 of type 'tensor<*xi64>' is "
           "incompatible with the inferred type 'tensor<2x4xf32>'"]
if p.returncode == 0 or not all(n in p.stderr for n in needles):
    sys.exit(f"FAIL elem_type: exit {p.returncode}, expected {needles}: {p.stderr}")
print("elem_type: error as expected")
# Dims whose dim_param is a placeholder ("?", as Paddle2ONNX writes every
# unknown dim) are independent: a 48 x 192 input is not held to H == W.
m = model_of([helper.make_node("Relu", ["x"], ["y"], name="relu_q")],
             [vi("x", F, [1, 3, "?", "?"])], [vi("y", F, [1, 3, "?", "?"])])
path, so = save(m, "placeholder_dims")
kiln_tools.compile_model(path, so)
for h, w in ((48, 192), (32, 32)):
    run_matches(path, so, {"x": rng.standard_normal((1, 3, h, w)).astype(np.float32)},
                f"placeholder_dims_{h}x{w}")

# A Loop whose body yields its condition and a rank-0 carried value as [1]
# (as exporters write them; onnxruntime accepts it): counts to 5.
body = helper.make_graph(
    [helper.make_node("Add", ["c_in", "one"], ["c_next"], name="count"),
     helper.make_node("Less", ["c_next", "limit"], ["keep"], name="keep_going"),
     helper.make_node("Reshape", ["keep", "shape1"], ["cond_out"], name="cond_as_1"),
     helper.make_node("Reshape", ["c_next", "shape1"], ["c_out"], name="count_as_1")],
    "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
             vi("c_in", F, [])],
    [vi("cond_out", TensorProto.BOOL, [1]), vi("c_out", F, [1])],
    [numpy_helper.from_array(np.array(1, np.float32), "one"),
     numpy_helper.from_array(np.array(5, np.float32), "limit"),
     numpy_helper.from_array(np.array([1], np.int64), "shape1")])
m = model_of([helper.make_node("Loop", ["trip", "cond", "c0"], ["c"], name="loop", body=body)],
             [vi("trip", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []),
              vi("c0", F, [])], [vi("c", F, None)])
path, so = save(m, "loop_rank1")
kiln_tools.compile_model(path, so)
for trip, c0 in ((10, 0.0), (3, 1.0)):
    run_matches(path, so, {"trip": np.array(trip, np.int64), "cond": np.array(True),
                           "c0": np.array(c0, np.float32)}, f"loop_rank1_{trip}_{int(c0)}")
print("declared shapes: ok")
