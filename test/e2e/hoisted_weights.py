# RUN: %python %s %t
"""Kernels that depend only on weights run once per instance (kiln_model_init,
kiln-hoist-weight-kernels): a two-layer MLP whose weights are external and
which runs in fp16, so converting the weights to half is such a kernel. The
hoisted kernels are in kiln_model_init, not kiln_model_main; the output
matches onnxruntime (fp32) to fp16 accuracy, stays the same over repeated
runs of one instance, and follows new weights swapped in without
recompiling (the load-time step reads the weights file, it is not folded
into the .so). -O0 (no hoisting) gives the same result."""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

from kiln_tools import run_tool as run

HERE = os.path.dirname(os.path.abspath(__file__))
FILL = os.path.join(HERE, "..", "..", "utils", "models", "fill_weights.py")
work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
rng = np.random.default_rng(5)


f32 = lambda a: a.astype(np.float32)
w1 = numpy_helper.from_array(f32(rng.standard_normal((64, 64)) / 8), "w1")
w2 = numpy_helper.from_array(f32(rng.standard_normal((64, 32)) / 8), "w2")
g = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
     helper.make_node("Relu", ["h"], ["r"], name="relu"),
     helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")],
    "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 32])], [w1, w2])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, "mlp.onnx")
x = f32(rng.standard_normal((8, 64)))
with open("x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())

flags = ["--external-weights", "--external-weights-min-bytes=64", "--precision=fp16"]
host = run(["kilnc", "mlp.onnx", "--dump-after=host", *flags]).stdout
init = host[host.index("func.func @kiln_model_init"):host.index("func.func @kiln_model_main")]
main = host[host.index("func.func @kiln_model_main"):]
if init.count("kiln.launch") < 1 or "kiln.persistent" not in main:
    sys.exit("FAIL: no kernel was hoisted into kiln_model_init:\n" + host)
print(f"hoisted: {init.count('kiln.launch')} launches in kiln_model_init, "
      f"{main.count('kiln.launch')} left in kiln_model_main")
run(["kilnc", "mlp.onnx", "-o", "mlp.so", *flags])
run(["kilnc", "mlp.onnx", "-o", "mlp_O0.so", "-O0", *flags])


os.makedirs("out", exist_ok=True)


def kiln(so, weights=None, extra=()):
    cmd = ["kiln-run", so, "--input", "x.pb", "--output-dir", "out", *extra]
    if weights:
        cmd += ["--weights", weights]
    run(cmd)
    t = onnx.TensorProto()
    with open(os.path.join("out", "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


ref = ort.InferenceSession("mlp.onnx", providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
y = kiln("mlp.so")
err = rel_l2(y, ref)
print(f"original weights: rel L2 vs onnxruntime {err:.2e}")
assert err < 5e-3, err
# Repeated runs of one instance (the init step runs once): the same output.
y3 = kiln("mlp.so", extra=["--benchmark", "3"])
assert np.array_equal(y, y3), "repeated runs differ"
y0 = kiln("mlp_O0.so")
assert np.array_equal(y, y0), f"-O0 differs: {np.abs(y - y0).max()}"

# New weights without recompiling.
run([sys.executable, FILL, "mlp.onnx", "--seed", "11", "--out-model", "new.onnx",
     "--weights", "new.weights", "--manifest", "mlp.weights.json"])
ref2 = ort.InferenceSession("new.onnx", providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
y2 = kiln("mlp.so", "new.weights")
err2 = rel_l2(y2, ref2)
print(f"swapped weights: rel L2 vs onnxruntime {err2:.2e}")
assert err2 < 5e-3, err2
assert rel_l2(y2, ref) > 0.1, "the swapped weights were not used"
print("ok")
