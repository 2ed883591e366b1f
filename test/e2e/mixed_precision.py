# RUN: %python %s %t
"""fp16 and bf16 builds (kilnc --precision) of small models against the fp32
build of the same model: a CNN (Conv + folded BatchNormalization, ConvTranspose,
pools, Gemm), a transformer block (LayerNormalization, attention as MatMuls,
Softmax, GELU through Erf, Einsum) and the ONNX Attention op. Relative L2
error <= 5e-3 (fp16) / 2e-2 (bf16), no NaN/Inf; the fp32 build matches
onnxruntime; the compile report says which nodes ran in half and why the
others stayed fp32; kiln-accuracy --layers compares every intermediate."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
import kiln_tools

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)
BIN = os.path.dirname(subprocess.run(["which", "kilnc"], capture_output=True, text=True).stdout.strip())


def w(name, shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)


def cnn():
    inits = [w("cw", (8, 3, 3, 3)), w("cb", (8,), 0.1),
             numpy_helper.from_array((1 + 0.1 * rng.standard_normal(8)).astype(np.float32), "bn_s"),
             numpy_helper.from_array((0.1 * rng.standard_normal(8)).astype(np.float32), "bn_b"),
             numpy_helper.from_array((0.1 * rng.standard_normal(8)).astype(np.float32), "bn_m"),
             numpy_helper.from_array((1 + 0.1 * rng.random(8)).astype(np.float32), "bn_v"),
             w("tw", (8, 4, 2, 2)), w("tb", (4,), 0.1), w("fw", (10, 4)), w("fb", (10,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("ConvTranspose", ["r", "tw", "tb"], ["t"], name="convt", strides=[2, 2]),
        helper.make_node("MaxPool", ["t"], ["mp"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["mp"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def transformer():
    d, s, h = 32, 8, 4
    inits = [w("qkv_w", (d, 3 * d)), w("qkv_b", (3 * d,), 0.1), w("o_w", (d, d)), w("o_b", (d,), 0.1),
             numpy_helper.from_array(np.ones(d, np.float32), "ln_s"),
             numpy_helper.from_array(np.zeros(d, np.float32), "ln_b"),
             w("ff_w", (d, 2 * d)),
             numpy_helper.from_array(np.array([1, s, h, d // h], np.int64), "heads"),
             numpy_helper.from_array(np.array([1, s, d], np.int64), "merged"),
             numpy_helper.from_array(np.array(np.sqrt(d // h), np.float32), "sqrt_d"),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array([d, d, d], np.int64), "split")]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["h", "ln_s", "ln_b"], ["ln"], name="ln", axis=-1),
        n("MatMul", ["ln", "qkv_w"], ["qkv0"], name="qkv"),
        n("Add", ["qkv0", "qkv_b"], ["qkv1"], name="qkv_bias"),
        n("Split", ["qkv1", "split"], ["q0", "k0", "v0"], name="split", axis=-1),
        n("Reshape", ["q0", "heads"], ["q1"], name="q_heads"),
        n("Reshape", ["k0", "heads"], ["k1"], name="k_heads"),
        n("Reshape", ["v0", "heads"], ["v1"], name="v_heads"),
        n("Transpose", ["q1"], ["q"], name="q_t", perm=[0, 2, 1, 3]),
        n("Transpose", ["k1"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        n("Transpose", ["v1"], ["v"], name="v_t", perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["sc0"], name="scores"),
        n("Div", ["sc0", "sqrt_d"], ["sc"], name="scale"),
        n("Softmax", ["sc"], ["p"], name="softmax", axis=-1),
        n("MatMul", ["p", "v"], ["ctx0"], name="context"),
        n("Transpose", ["ctx0"], ["ctx1"], name="ctx_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merged"], ["ctx"], name="merge"),
        n("MatMul", ["ctx", "o_w"], ["o0"], name="out_proj"),
        n("Add", ["o0", "o_b"], ["o1"], name="out_bias"),
        n("LayerNormalization", ["o1", "ln_s", "ln_b"], ["o1n"], name="ln_half", axis=-1),
        n("Add", ["o1n", "h"], ["res"], name="residual"),
        n("Div", ["res", "sqrt2"], ["g0"], name="gelu_div"),
        n("Erf", ["g0"], ["g1"], name="gelu_erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu_add"),
        n("Mul", ["res", "g2"], ["g3"], name="gelu_mul"),
        n("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        n("Einsum", ["g4", "ff_w"], ["y"], name="ffn", equation="bsd,de->bse"),
    ]
    g = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, s, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, s, 2 * d])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def attention_op():
    """The ONNX Attention op (opset 23): compared between Kiln builds only."""
    inits = [w("wq", (16, 16)), w("wk", (16, 16)), w("wv", (16, 16))]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "wq"], ["q"], name="wq"), n("MatMul", ["x", "wk"], ["k"], name="wk"),
             n("MatMul", ["x", "wv"], ["v"], name="wv"),
             n("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=4, kv_num_heads=4)]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)


def check(name, model, with_ort=True):
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    feeds = list(kiln_tools.seeded_inputs(path, 1).items())
    files = kiln_tools.write_inputs(feeds, os.path.join(work, name + "_in"))
    outs = {}
    for prec in ["fp32", "fp16", "bf16"]:
        so = os.path.join(work, f"{name}_{prec}.so")
        rep = os.path.join(work, f"{name}_{prec}.json")
        kiln_tools.run_tool(["kilnc", path, "-o", so, f"--precision={prec}", f"--report={rep}"])
        outs[prec] = kiln_tools.run_model(so, files, os.path.join(work, f"{name}_out_{prec}"))
    if with_ort:
        ref = kiln_tools.ort_run(model, dict(feeds))
        for (n, got), r in zip(outs["fp32"], ref):
            e = kiln_tools.error_stats(r, got)
            print(f"{name} fp32 vs onnxruntime '{n}': {kiln_tools.format_stats(e)}")
            if e["max_rel"] > 1e-4:
                sys.exit(f"FAIL {name}: fp32 build differs from onnxruntime")
    for prec, limit in [("fp16", 5e-3), ("bf16", 2e-2)]:
        for (n, a), (_, b) in zip(outs["fp32"], outs[prec]):
            e = kiln_tools.error_stats(a, b)
            print(f"{name} {prec} vs fp32 '{n}': {kiln_tools.format_stats(e)}")
            if e["nonfinite"] or e["rel_l2"] > limit:
                sys.exit(f"FAIL {name} {prec}: rel L2 {e['rel_l2']:.2e} > {limit}")
            if e["rel_l2"] == 0:
                sys.exit(f"FAIL {name} {prec}: identical to fp32 (nothing ran in half)")
    with open(os.path.join(work, f"{name}_fp16.json")) as f:
        plan = {n["node"]: n for n in json.load(f)["precision"]["nodes"]}
    return plan


def expect(plan, node, precision, reason_prefix=None):
    got = plan.get(node)
    if not got or got["precision"] != precision or (
            reason_prefix and not got.get("reason", "").startswith(reason_prefix)):
        sys.exit(f"FAIL: node '{node}' expected {precision} ({reason_prefix}), got {got}")


plan = check("cnn", cnn())
expect(plan, "conv", "fp16")  # BN folded into it
expect(plan, "convt", "fp16")
expect(plan, "maxpool", "fp16")
expect(plan, "avgpool", "fp16")
expect(plan, "fc", "fp16")
plan = check("block", transformer())
# The model's f32 input feeds it; the half projection feeds ln_half, whose
# statistics stay f32 by its stash_type.
expect(plan, "ln", "fp32", "inputs: follows its fp32 inputs")
expect(plan, "ln_half", "fp16")
expect(plan, "qkv", "fp16")
expect(plan, "scores", "fp16")
expect(plan, "softmax", "fp32", "rule: softmax")
expect(plan, "context", "fp16")
expect(plan, "residual", "fp32", "inputs")
expect(plan, "gelu_erf", "fp32", "rule: exp/log/pow/erf")
expect(plan, "ffn", "fp16")
plan = check("attention", attention_op(), with_ort=False)
expect(plan, "attn", "fp16")

# kiln-accuracy: layer by layer on the transformer block.
p = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "utils", "kiln_accuracy.py"),
                    os.path.join(work, "block.onnx"), "--precision", "fp16", "--layers",
                    "--bin", BIN, "--max-rel-l2", "5e-3"], capture_output=True, text=True)
print(p.stdout)
if p.returncode != 0 or "intermediate values compared" not in p.stdout or "    scores: rel L2" not in p.stdout:
    sys.exit(f"FAIL kiln-accuracy ({p.returncode}):\n{p.stdout}{p.stderr}")
print("PASS mixed precision")
