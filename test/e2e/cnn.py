# RUN: %python %s %t
"""Small CNN with a symbolic batch dimension (Conv with pads, strides,
dilations and groups, BatchNormalization with statistics taken from data,
Relu, MaxPool, AveragePool, GlobalAveragePool, Flatten, Gemm, Softmax),
compiled once and run at batch sizes 1 and 3, compared with onnxruntime."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(1)


def conv_w(f, c, k):
    return (rng.standard_normal((f, c, k, k)) * np.sqrt(2.0 / (c * k * k))).astype(np.float32)


def build(bn_stats):
    inits = [
        numpy_helper.from_array(conv_w(8, 3, 3), "c1_w"),
        numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "c1_b"),
        numpy_helper.from_array(conv_w(16, 4, 3), "c2_w"),  # groups=2
        numpy_helper.from_array(conv_w(16, 16, 1), "c3_w"),
        numpy_helper.from_array((rng.standard_normal((16, 10)) * 0.25).astype(np.float32), "fc_w"),
        numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "fc_b"),
    ]
    for name, (mean, var, c) in bn_stats.items():
        inits += [
            numpy_helper.from_array((1.0 + 0.1 * rng.standard_normal(c)).astype(np.float32), name + "_scale"),
            numpy_helper.from_array((0.1 * rng.standard_normal(c)).astype(np.float32), name + "_bias"),
            numpy_helper.from_array(mean.astype(np.float32), name + "_mean"),
            numpy_helper.from_array(var.astype(np.float32), name + "_var"),
        ]
    bn = lambda n, x, y: helper.make_node(
        "BatchNormalization", [x, n + "_scale", n + "_bias", n + "_mean", n + "_var"], [y],
        name=n, epsilon=1e-5)
    nodes = [
        helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        bn("bn1", "c1", "b1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2_w"], ["c2"], name="conv2", group=2,
                         pads=[2, 2, 2, 2], dilations=[2, 2], strides=[2, 2]),
        bn("bn2", "c2", "b2"),
        helper.make_node("Relu", ["b2"], ["r2"], name="relu2"),
        helper.make_node("AveragePool", ["r2"], ["p2"], name="pool2", kernel_shape=[3, 3],
                         strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0),
        helper.make_node("Conv", ["p2", "c3_w"], ["c3"], name="conv3", auto_pad="SAME_UPPER"),
        helper.make_node("Clip", ["c3", "", "six"], ["r3"], name="relu6"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "six"))
    outputs = [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])]
    for extra in ("c1", "c2"):  # exposed for measuring batch-norm statistics
        if extra not in bn_stats and extra.replace("c", "bn") not in bn_stats:
            pass
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def measure(model, tensor, x):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.output.append(helper.make_tensor_value_info(tensor, TensorProto.FLOAT, None))
    out = kiln_tools.ort_run(m, {"x": x})[-1]
    return out.mean(axis=(0, 2, 3)), out.var(axis=(0, 2, 3))


# Batch-norm statistics from data: start from identity statistics, measure the
# conv outputs on a calibration batch, then rebuild with those statistics.
calib = rng.standard_normal((8, 3, 16, 16)).astype(np.float32)
state = rng.bit_generator.state
stats = {"bn1": (np.zeros(8), np.ones(8), 8), "bn2": (np.zeros(16), np.ones(16), 16)}
model = build(stats)
m1, v1 = measure(model, "c1", calib)
stats["bn1"] = (m1, v1, 8)
rng.bit_generator.state = state
model = build(stats)
m2, v2 = measure(model, "c2", calib)
stats["bn2"] = (m2, v2, 16)
rng.bit_generator.state = state
model = build(stats)

feeds = [{"x": rng.standard_normal((b, 3, 16, 16)).astype(np.float32)} for b in (1, 3)]
kiln_tools.check(model, sys.argv[1], feeds, "cnn")
