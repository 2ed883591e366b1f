# RUN: %python %s %t
"""Operands whose length is only known at run time (the dynamic-shapes
issue's all-symbolic rerun): each model is compiled once with every input dim
symbolic and run at three sizes.

- Attention on 4-D Q/K/V with symbolic head counts (grouped-query: the group
  Hq / Hkv is found at run time) and the default scale 1/sqrt(head size) of a
  symbolic head size; checked against numpy (onnxruntime 1.22 has no
  Attention-23 kernel).
- Resize with scales / sizes, Split with split, Pad with pads and a [1]-shaped
  constant_value, Expand with a shape of unknown length, ReduceSum with axes of
  unknown length and keepdims=0, GridSample with a symbolic grid: against
  onnxruntime.
- Conv and ConvTranspose with symbolic input channels: the weights fix them.
- GatherND / ScatterND with an index depth only the run knows (the result's
  or the updates' rank fixes it), Col2Im with image_shape / block_shape of
  run-time length.
- Wrong lengths fail the run naming the node and the operand: scales with 3
  entries for a rank-4 input, 3 query heads against 2 key/value heads, axes
  that keep fewer dims than the result's rank.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(11)
F, I64 = TensorProto.FLOAT, TensorProto.INT64
work = sys.argv[1]


def model_of(nodes, inputs, outputs, opset=19):
    graph = helper.make_graph(nodes, "m", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def sym(name, rank):
    return [f"{name}_d{i}" for i in range(rank)]


def run_fails(so, feeds, name, needles):
    files = kiln_tools.write_inputs(feeds, os.path.join(work, name))
    cmd = [kiln_tools.find_tool("kiln-run"), so]
    for _, path in files:
        cmd += ["--input", path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    message = p.stdout + p.stderr
    if p.returncode != 1 or not all(n in message for n in needles):
        sys.exit(f"FAIL {name}: exit {p.returncode}, expected {needles}: {message}")
    print(f"{name}: fails as expected")


# Resize: scales of unknown length (one per axis at run time); sizes likewise.
resize_scales = model_of(
    [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize_scales", mode="linear")],
    [vi("x", F, sym("x", 4)), vi("scales", F, ["s"])], [vi("y", F, None)])
feeds = [{"x": rng.standard_normal(s).astype(np.float32), "scales": np.array(sc, np.float32)}
         for s, sc in (((1, 2, 5, 7), (1, 1, 2, 1.5)), ((2, 3, 8, 8), (1, 1, 0.5, 0.75)),
                       ((1, 1, 3, 4), (1, 1, 3, 2)))]
kiln_tools.check(resize_scales, work, feeds, "resize_scales")
run_fails(os.path.join(work, "resize_scales.so"),
          {"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.ones(3, np.float32)},
          "resize_scales_short", ["node 'resize_scales' (Resize, opset 19)",
                                  "scales has 3 entries, expected 4"])

# sizes = Shape(x) * factors, factors of unknown length (onnxruntime refuses
# a sizes input of symbolic length itself).
resize_sizes = model_of(
    [helper.make_node("Shape", ["x"], ["shape"]),
     helper.make_node("Mul", ["shape", "factors"], ["sizes"]),
     helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize_sizes", mode="nearest")],
    [vi("x", F, sym("x", 3)), vi("factors", I64, ["s"])], [vi("y", F, None)])
feeds = [{"x": rng.standard_normal(s).astype(np.float32), "factors": np.array(f, np.int64)}
         for s, f in (((1, 4, 6), (1, 2, 1)), ((2, 3, 5), (1, 1, 2)), ((1, 2, 2), (3, 2, 2)))]
kiln_tools.check(resize_sizes, work, feeds, "resize_sizes")

# Split with a split operand, Pad with pads and a [1] constant value, Expand
# with a shape shorter than the output's rank at run time.
misc = model_of(
    [helper.make_node("Split", ["x", "split"], ["s0", "s1"], name="split", axis=1),
     helper.make_node("Pad", ["x", "pads", "cv"], ["padded"], name="pad", mode="constant"),
     helper.make_node("Expand", ["v", "shape"], ["expanded"], name="expand")],
    [vi("x", F, sym("x", 2)), vi("split", I64, ["n"]), vi("pads", I64, ["p"]),
     vi("cv", F, ["c"]), vi("v", F, sym("v", 2)), vi("shape", I64, ["e"])],
    [vi("s0", F, None), vi("s1", F, None), vi("padded", F, None), vi("expanded", F, None)])
feeds = []
for (r, c), split, pads, vshape, shape in (
        ((2, 5), (2, 3), (0, 1, 2, 0), (3, 1), (3, 4)),
        ((3, 8), (7, 1), (1, 0, 0, 2), (1, 4), (2, 1, 4)),
        ((1, 3), (0, 3), (2, 2, 1, 1), (2, 1), (2, 2, 5))):
    feeds.append({"x": rng.standard_normal((r, c)).astype(np.float32),
                  "split": np.array(split, np.int64), "pads": np.array(pads, np.int64),
                  "cv": np.array([2.5], np.float32),
                  "v": rng.standard_normal(vshape).astype(np.float32),
                  "shape": np.array(shape, np.int64)})
# The output rank of Expand is declared (3): a 2-entry shape at run time is
# aligned to the right.
misc.graph.output[3].CopyFrom(vi("expanded", F, [None, None, None]))
feeds[0]["shape"] = np.array((1, 3, 4), np.int64)
kiln_tools.check(misc, work, feeds, "misc_params")

# ReduceSum over axes of unknown length without keepdims (result rank 1).
reduce = model_of(
    [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="reduce", keepdims=0)],
    [vi("x", F, sym("x", 3)), vi("axes", I64, ["k"])], [vi("y", F, [None])], opset=18)
feeds = [{"x": rng.standard_normal(s).astype(np.float32), "axes": np.array(a, np.int64)}
         for s, a in (((2, 3, 4), (0, 2)), ((5, 1, 3), (-1, 1)), ((2, 2, 2), (1, 0)))]
kiln_tools.check(reduce, work, feeds, "reduce_axes")
run_fails(os.path.join(work, "reduce_axes.so"),
          {"x": np.ones((2, 3, 4), np.float32), "axes": np.array([1], np.int64)},
          "reduce_axes_rank", ["node 'reduce' (ReduceSum, opset 18)",
                               "the axes keep 2 dims; the result has rank 1"])

# GridSample with a symbolic grid.
grid = model_of(
    [helper.make_node("GridSample", ["x", "g"], ["y"], name="grid", mode="linear")],
    [vi("x", F, sym("x", 4)), vi("g", F, sym("g", 4))], [vi("y", F, None)], opset=20)
feeds = [{"x": rng.standard_normal((n, 2, h, w)).astype(np.float32),
          "g": rng.uniform(-1.1, 1.1, (n, gh, gw, 2)).astype(np.float32)}
         for n, h, w, gh, gw in ((1, 4, 5, 3, 3), (2, 6, 6, 4, 2), (1, 3, 8, 5, 7))]
kiln_tools.check(grid, work, feeds, "grid_sample")

# Conv and ConvTranspose whose input channels are symbolic (lost through
# shape arithmetic, or declared so): the weights fix them, the run checks.
w = helper.make_tensor("w", F, [8, 3, 3, 3], rng.standard_normal(216).astype(np.float32) * 0.3)
wt = helper.make_tensor("wt", F, [3, 2, 2, 2], rng.standard_normal(24).astype(np.float32) * 0.3)
conv = helper.make_model(helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]),
     helper.make_node("ConvTranspose", ["x", "wt"], ["z"], name="deconv", strides=[2, 2])],
    "m", [vi("x", F, ["N", "C", "H", "W"])], [vi("y", F, None), vi("z", F, None)], [w, wt]),
    opset_imports=[helper.make_opsetid("", 19)], ir_version=10)
feeds = [{"x": rng.standard_normal((n, 3, h, wd)).astype(np.float32)}
         for n, h, wd in ((1, 5, 7), (2, 8, 8), (1, 3, 11))]
kiln_tools.check(conv, work, feeds, "conv_channels")
run_fails(os.path.join(work, "conv_channels.so"), {"x": np.ones((1, 4, 5, 5), np.float32)},
          "conv_channels_wrong", ["(Conv, opset 19)", "the input's channel count is 4, expected 3"])

# GatherND / ScatterND whose index depth (indices' last dim) only the run
# knows: the result's / the updates' rank fixes it (checked).
nd = helper.make_model(helper.make_graph(
    [helper.make_node("GatherND", ["data", "idx"], ["g"], name="gather_nd"),
     helper.make_node("ScatterND", ["data", "idx", "upd"], ["s"], name="scatter_nd")],
    "m", [vi("data", F, sym("data", 3)), vi("idx", I64, sym("idx", 2)),
          vi("upd", F, sym("upd", 2))],
    [vi("g", F, [None, None]), vi("s", F, None)]),
    opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
feeds = []
for d0, d1, d2, n in ((2, 3, 4, 2), (3, 2, 5, 3), (4, 4, 2, 1)):
    idx = np.stack([rng.permutation(d0)[:n], rng.integers(0, d1, n)], axis=1).astype(np.int64)
    feeds.append({"data": rng.standard_normal((d0, d1, d2)).astype(np.float32), "idx": idx,
                  "upd": rng.standard_normal((n, d2)).astype(np.float32)})
kiln_tools.check(nd, work, feeds, "index_depth")

# Col2Im with image_shape and block_shape of run-time length.
col = helper.make_model(helper.make_graph(
    [helper.make_node("Col2Im", ["cols", "image", "block"], ["im"], name="col2im")],
    "m", [vi("cols", F, sym("cols", 3)), vi("image", I64, ["s"]), vi("block", I64, ["t"])],
    [vi("im", F, [None, None, None, None])]),
    opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
feeds = []
for (h, w), (kh, kw) in (((4, 5), (2, 2)), ((3, 3), (1, 2)), ((5, 4), (3, 1))):
    blocks = (h - kh + 1) * (w - kw + 1)
    feeds.append({"cols": rng.standard_normal((1, 2 * kh * kw, blocks)).astype(np.float32),
                  "image": np.array([h, w], np.int64), "block": np.array([kh, kw], np.int64)})
kiln_tools.check(col, work, feeds, "col2im_lengths")

# Attention with symbolic heads and head size.
att = model_of(
    [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attention")],
    [vi("q", F, sym("q", 4)), vi("k", F, sym("k", 4)), vi("v", F, sym("v", 4))],
    [vi("y", F, None)], opset=23)
att_path = os.path.join(work, "attention.onnx")
os.makedirs(work, exist_ok=True)
with open(att_path, "wb") as f:
    f.write(att.SerializeToString())
att_so = os.path.join(work, "attention.so")
kiln_tools.compile_model(att_path, att_so)


def attention_ref(q, k, v):
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[3])
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


for n, (b, hq, hkv, sq, skv, d) in enumerate(((1, 4, 2, 5, 7, 8), (2, 2, 2, 3, 3, 4),
                                               (1, 6, 1, 9, 4, 16))):
    feeds = {"q": rng.standard_normal((b, hq, sq, d)).astype(np.float32),
             "k": rng.standard_normal((b, hkv, skv, d)).astype(np.float32),
             "v": rng.standard_normal((b, hkv, skv, d)).astype(np.float32)}
    d_ = os.path.join(work, f"attention_set{n}")
    files = kiln_tools.write_inputs(feeds, d_)
    (_, got), = kiln_tools.run_model(att_so, [p for _, p in files], os.path.join(d_, "out"))
    ref = attention_ref(feeds["q"], feeds["k"], feeds["v"]).astype(np.float32)
    rel = kiln_tools.max_rel_error(got, ref)
    print(f"attention set {n} shape {got.shape}: max_rel_err={rel:.3e}")
    if got.shape != ref.shape or rel > 1e-5:
        sys.exit(f"FAIL attention set {n}: shape {got.shape} vs {ref.shape}, error {rel:.3e}")
run_fails(att_so, {"q": np.ones((1, 3, 2, 4), np.float32), "k": np.ones((1, 2, 2, 4), np.float32),
                   "v": np.ones((1, 2, 2, 4), np.float32)},
          "attention_heads", ["node 'attention' (Attention, opset 23)",
                              "the number of query heads (3) must be a multiple of the number "
                              "of key/value heads (2, 2)"])
print("symbolic params: ok")
