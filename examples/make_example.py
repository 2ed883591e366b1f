#!/usr/bin/env python3
"""Builds the bundled example: a small MLP classifier (seeded weights) and
one seeded input, written next to this script as mlp.onnx and input_0.pb."""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(42)
w1 = (rng.standard_normal((16, 32)) * 0.35).astype(np.float32)
b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
w2 = (rng.standard_normal((32, 4)) * 0.25).astype(np.float32)
b2 = (rng.standard_normal(4) * 0.1).astype(np.float32)
nodes = [
    helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
    helper.make_node("Relu", ["h"], ["a"], name="relu"),
    helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2"),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
]
graph = helper.make_graph(
    nodes, "example_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4])],
    [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
     os.path.join(here, "mlp.onnx"))
x = rng.standard_normal((2, 16)).astype(np.float32)
with open(os.path.join(here, "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
