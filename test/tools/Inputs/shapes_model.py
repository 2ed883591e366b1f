"""A model whose inputs mix named, unnamed and static dims, for shapes.test:
y = x + b (x: [N, ?, 4], b: [?, 4] broadcast), z = relu(m) (m: [?]).

    shapes_model.py OUT.onnx DIR    (writes DIR/x.pb, DIR/b.pb, DIR/m.pb of
                                     x [2, 3, 4], b [3, 4], m [5])
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, folder = sys.argv[1], sys.argv[2]
F = TensorProto.FLOAT


def info(name, dims):
    t = helper.make_tensor_value_info(name, F, None)
    shape = t.type.tensor_type.shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif d:
            dim.dim_param = d
        # None: neither a value nor a name
    return t


graph = helper.make_graph(
    [helper.make_node("Add", ["x", "b"], ["y"], name="add"),
     helper.make_node("Relu", ["m"], ["z"], name="relu")],
    "shapes", [info("x", ["N", None, 4]), info("b", [None, 4]), info("m", [None])],
    [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("z", F, None)])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), out)
rng = np.random.default_rng(0)
os.makedirs(folder, exist_ok=True)
for name, shape in (("x", (2, 3, 4)), ("b", (3, 4)), ("m", (5,))):
    with open(os.path.join(folder, name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name).SerializeToString())
