# RUN: %python %s %t
"""Long f32 sums stay accurate (found by the real-model corpus: PP-OCR's
18k-class Softmax and PP-OCRv6's ReduceMean over a dynamic 184 x 248 map were
off by 1.4e-4 and 6.7e-6 with a sequential f32 accumulator). Each is compared
with a float64 numpy reference; the bound is 2e-6 relative (onnxruntime's
own error on the same inputs is ~1e-6)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

F = TensorProto.FLOAT
work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)

graph = helper.make_graph(
    [helper.make_node("Softmax", ["x"], ["p"], name="softmax", axis=2),
     helper.make_node("ReduceMean", ["m", "axes"], ["mean"], name="mean", keepdims=1)],
    "long_sums",
    [helper.make_tensor_value_info("x", F, [1, 4, 18385]),
     helper.make_tensor_value_info("m", F, [1, 48, "h", "w"])],
    [helper.make_tensor_value_info("p", F, None), helper.make_tensor_value_info("mean", F, None)],
    [helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
path = os.path.join(work, "long_sums.onnx")
with open(path, "wb") as f:
    f.write(model.SerializeToString())
so = os.path.join(work, "long_sums.so")
kiln_tools.compile_model(path, so)

x = (3 * rng.standard_normal((1, 4, 18385))).astype(np.float32)
x[..., 5] += 12
for h, w in ((184, 248), (40, 60)):
    m = (2 * rng.standard_normal((1, 48, h, w)) + 0.5).astype(np.float32)
    d = os.path.join(work, f"set_{h}x{w}")
    files = kiln_tools.write_inputs({"x": x, "m": m}, d)
    (_, p), (_, mean) = kiln_tools.run_model(so, [f for _, f in files], os.path.join(d, "out"))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=2, keepdims=True))
    p_ref = e / e.sum(axis=2, keepdims=True)
    mean_ref = m.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    for name, got, ref in (("softmax", p, p_ref), ("mean", mean, mean_ref)):
        rel = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        print(f"{name} {h}x{w}: max rel err {rel:.2e}")
        if got.shape != ref.shape or not rel <= 2e-6:
            sys.exit(f"FAIL {name} {h}x{w}: {got.shape} vs {ref.shape}, error {rel:.2e}")
print("long sums: ok")
