# RUN: %python %s %t
"""utils/models/fill_weights.py on residual networks: the last layer of every
residual branch (the deeper operand of an Add of two computed tensors) is
calibrated to 1/sqrt(number of branches) times the usual standard deviation
(a folded Conv through the statistics from data, an unfolded
BatchNormalization through its scale), every other layer to about 1; the
projection shortcut is not a branch; --residual-scale sets the factor
(1: the earlier fill); the fill stays deterministic and --save-stats /
--load-stats give the same bits. And why: on a deep residual chain the
default makes a random input perturbation grow far less than unit-std
branches do (the noise gain that made fp16 builds of the filled ResNet-50
and MobileNetV2 miss the accuracy bar, docs/benchmarks.md)."""
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

import kiln_tools

fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
FILL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "utils", "models",
                    "fill_weights.py")
work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
C, HW = 16, 8


def build(path, blocks, batch_norm=False):
    """A stem conv, `blocks` blocks relu(x + conv(relu(conv(x)))) of which the
    first has a 1x1 projection shortcut, global pooling, a Gemm. Weights are
    placeholders (fill_weights replaces them)."""
    inits, nodes = [], []

    def conv(x, name, cin, k):
        inits.append(numpy_helper.from_array(np.zeros((C, cin, k, k), np.float32), name + ".w"))
        inits.append(numpy_helper.from_array(np.zeros(C, np.float32), name + ".b"))
        nodes.append(helper.make_node("Conv", [x, name + ".w", name + ".b"], [name],
                                      pads=[k // 2] * 4, name=name))
        if not batch_norm:
            return name
        for p, v in (("scale", 1), ("bias", 0), ("mean", 0), ("var", 1)):
            inits.append(numpy_helper.from_array(np.full(C, v, np.float32), f"{name}.bn.{p}"))
        nodes.append(helper.make_node("BatchNormalization", [name] + [
            f"{name}.bn.{p}" for p in ("scale", "bias", "mean", "var")], [name + ".bn"]))
        return name + ".bn"

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + ".relu"]))
        return x + ".relu"

    x = relu(conv("input", "stem", 3, 3))
    for i in range(blocks):
        y = conv(relu(conv(x, f"b{i}.c1", C, 3)), f"b{i}.c2", C, 3)
        skip = conv(x, f"b{i}.proj", C, 1) if i == 0 else x
        nodes.append(helper.make_node("Add", [y, skip], [f"b{i}.sum"]))
        x = relu(f"b{i}.sum")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"]))
    inits.append(numpy_helper.from_array(np.zeros((10, C), np.float32), "fc.w"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc.b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1))
    g = helper.make_graph(nodes, "res", [helper.make_tensor_value_info(
        "input", TensorProto.FLOAT, ["batch", 3, HW, HW])], [helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return m


def fill(src, out, *extra):
    kiln_tools.run_tool([sys.executable, FILL, src, "--seed", "3", "--out-model", out,
                         "--min-bytes", "0", "--quiet", *extra])
    return out


def channel_std(path, names, batch=16):
    """Per-channel standard deviation of `names` on fresh seeded inputs."""
    m = onnx.load(path)
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = fill_weights.make_inputs(m, 7, batch, {}, {}, ":test")
    outs = sess.run(names, feeds)
    return {n: o.transpose(1, 0, 2, 3).reshape(C, -1).std(axis=1) for n, o in zip(names, outs)}


def check(cond, msg):
    if not cond:
        sys.exit("FAIL: " + msg)
    print("ok:", msg)


# Which layers end a branch.
m = build("res.onnx", 4)
branches = fill_weights.residual_branches(m.graph)
check(sorted(branches) == [f"b{i}.c2" for i in range(4)] and
      all(v == 0.5 for v in branches.values()),
      f"4 branches at 1/sqrt(4), the projection shortcut not one: {branches}")

# Folded convs: the branches' standard deviation is 0.5, the others about 1.
fill("res.onnx", "a.onnx", "--save-stats", "stats.json")
probe = ["b0.c2", "b2.c2", "b0.proj", "b1.c1", "stem"]
std = channel_std("a.onnx", probe)
for n in probe:
    want = 0.5 if n.endswith("c2") else 1.0
    got = float(np.median(std[n]))
    check(0.8 * want < got < 1.25 * want, f"{n}: median channel std {got:.3f}, about {want}")
fill("res.onnx", "unit.onnx", "--residual-scale", "1")
got = float(np.median(channel_std("unit.onnx", ["b2.c2"])["b2.c2"]))
check(0.8 < got < 1.25, f"--residual-scale 1: b2.c2 median channel std {got:.3f}, about 1")

# Determinism and the statistics file.
fill("res.onnx", "b.onnx")
fill("res.onnx", "c.onnx", "--load-stats", "stats.json")
same = open("a.onnx", "rb").read() == open("b.onnx", "rb").read() == open("c.onnx", "rb").read()
check(same, "the same seed, and --load-stats, give the same bits")
p = kiln_tools.run_tool([sys.executable, FILL, "res.onnx", "--seed", "3", "--out-model",
                         "x.onnx", "--residual-scale", "0"], check=False)
check(p.returncode == 1 and "--residual-scale must be positive" in p.stderr,
      "--residual-scale 0 is an error")

# Unfolded batch norms: the branch's batch norm scale is about 0.5, the others about 1.
mb = build("bn.onnx", 4, batch_norm=True)
fill("bn.onnx", "bn.filled.onnx")
vals = {t.name: numpy_helper.to_array(t) for t in onnx.load("bn.filled.onnx").graph.initializer}
for n, want in (("b1.c2.bn.scale", 0.5), ("b1.c1.bn.scale", 1.0)):
    got = float(vals[n].mean())
    check(abs(got - want) < 0.05 * want, f"{n}: mean {got:.3f}, about {want}")

# The conditioning: on 16 blocks a 1e-3 relative input perturbation grows
# much less with the default than with unit-std branches.
build("deep.onnx", 16)


def gain(path):
    m = onnx.load(path)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = fill_weights.make_inputs(m, 7, 4, {}, {}, ":gain")["input"]
    d = fill_weights.normal(7, "perturbation", x.size).reshape(x.shape).astype(np.float32)
    d *= 1e-3 * np.linalg.norm(x) / np.linalg.norm(d)
    ref = sess.run(None, {"input": x})[0]
    out = sess.run(None, {"input": x + d})[0]
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref)) / 1e-3


g_default = gain(fill("deep.onnx", "deep.default.onnx"))
g_unit = gain(fill("deep.onnx", "deep.unit.onnx", "--residual-scale", "1"))
print(f"noise gain: default {g_default:.2f}, --residual-scale 1 {g_unit:.2f}")
check(g_default < 0.5 * g_unit, "the default amplifies a perturbation less than half as much")
print("PASS")
