# RUN: %python %s %t
"""kilnc --max-memory with batch chunking (docs/remat.md): a small residual
CNN at batch 4 whose peak is one convolution's input and output, which no
recomputation lowers. At 0.6x kiln-remat splits a run of its launches into 2
batch chunks (the report lists them with their ONNX nodes and chunks), the
arena fits the budget, and the outputs are bit-identical to the unconstrained
build's (each chunk kernel computes its batch rows with the same loops). The
smallest arena (4 chunks of one row, from the unreachable error's hint) fits
and is bit-identical too. In a model whose Reshape folds the batch into the
channels, the run stops before the kernel that reads the folded tensor."""
import json
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln_tools import run_tool as run

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

rng = np.random.default_rng(0)
f32 = lambda a: a.astype(np.float32)
B, S = 4, 32


def w(name, *shape):
    return numpy_helper.from_array(f32(rng.standard_normal(shape) * 0.2), name)


def save(path, nodes, inits, out):
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, 3, S, S])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


node = helper.make_node
# conv1 (+Relu), conv2 + residual (+Relu): the peak is conv2's input and
# output; then pooled, a narrower conv3, a global pool and a classifier
# behind a Reshape that keeps the batch.
save("cnn.onnx", [
    node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    node("Relu", ["c1"], ["a"], name="relu1"),
    node("Conv", ["a", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    node("Add", ["a", "c2"], ["s"], name="residual"),
    node("Relu", ["s"], ["r"], name="relu2"),
    node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    node("Conv", ["p", "w3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
    node("GlobalAveragePool", ["c3"], ["g"], name="gap"),
    node("Reshape", ["g", "shape"], ["f"], name="flatten"),
    node("Gemm", ["f", "fc", "fcb"], ["y"], name="classifier", transB=1),
], [w("w1", 16, 3, 3, 3), w("w2", 16, 16, 3, 3), w("w3", 32, 16, 3, 3),
    w("fc", 10, 32), w("fcb", 10),
    numpy_helper.from_array(np.array([B, 32], np.int64), "shape")], [B, 10])
# A Reshape whose constant folds the batch into the channels (4 x 16 -> 64)
# before conv4: conv4's kernel sees every batch row at once, so a run must
# stop before it and conv2's output b stays whole.
save("fold.onnx", [
    node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    node("Relu", ["c1"], ["a"], name="relu1"),
    node("Conv", ["a", "w2"], ["b"], name="conv2", pads=[1, 1, 1, 1]),
    node("Reshape", ["b", "shape"], ["f"], name="fold"),
    node("Conv", ["f", "w4"], ["y"], name="conv4", pads=[1, 1, 1, 1]),
], [w("w1", 16, 3, 3, 3), w("w2", 16, 16, 3, 3), w("w4", 8, B * 16, 3, 3),
    numpy_helper.from_array(np.array([1, B * 16, S, S], np.int64), "shape")],
    [1, 8, S, S])


x = f32(rng.standard_normal((B, 3, S, S)))
with open("x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())


def identical(so, ref):
    check = run(["kiln-run", so, "--input", "x.pb", "--expect", ref,
                 "--rtol", "0", "--atol", "0"]).stdout
    assert "max_abs_err=0" in check, check


run(["kilnc", "cnn.onnx", "-o", "full.so", "--report=full.json"])
os.makedirs("ref", exist_ok=True)
run(["kiln-run", "full.so", "--input", "x.pb", "--output-dir", "ref"])
full = json.load(open("full.json"))
natural = full["peak_live_bytes"]

out = run(["kilnc", "cnn.onnx", "-o", "small.so", "--max-memory=0.6x",
           "--report=small.json"]).stdout
small = json.load(open("small.json"))
remat = small["remat"]
print(f"natural peak {natural}, budget {remat['budget_bytes']}, peak "
      f"{remat['peak_before']} -> {remat['peak_after']}, arena {small['arena_bytes']}")
assert remat["peak_before"] == natural, remat
assert small["arena_bytes"] <= remat["budget_bytes"] == int(0.6 * natural), remat
assert remat["recomputed"] == [] and remat["extra_flops"] == 0, remat
chunked = remat["chunked"]
assert chunked and all(c["chunks"] == 2 for c in chunked), chunked
nodes = [n for c in chunked for n in c["onnx_nodes"]]
assert "conv2" in nodes, nodes  # the peak's kernel
for c in chunked:
    assert c["chunk_kernel"] == c["kernel"] + "_b2", c
    assert f"chunked {c['kernel']} (2 x {c['kernel']}_b2): " in out, out
# Each chunked launch is in the report twice (chunks 0 and 1), the others once.
chunks = [k["chunk"] for k in small["kernels"] if "chunk" in k]
assert sorted(chunks) == sorted([[0, 2], [1, 2]] * len(chunked)), chunks
assert len(small["kernels"]) == len(full["kernels"]) + len(chunked)
assert small["total_flops"] == full["total_flops"], "chunking adds no FLOPs"
identical("small.so", "ref/output_0.pb")
print(f"0.6x: {len(chunked)} launches in 2 chunks ({', '.join(nodes)}), bit-identical")

# The smallest arena: one row per chunk. The error's hint is a budget that
# fits; its build is bit-identical too.
p = run(["kilnc", "cnn.onnx", "-o", "tight.so", "--max-memory=0.01x"], check=False)
assert p.returncode == 1 and "into batch chunks" in p.stderr, p.stderr
hint = re.search(r"\(--max-memory=(\d+) or ([0-9.]+x) fits\)", p.stderr)
assert hint, p.stderr
run(["kilnc", "cnn.onnx", "-o", "min.so", f"--max-memory={hint.group(1)}",
     "--report=min.json"])
least = json.load(open("min.json"))
assert least["arena_bytes"] <= int(hint.group(1)), least["remat"]
assert {c["chunks"] for c in least["remat"]["chunked"]} == {4}, least["remat"]["chunked"]
identical("min.so", "ref/output_0.pb")
print(f"min: arena {least['arena_bytes']} ({least['arena_bytes'] / natural:.2f}x), "
      "4 chunks, bit-identical")

# A Reshape that folds the batch: conv4 is not batch-parallel, so the run
# stops before it and its input b (64 KiB a row) stays whole: 0.6x cannot be
# met, the smallest arena keeps b; still bit-identical.
run(["kilnc", "fold.onnx", "-o", "fold_full.so", "--report=fold_full.json"])
os.makedirs("fold_ref", exist_ok=True)
run(["kiln-run", "fold_full.so", "--input", "x.pb", "--output-dir", "fold_ref"])
p = run(["kilnc", "fold.onnx", "-o", "fold_small.so", "--max-memory=0.6x"], check=False)
assert p.returncode == 1 and "into batch chunks" in p.stderr, p.stderr
hint = re.search(r"\(--max-memory=(\d+) or ([0-9.]+x) fits\)", p.stderr)
run(["kilnc", "fold.onnx", "-o", "fold_small.so", f"--max-memory={hint.group(1)}",
     "--report=fold.json"])
fold = json.load(open("fold.json"))
fold_nodes = [n for c in fold["remat"]["chunked"] for n in c["onnx_nodes"]]
b_bytes = B * 16 * S * S * 4
assert "conv2" in fold_nodes and "conv4" not in fold_nodes, fold_nodes
assert b_bytes < fold["peak_live_bytes"] < json.load(open("fold_full.json"))["peak_live_bytes"]
identical("fold_small.so", "fold_ref/output_0.pb")
print(f"batch folded by a Reshape: {len(fold['remat']['chunked'])} launches chunked "
      f"({', '.join(fold_nodes)}), not conv4; peak {fold['peak_live_bytes']} with b "
      f"({b_bytes}) whole; bit-identical")
