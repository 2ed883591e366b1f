"""Attention models for the fused kernel (docs/gpu.md, "Fused attention"),
written into the folder argv[1] (or by bench/gpu_check.py through make()).

Each case is a pair: CASE.onnx, what Kiln compiles (one opset-23 Attention
node on fp16 Q, K, V, or a small BERT-like layer in fp32 whose attention
is the exporters' chain, compiled with --precision=fp16 --fuse-attention),
and CASE.ref.onnx, the same computation at opset 17 in fp32 as the
exporters write it (MatMul, Mul, Add, Softmax, MatMul; heads split by
Reshape/Transpose; grouped K/V heads repeated), which onnxruntime runs
(it does not take opset 23) on the same inputs widened to fp32.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT

# name: (B, Hq, Hkv, S, L, D, layout, mask, causal)
CASES = {
    "att_bhsd": (2, 12, 12, 128, 128, 64, "4d", None, False),
    "att_mask": (1, 4, 4, 77, 77, 64, "4d", "2d", False),
    "att_causal": (1, 4, 4, 77, 77, 64, "4d", None, True),
    "att_3d_gqa": (1, 8, 2, 77, 77, 64, "3d", "4d", True),
    "att_cross": (2, 4, 4, 50, 130, 128, "4d", "4d", False),
}


def _const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def attention_case(name, B, Hq, Hkv, S, L, D, layout, mask, causal):
    """(model, reference)."""
    if layout == "4d":
        qs, ks = [B, Hq, S, D], [B, Hkv, L, D]
    else:
        qs, ks = [B, S, Hq * D], [B, L, Hkv * D]
    ms = {"2d": [S, L], "4d": [B, 1, S, L]}.get(mask)
    inputs = ["q", "k", "v"] + (["mask"] if mask else [])
    attrs = {"is_causal": 1} if causal else {}
    if layout == "3d":
        attrs.update(q_num_heads=Hq, kv_num_heads=Hkv)
    node = helper.make_node("Attention", inputs, ["y"], name="attention", **attrs)

    def infos(dtype):
        v = [helper.make_tensor_value_info("q", dtype, qs),
             helper.make_tensor_value_info("k", dtype, ks),
             helper.make_tensor_value_info("v", dtype, ks)]
        if mask:
            v.append(helper.make_tensor_value_info("mask", dtype, ms))
        return v

    model = helper.make_model(
        helper.make_graph([node], name, infos(F16),
                          [helper.make_tensor_value_info("y", F16, qs)]),
        opset_imports=[helper.make_opsetid("", 23)])

    # The reference chain, fp32.
    nodes, inits = [], [_const("scale", 1 / np.sqrt(D))]

    def heads(x, h, n, perm):
        if layout == "4d":
            if perm == [0, 1, 3, 2]:
                nodes.append(helper.make_node("Transpose", [x], [x + "_h"], perm=perm))
                return x + "_h"
            return x
        inits.append(_const(x + "_shape", [B, n, h, D], np.int64))
        nodes.append(helper.make_node("Reshape", [x, x + "_shape"], [x + "_r"]))
        nodes.append(helper.make_node("Transpose", [x + "_r"], [x + "_h"],
                                      perm=[0, 2, 3, 1] if perm == [0, 1, 3, 2] else [0, 2, 1, 3]))
        return x + "_h"

    def repeat(x, kt):
        """Grouped K/V heads repeated to Hq (head h reads h / (Hq / Hkv))."""
        if Hq == Hkv:
            return x
        g = Hq // Hkv
        shape5 = [B, Hkv, 1] + ([D, L] if kt else [L, D])
        shape4 = [B, Hq] + ([D, L] if kt else [L, D])
        inits.extend([_const(x + "_s5", shape5, np.int64),
                      _const(x + "_e5", [B, Hkv, g] + shape5[3:], np.int64),
                      _const(x + "_s4", shape4, np.int64)])
        nodes.extend([helper.make_node("Reshape", [x, x + "_s5"], [x + "_5"]),
                      helper.make_node("Expand", [x + "_5", x + "_e5"], [x + "_x"]),
                      helper.make_node("Reshape", [x + "_x", x + "_s4"], [x + "_g"])])
        return x + "_g"

    q = heads("q", Hq, S, [0, 2, 1, 3])
    kt = repeat(heads("k", Hkv, L, [0, 1, 3, 2]), True)
    v = repeat(heads("v", Hkv, L, [0, 2, 1, 3]), False)
    nodes += [helper.make_node("MatMul", [q, kt], ["s"]),
              helper.make_node("Mul", ["s", "scale"], ["ss"])]
    last = "ss"
    if mask:
        nodes.append(helper.make_node("Add", [last, "mask"], ["sm"]))
        last = "sm"
    if causal:
        tri = np.where(np.arange(L)[None, :] > np.arange(S)[:, None], -np.inf, 0)
        inits.append(_const("causal", tri))
        nodes.append(helper.make_node("Add", [last, "causal"], ["sc"]))
        last = "sc"
    nodes += [helper.make_node("Softmax", [last], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", v], ["o"])]
    if layout == "3d":
        inits.append(_const("y_shape", [B, S, Hq * D], np.int64))
        nodes += [helper.make_node("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["o_t", "y_shape"], ["y"])]
    else:
        nodes.append(helper.make_node("Identity", ["o"], ["y"]))
    ref = helper.make_model(
        helper.make_graph(nodes, name + "_ref", infos(F32),
                          [helper.make_tensor_value_info("y", F32, qs)], inits),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, ref


def bert_layer(B=2, S=128, H=4, D=64, seed=0):
    """One BERT-like self-attention block, fp32, as torch.onnx exports it
    (projections, heads split by Reshape/Transpose, Kᵀ by a Transpose of
    perm [0, 2, 3, 1], Div by sqrt(D), an additive padding mask [B, 1, 1,
    S], Softmax, MatMul by V, heads merged, the output projection); it is
    its own reference."""
    rng = np.random.default_rng(seed)
    hid = H * D
    inits = [_const("hshape", [B, S, H, D], np.int64), _const("oshape", [B, S, hid], np.int64),
             _const("sqrt_d", np.sqrt(D))]
    nodes = []
    for p in ("q", "k", "v", "o"):
        inits += [_const("w" + p, rng.standard_normal((hid, hid)) / np.sqrt(hid)),
                  _const("b" + p, rng.standard_normal(hid) * 0.1)]
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [helper.make_node("MatMul", ["x", "w" + p], [p + "_m"]),
                  helper.make_node("Add", [p + "_m", "b" + p], [p + "_b"]),
                  helper.make_node("Reshape", [p + "_b", "hshape"], [p + "_r"]),
                  helper.make_node("Transpose", [p + "_r"], [p + "_h"], perm=perm)]
    nodes += [helper.make_node("MatMul", ["q_h", "k_h"], ["s"], name="qk"),
              helper.make_node("Div", ["s", "sqrt_d"], ["sd"], name="scale"),
              helper.make_node("Add", ["sd", "mask"], ["sm"], name="mask_add"),
              helper.make_node("Softmax", ["sm"], ["p"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["p", "v_h"], ["c"], name="pv"),
              helper.make_node("Transpose", ["c"], ["c_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["c_t", "oshape"], ["c_r"]),
              helper.make_node("MatMul", ["c_r", "wo"], ["o_m"]),
              helper.make_node("Add", ["o_m", "bo"], ["y"])]
    graph = helper.make_graph(
        nodes, "bert_layer",
        [helper.make_tensor_value_info("x", F32, [B, S, hid]),
         helper.make_tensor_value_info("mask", F32, [B, 1, 1, S])],
        [helper.make_tensor_value_info("y", F32, [B, S, hid])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(name, model_path, seed=0):
    """Seeded inputs of a case: N(0, 1) Q, K, V; masks of 0 and -10000 (a
    padded tail of keys per batch row; whole rows never masked)."""
    rng = np.random.default_rng(seed)
    m = onnx.load(model_path)
    out = {}
    for i in m.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        dtype = np.float16 if i.type.tensor_type.elem_type == F16 else np.float32
        if i.name == "mask":
            x = np.zeros(shape, np.float32)
            keys = shape[-1]
            x[..., keys - keys // 5:] = -10000.0
            if len(shape) == 4 and shape[0] > 1:
                x[0] = 0.0  # the first sequence unpadded
            out[i.name] = x.astype(dtype)
        else:
            out[i.name] = rng.standard_normal(shape).astype(dtype)
    return out


def make(out):
    """Writes every case into `out`; returns {case: (model, reference)} paths
    and the flags to compile each with."""
    os.makedirs(out, exist_ok=True)
    cases = {}
    for name, spec in CASES.items():
        model, ref = attention_case(name, *spec)
        paths = (os.path.join(out, name + ".onnx"), os.path.join(out, name + ".ref.onnx"))
        onnx.save(model, paths[0])
        onnx.save(ref, paths[1])
        cases[name] = (paths, [])
    path = os.path.join(out, "bert_layer.onnx")
    onnx.save(bert_layer(), path)
    cases["bert_layer"] = ((path, path), ["--precision=fp16", "--fuse-attention"])
    cases["bert_layer_unfused"] = ((path, path), ["--precision=fp16"])
    # int8 (kilnc's PTQ, calibrated on inputs of another seed): the three
    # projections, the output projection and (--int8-attention) the
    # attention's Q, K and V, each with its own scale, in 8 bits; then
    # without the attention's (the default).
    cal = os.path.join(out, "bert_layer.calibration", "test_data_set_0")
    os.makedirs(cal, exist_ok=True)
    for i, (n, x) in enumerate(feeds("bert_layer", path, seed=1).items()):
        with open(os.path.join(cal, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, n).SerializeToString())
    calib = "--calibrate=" + os.path.dirname(cal)
    cases["bert_layer_int8"] = ((path, path), ["--precision=int8", calib, "--int8-attention"])
    cases["bert_layer_int8_float_attention"] = (
        (path, path), ["--precision=int8", calib, "--int8-attention=false"])
    return cases


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR  (writes the attention "
                 "models and their references there)")
    make(sys.argv[1])
