# RUN: %python %s %t
"""Window functions, Col2Im, MaxUnpool, GlobalMaxPool, Shrink, unsigned
arithmetic and integer Pow, compiled by kilnc and compared with onnxruntime."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(97)
F32, I64, I32, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8


def model(name, nodes, inputs, outputs, opset=18):
    return kiln_tools.make_model(name, nodes, inputs, outputs, opset=opset)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


os.makedirs(sys.argv[1], exist_ok=True)

# Windows: the size is an input read at run time.
for op in ["HannWindow", "HammingWindow", "BlackmanWindow"]:
    for periodic in [0, 1]:
        m = model(f"{op}_{periodic}", [helper.make_node(op, ["n"], ["y"], periodic=periodic)],
                  [("n", I64, [])], [("y", F32, [12])])
        check(f"{op.lower()}_{periodic}", m, [{"n": np.array(12, np.int64)}])

# Col2Im with strides, dilations and pads.
m = model("col2im", [helper.make_node("Col2Im", ["x", "i", "b"], ["y"], strides=[2, 1],
                                       dilations=[1, 2], pads=[1, 0, 1, 1])],
          [("x", F32, [2, 12, None]), ("i", I64, [2]), ("b", I64, [2])],
          [("y", F32, [2, 2, 6, 7])])
# L = ((6+2-3)//2+1) * ((7+1-3)//1+1) = 3 * 6
check("col2im", m, [{"x": rng.standard_normal((2, 12, 18)).astype(np.float32),
                     "i": np.array([6, 7], np.int64), "b": np.array([3, 2], np.int64)}])

# MaxUnpool with MaxPool-style indices (one per 2x2 window). (With an
# output_shape, onnxruntime indexes the output shape while ONNX's reference and
# backend tests index the inferred shape, as Kiln does: compared there.)
unpool = helper.make_node("MaxUnpool", ["p", "ix"], ["y"], kernel_shape=[2, 2],
                          strides=[2, 2])
m = model("maxunpool", [unpool], [("p", F32, [2, 3, 2, 3]), ("ix", I64, [2, 3, 2, 3])],
          [("y", F32, [2, 3, 4, 6])])
n_, c_, h_, w_ = np.meshgrid(np.arange(2), np.arange(3), np.arange(2), np.arange(3),
                             indexing="ij")
dy, dx = rng.integers(0, 2, (2, 3, 2, 3)), rng.integers(0, 2, (2, 3, 2, 3))
ix = ((n_ * 3 + c_) * 4 + 2 * h_ + dy) * 6 + 2 * w_ + dx
check("maxunpool", m, [{"p": rng.standard_normal((2, 3, 2, 3)).astype(np.float32),
                        "ix": ix.astype(np.int64)}])

m = model("gmp", [helper.make_node("GlobalMaxPool", ["x"], ["y"])],
          [("x", F32, [2, 3, 5, 4])], [("y", F32, [2, 3, 1, 1])])
check("globalmaxpool", m, [{"x": rng.standard_normal((2, 3, 5, 4)).astype(np.float32)}])

m = model("shrink", [helper.make_node("Shrink", ["x"], ["y"], lambd=0.7, bias=0.2)],
          [("x", F32, [4, 5])], [("y", F32, [4, 5])])
check("shrink", m, [{"x": rng.standard_normal((4, 5)).astype(np.float32)}])

m = model("uint_arith", [helper.make_node(op, ["a", "b"], [op.lower()])
                         for op in ["Add", "Sub", "Mul", "Div"]],
          [("a", U8, [6]), ("b", U8, [6])], [(o, U8, [6]) for o in ["add", "sub", "mul", "div"]])
check("uint_arith", m, [{"a": rng.integers(0, 256, 6).astype(np.uint8),
                         "b": rng.integers(1, 256, 6).astype(np.uint8)}])

m = model("pow_int", [helper.make_node("Pow", ["a", "b"], ["y"])],
          [("a", I32, [6]), ("b", I32, [6])], [("y", I32, [6])])
check("pow_int", m, [{"a": rng.integers(-5, 6, 6).astype(np.int32),
                      "b": rng.integers(0, 5, 6).astype(np.int32)}])

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all ok")
