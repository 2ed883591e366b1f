"""Writes cpu-int8.test's model: a float MLP (argv[1]/mlp.onnx: MatMul
64 -> 256 with a bias and Relu, MatMul 256 -> 128) quantized by
onnxruntime's quantize_static in QDQ form (per-channel int8 weights, uint8
activations, argv[1]/mlp_qdq.onnx), and an input (argv[1]/x.pb)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, sys.argv[2])
import kiln_tools  # noqa: E402
from kiln_tools.quantize import quantize_qdq  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(0)
inits = [
    numpy_helper.from_array((rng.standard_normal((64, 256)) / 8).astype(np.float32), "w1"),
    numpy_helper.from_array((rng.standard_normal(256) / 10).astype(np.float32), "b1"),
    numpy_helper.from_array((rng.standard_normal((256, 128)) / 16).astype(np.float32), "w2"),
]
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
     helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
     helper.make_node("Relu", ["hb"], ["a"], name="relu1"),
     helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")], "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 128])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
quantize_qdq(model, os.path.join(out, "mlp_qdq.onnx"), calibration=8, seed=1)
kiln_tools.write_pb(os.path.join(out, "x.pb"), rng.standard_normal((32, 64)).astype(np.float32))
