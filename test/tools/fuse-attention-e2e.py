# RUN: %python %s %t
"""kilnc --fuse-attention on the CPU: attention written the way exporters
write it (heads split by Reshape and Transpose, Kᵀ from a head-splitting
Transpose, the scale as Div after the product or folded into Q as a Mul,
an additive mask, the output's heads merged back by Transpose and Reshape)
becomes one onnx.Attention per chain (the graph dump has no Softmax left;
the merged chain's is the 3-D form, q_num_heads 4), and the fused build computes what the unfused build and
onnxruntime compute (max relative error at most 1e-5; the scale 1/sqrt(48)
is not a power of two, so the two builds round differently)."""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from kiln_tools import run_tool as run

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

B, S, H, D = 2, 12, 4, 48
rng = np.random.default_rng(7)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def heads(x, name, perm):
    """[B, S, H*D] -> Reshape [B, S, H, D] -> Transpose(perm)."""
    return [helper.make_node("Reshape", [x, "hshape"], [name + "_r"], name=name + "_reshape"),
            helper.make_node("Transpose", [name + "_r"], [name], perm=perm,
                             name=name + "_transpose")]


nodes = []
nodes += heads("q_in", "q", [0, 2, 1, 3])
nodes += heads("k_in", "kt", [0, 2, 3, 1])
nodes += heads("v_in", "v", [0, 2, 1, 3])
# Chain 1 (torch.onnx): MatMul, Div by sqrt(D), Add mask, Softmax, MatMul.
nodes += [helper.make_node("MatMul", ["q", "kt"], ["s1"], name="qk1"),
          helper.make_node("Div", ["s1", "sqrt_d"], ["d1"], name="scale1"),
          helper.make_node("Add", ["d1", "mask"], ["a1"], name="mask1"),
          helper.make_node("Softmax", ["a1"], ["p1"], axis=-1, name="softmax1"),
          helper.make_node("MatMul", ["p1", "v"], ["y1"], name="pv1")]
# Chain 2: Q scaled before the product, no mask.
nodes += [helper.make_node("Mul", ["q", "inv_sqrt_d"], ["qs"], name="scale2"),
          helper.make_node("MatMul", ["qs", "kt"], ["s2"], name="qk2"),
          helper.make_node("Softmax", ["s2"], ["p2"], axis=3, name="softmax2"),
          helper.make_node("MatMul", ["p2", "v"], ["y2"], name="pv2"),
          helper.make_node("Add", ["y1", "y2"], ["y"], name="sum")]
# Chain 3 (BERT's export): the output's heads merged back to [B, S, H*D];
# the inputs in other roles (k_in as the queries, v_in as the keys, q_in as
# the values), so that the graph's CSE keeps it a chain of its own: the
# 3-D Attention on them as they are.
nodes += heads("k_in", "q3", [0, 2, 1, 3])
nodes += heads("v_in", "kt3", [0, 2, 3, 1])
nodes += heads("q_in", "v3", [0, 2, 1, 3])
nodes += [helper.make_node("MatMul", ["q3", "kt3"], ["s3"], name="qk3"),
          helper.make_node("Div", ["s3", "sqrt_d"], ["d3"], name="scale3"),
          helper.make_node("Add", ["d3", "mask"], ["a3"], name="mask3"),
          helper.make_node("Softmax", ["a3"], ["p3"], axis=-1, name="softmax3"),
          helper.make_node("MatMul", ["p3", "v3"], ["y3h"], name="pv3"),
          helper.make_node("Transpose", ["y3h"], ["y3t"], perm=[0, 2, 1, 3], name="merge3_t"),
          helper.make_node("Reshape", ["y3t", "mshape"], ["y3"], name="merge3")]
inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [B, S, H * D])
          for n in ("q_in", "k_in", "v_in")]
inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [B, 1, 1, S]))
graph = helper.make_graph(
    nodes, "attention", inputs,
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, H, S, D]),
     helper.make_tensor_value_info("y3", TensorProto.FLOAT, [B, S, H * D])],
    [numpy_helper.from_array(np.array([B, S, H, D], np.int64), "hshape"),
     numpy_helper.from_array(np.array([B, S, H * D], np.int64), "mshape"),
     const("sqrt_d", np.sqrt(D)), const("inv_sqrt_d", 1 / np.sqrt(D))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
onnx.save(model, "attention.onnx")

feeds = {n: rng.standard_normal((B, S, H * D)).astype(np.float32) for n in ("q_in", "k_in", "v_in")}
mask = np.zeros((B, 1, 1, S), np.float32)
mask[1, :, :, S - 3:] = -10000.0  # padding keys of the second sequence
feeds["mask"] = mask
files = []
for name, value in feeds.items():
    path = name + ".pb"
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())
    files += ["--input", path]
refs = ort.InferenceSession("attention.onnx", providers=["CPUExecutionProvider"]).run(
    None, feeds)

graph_ir = run(["kilnc", "attention.onnx", "-o", "fused.so", "--fuse-attention",
                "--dump-after=graph"]).stdout
assert graph_ir.count('"onnx.Attention"') == 3, graph_ir
assert graph_ir.count("q_num_heads = 4") == 1, graph_ir
assert "onnx.Softmax" not in graph_ir, graph_ir
print("fused: 3 onnx.Attention (one 3-D), no Softmax")
run(["kilnc", "attention.onnx", "-o", "plain.so"])
for name in ("plain", "fused"):
    os.makedirs(name)
    run(["kiln-run", name + ".so", *files, "--output-dir", name])
    for i, ref in enumerate(refs):
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(name, f"output_{i}.pb")))
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        print(f"{name}: output {i} max rel err vs onnxruntime {err:.1e}")
        assert err <= 1e-5, (name, i, err)
