"""Writes matmul.onnx: Y = MatMul(A, B), float16 graph inputs A [4096, 768]
and B [768, 2304] (BERT-base's fused QKV at batch 32 x 128), for
warpgroup-persistent-kilnc.test and warpgroup-tiles-kilnc.test, and
matmul_b1.onnx, the same product at batch 1 x 128 (A [128, 768]), and
block_end.onnx and block_end_k1024.onnx: a QDQ product as ResNet-50's int8
block ends have it, Y = QuantizeLinear(Relu(DequantizeLinear(A [50176, K])
@ DequantizeLinear(W [K, 512]) + bias + DequantizeLinear(R))), uint8 A,
R and Y, per-column int8 W, for K = 128 (one K step) and 1024 (eight);
conv_int8.onnx: ResNet-50 b64's layer-3 1x1 convolution of 1024 channels
to 256 as a QDQ Conv (uint8 x [64, 1024, 14, 14], per-filter int8 weights,
uint8 output); ffn1_gelu.onnx: BERT-base b32's FFN1 as a QDQ product
(uint8 A [4096, 768], per-column int8 W [768, 3072]) with its bias, GELU
(x * 0.5 * (1 + erf(x / sqrt(2)))) and a QuantizeLinear to uint8."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
f16 = TensorProto.FLOAT16


def matmul(name, m):
    """Y = MatMul(A [m, 768], B [768, 2304]) as NAME.onnx."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["Y"], name="qkv")], name,
        [helper.make_tensor_value_info("A", f16, [m, 768]),
         helper.make_tensor_value_info("B", f16, [768, 2304])],
        [helper.make_tensor_value_info("Y", f16, [m, 2304])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(out, name + ".onnx"))


matmul("matmul", 4096)
matmul("matmul_b1", 128)


def block_end(name, k, n=512, m=50176):
    rng = np.random.default_rng(0)
    c = {"w": rng.integers(-127, 128, (k, n)).astype(np.int8),
         "sw": (0.01 * (0.5 + rng.random(n))).astype(np.float32),
         "zw": np.zeros(n, np.int8), "bias": rng.standard_normal(n).astype(np.float32),
         "sx": np.array(0.02, np.float32), "zx": np.array(128, np.uint8),
         "sr": np.array(0.04, np.float32), "zr": np.array(0, np.uint8),
         "sy": np.array(0.06, np.float32), "zy": np.array(0, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["A", "sx", "zx"], ["a"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], axis=1),
             helper.make_node("MatMul", ["a", "wf"], ["p"], name="conv3"),
             helper.make_node("Add", ["p", "bias"], ["y"]),
             helper.make_node("DequantizeLinear", ["R", "sr", "zr"], ["r"]),
             helper.make_node("Add", ["y", "r"], ["s"]),
             helper.make_node("Relu", ["s"], ["t"]),
             helper.make_node("QuantizeLinear", ["t", "sy", "zy"], ["Y"])]
    u8 = TensorProto.UINT8
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("A", u8, [m, k]),
                      helper.make_tensor_value_info("R", u8, [m, n])],
        [helper.make_tensor_value_info("Y", u8, [m, n])],
        [numpy_helper.from_array(v, key) for key, v in c.items()])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
         os.path.join(out, name + ".onnx"))


block_end("block_end", 128)
block_end("block_end_k1024", 1024)


def conv_int8(name="conv_int8", n=64, c=1024, f=256, hw=14):
    rng = np.random.default_rng(1)
    k = {"w": rng.integers(-127, 128, (f, c, 1, 1)).astype(np.int8),
         "sw": (0.01 * (0.5 + rng.random(f))).astype(np.float32),
         "zw": np.zeros(f, np.int8), "sx": np.array(0.02, np.float32),
         "zx": np.array(128, np.uint8), "sy": np.array(0.05, np.float32),
         "zy": np.array(0, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["X", "sx", "zx"], ["x"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], axis=0),
             helper.make_node("Conv", ["x", "wf"], ["c"], kernel_shape=[1, 1], name="conv1"),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["Y"])]
    u8 = TensorProto.UINT8
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("X", u8, [n, c, hw, hw])],
        [helper.make_tensor_value_info("Y", u8, [n, f, hw, hw])],
        [numpy_helper.from_array(v, key) for key, v in k.items()])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
         os.path.join(out, name + ".onnx"))


conv_int8()


def ffn1_gelu(name="ffn1_gelu", m=4096, k=768, n=3072):
    rng = np.random.default_rng(2)
    c = {"w": rng.integers(-127, 128, (k, n)).astype(np.int8),
         "sw": (0.001 * (0.5 + rng.random(n))).astype(np.float32),
         "zw": np.zeros(n, np.int8), "bias": rng.standard_normal(n).astype(np.float32),
         "sx": np.array(0.02, np.float32), "zx": np.array(128, np.uint8),
         "sqrt2": np.array(2 ** 0.5, np.float32), "one": np.array(1.0, np.float32),
         "half": np.array(0.5, np.float32), "sy": np.array(0.05, np.float32),
         "zy": np.array(20, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["A", "sx", "zx"], ["a"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], axis=1),
             helper.make_node("MatMul", ["a", "wf"], ["p"], name="ffn1"),
             helper.make_node("Add", ["p", "bias"], ["y"]),
             helper.make_node("Div", ["y", "sqrt2"], ["g0"]),
             helper.make_node("Erf", ["g0"], ["g1"]),
             helper.make_node("Add", ["g1", "one"], ["g2"]),
             helper.make_node("Mul", ["y", "g2"], ["g3"]),
             helper.make_node("Mul", ["g3", "half"], ["g4"]),
             helper.make_node("QuantizeLinear", ["g4", "sy", "zy"], ["Y"])]
    u8 = TensorProto.UINT8
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("A", u8, [m, k])],
        [helper.make_tensor_value_info("Y", u8, [m, n])],
        [numpy_helper.from_array(v, key) for key, v in c.items()])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
         os.path.join(out, name + ".onnx"))


ffn1_gelu()
