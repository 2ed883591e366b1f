# RUN: %python %s %t
"""Every op kiln-mixed-precision may run in half, behind a MatMul so that it
does: each model is compiled in fp32, fp16 and bf16 and the reduced builds
must stay close to the fp32 build (no new NaN/Inf), and the op must really
have run in half (the compile report)."""
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
BIN = os.path.dirname(subprocess.run(["which", "kilnc"], capture_output=True, text=True).stdout.strip())
rng = np.random.default_rng(0)
n = helper.make_node
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def c(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


# (name, nodes after "h" = MatMul(x[2,4,8,8] viewed as 2x4x8x8, I), extra initializers,
#  output shape). "h" is [2, 4, 8, 8] in half.
CASES = [
    ("unary", [n(op, ["h"], [f"u{i}"], name=op) for i, op in enumerate(
        ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Softsign"])]
     + [n("Sum", [f"u{i}" for i in range(6)], ["y"], name="sum")], [], [2, 4, 8, 8]),
    # Discontinuous ops: exact inputs (quarter steps, an exact identity) so
    # that half rounding cannot move a value across a step.
    ("steps", [n(op, ["h"], [f"u{i}"], name=op) for i, op in enumerate(["Floor", "Ceil", "Round", "Sign"])]
     + [n("Sum", [f"u{i}" for i in range(4)], ["y"], name="sum")], [], [2, 4, 8, 8]),
    ("activations", [n("LeakyRelu", ["h"], ["a"], name="lrelu", alpha=0.1),
                     n("Elu", ["a"], ["b"], name="elu"), n("Selu", ["b"], ["b3"], name="selu"),
                     n("HardSigmoid", ["b3"], ["d"], name="hsig"), n("HardSwish", ["d"], ["e"], name="hswish"),
                     n("ThresholdedRelu", ["h"], ["s"], name="trelu", alpha=0.5),
                     n("PRelu", ["h", "slope"], ["p"], name="prelu"),
                     n("Clip", ["p", "lo", "hi"], ["cl"], name="clip"),
                     n("Add", ["e", "s"], ["q"], name="add"), n("Mul", ["q", "cl"], ["y"], name="mul")],
     [c("slope", rng.random((4, 1, 1)) * 0.3), c("lo", -1.0), c("hi", 1.5)], [2, 4, 8, 8]),
    ("arith", [n("Abs", ["h"], ["a"], name="abs"), n("Add", ["a", "one"], ["a1"], name="add1"),
               n("Sqrt", ["a1"], ["s"], name="sqrt"), n("Reciprocal", ["a1"], ["r"], name="recip"),
               n("Div", ["h", "a1"], ["d"], name="div"), n("Sub", ["s", "r"], ["e"], name="sub"),
               n("Max", ["d", "e"], ["m"], name="max"), n("Min", ["m", "h"], ["m2"], name="min"),
               n("Mean", ["m2", "d"], ["y"], name="mean")], [c("one", 1.0)], [2, 4, 8, 8]),
    ("compare_where", [n("Greater", ["h", "zero"], ["g"], name="greater"),
                       n("Neg", ["h"], ["nh"], name="neg"),
                       n("Where", ["g", "h", "nh"], ["y"], name="where")], [c("zero", 0.0)], [2, 4, 8, 8]),
    ("movement", [n("Transpose", ["h"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
                  n("Reshape", ["t", "shape"], ["r"], name="reshape"),
                  n("Slice", ["r", "st", "en", "ax"], ["s"], name="slice"),
                  n("Concat", ["s", "s"], ["cc"], name="concat", axis=1),
                  n("Unsqueeze", ["cc", "ax0"], ["u"], name="unsqueeze"),
                  n("Squeeze", ["u", "ax0"], ["sq"], name="squeeze"),
                  n("Flatten", ["sq"], ["y"], name="flatten", axis=1)],
     [c("shape", [2, 64, 4], np.int64), c("st", [8], np.int64), c("en", [40], np.int64),
      c("ax", [1], np.int64), c("ax0", [0], np.int64)], [2, 256]),
    ("gather_pad_tile", [n("Gather", ["h", "idx"], ["g"], name="gather", axis=1),
                         n("Pad", ["g", "pads", "pv"], ["p"], name="pad", mode="constant"),
                         n("Tile", ["p", "reps"], ["t"], name="tile"),
                         n("Expand", ["t", "eshape"], ["y"], name="expand")],
     [c("idx", [3, 0, 2], np.int64), c("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64), c("pv", 0.5),
      c("reps", [1, 1, 1, 2], np.int64), c("eshape", [2, 3, 10, 20], np.int64)], [2, 3, 10, 20]),
    ("split_gathers", [n("Split", ["h", "sp"], ["a", "b"], name="split", axis=1),
                       n("GatherElements", ["a", "ge"], ["ga"], name="gather_elements", axis=3),
                       n("GatherND", ["b", "gnd"], ["gb"], name="gather_nd", batch_dims=0),
                       n("ReduceMax", ["ga"], ["rm"], name="reduce_max", axes=[3], keepdims=1),
                       n("ReduceMin", ["gb"], ["rn"], name="reduce_min", axes=[3], keepdims=1),
                       n("Add", ["rm", "rn"], ["y"], name="add")],
     [c("sp", [2, 2], np.int64), c("ge", rng.integers(0, 8, (2, 2, 8, 8)), np.int64),
      c("gnd", [[0], [1]], np.int64)], [2, 2, 8, 1]),
    ("pools_resize", [n("MaxPool", ["h"], ["mp"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
                      n("AveragePool", ["h"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
                      n("Add", ["mp", "ap"], ["s"], name="add"),
                      n("Resize", ["s", "", "scales"], ["rs"], name="resize", mode="linear"),
                      n("DepthToSpace", ["rs"], ["d2s"], name="d2s", blocksize=2),
                      n("SpaceToDepth", ["d2s"], ["y"], name="s2d", blocksize=2)],
     [c("scales", [1.0, 1.0, 2.0, 2.0])], [2, 4, 8, 8]),
    ("argmax_small_reduce", [n("ArgMax", ["h"], ["am"], name="argmax", axis=3, keepdims=0),
                             n("Cast", ["am"], ["amf"], name="cast", to=F),
                             n("ReduceSum", ["h", "rax"], ["rs"], name="reduce_sum", keepdims=0),
                             n("ReduceMean", ["h"], ["rmn"], name="reduce_mean", axes=[3], keepdims=0),
                             n("Add", ["rs", "rmn"], ["s"], name="add"),
                             n("Add", ["s", "amf"], ["y"], name="add2")],
     [c("rax", [3], np.int64)], [2, 4, 8]),
]
# Ops expected in half per case (the rest may legitimately stay fp32; Celu is
# not here: its ONNX schema is float-only, so it stays fp32).
HALF = {
    "unary": ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Softsign", "sum"],
    "steps": ["Floor", "Ceil", "Round", "Sign", "sum"],
    "activations": ["lrelu", "elu", "selu", "hsig", "hswish", "trelu", "prelu", "clip", "mul"],
    "arith": ["sqrt", "recip", "div", "sub", "max", "min", "mean"],
    "compare_where": ["greater", "where"],
    "movement": ["transpose", "reshape", "slice", "concat", "unsqueeze", "squeeze", "flatten"],
    "gather_pad_tile": ["gather", "pad", "tile", "expand"],
    "split_gathers": ["split", "gather_elements", "gather_nd", "reduce_max", "reduce_min", "add"],
    "pools_resize": ["maxpool", "avgpool", "resize", "d2s", "s2d"],
    "argmax_small_reduce": ["argmax", "reduce_sum", "reduce_mean"],
}

failures = []
for name, nodes, inits, out_shape in CASES:
    exact = name == "steps"
    eye = c("eye", np.eye(8) if exact else np.eye(8) + 0.01 * rng.standard_normal((8, 8)))
    graph = helper.make_graph(
        [n("MatMul", ["x", "eye"], ["h"], name="mm")] + nodes, name,
        [helper.make_tensor_value_info("x", F, [2, 4, 8, 8])],
        [helper.make_tensor_value_info("y", F, out_shape)], [eye] + inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    x = rng.standard_normal((2, 4, 8, 8)) * 2
    if exact:
        x = np.round(x * 4) / 4 + 0.125  # quarter steps, never on a Round tie
    files = kiln_tools.write_inputs([("x", x.astype(np.float32))], os.path.join(work, name + "_in"))
    outs = {}
    for prec in ["fp32", "fp16", "bf16"]:
        so = os.path.join(work, f"{name}_{prec}.so")
        rep = os.path.join(work, f"{name}_{prec}.json")
        kiln_tools.run_tool(["kilnc", path, "-o", so, f"--precision={prec}", f"--report={rep}"])
        outs[prec] = kiln_tools.run_model(so, files, os.path.join(work, f"{name}_out_{prec}"))[0][1]
        if prec != "fp32":
            with open(rep) as f:
                plan = {p["node"]: p for p in json.load(f)["precision"]["nodes"]}
            for node in HALF[name]:
                if plan.get(node, {}).get("precision") != prec:
                    failures.append(f"{name} {prec}: '{node}' not in {prec}: {plan.get(node)}")
    ref = kiln_tools.ort_run(model, {"x": numpy_helper.to_array(onnx.load_tensor(files[0][1]))})[0]
    e = kiln_tools.error_stats(ref, outs["fp32"])
    if e["max_rel"] > 1e-4:
        failures.append(f"{name} fp32 vs onnxruntime: {kiln_tools.format_stats(e)}")
    for prec, limit in [("fp16", 5e-3), ("bf16", 3e-2)]:
        e = kiln_tools.error_stats(outs["fp32"], outs[prec])
        print(f"{name} {prec}: {kiln_tools.format_stats(e)}")
        if e["nonfinite"] or e["rel_l2"] > limit:
            failures.append(f"{name} {prec}: {kiln_tools.format_stats(e)}")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS mixed precision ops")
