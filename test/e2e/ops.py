# RUN: %python %s %t
"""Every operator Kiln lowers, compiled by kilnc and compared with
onnxruntime on seeded random inputs (float32, max relative error <= 1e-4).

Many small cases share one graph per family to keep the number of kilnc runs
low; models with symbolic dims are run at two sizes."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(1234)
F32, I64, I32, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.1).astype(np.float32)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def i64(name, vals):
    return init(name, np.array(vals, dtype=np.int64))


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    """inputs: [(name, elem, shape)]; outputs: [(name, elem)] or
    [(name, elem, shape)]."""
    vi_in = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    vi_out = [helper.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None)
              for o in outputs]
    g = helper.make_graph(nodes, name, vi_in, vi_out, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


# --------------------------------------------------------------------------
# MatMul and Gemm
# --------------------------------------------------------------------------
def matmul():
    nodes = [
        node("MatMul", ["a2", "b2"], ["mm_2d"]),
        node("MatMul", ["a4", "b3"], ["mm_batched"]),      # [2,1,3,4]x[3,4,5]
        node("MatMul", ["v4", "b2"], ["mm_vec_mat"]),      # [4]x[4,5]
        node("MatMul", ["a2", "v4"], ["mm_mat_vec"]),      # [3,4]x[4]
        node("MatMul", ["v4", "v4"], ["mm_dot"]),          # [4]x[4]
        node("MatMul", ["v4", "b3"], ["mm_vec_batched"]),  # [4]x[3,4,5]
        node("MatMul", ["a4", "v4"], ["mm_batched_vec"]),  # [2,1,3,4]x[4]
        node("MatMul", ["xs", "b2"], ["mm_sym"]),          # [N,3,4]x[4,5]
        node("MatMul", ["xs", "bsym"], ["mm_sym_bcast"]),  # [N,3,4]x[1,4,5]
    ]
    inits = [init("b2", randn(4, 5)), init("b3", randn(3, 4, 5)),
             init("v4", randn(4)), init("a4", randn(2, 1, 3, 4)),
             init("bsym", randn(1, 4, 5))]
    outs = [(n.output[0], F32) for n in nodes]
    m = model("matmul", nodes, [("a2", F32, [3, 4]), ("xs", F32, ["N", 3, 4])],
              outs, inits)
    check("matmul", m, [{"a2": randn(3, 4), "xs": randn(n, 3, 4)} for n in (1, 3)])


def gemm():
    nodes = [
        node("Gemm", ["a", "b", "c_n"], ["g_plain"]),
        node("Gemm", ["at", "b", "c_n"], ["g_ta"], transA=1),
        node("Gemm", ["a", "bt", "c_1n"], ["g_tb"], transB=1, alpha=0.5, beta=2.0),
        node("Gemm", ["at", "bt", "c_m1"], ["g_tab"], transA=1, transB=1, alpha=1.5),
        node("Gemm", ["a", "b", "c_s"], ["g_cscalar"], beta=-0.5),
        node("Gemm", ["a", "b"], ["g_noc"], alpha=2.0),
        node("Gemm", ["a", "b", "c_mn"], ["g_full"], beta=0.0),
        node("Gemm", ["xs", "b", "c_n"], ["g_sym"], alpha=0.25),
    ]
    inits = [init("b", randn(4, 5)), init("bt", randn(5, 4)), init("at", randn(4, 3)),
             init("c_n", randn(5)), init("c_1n", randn(1, 5)), init("c_m1", randn(3, 1)),
             init("c_s", np.array(1.5, dtype=np.float32)), init("c_mn", randn(3, 5))]
    m = model("gemm", nodes, [("a", F32, [3, 4]), ("xs", F32, ["N", 4])],
              [(n.output[0], F32) for n in nodes], inits)
    check("gemm", m, [{"a": randn(3, 4), "xs": randn(n, 4)} for n in (2, 5)])


# --------------------------------------------------------------------------
# Conv and BatchNormalization
# --------------------------------------------------------------------------
def conv():
    nodes = [
        # 1-D
        node("Conv", ["x1", "w1", "b1"], ["c1_pad_stride"], pads=[1, 2], strides=[2]),
        node("Conv", ["x1", "w1"], ["c1_dil_nobias"], dilations=[2]),
        node("Conv", ["x1", "w1", "b1"], ["c1_same_lower"], auto_pad="SAME_LOWER", strides=[2]),
        # 2-D
        node("Conv", ["x2", "w2", "b2"], ["c2_pads"], pads=[1, 0, 2, 1]),
        node("Conv", ["x2", "w2"], ["c2_strides_dil"], strides=[2, 1], dilations=[1, 2],
             pads=[1, 1, 1, 1]),
        node("Conv", ["x2", "w2g", "b2"], ["c2_groups"], group=2, pads=[1, 1, 1, 1]),
        node("Conv", ["x2", "wdw", "bdw"], ["c2_depthwise"], group=4, pads=[1, 1, 1, 1],
             strides=[2, 2]),
        node("Conv", ["x2", "w2"], ["c2_same_lower"], auto_pad="SAME_LOWER", strides=[2, 2]),
        node("Conv", ["x2", "w2", "b2"], ["c2_same_upper"], auto_pad="SAME_UPPER"),
        node("Conv", ["x2", "w2", "b2"], ["c2_valid"], auto_pad="VALID", strides=[1, 2]),
        node("Conv", ["x2", "w2k"], ["c2_kernel_shape"], kernel_shape=[2, 3]),
        node("Conv", ["xs", "w2", "b2"], ["c2_sym_batch"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["x2", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-3),
        node("BatchNormalization", ["x1", "bn1_s", "bn1_b", "bn1_m", "bn1_v"], ["bn_3d"]),
    ]
    inits = [
        init("w1", randn(4, 3, 3)), init("b1", randn(4)),
        init("w2", randn(6, 4, 3, 3)), init("b2", randn(6)),
        init("w2g", randn(6, 2, 3, 3)), init("w2k", randn(6, 4, 2, 3)),
        init("wdw", randn(8, 1, 3, 3)), init("bdw", randn(8)),
        init("bn_s", randn(4)), init("bn_b", randn(4)), init("bn_m", randn(4)),
        init("bn_v", pos(4)),
        init("bn1_s", randn(3)), init("bn1_b", randn(3)), init("bn1_m", randn(3)),
        init("bn1_v", pos(3)),
    ]
    m = model("conv", nodes,
              [("x1", F32, [2, 3, 11]), ("x2", F32, [2, 4, 7, 8]),
               ("xs", F32, ["N", 4, 5, 6])],
              [(n.output[0], F32) for n in nodes], inits)
    check("conv", m, [{"x1": randn(2, 3, 11), "x2": randn(2, 4, 7, 8),
                       "xs": randn(n, 4, 5, 6)} for n in (1, 3)])


# --------------------------------------------------------------------------
# Unary elementwise (symbolic dims, two sizes)
# --------------------------------------------------------------------------
def unary():
    nodes = [
        node("Relu", ["x"], ["relu"]),
        node("LeakyRelu", ["x"], ["leaky_default"]),
        node("LeakyRelu", ["x"], ["leaky_03"], alpha=0.3),
        node("Sigmoid", ["x"], ["sigmoid"]),
        node("Tanh", ["x"], ["tanh"]),
        node("Clip", ["x", "lo"], ["clip_min"]),
        node("Clip", ["x", "", "hi"], ["clip_max"]),
        node("Clip", ["x", "lo", "hi"], ["clip_both"]),
        node("Clip", ["x"], ["clip_none"]),
        node("HardSigmoid", ["x"], ["hsig_default"]),
        node("HardSigmoid", ["x"], ["hsig"], alpha=0.4, beta=0.3),
        node("Exp", ["x"], ["exp"]),
        node("Log", ["p"], ["log"]),
        node("Sqrt", ["p"], ["sqrt"]),
        node("Neg", ["x"], ["neg"]),
        node("Abs", ["x"], ["abs"]),
        node("Identity", ["x"], ["identity"]),
    ]
    inits = [init("lo", np.array(-0.5, np.float32)), init("hi", np.array(0.7, np.float32))]
    m = model("unary", nodes, [("x", F32, ["N", 5]), ("p", F32, ["N", 5])],
              [(n.output[0], F32) for n in nodes], inits)
    check("unary", m, [{"x": randn(n, 5) * 2, "p": pos(n, 5) * 3} for n in (2, 7)])


def clip_old_opset():
    nodes = [node("Clip", ["x"], ["clip6"], min=-0.5, max=0.5),
             node("Clip", ["x"], ["clip6_min"], min=0.1)]
    m = model("clip_opset6", nodes, [("x", F32, [3, 4])],
              [(n.output[0], F32) for n in nodes], opset=6)
    check("clip_opset6", m, [{"x": randn(3, 4)}])


# --------------------------------------------------------------------------
# Binary elementwise with broadcasting
# --------------------------------------------------------------------------
def binary():
    nodes = [
        node("Add", ["x", "v"], ["add_vec"]),          # [N,3,4] + [4]
        node("Add", ["x", "s"], ["add_scalar"]),       # + rank-0
        node("Sub", ["c1", "x"], ["sub_col"]),         # [3,1] - [N,3,4]
        node("Sub", ["x", "x"], ["sub_same"]),
        node("Mul", ["x", "r"], ["mul_ones"]),         # [N,3,4] * [1,1,4]
        node("Mul", ["y", "c1"], ["mul_outer"]),       # [N,1,4] * [3,1]
        node("Div", ["x", "d"], ["div"]),              # [N,3,4] / [3,4] (nonzero)
        node("Div", ["s", "d"], ["div_scalar_lhs"]),
        node("Pow", ["px", "e"], ["pow_vec"]),         # positive base ^ [4]
        node("Pow", ["px", "two"], ["pow_scalar"]),    # positive base ^ 2
        node("Pow", ["px", "e_i64"], ["pow_int_exp"]), # float base ^ int64 exponent
        node("Add", ["y", "x"], ["add_bcast_sym"]),    # [N,1,4] + [N,3,4]
    ]
    inits = [init("v", randn(4)), init("s", np.array(1.7, np.float32)),
             init("c1", randn(3, 1)), init("r", randn(1, 1, 4)),
             init("d", (np.sign(randn(3, 4)) * pos(3, 4) + 0).astype(np.float32)),
             init("e", randn(4)), init("two", np.array(2.0, np.float32)),
             init("e_i64", np.array([0, 1, 2, 3], np.int64))]
    m = model("binary", nodes,
              [("x", F32, ["N", 3, 4]), ("y", F32, ["N", 1, 4]), ("px", F32, ["N", 3, 4])],
              [(n.output[0], F32) for n in nodes], inits)
    check("binary", m, [{"x": randn(n, 3, 4), "y": randn(n, 1, 4), "px": pos(n, 3, 4) * 2}
                        for n in (1, 4)])


# --------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------
def pool():
    nodes = [
        node("MaxPool", ["x"], ["max_basic"], kernel_shape=[2, 2]),
        node("MaxPool", ["x"], ["max_stride_pad"], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1]),
        node("MaxPool", ["x"], ["max_ceil"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        node("MaxPool", ["x"], ["max_ceil_pad"], kernel_shape=[2, 3], strides=[2, 2],
             pads=[1, 0, 0, 1], ceil_mode=1),
        node("MaxPool", ["x"], ["max_dil"], kernel_shape=[2, 2], dilations=[2, 2]),
        node("MaxPool", ["x"], ["max_same_upper"], kernel_shape=[3, 3], strides=[2, 2],
             auto_pad="SAME_UPPER"),
        node("AveragePool", ["x"], ["avg_basic"], kernel_shape=[2, 2]),
        node("AveragePool", ["x"], ["avg_pad_excl"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             count_include_pad=0),
        node("AveragePool", ["x"], ["avg_pad_incl"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             count_include_pad=1),
        node("AveragePool", ["x"], ["avg_ceil"], kernel_shape=[3, 3], strides=[2, 2],
             ceil_mode=1),
        node("AveragePool", ["x"], ["avg_ceil_pad_incl"], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
        node("AveragePool", ["x"], ["avg_ceil_pad_excl"], kernel_shape=[3, 2], strides=[2, 3],
             pads=[0, 1, 1, 0], ceil_mode=1, count_include_pad=0),
        node("AveragePool", ["x"], ["avg_same_lower"], kernel_shape=[2, 2], strides=[1, 1],
             auto_pad="SAME_LOWER"),
        node("MaxPool", ["x1"], ["max_1d"], kernel_shape=[3], strides=[2], pads=[1, 1]),
        node("AveragePool", ["x1"], ["avg_1d"], kernel_shape=[4], strides=[3], ceil_mode=1),
        node("AveragePool", ["x1"], ["avg_1d_incl"], kernel_shape=[3], pads=[2, 1],
             count_include_pad=1),
        node("GlobalAveragePool", ["x"], ["gap"]),
        node("GlobalAveragePool", ["x1"], ["gap_1d"]),
        node("GlobalAveragePool", ["xs"], ["gap_sym"]),
        node("MaxPool", ["xs"], ["max_sym_batch"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    m = model("pool", nodes,
              [("x", F32, [2, 3, 7, 8]), ("x1", F32, [2, 3, 10]), ("xs", F32, ["N", 2, 5, 6])],
              [(n.output[0], F32) for n in nodes], opset=19)
    check("pool", m, [{"x": randn(2, 3, 7, 8), "x1": randn(2, 3, 10), "xs": randn(n, 2, 5, 6)}
                      for n in (1, 3)])


# --------------------------------------------------------------------------
# Shape manipulation: Reshape, Flatten, Transpose, Concat, Squeeze, Unsqueeze
# --------------------------------------------------------------------------
def shapes():
    nodes = [
        node("Reshape", ["x", "shape_0m1"], ["reshape_0_m1"]),    # [N,3,4] -> [N,-1]
        node("Reshape", ["x", "shape_m1_2"], ["reshape_m1_2"]),   # -> [-1, 2]
        node("Reshape", ["s4", "shape_const"], ["reshape_static"]),
        # Run-time shape: [N, 12] from Shape -> Gather -> Concat.
        node("Shape", ["x"], ["x_shape"]),
        node("Gather", ["x_shape", "zero_i"], ["x_batch"], axis=0),
        node("Unsqueeze", ["x_batch", "ax0"], ["x_batch1"]),
        node("Concat", ["x_batch1", "twelve"], ["dyn_shape"], axis=0),
        node("Reshape", ["x", "dyn_shape"], ["reshape_runtime"]),
        node("Flatten", ["x"], ["flatten_default"]),
        node("Flatten", ["s4"], ["flatten_0"], axis=0),
        node("Flatten", ["s4"], ["flatten_2"], axis=2),
        node("Flatten", ["x"], ["flatten_2_sym"], axis=2),
        node("Flatten", ["s4"], ["flatten_m1"], axis=-1),
        node("Transpose", ["s4"], ["transpose_default"]),
        node("Transpose", ["s4"], ["transpose_perm"], perm=[2, 0, 3, 1]),
        node("Transpose", ["x"], ["transpose_sym"], perm=[1, 2, 0]),
        node("Concat", ["s4", "s4b"], ["concat_0"], axis=0),
        node("Concat", ["s4", "s4d", "s4"], ["concat_2"], axis=2),
        node("Concat", ["s4", "s4c"], ["concat_neg"], axis=-1),
        node("Concat", ["x", "x"], ["concat_sym0"], axis=0),
        node("Concat", ["x", "x"], ["concat_sym1"], axis=-2),
        node("Squeeze", ["u", "sq_axes"], ["squeeze_axes"]),
        node("Squeeze", ["u", "sq_neg"], ["squeeze_neg"]),
        node("Squeeze", ["u"], ["squeeze_all"]),
        node("Unsqueeze", ["s4", "unsq_axes"], ["unsqueeze"]),
        node("Unsqueeze", ["x", "unsq_neg"], ["unsqueeze_neg_sym"]),
    ]
    inits = [i64("shape_0m1", [0, -1]), i64("shape_m1_2", [-1, 2]),
             i64("shape_const", [6, 2, 5]), i64("zero_i", 0), i64("ax0", [0]),
             i64("twelve", [12]), i64("sq_axes", [0, 2]), i64("sq_neg", [-1]),
             i64("unsq_axes", [0, 3]), i64("unsq_neg", [-1, 1])]
    m = model("shapes", nodes,
              [("x", F32, ["N", 3, 4]), ("s4", F32, [2, 3, 2, 5]), ("s4b", F32, [1, 3, 2, 5]),
               ("s4c", F32, [2, 3, 2, 3]), ("s4d", F32, [2, 3, 1, 5]),
               ("u", F32, [1, 4, 1, 3, 1])],
              [(n.output[0], F32) for n in nodes
               if n.output[0] not in ("x_shape", "x_batch", "x_batch1", "dyn_shape")]
              + [("dyn_shape", I64)], inits)
    check("shapes", m, [{"x": randn(n, 3, 4), "s4": randn(2, 3, 2, 5), "s4b": randn(1, 3, 2, 5),
                         "s4c": randn(2, 3, 2, 3), "s4d": randn(2, 3, 1, 5), "u": randn(1, 4, 1, 3, 1)} for n in (2, 5)])


def squeeze_opset11():
    nodes = [node("Squeeze", ["u"], ["sq11"], axes=[0, -1]),
             node("Unsqueeze", ["sq11"], ["unsq11"], axes=[1, -1]),
             node("ReduceSum", ["u"], ["rsum11"], axes=[1], keepdims=0),
             node("ReduceMean", ["u"], ["rmean11"], axes=[-2, 1])]
    m = model("squeeze_opset11", nodes, [("u", F32, [1, 4, 1, 3, 1])],
              [(n.output[0], F32) for n in nodes], opset=11)
    check("squeeze_opset11", m, [{"u": randn(1, 4, 1, 3, 1)}])


# --------------------------------------------------------------------------
# Slice and Gather
# --------------------------------------------------------------------------
def slice_gather():
    big = np.iinfo(np.int64).max
    nodes = [
        node("Slice", ["x", "st_a", "en_a"], ["slice_basic"]),                     # all axes
        node("Slice", ["x", "st_neg", "en_neg", "ax_1"], ["slice_neg"]),
        node("Slice", ["x", "st_0", "en_big", "ax_2", "step2"], ["slice_step2"]),
        node("Slice", ["x", "st_m1", "en_minbig", "ax_2", "stepm1"], ["slice_reverse"]),
        node("Slice", ["x", "st_m2", "en_0", "ax_m1", "stepm2"], ["slice_rev_step2"]),
        node("Slice", ["x", "st_2", "en_big2", "ax_12", "step_13"], ["slice_two_axes"]),
        node("Slice", ["xs", "st_1", "en_big", "ax_0"], ["slice_sym"]),
        node("Slice", ["xs", "st_neg", "en_neg", "ax_1"], ["slice_sym_keep"]),
        node("Slice", ["x", "st_oob", "en_oob", "ax_1"], ["slice_clamped"]),
        node("Gather", ["x", "g_idx"], ["gather_axis0"], axis=0),
        node("Gather", ["x", "g_neg"], ["gather_axis1_neg"], axis=1),
        node("Gather", ["x", "g_2d"], ["gather_2d"], axis=2),
        node("Gather", ["x", "g_scalar"], ["gather_scalar"], axis=1),
        node("Gather", ["x", "g_scalar_neg"], ["gather_scalar_neg"], axis=-1),
        node("Gather", ["xs", "g_idx"], ["gather_sym"], axis=1),
        node("Gather", ["emb", "tok"], ["gather_embedding"], axis=0),
    ]
    inits = [i64("st_a", [0, 1, 1]), i64("en_a", [2, 3, 5]),
             i64("st_neg", [-3]), i64("en_neg", [-1]), i64("ax_1", [1]),
             i64("st_0", [0]), i64("en_big", [big]), i64("ax_2", [2]), i64("step2", [2]),
             i64("st_m1", [-1]), i64("en_minbig", [-big - 1]), i64("stepm1", [-1]),
             i64("st_m2", [-2]), i64("en_0", [0]), i64("ax_m1", [-1]), i64("stepm2", [-2]),
             i64("st_2", [1, 0]), i64("en_big2", [big, 6]), i64("ax_12", [1, 2]),
             i64("step_13", [1, 3]), i64("st_1", [1]), i64("ax_0", [0]),
             i64("st_oob", [-100]), i64("en_oob", [100]),
             i64("g_idx", [1, 0, 1]), i64("g_neg", [-1, 0, -2]),
             i64("g_2d", [[0, 5], [-1, 2]]), i64("g_scalar", 2), i64("g_scalar_neg", -2),
             init("emb", randn(10, 4)), i64("tok", [[3, 9, 0], [1, 1, -10]])]
    m = model("slice_gather", nodes, [("x", F32, [3, 4, 7]), ("xs", F32, ["N", 4, 7])],
              [(n.output[0], F32) for n in nodes], inits, opset=13)
    check("slice_gather", m, [{"x": randn(3, 4, 7), "xs": randn(n, 4, 7)} for n in (2, 5)])


# --------------------------------------------------------------------------
# Softmax and reductions
# --------------------------------------------------------------------------
def softmax_reduce():
    nodes = [
        node("Softmax", ["x"], ["softmax_last"], axis=-1),
        node("Softmax", ["x"], ["softmax_1"], axis=1),
        node("Softmax", ["x"], ["softmax_default"]),
        node("Softmax", ["xs"], ["softmax_sym"], axis=0),
        node("ReduceSum", ["x", "ax_1"], ["rsum_keep"]),
        node("ReduceSum", ["x", "ax_02"], ["rsum_nokeep"], keepdims=0),
        node("ReduceSum", ["x"], ["rsum_all"]),
        node("ReduceSum", ["x"], ["rsum_all_nokeep"], keepdims=0),
        node("ReduceSum", ["x", "ax_empty"], ["rsum_noop"], noop_with_empty_axes=1),
        node("ReduceSum", ["x", "ax_neg"], ["rsum_neg"], keepdims=0),
        node("ReduceSum", ["xs", "ax_0"], ["rsum_sym"], keepdims=0),
        node("ReduceMean", ["x", "ax_1"], ["rmean_keep"]),
        node("ReduceMean", ["x", "ax_02"], ["rmean_nokeep"], keepdims=0),
        node("ReduceMean", ["x"], ["rmean_all"]),
        node("ReduceMean", ["x", "ax_empty"], ["rmean_noop"], noop_with_empty_axes=1),
        node("ReduceMean", ["xs", "ax_0"], ["rmean_sym"], keepdims=1),
        node("ReduceMean", ["xs", "ax_neg"], ["rmean_sym_last"], keepdims=0),
    ]
    inits = [i64("ax_1", [1]), i64("ax_02", [0, 2]), i64("ax_empty", np.zeros(0, np.int64)),
             i64("ax_neg", [-1]), i64("ax_0", [0])]
    m = model("softmax_reduce", nodes, [("x", F32, [2, 3, 4]), ("xs", F32, ["N", 5])],
              [(n.output[0], F32) for n in nodes], inits, opset=18)
    check("softmax_reduce", m, [{"x": randn(2, 3, 4) * 3, "xs": randn(n, 5)} for n in (1, 6)])


def softmax_opset13():
    nodes = [node("Softmax", ["x"], ["sm13_1"], axis=1),
             node("Softmax", ["x"], ["sm13_default"]),
             node("ReduceSum", ["x", "ax"], ["rs13"], keepdims=1),
             node("ReduceMean", ["x"], ["rm13"], axes=[0, -1], keepdims=0)]
    m = model("softmax_opset13", nodes, [("x", F32, [2, 3, 4])],
              [(n.output[0], F32) for n in nodes], [i64("ax", [2])], opset=13)
    check("softmax_opset13", m, [{"x": randn(2, 3, 4)}])


# --------------------------------------------------------------------------
# Cast, Constant, Identity, Shape, int64 shape arithmetic
# --------------------------------------------------------------------------
def misc():
    nodes = [
        node("Cast", ["x"], ["to_i64"], to=I64),
        node("Cast", ["to_i64"], ["i64_to_f32"], to=F32),
        node("Cast", ["x"], ["to_i32"], to=I32),
        node("Cast", ["to_i32"], ["i32_to_f32"], to=F32),
        node("Cast", ["x"], ["to_bool"], to=BOOL),
        node("Cast", ["to_bool"], ["bool_to_f32"], to=F32),
        node("Cast", ["iv"], ["int_in_to_f32"], to=F32),
        helper.make_node("Constant", [], ["c_value"], name="const_value",
                         value=numpy_helper.from_array(randn(2, 3), "cv")),
        helper.make_node("Constant", [], ["c_float"], name="const_float", value_float=2.5),
        helper.make_node("Constant", [], ["c_ints"], name="const_ints", value_ints=[3, -1, 7]),
        node("Add", ["x", "c_value"], ["add_const"]),
        node("Mul", ["x", "c_float"], ["mul_const_float"]),
        node("Add", ["iv", "c_ints"], ["add_const_ints"]),
        node("Identity", ["x"], ["ident"]),
        node("Identity", ["iv"], ["ident_i64"]),
        node("Shape", ["xs"], ["shape_all"]),
        node("Shape", ["xs"], ["shape_start"], start=1),
        node("Shape", ["xs"], ["shape_start_end"], start=0, end=-1),
        node("Shape", ["xs"], ["shape_neg_start"], start=-2),
        node("Mul", ["shape_all", "two64"], ["shape_mul"]),
        node("Add", ["shape_all", "one64"], ["shape_add"]),
        node("Sub", ["iv", "one64"], ["i64_sub"]),
        node("Neg", ["iv"], ["i64_neg"]),
        node("Abs", ["iv"], ["i64_abs"]),
        node("Div", ["iv", "two64"], ["i64_div"]),
    ]
    inits = [i64("two64", 2), i64("one64", [1])]
    outs = [(n.output[0], {"to_i64": I64, "to_i32": I32, "to_bool": BOOL}.get(n.output[0], F32))
            for n in nodes]
    int_outs = {"add_const_ints", "ident_i64", "shape_all", "shape_start", "shape_start_end",
                "shape_neg_start", "shape_mul", "shape_add", "i64_sub", "i64_neg", "i64_abs",
                "i64_div"}
    outs = [(o, I64 if o in int_outs else t) for o, t in outs]
    m = model("misc", nodes, [("x", F32, [2, 3]), ("iv", I64, [3]), ("xs", F32, ["N", 3, 2])],
              outs, inits)

    def feeds(n):
        return {"x": randn(2, 3) * 5, "iv": rng.integers(-9, 9, 3).astype(np.int64),
                "xs": randn(n, 3, 2)}
    check("misc", m, [feeds(1), feeds(4)])


# --------------------------------------------------------------------------
# Symbolic dims: run-time broadcasting (a dim that is 1 in one run and not in
# the other), dynamic spatial dims, rank-0 inputs; more pooling and 3-D
# --------------------------------------------------------------------------
def dynbcast():
    nodes = [node("Add", ["x", "y"], ["add_dyn"]), node("Mul", ["y", "x"], ["mul_dyn"]),
             node("MatMul", ["a", "b"], ["mm_dyn_bcast"])]
    m = model("dynbcast", nodes, [("x", F32, ["N", 4]), ("y", F32, ["M", 4]),
              ("a", F32, ["B", 2, 3]), ("b", F32, ["C", 3, 2])], [(n.output[0], F32) for n in nodes])
    check("dynbcast", m, [{"x": randn(3, 4), "y": randn(1, 4), "a": randn(1, 2, 3), "b": randn(4, 3, 2)},
                          {"x": randn(1, 4), "y": randn(5, 4), "a": randn(3, 2, 3), "b": randn(1, 3, 2)}])

def dynspatial():
    nodes = [node("Conv", ["x", "w"], ["conv_dyn"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Softmax", ["x"], ["sm_dyn"], axis=2),
             node("ReduceMean", ["x", "ax"], ["rm_dyn"], keepdims=0),
             node("Relu", ["s"], ["relu_scalar"]),
             node("Slice", ["x", "st", "en", "axs", "stp"], ["slice_dyn"]),
             node("Flatten", ["x"], ["flat_dyn"], axis=2),
             node("Transpose", ["x"], ["tr_dyn"]),
             node("GlobalAveragePool", ["x"], ["gap_dyn"]),
             ]
    m = model("dynspatial", nodes, [("x", F32, ["N", 2, "H", "W"]), ("s", F32, [])],
              [(n.output[0], F32) for n in nodes],
              [init("w", randn(3, 2, 3, 3)), i64("ax", [2, 3]), i64("st", [-1, 1]), i64("en", [-1000, 100]),
               i64("axs", [2, 3]), i64("stp", [-2, 2])], opset=18)
    check("dynspatial", m, [{"x": randn(1, 2, 5, 6), "s": np.array(-1.5, np.float32)},
                            {"x": randn(2, 2, 8, 3), "s": np.array(2.5, np.float32)}])

def poolmore():
    nodes = [node("MaxPool", ["x"], ["mp_sl"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"),
             node("MaxPool", ["x"], ["mp_ceil_dil"], kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 2], ceil_mode=1),
             node("AveragePool", ["x"], ["ap_su_incl"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER", count_include_pad=1),
             node("AveragePool", ["x"], ["ap_valid"], kernel_shape=[3, 2], auto_pad="VALID", strides=[2, 2]),
             node("AveragePool", ["x"], ["ap_dil"], kernel_shape=[2, 2], dilations=[2, 1], pads=[1, 1, 1, 1]),
             node("MaxPool", ["x3"], ["mp_3d"], kernel_shape=[2, 2, 2], strides=[1, 2, 2]),
             node("Conv", ["x3", "w3"], ["conv_3d"], pads=[1, 0, 1, 0, 1, 1]),
             ]
    m = model("poolmore", nodes, [("x", F32, [1, 2, 9, 7]), ("x3", F32, [1, 2, 4, 5, 6])],
              [(n.output[0], F32) for n in nodes], [init("w3", randn(3, 2, 2, 3, 2))], opset=19)
    check("poolmore", m, [{"x": randn(1, 2, 9, 7), "x3": randn(1, 2, 4, 5, 6)}])

for fn in (matmul, gemm, conv, unary, clip_old_opset, binary, pool, shapes, squeeze_opset11,
           slice_gather, softmax_reduce, softmax_opset13, misc, dynbcast, dynspatial, poolmore):
    fn()

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("ALL PASS")
