# RUN: %python %s %t
"""Softmax of opset 11 (flatten-to-2-D semantics)
compiled by kilnc vs onnxruntime (LogSoftmax and Hardmax do not lower yet), at axes that are and are not the last."""
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(11)
nodes = [
    helper.make_node("Softmax", ["x"], ["sm_default"], name="sm_default"),
    helper.make_node("Softmax", ["x"], ["sm_axis0"], name="sm_axis0", axis=0),
    helper.make_node("Softmax", ["x"], ["sm_last"], name="sm_last", axis=-1),
    helper.make_node("Softmax", ["x"], ["sm_axis2"], name="sm_axis2", axis=2),
    helper.make_node("Softmax", ["x"], ["sm_neg"], name="sm_neg", axis=-2),
]
outs = ["sm_default", "sm_axis0", "sm_last", "sm_axis2", "sm_neg"]
graph = helper.make_graph(
    nodes, "softmax11",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
    [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 3, 4, 5]) for o in outs])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
feeds = [{"x": (rng.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)} for _ in range(2)]
kiln_tools.check(model, sys.argv[1], feeds, "softmax11")
