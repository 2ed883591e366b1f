# RUN: %python %s %t
"""Reductions (constant and run-time axes), arg-reductions, softmax variants,
cumulative sums, TopK, normalizations and losses, compiled by kilnc and
compared with onnxruntime on seeded random inputs."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(4321)
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def model(name, nodes, inputs, outputs, inits=(), opset=18):
    vi_in = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    vi_out = [helper.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None)
              for o in outputs]
    g = helper.make_graph(nodes, name, vi_in, vi_out, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


def reductions_runtime_axes():
    # Axes as a graph input (read on the host), keepdims 1 and 0.
    ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
           "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"]
    nodes, outs = [], []
    for op in ops:
        nodes.append(node(op, ["x", "axes"], [op + "_k"], keepdims=1))
        outs.append((op + "_k", F32, [3, 1, 5]))
        nodes.append(node(op, ["x", "axes"], [op + "_d"], keepdims=0))
        outs.append((op + "_d", F32, [3, 5]))
    m = model("reduce_rt", nodes, [("x", F32, [3, 4, 5]), ("axes", I64, [1])], outs)
    check("reduce_rt", m, [{"x": randn(3, 4, 5), "axes": np.array([1], np.int64)},
                           {"x": randn(3, 4, 5), "axes": np.array([-2], np.int64)}])


def reductions_const_axes():
    ops = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
           "ReduceLogSumExp", "ReduceSumSquare"]
    nodes = [node(op, ["xp", "ax"], [op + "_c"], keepdims=0) for op in ops]
    nodes.append(node("ReduceMax", ["xp"], ["all_max"], keepdims=1))
    m = model("reduce_const", nodes, [("xp", F32, [2, 3, 4])],
              [(n.output[0], F32) for n in nodes],
              [numpy_helper.from_array(np.array([0, 2], np.int64), "ax")])
    check("reduce_const", m, [{"xp": (np.abs(randn(2, 3, 4)) + 0.5).astype(np.float32)}])


def arg_softmax():
    nodes = [node("ArgMax", ["x"], ["amax"], axis=1, keepdims=1),
             node("ArgMin", ["x"], ["amin"], axis=-1, keepdims=0, select_last_index=1),
             node("LogSoftmax", ["x"], ["lsm"], axis=1),
             node("Hardmax", ["x"], ["hm"], axis=-1),
             node("CumSum", ["x", "cax"], ["cs"]),
             node("CumSum", ["x", "cax"], ["cs_er"], exclusive=1, reverse=1),
             node("TopK", ["x", "k"], ["tv", "ti"], axis=1),
             node("TopK", ["x", "k"], ["tv_s", "ti_s"], axis=-1, largest=0)]
    outs = [("amax", I64), ("amin", I64), ("lsm", F32), ("hm", F32), ("cs", F32),
            ("cs_er", F32), ("tv", F32), ("ti", I64), ("tv_s", F32), ("ti_s", I64)]
    m = model("arg_softmax", nodes, [("x", F32, [2, 4, 5])], outs,
              [numpy_helper.from_array(np.array(1, np.int64), "cax"),
               numpy_helper.from_array(np.array([3], np.int64), "k")])
    check("arg_softmax", m, [{"x": randn(2, 4, 5)}])


def norms():
    nodes = [node("LayerNormalization", ["x", "s", "b"], ["ln", "ln_mean", "ln_inv"], axis=-1),
             node("LayerNormalization", ["x", "s2"], ["ln2"], axis=1, epsilon=1e-3),
             node("InstanceNormalization", ["x", "c", "cb"], ["inorm"]),
             node("LpNormalization", ["x"], ["lp2"], axis=1, p=2),
             node("LpNormalization", ["x"], ["lp1"], axis=-1, p=1),
             node("LRN", ["x"], ["lrn"], size=3, alpha=1e-3, beta=0.75, bias=1.0),
             node("MeanVarianceNormalization", ["x"], ["mvn"])]
    m = model("norms", nodes, [("x", F32, [2, 3, 4, 5])],
              [(n, F32) for n in ["ln", "ln_mean", "ln_inv", "ln2", "inorm", "lp2", "lp1", "lrn", "mvn"]],
              [numpy_helper.from_array(randn(5), "s"), numpy_helper.from_array(randn(5), "b"),
               numpy_helper.from_array(randn(3, 4, 5), "s2"),
               numpy_helper.from_array(randn(3), "c"), numpy_helper.from_array(randn(3), "cb")])
    check("norms", m, [{"x": randn(2, 3, 4, 5)}])


def losses():
    nodes = [node("SoftmaxCrossEntropyLoss", ["sc", "lab"], ["sce_mean", "sce_lp"]),
             node("SoftmaxCrossEntropyLoss", ["sc", "lab", "w"], ["sce_sum_w"], reduction="sum"),
             node("SoftmaxCrossEntropyLoss", ["sc", "lab"], ["sce_none_ii"], reduction="none",
                  ignore_index=2),
             node("NegativeLogLikelihoodLoss", ["sc", "lab", "w"], ["nll_mean_w"], ignore_index=1),
             node("NegativeLogLikelihoodLoss", ["sc", "lab"], ["nll_none"], reduction="none")]
    m = model("losses", nodes, [("sc", F32, [3, 5, 2]), ("lab", I64, [3, 2])],
              [(n, F32) for n in ["sce_mean", "sce_lp", "sce_sum_w", "sce_none_ii", "nll_mean_w",
                                  "nll_none"]],
              [numpy_helper.from_array(np.abs(randn(5)) + 0.1, "w")])
    check("losses", m, [{"sc": randn(3, 5, 2), "lab": rng.integers(0, 5, (3, 2)).astype(np.int64)}])


for fn in (reductions_runtime_axes, reductions_const_axes, arg_softmax, norms, losses):
    fn()

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("ALL PASS")
