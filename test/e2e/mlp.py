# RUN: %python %s %t
"""MLP (MatMul, Gemm, Add, activations) compiled by kilnc vs onnxruntime."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(0)


def w(shape):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / shape[0])).astype(np.float32)


inits = [
    numpy_helper.from_array(w((64, 128)), "w1"),
    numpy_helper.from_array((rng.standard_normal(128) * 0.1).astype(np.float32), "b1"),
    numpy_helper.from_array(w((128, 64)), "w2"),
    numpy_helper.from_array((rng.standard_normal(64) * 0.1).astype(np.float32), "b2"),
    numpy_helper.from_array(w((64, 10)), "w3"),
    numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "b3"),
]
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
    helper.make_node("Add", ["h1", "b1"], ["h1b"], name="fc1_bias"),
    helper.make_node("Relu", ["h1b"], ["a1"], name="relu1"),
    helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2", alpha=0.5, beta=2.0),
    helper.make_node("LeakyRelu", ["h2"], ["a2"], name="lrelu", alpha=0.1),
    helper.make_node("Tanh", ["a2"], ["t2"], name="tanh"),
    helper.make_node("Sigmoid", ["h2"], ["s2"], name="sigmoid"),
    helper.make_node("Mul", ["t2", "s2"], ["m2"], name="gate"),
    helper.make_node("Gemm", ["m2", "w3", "b3"], ["logits"], name="fc3"),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 10]),
     helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 10])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
feeds = [{"x": rng.standard_normal((4, 64)).astype(np.float32)} for _ in range(2)]
kiln_tools.check(model, sys.argv[1], feeds, "mlp")
