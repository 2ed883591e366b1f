"""Writes cpu-bf16.test's model (argv[1]: y = x . W, W 256 x 256 f32, seeded,
scaled like a trained layer) and its input x (argv[2], 64 x 256)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, sys.argv[3])
import kiln_tools  # noqa: E402

rng = np.random.default_rng(0)
w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "net",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
    [numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
kiln_tools.write_pb(sys.argv[2], rng.standard_normal((64, 256)).astype(np.float32))
