# RUN: %python %s %t
"""Models whose outputs declare no shape (the dynamic-shapes issue's
inference gaps): Einsum (explicit, implicit and ellipsis equations, a
symbolic batch) and GlobalMaxPool on a rank-3 input, compiled once and run
at two sizes against onnxruntime. Then TopK whose K and QuantizeLinear whose
scale have a symbolic length (1 at run time): kilnc once aborted on them."""
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(11)
F = TensorProto.FLOAT
nodes = [
    helper.make_node("Einsum", ["a", "b"], ["abe"], equation="abcd,cde->abe", name="e_explicit"),
    helper.make_node("Einsum", ["c", "d"], ["ik"], equation="ij,jk", name="e_implicit"),
    helper.make_node("Einsum", ["e", "f"], ["bik"], equation="...ij,...jk->...ik", name="e_ellipsis"),
    helper.make_node("GlobalMaxPool", ["g"], ["gmp"], name="gmp"),
]
inputs = [("a", ["N", 3, 4, 5]), ("b", [4, 5, 6]), ("c", ["M", 3]), ("d", [3, 7]),
          ("e", ["N", 4, 5]), ("f", ["N", 5, 6]), ("g", ["N", 5, "T"])]
graph = helper.make_graph(nodes, "undeclared", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(o, F, None) for o in ("abe", "ik", "bik", "gmp")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(n, m, t):
    dims = {"N": n, "M": m, "T": t}
    return {name: rng.standard_normal([dims.get(d, d) for d in shape]).astype(np.float32)
            for name, shape in inputs}


kiln_tools.check(model, sys.argv[1], [feeds(2, 5, 7), feeds(3, 1, 16)], "undeclared")

# K of shape [k] and a per-tensor scale of shape [s], both 1 when run.
I64, U8 = TensorProto.INT64, TensorProto.UINT8
graph = helper.make_graph(
    [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1, name="topk"),
     helper.make_node("QuantizeLinear", ["x", "scale"], ["q"], name="quant")],
    "symbolic_params",
    [helper.make_tensor_value_info("x", F, ["N", 6]), helper.make_tensor_value_info("k", I64, ["k"]),
     helper.make_tensor_value_info("scale", F, ["s"])],
    [helper.make_tensor_value_info("values", F, None), helper.make_tensor_value_info("indices", I64, None),
     helper.make_tensor_value_info("q", U8, None)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
kiln_tools.check(model, sys.argv[1], [
    {"x": rng.standard_normal((n, 6)).astype(np.float32), "k": np.array([kk], np.int64),
     "scale": np.array([0.05], np.float32)} for n, kk in ((2, 3), (4, 6))], "symbolic_params")

# A Reshape whose input and result share a dynamic type ([?x?x?]) is still a
# reshape: it once passed its input through unchanged.
graph = helper.make_graph(
    [helper.make_node("Reshape", ["data", "shape"], ["reshaped"], name="reshape")], "same_rank_reshape",
    [helper.make_tensor_value_info("data", F, ["A", "B", "C"]),
     helper.make_tensor_value_info("shape", I64, ["R"])],
    [helper.make_tensor_value_info("reshaped", F, [None, None, None])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
kiln_tools.check(model, sys.argv[1], [
    {"data": rng.standard_normal((2, 3, 4)).astype(np.float32), "shape": np.array(s, np.int64)}
    for s in ([2, -1, 2], [4, 3, 2])], "same_rank_reshape")
