"""Writes the models of gpu-flags.test into the folder argv[1]: a matmul with
a long K and one 64x64 tile (split K while the tiles do not fill the GPU), a
column sum (one thread per output; unrolled when min-threads allows) and an
elementwise add (one thread per element, blocks of block-size)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


f32 = TensorProto.FLOAT
rng = np.random.default_rng(0)
w = numpy_helper.from_array(rng.standard_normal((4096, 64)).astype(np.float32), "w")
save("matmul", [helper.make_node("MatMul", ["x", "w"], ["y"])],
     [helper.make_tensor_value_info("x", f32, [64, 4096])],
     [helper.make_tensor_value_info("y", f32, [64, 64])], [w])
axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
save("colsum", [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
     [helper.make_tensor_value_info("x", f32, [256, 4096])],
     [helper.make_tensor_value_info("y", f32, [4096])], [axes])
save("add", [helper.make_node("Add", ["x", "x"], ["y"])],
     [helper.make_tensor_value_info("x", f32, [4096])],
     [helper.make_tensor_value_info("y", f32, [4096])])
