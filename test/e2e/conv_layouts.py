# RUN: %python %s %t
"""Convolutions in both layouts (docs/layout.md) against onnxruntime: the CPU's
channels-last default and --layout=nchw, on the cases whose index arithmetic
differs most: a depthwise convolution with a channel multiplier (group = C,
2 filters per channel), a grouped strided one, a 5x5 stride-2 depthwise
one, a 7x7 stride-2 convolution of 3 input channels; odd spatial sizes,
batch 2, each followed by a ceil-mode MaxPool (channels-last too), and the
same with --external-weights (weights permuted and packed at load)."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(0)
work = sys.argv[1]


def model(c, f, group, k, stride, size, pad):
    w = (rng.standard_normal((f, c // group, k, k)) * np.sqrt(2.0 / (c // group * k * k)))
    b = rng.standard_normal((f,)) * 0.1
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, kernel_shape=[k, k],
                          strides=[stride, stride], pads=[pad] * 4, name="conv"),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                          ceil_mode=1, name="pool")],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w.astype(np.float32), "w"),
         numpy_helper.from_array(b.astype(np.float32), "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


cases = {"depthwise_multiplier": (8, 16, 8, 3, 1, 11, 1), "grouped": (8, 12, 4, 3, 2, 13, 1),
         "depthwise_5x5_s2": (16, 16, 16, 5, 2, 17, 2), "rgb_7x7_s2": (3, 24, 1, 7, 2, 20, 3),
         "wide": (64, 128, 1, 3, 1, 9, 1)}
for name, args in cases.items():
    m = model(*args)
    feeds = [{"x": rng.standard_normal((2, args[0], args[5], args[5])).astype(np.float32)}]
    kiln_tools.check(m, work, feeds, name + "_nhwc")
    kiln_tools.check(m, work, feeds, name + "_nchw", flags=["--layout=nchw"])
    kiln_tools.check(m, work, feeds, name + "_external", flags=["--external-weights"])
