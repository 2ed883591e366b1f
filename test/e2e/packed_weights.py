# RUN: %python %s %t
"""Constant matmul weights packed in panels at compile time (kiln-cpu-codegen,
Packing.cpp): results equal onnxruntime's whether the panels divide n (the
split into tasks may then cut along n, a panel range per task) or not (the
last panel zero-padded, the split along m), with the bias/activation
epilogue in the tiles, for several launches of one deduplicated kernel
(two identical layers, different weights), and in the dump: the kernels
read `memref<panels x k x 32>` globals and the unpacked weights are gone."""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(0)
work = sys.argv[1]
os.makedirs(work, exist_ok=True)


def w(shape):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / shape[0])).astype(np.float32)


def model(n, layers):
    inits, nodes, x = [], [], "x"
    for i in range(layers):
        inits += [numpy_helper.from_array(w((256, n)), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32),
                                          f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"fc{i}"),
                  helper.make_node("Add", [f"h{i}", f"b{i}"], [f"s{i}"], name=f"bias{i}"),
                  helper.make_node("Relu", [f"s{i}"], [f"y{i}"], name=f"relu{i}")]
        if n != 256:
            break
        x = f"y{i}"
    graph = helper.make_graph(
        nodes, "packed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [64, n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


feeds = [{"x": rng.standard_normal((64, 256)).astype(np.float32)}]
# 256 = 8 panels (two identical layers, one kernel); 200 = 6 panels and 8
# columns of a zero-padded seventh.
kiln_tools.check(model(256, 2), work, feeds, "packed_divides")
kiln_tools.check(model(200, 1), work, feeds, "packed_padded")

path = os.path.join(work, "packed_padded.onnx")
# AVX-512: two vectors of 16 lanes, panels of 32.
ir = subprocess.run([kiln_tools.find_tool("kilnc"), path, "--target=cpu:x86-64-v4",
                     "--dump-after=codegen"],
                    check=True, capture_output=True, text=True).stdout
assert "memref.global \"private\" constant @" in ir
assert "memref<7x256x32xf32>" in ir, "the weights are not packed in 7 panels of 32"
assert "memref<256x200xf32>" not in ir, "the unpacked weights are still there"
print("PASS packed layout")

# --external-weights: the weights come from the file at load, so they are
# packed there (a pack kernel at the end of kiln_model_init into a persistent
# buffer of its own): the same results, and the kernels read the panels.
kiln_tools.check(model(256, 2), work, feeds, "packed_at_load", flags=["--external-weights"])
path = os.path.join(work, "packed_at_load.onnx")
ir = subprocess.run([kiln_tools.find_tool("kilnc"), path, "--target=cpu:x86-64-v4",
                     "--external-weights", "-o", os.path.join(work, "dump.so"),
                     "--dump-after=codegen"],
                    check=True, capture_output=True, text=True).stdout
assert "@kiln_pack_panels_0" in ir and "@kiln_pack_panels_1" in ir, \
    "no pack kernels for the two external weights"
assert "memref<8x256x32xf32>" in ir, "the external weights are not read as 8 panels of 32"
print("PASS packed at load")
