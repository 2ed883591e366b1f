# RUN: %python %s %t
"""Data movement, resampling, ConvTranspose and quantization ops compiled by
kilnc and compared with onnxruntime on seeded random inputs, plus a
segmentation-style block (Conv -> ConvTranspose -> Resize -> Concat).

Intermediate types come from ONNX shape inference (these ops take Kiln's
result types from the graph's value_info)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(4321)
F32, I64, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(name, nodes, inputs, outputs, inits=(), opset=19):
    vi_in = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    vi_out = [helper.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None)
              for o in outputs]
    g = helper.make_graph(nodes, name, vi_in, vi_out, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          ir_version=9)
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


# Split / Pad / Tile / DepthToSpace / SpaceToDepth / GatherElements /
# ScatterElements / GatherND / ScatterND in one graph.
x = ("x", F32, [2, 8, 4, 6])
nodes = [
    node("Split", ["x", "split"], ["s0", "s1"], axis=1),
    node("Pad", ["s0", "pads"], ["p_const"], mode="constant"),
    node("Pad", ["s1", "pads"], ["p_reflect"], mode="reflect"),
    node("Pad", ["s1", "pads"], ["p_edge"], mode="edge"),
    node("Pad", ["s1", "pads"], ["p_wrap"], mode="wrap"),
    node("Tile", ["s0", "reps"], ["tiled"]),
    node("DepthToSpace", ["x"], ["d2s_dcr"], blocksize=2, mode="DCR"),
    node("DepthToSpace", ["x"], ["d2s_crd"], blocksize=2, mode="CRD"),
    node("SpaceToDepth", ["x"], ["s2d"], blocksize=2),
    node("GatherElements", ["x", "gidx"], ["gel"], axis=2),
    node("ScatterElements", ["x", "gidx", "upd"], ["sel_add"], axis=2, reduction="add"),
    node("GatherND", ["x", "ndidx"], ["gnd"], batch_dims=1),
    node("ScatterND", ["x", "sndidx", "sndupd"], ["snd"]),
]
inits = [
    init("split", np.array([3, 5], np.int64)),
    init("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)),
    init("reps", np.array([1, 2, 1, 2], np.int64)),
    init("gidx", rng.integers(-4, 4, (2, 8, 3, 6)).astype(np.int64)),
    init("ndidx", rng.integers(0, 4, (2, 5, 2)).astype(np.int64)),
    init("sndidx", np.array([[1, 3], [0, 0], [1, 7]], np.int64)),
]
outs = ["p_const", "p_reflect", "p_edge", "p_wrap", "tiled", "d2s_dcr", "d2s_crd",
        "s2d", "gel", "sel_add", "gnd", "snd"]
m = model("movement", nodes, [x, ("upd", F32, [2, 8, 3, 6]), ("sndupd", F32, [3, 4, 6])],
          [(o, F32) for o in outs], inits)
check("movement", m, [{"x": randn(2, 8, 4, 6), "upd": randn(2, 8, 3, 6),
                       "sndupd": randn(3, 4, 6)}])

# Slice / Unsqueeze with starts, ends, axes, steps as graph inputs.
m = model("slice_rt", [
    node("Slice", ["x", "st", "en", "ax", "sp"], ["sl"]),
    node("Unsqueeze", ["sl", "uax"], ["us"]),
], [("x", F32, [5, 7]), ("st", I64, [2]), ("en", I64, [2]), ("ax", I64, [2]),
    ("sp", I64, [2]), ("uax", I64, [1])], [("us", F32, [1, 2, 3])])
check("slice_rt", m, [{"x": randn(5, 7), "st": np.array([1, -1], np.int64),
                       "en": np.array([5, 0], np.int64), "ax": np.array([0, 1], np.int64),
                       "sp": np.array([2, -2], np.int64), "uax": np.array([0], np.int64)}])

# Squeeze / Unsqueeze with run-time axes and no declared output shape: the
# result dims are computed from the axes when the model runs.
m = model("squeeze_rt", [
    node("Squeeze", ["x", "sax"], ["sq"]),
    node("Unsqueeze", ["sq", "uax"], ["us"]),
], [("x", F32, [1, 4, 1, 3]), ("sax", I64, [2]), ("uax", I64, [3])],
    [("sq", F32), ("us", F32)])
check("squeeze_rt", m, [{"x": randn(1, 4, 1, 3), "sax": np.array([-2, 0], np.int64),
                         "uax": np.array([4, 0, -3], np.int64)}])

# Resize: nearest / linear / cubic with several coordinate transformations.
resize_nodes, resize_outs = [], []
for i, (mode, ctm, extra) in enumerate([
        ("nearest", "asymmetric", {"nearest_mode": "floor"}),
        ("nearest", "half_pixel", {"nearest_mode": "round_prefer_ceil"}),
        ("linear", "half_pixel", {}),
        ("linear", "align_corners", {}),
        ("linear", "pytorch_half_pixel", {}),
        ("cubic", "half_pixel", {}),
        ("cubic", "asymmetric", {"cubic_coeff_a": -0.5, "exclude_outside": 1})]):
    resize_nodes.append(node("Resize", ["x", "", "scales"], [f"r{i}"], mode=mode,
                             coordinate_transformation_mode=ctm, **extra))
    resize_outs.append((f"r{i}", F32))
resize_nodes.append(node("Resize", ["x", "", "", "sizes"], ["rdown"], mode="linear",
                         antialias=1))
resize_outs.append(("rdown", F32))
m = model("resize", resize_nodes, [("x", F32, [1, 2, 5, 7])], resize_outs,
          [init("scales", np.array([1, 1, 1.6, 2.0], np.float32)),
           init("sizes", np.array([1, 2, 3, 4], np.int64))])
check("resize", m, [{"x": randn(1, 2, 5, 7)}])

# ConvTranspose: strides, pads, output_padding, dilations, groups.
m = model("convtranspose", [
    node("ConvTranspose", ["x", "w", "b"], ["y0"], strides=[2, 2], pads=[1, 0, 0, 1],
         output_padding=[1, 0]),
    node("ConvTranspose", ["x", "wg"], ["y1"], group=2, dilations=[2, 1]),
], [("x", F32, [2, 4, 5, 6])], [("y0", F32), ("y1", F32)],
    [init("w", randn(4, 3, 3, 3)), init("b", randn(3)), init("wg", randn(4, 2, 2, 3))])
check("convtranspose", m, [{"x": randn(2, 4, 5, 6)}])

# GridSample / AffineGrid.
m = model("gridsample", [
    node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0),
    node("GridSample", ["x", "grid"], ["g_lin"], mode="linear"),
    node("GridSample", ["x", "grid"], ["g_cub"], mode="cubic"),
    node("GridSample", ["x", "grid"], ["g_bord"], mode="linear", padding_mode="border"),
    node("GridSample", ["x", "grid"], ["g_near"], mode="nearest",
         padding_mode="reflection", align_corners=1),
], [("x", F32, [2, 3, 6, 5]), ("theta", F32, [2, 2, 3])],
    [("g_lin", F32), ("g_cub", F32), ("g_bord", F32), ("g_near", F32)],
    [init("size", np.array([2, 3, 4, 7], np.int64))], opset=20)
theta = np.tile(np.array([[[0.9, 0.2, 0.1], [-0.15, 1.1, -0.05]]], np.float32), (2, 1, 1))
check("gridsample", m, [{"x": randn(2, 3, 6, 5), "theta": theta + 0.05 * randn(2, 2, 3)}])

# Quantization: QuantizeLinear -> DequantizeLinear (per axis, uint8) and
# DynamicQuantizeLinear + MatMulInteger.
m = model("quant", [
    node("QuantizeLinear", ["x", "qs", "qz"], ["q"], axis=1),
    node("DequantizeLinear", ["q", "qs", "qz"], ["dq"], axis=1),
    node("DynamicQuantizeLinear", ["x2"], ["dq_y", "dq_s", "dq_z"]),
    node("MatMulInteger", ["dq_y", "wq", "dq_z", "wz"], ["mmi"]),
], [("x", F32, [2, 3, 4]), ("x2", F32, [3, 5])], [("dq", F32), ("mmi", TensorProto.INT32)],
    [init("qs", np.array([0.02, 0.05, 0.1], np.float32)),
     init("qz", np.array([128, 100, 3], np.uint8)),
     init("wq", rng.integers(0, 255, (5, 4)).astype(np.uint8)),
     init("wz", np.array(120, np.uint8))])
check("quant", m, [{"x": randn(2, 3, 4), "x2": randn(3, 5)}])

# Segmentation-style block: encoder Conv (stride 2), decoder ConvTranspose
# (stride 2), bilinear Resize back to the input size, Concat with the input.
m = model("segblock", [
    node("Conv", ["x", "w1", "b1"], ["enc"], strides=[2, 2], pads=[1, 1, 1, 1]),
    node("Relu", ["enc"], ["enc_r"]),
    node("ConvTranspose", ["enc_r", "w2", "b2"], ["dec"], strides=[2, 2], pads=[1, 1, 1, 1],
         output_padding=[1, 1]),
    node("Resize", ["dec", "", "", "sizes"], ["up"], mode="linear",
         coordinate_transformation_mode="half_pixel"),
    node("Concat", ["x", "up"], ["y"], axis=1),
], [("x", F32, [1, 3, 17, 23])], [("y", F32)],
    [init("w1", 0.3 * randn(8, 3, 3, 3)), init("b1", randn(8)),
     init("w2", 0.3 * randn(8, 4, 3, 3)), init("b2", randn(4)),
     init("sizes", np.array([1, 4, 17, 23], np.int64))])
check("segblock", m, [{"x": randn(1, 3, 17, 23)}])

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all passed")
