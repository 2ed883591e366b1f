"""Writes the model of tf32.test into the folder argv[1]: mlp.onnx, a MatMul
with a bias and a ReLU (a [K, N] weight: N-major) and a Gemm with transB
(a [N, K] weight: K-major), float32, with a Softmax between them that no
precision mode may change."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
f32 = TensorProto.FLOAT
rng = np.random.default_rng(0)


def init(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
    helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
    helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
    helper.make_node("Softmax", ["r"], ["s"], axis=-1, name="softmax"),
    helper.make_node("Gemm", ["s", "w2", "b2"], ["y"], transB=1, name="gemm2"),
]
graph = helper.make_graph(
    nodes, "mlp", [helper.make_tensor_value_info("x", f32, [512, 256])],
    [helper.make_tensor_value_info("y", f32, [512, 256])],
    [init("w1", (256, 256)), init("b1", (256,)), init("w2", (256, 256)),
     init("b2", (256,))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(out, "mlp.onnx"))
