"""Writes matmul.onnx: Y = MatMul(A, B), float16 graph inputs A [4096, 768]
and B [768, 2304] (BERT-base's fused QKV at batch 32 x 128), for
warpgroup-persistent-kilnc.test and warpgroup-tiles-kilnc.test, and
matmul_b1.onnx, the same product at batch 1 x 128 (A [128, 768])."""
import os
import sys

from onnx import TensorProto, helper, save

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
