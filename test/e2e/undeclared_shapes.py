# RUN: %python %s %t
"""Models whose outputs declare no shape (the dynamic-shapes issue's
inference gaps): Einsum (explicit, implicit and ellipsis equations, a
symbolic batch) and GlobalMaxPool on a rank-3 input, compiled once and run
at two sizes against onnxruntime."""
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
