# RUN: %python %s %t
"""Pooling over symbolic spatial dims (the dynamic-shapes issue): MaxPool
(floor and ceil_mode, pads, dilations, auto_pad SAME_UPPER), AveragePool (with
and without count_include_pad, ceil_mode, auto_pad SAME_LOWER), LpPool and a
Conv with auto_pad SAME_UPPER on an input [N, 3, H, W], compiled
once without --dim and run at three sizes against onnxruntime; a window
larger than the padded input fails the run naming a node."""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(3)
F = TensorProto.FLOAT
pools = [
    ("max_floor", "MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("max_ceil", "MaxPool", dict(kernel_shape=[3, 2], strides=[2, 3], ceil_mode=1)),
    ("max_dilated", "MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 1], pads=[0, 1, 1, 0])),
    ("avg_pads", "AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("avg_count_pad", "AveragePool",
     dict(kernel_shape=[3, 3], strides=[2, 1], pads=[1, 2, 1, 2], count_include_pad=1)),
    ("avg_ceil", "AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)),
    ("lp2", "LpPool", dict(kernel_shape=[2, 2], strides=[2, 2], p=2)),
    ("max_same_upper", "MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ("avg_same_lower", "AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
]
nodes = [helper.make_node(op, ["x"], [name], name=name, **attrs) for name, op, attrs in pools]
# A convolution with auto_pad SAME_UPPER over the same dynamic H and W.
nodes.append(helper.make_node("Conv", ["x", "w"], ["conv_same"], name="conv_same",
                              kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"))
w = numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "w")
outputs = [name for name, _, _ in pools] + ["conv_same"]
graph = helper.make_graph(nodes, "pools", [helper.make_tensor_value_info("x", F, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info(name, F, None) for name in outputs], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)

feeds = [{"x": rng.standard_normal(shape).astype(np.float32)}
         for shape in ((1, 3, 17, 23), (2, 3, 32, 32), (1, 3, 5, 9))]
work = sys.argv[1]
kiln_tools.check(model, work, feeds, "pools")

# 1x2 input under a 3x3 window without pads: the run fails, naming the node.
bad = kiln_tools.write_inputs({"x": np.ones((1, 3, 1, 2), np.float32)}, os.path.join(work, "bad"))
p = subprocess.run([kiln_tools.find_tool("kiln-run"), os.path.join(work, "pools.so"),
                    "--input", bad[0][1]], capture_output=True, text=True)
message = p.stdout + p.stderr
if p.returncode != 1 or not any(f"node '{name}' ({op}, opset 19)" in message for name, op, _ in pools) \
        or "of the padded input has" not in message or "fewer than the window's" not in message:
    sys.exit(f"FAIL window larger than the input: exit {p.returncode}: {message}")
print("dynamic pooling: ok")
