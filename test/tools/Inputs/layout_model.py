"""Writes layout.test's model (argv[1]) and its seeded input (argv[2]):
Conv 3x3 -> Relu -> Conv 1x1 -> residual Add -> per-channel Mul -> MaxPool."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, sys.argv[3])
import kiln_tools  # noqa: E402

rng = np.random.default_rng(0)
inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
         for n, s in [("w1", (16, 8, 3, 3)), ("w2", (16, 16, 1, 1)), ("s", (16, 1, 1))]]
nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1] * 4),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 1]),
         helper.make_node("Add", ["c2", "r1"], ["a"]),
         helper.make_node("Mul", ["a", "s"], ["m"]),
         helper.make_node("MaxPool", ["m"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
graph = helper.make_graph(
    nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 6, 6])], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
kiln_tools.write_pb(sys.argv[2], rng.standard_normal((1, 8, 12, 12)).astype(np.float32))
