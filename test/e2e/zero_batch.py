# RUN: %python %s %t
"""A batch of zero images: a small CNN (Conv with padding, BatchNormalization,
Relu, MaxPool, a strided Conv, GlobalAveragePool, Flatten, Gemm, Softmax)
whose batch is symbolic, compiled twice: once with `--dim batch=0` (every
kernel's tensors have no elements; bufferizing the Conv's zero padding of an
empty batch used to fail with MLIR's "offset 0 is out-of-bounds: 0 >= 0"),
and once with the batch left symbolic, run at 0, 1 and 3. Every run must
give onnxruntime's shapes ([0, 10] for the empty batch) and values (max
relative error 1e-5)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(3)


def w(*shape):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32))


def named(t, name):
    t.name = name
    return t


inits = [named(w(8, 3, 3, 3), "c1"), named(w(8), "c1b"),
         numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "g"),
         numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b"),
         numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "m"),
         numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "v"),
         named(w(16, 8, 3, 3), "c2"), named(w(10, 16), "fc"), named(w(10), "fcb")]
nodes = [
    helper.make_node("Conv", ["x", "c1", "c1b"], ["a1"], pads=[1, 1, 1, 1], name="conv1"),
    helper.make_node("BatchNormalization", ["a1", "g", "b", "m", "v"], ["n1"], name="bn1"),
    helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                     name="pool1"),
    helper.make_node("Conv", ["p1", "c2"], ["a2"], pads=[1, 1, 1, 1], strides=[2, 2],
                     name="conv2"),
    helper.make_node("GlobalAveragePool", ["a2"], ["gp"], name="gap"),
    helper.make_node("Flatten", ["gp"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fc", "fcb"], ["l"], transB=1, name="fc"),
    helper.make_node("Softmax", ["l"], ["y"], axis=1, name="softmax"),
]
graph = helper.make_graph(
    nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
path = os.path.join(work, "cnn.onnx")
with open(path, "wb") as f:
    f.write(model.SerializeToString())

failures = []


def check(so, batch, label):
    x = rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)
    files = kiln_tools.write_inputs({"x": x}, os.path.join(work, f"{label}_in{batch}"))
    (_, got), = kiln_tools.run_model(so, [p for _, p in files],
                                     os.path.join(work, f"{label}_out{batch}"))
    ref = kiln_tools.ort_run(path, {"x": x})[0]
    if got.shape != ref.shape:
        failures.append(f"{label} batch {batch}: shape {got.shape}, onnxruntime {ref.shape}")
        return
    err = float(np.abs(got - ref).max() / np.abs(ref).max()) if ref.size else 0.0
    print(f"{label} batch {batch}: shape {list(got.shape)}, max relative error {err:.2e}")
    if not err <= 1e-5:
        failures.append(f"{label} batch {batch}: max relative error {err:.3g}")


fixed = os.path.join(work, "cnn_b0.so")
kiln_tools.compile_model(path, fixed, flags=["--dim=batch=0"])
check(fixed, 0, "fixed")
symbolic = os.path.join(work, "cnn.so")
kiln_tools.compile_model(path, symbolic)
for batch in (0, 1, 3):
    check(symbolic, batch, "symbolic")

if failures:
    print("FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS zero_batch")
