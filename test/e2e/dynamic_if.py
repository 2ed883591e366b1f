# RUN: %python %s %t
"""If with a condition known only at run time whose outputs have symbolic
dims (silero-vad's sample-rate switch: both branches give [batch, 1]): the
result sizes are computed before the condition from each branch's shape
arithmetic (kernel formation's reifyIfResults) and the branch taken fills
them. One .so, three sizes, both branches, against onnxruntime. A branch
whose output size depends on its data (NonZero) is refused at compile time
naming the node. torch's squeeze(k) export (branches of different rank)
compiles as the squeezed branch with a run-time check, and a condition
computed from shapes alone (an LSTM's "is batched" test) picks its branch at
compile time (the silero-vad models)."""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

F = TensorProto.FLOAT
work = sys.argv[1]
rng = np.random.default_rng(7)


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


# then: Relu(x) reshaped to [N * 2, W / 2] and concatenated with itself
# along axis 1; else: Neg(x) reshaped the same way, concatenated with x
# reshaped: both [2N, W] at run time, computed differently.
shape = numpy_helper.from_array(np.array([-1, 2], np.int64), "two_cols")
then = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"]),
     helper.make_node("Reshape", ["r", "two_cols"], ["rr"]),
     helper.make_node("Concat", ["rr", "rr"], ["a"], axis=1)],
    "then", [], [vi("a", F, None)])
els = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["n"]),
     helper.make_node("Reshape", ["n", "two_cols"], ["nr"]),
     helper.make_node("Reshape", ["x", "two_cols"], ["xr"]),
     helper.make_node("Concat", ["nr", "xr"], ["b"], axis=1)],
    "else", [], [vi("b", F, None)])
graph = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], name="switch", then_branch=then, else_branch=els),
     helper.make_node("Mul", ["y", "y"], ["z"], name="square")],
    "dynamic_if", [vi("x", F, ["N", 4]), vi("c", TensorProto.BOOL, [])],
    [vi("z", F, None)], [shape])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
feeds = [{"x": rng.standard_normal((n, 4)).astype(np.float32), "c": np.array(c)}
         for n, c in ((3, True), (5, False), (1, True), (2, False))]
kiln_tools.check(model, work, feeds, "dynamic_if")

# A branch whose output size depends on its data: refused, naming the node.
then = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"])], "then", [],
                         [vi("nz", TensorProto.INT64, None)])
els = helper.make_graph([helper.make_node("Shape", ["x"], ["s"]),
                         helper.make_node("Reshape", ["s", "as_2x1"], ["nz2"])], "else", [],
                        [vi("nz2", TensorProto.INT64, None)])
graph = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], name="data_dependent", then_branch=then,
                      else_branch=els)],
    "bad_if", [vi("x", F, ["N", 4]), vi("c", TensorProto.BOOL, [])],
    [vi("y", TensorProto.INT64, [2, None])],
    [numpy_helper.from_array(np.array([2, 1], np.int64), "as_2x1")])
bad = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
path = os.path.join(work, "bad_if.onnx")
with open(path, "wb") as f:
    f.write(bad.SerializeToString())
p = subprocess.run([kiln_tools.find_tool("kilnc"), path, "-o", os.path.join(work, "bad_if.so")],
                   capture_output=True, text=True)
needle = ("cannot compute the result sizes of scf.if of node 'data_dependent' for its buffer "
          "before the condition is known")
if p.returncode == 0 or needle not in p.stderr:
    sys.exit(f"FAIL data-dependent branch: exit {p.returncode}, expected '{needle}': {p.stderr}")
print("data-dependent branch: refused naming the node")
# torch's exports of x.squeeze(2) and of an LSTM's "is batched" test (as in
# silero-vad): If(Shape(x)[2] == 1) then Squeeze(x, [2]) else x, whose
# branches differ in rank, compiles as the squeezed branch (the traced size
# was 1) and checks the size at run time; If(Not(Size(Shape(s)) == 3)) then
# Unsqueeze(s, 0) else s is decided from shapes at compile time.
i64 = TensorProto.INT64
consts = [numpy_helper.from_array(np.array(v, np.int64), n)
          for n, v in (("k2", [2]), ("one", [1]), ("three", 3), ("zero", [0]))]
squeeze_then = helper.make_graph([helper.make_node("Squeeze", ["x", "k2"], ["sq"])], "then", [],
                                 [vi("sq", F, None)])
squeeze_else = helper.make_graph([helper.make_node("Identity", ["x"], ["id"])], "else", [],
                                 [vi("id", F, None)])
batch_then = helper.make_graph([helper.make_node("Unsqueeze", ["s", "zero"], ["un"])], "then", [],
                               [vi("un", F, None)])
batch_else = helper.make_graph([helper.make_node("Identity", ["s"], ["sid"])], "else", [],
                               [vi("sid", F, None)])
graph = helper.make_graph(
    [helper.make_node("Shape", ["x"], ["shape"]),
     helper.make_node("Gather", ["shape", "k2"], ["dim2"], axis=0),
     helper.make_node("Equal", ["dim2", "one"], ["is_one"]),
     helper.make_node("If", ["is_one"], ["s"], name="squeeze_if", then_branch=squeeze_then,
                      else_branch=squeeze_else),
     helper.make_node("Shape", ["s"], ["s_shape"]),
     helper.make_node("Size", ["s_shape"], ["s_rank"]),
     helper.make_node("Equal", ["s_rank", "three"], ["batched"]),
     helper.make_node("Not", ["batched"], ["unbatched"]),
     helper.make_node("If", ["unbatched"], ["b"], name="batch_if", then_branch=batch_then,
                      else_branch=batch_else),
     helper.make_node("Relu", ["b"], ["y"], name="relu")],
    "squeeze_export", [vi("x", F, ["N", 4, "T"])], [vi("y", F, None)], consts)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
feeds = [{"x": rng.standard_normal((n, 4, 1)).astype(np.float32)} for n in (1, 3, 6)]
kiln_tools.check(model, work, feeds, "squeeze_export")
bad = kiln_tools.write_inputs({"x": np.ones((2, 4, 3), np.float32)}, os.path.join(work, "t3"))
p = subprocess.run([kiln_tools.find_tool("kiln-run"), os.path.join(work, "squeeze_export.so"),
                    "--input", bad[0][1]], capture_output=True, text=True)
needles = ["node 'squeeze_if' (If, opset 17): dim 2 of the squeezed value is 3",
           "torch's squeeze export"]
if p.returncode != 1 or not all(n in p.stdout + p.stderr for n in needles):
    sys.exit(f"FAIL squeeze export with T=3: exit {p.returncode}, expected {needles}: "
             f"{p.stdout}{p.stderr}")
print("squeeze export with T=3: fails naming the node")
print("dynamic if: ok")
