# RUN: %python %s %t
"""int8 end to end: float models (an MLP: MatMul + bias + Relu, Gemm; a
conv net: Conv + Relu, MaxPool, a strided Conv, a 1x1 Conv with a residual
Add, GlobalAveragePool, Gemm) quantized by onnxruntime's quantize_static in
QDQ form (per-channel and per-tensor weights, uint8 and int8 activations,
int8 and uint8 weights; seeded calibration), compiled by kilnc, against
onnxruntime running the same QDQ model on its int8 CPU kernels.

The bound: one step of the output's quantization (the scale of the model's
last DequantizeLinear). Kiln's fused layers compute what onnxruntime's
QLinear kernels do: the exact int32 sum (uint8 x int8 products, zero points
folded at compile time), the int32 bias, one float32 multiply by
sx*sw[c]/sy (the same float32 constant), round half to even, the zero
point, saturation; so they match exactly. Ops kept in float around them
(Add of two quantized values, pooling, DequantizeLinear/QuantizeLinear
pairs) may round a value that sits on a tie the other way than
onnxruntime's integer kernels (its QLinearAdd, QLinearGlobalAveragePool):
one step, which the next layers may carry but not grow in these nets. The
test prints how many outputs differ at all."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln_tools
from kiln_tools.quantize import he_weights, output_scale, quantize_qdq

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)


def w(*shape, scale=None):
    return he_weights(rng, *shape, scale=scale)


def mlp():
    inits = [numpy_helper.from_array(w(64, 96), "w1"),
             numpy_helper.from_array(w(96, scale=0.1), "b1"),
             numpy_helper.from_array(w(40, 96, scale=0.1), "w2"),
             numpy_helper.from_array(w(40, scale=0.1), "b2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["a"], name="relu1"),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], name="fc2", transB=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 40])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def convnet():
    inits = [numpy_helper.from_array(w(16, 3, 3, 3), "c1"),
             numpy_helper.from_array(w(16, scale=0.1), "c1b"),
             numpy_helper.from_array(w(32, 16, 3, 3), "c2"),
             numpy_helper.from_array(w(32, scale=0.1), "c2b"),
             numpy_helper.from_array(w(32, 32, 1, 1), "c3"),
             numpy_helper.from_array(w(32, scale=0.1), "c3b"),
             numpy_helper.from_array(w(32, 10, scale=0.2), "fc"),
             numpy_helper.from_array(w(10, scale=0.1), "fcb")]
    nodes = [
        helper.make_node("Conv", ["x", "c1", "c1b"], ["a1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        helper.make_node("Conv", ["p1", "c2", "c2b"], ["a2"], pads=[1, 1, 1, 1], strides=[2, 2],
                         name="conv2"),
        helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "c3", "c3b"], ["a3"], name="conv3"),
        helper.make_node("Add", ["a3", "r2"], ["s3"], name="residual"),
        helper.make_node("Relu", ["s3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


# (name, model, quantize_qdq options, fused integer ops expected)
CASES = [
    ("mlp_u8s8_channel", mlp, {}, ["onnx.MatMulInteger"]),
    ("mlp_s8s8_tensor", mlp, {"per_channel": False, "activation_type": "QInt8"},
     ["onnx.MatMulInteger"]),
    ("mlp_u8u8_channel", mlp, {"weight_type": "QUInt8"}, ["onnx.MatMulInteger"]),
    ("conv_u8s8_channel", convnet, {}, ["onnx.ConvInteger", "onnx.MatMulInteger"]),
    ("conv_s8s8_channel", convnet, {"activation_type": "QInt8"},
     ["onnx.ConvInteger", "onnx.MatMulInteger"]),
    ("conv_u8s8_tensor", convnet, {"per_channel": False}, ["onnx.ConvInteger"]),
]

failures = []
for name, build, options, fused in CASES:
    model = build()
    path = os.path.join(work, name + ".onnx")
    calib = [{"x": rng.standard_normal([d.dim_value for d in
                                        model.graph.input[0].type.tensor_type.shape.dim])
              .astype(np.float32)} for _ in range(8)]
    quantize_qdq(model, path, calibration=calib, **options)
    qdq = onnx.load(path)
    step = output_scale(qdq)
    so = os.path.join(work, name + ".so")
    kiln_tools.compile_model(path, so)
    # The layers became integer products: no float contraction is left.
    graph = subprocess.run([kiln_tools.find_tool("kilnc"), path, "--dump-after=graph", "-o",
                            os.path.join(work, name + "_g.so")], capture_output=True,
                           text=True, check=True).stdout
    for op in fused:
        if op not in graph:
            failures.append(f"{name}: no {op} in the graph stage")
    for op in ('"onnx.MatMul"', '"onnx.Conv"', '"onnx.Gemm"'):
        if op in graph:
            failures.append(f"{name}: {op} left in float")
    worst, off, total = 0.0, 0, 0
    for n in range(3):
        scale = 1.5 if n == 2 else 1.0  # the last set past the calibrated range
        feeds = {"x": (rng.standard_normal(calib[0]["x"].shape) * scale).astype(np.float32)}
        d = os.path.join(work, f"{name}_set{n}")
        files = kiln_tools.write_inputs(feeds, d)
        (_, got), = kiln_tools.run_model(so, [p for _, p in files], os.path.join(d, "out"))
        ref = kiln_tools.ort_run(path, feeds)[0]
        diff = np.abs(got.astype(np.float64) - ref)
        worst = max(worst, float(diff.max()) / step)
        off += int((diff > 1e-6 * step).sum())
        total += diff.size
    print(f"{name}: max |kiln - onnxruntime| = {worst:.3f} steps of {step:.4g}; "
          f"{off} of {total} outputs differ")
    if worst > 1.0 + 1e-4:
        failures.append(f"{name}: {worst:.3f} steps > 1")

if failures:
    print("FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS int8_qdq")
