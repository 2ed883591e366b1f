# RUN: %python %s %t
"""Math, logic, comparison, cast and generator ops, compiled by kilnc and
compared with onnxruntime on seeded random inputs, unsigned and narrow float
types included; models with symbolic dims run at two sizes."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln_tools

rng = np.random.default_rng(4321)
F32, F16, F64, I64, I32, U8, U16, U32, BOOL = (
    TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64,
    TensorProto.INT32, TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32,
    TensorProto.BOOL)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def model(name, nodes, inputs, outputs, inits=(), opset=21):
    vi_in = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    vi_out = [helper.make_tensor_value_info(o[0], o[1], None) for o in outputs]
    g = helper.make_graph(nodes, name, vi_in, vi_out, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


def unary_math():
    ops = [("Sin", {}), ("Cos", {}), ("Tan", {}), ("Atan", {}), ("Sinh", {}),
           ("Cosh", {}), ("Asinh", {}), ("Erf", {}), ("Floor", {}), ("Ceil", {}),
           ("Round", {}), ("Sign", {}), ("Reciprocal", {}), ("Softplus", {}),
           ("Softsign", {}), ("Mish", {}), ("HardSwish", {}), ("Elu", {"alpha": 0.7}),
           ("Selu", {}), ("Celu", {"alpha": 2.0}), ("ThresholdedRelu", {"alpha": 0.3}),
           ("Gelu", {}), ("Gelu", {"approximate": "tanh"})]
    nodes = [node(op, ["x"], [f"{op.lower()}_{i}"], **a) for i, (op, a) in enumerate(ops)]
    nodes += [node("Asin", ["u"], ["asin"]), node("Acos", ["u"], ["acos"]),
              node("Atanh", ["u"], ["atanh"]), node("Acosh", ["p"], ["acosh"])]
    m = model("unary_math", nodes,
              [("x", F32, ["N", 5]), ("u", F32, ["N", 5]), ("p", F32, ["N", 5])],
              [(n.output[0], F32) for n in nodes])
    check("unary_math", m, [{"x": randn(n, 5) * 2, "u": rng.uniform(-0.9, 0.9, (n, 5)).astype(np.float32),
                             "p": rng.uniform(1.1, 4, (n, 5)).astype(np.float32)} for n in (1, 3)])


def logic():
    nodes = [node("Less", ["a", "b"], ["lt"]), node("GreaterOrEqual", ["a", "b"], ["ge"]),
             node("Equal", ["ia", "ib"], ["eq"]), node("Greater", ["ua", "ub"], ["gt_u8"]),
             node("And", ["lt", "eq"], ["and"]), node("Xor", ["ge", "eq"], ["xor"]),
             node("Not", ["and"], ["not"]), node("Where", ["lt", "a", "b"], ["where"]),
             node("Max", ["a", "b", "c"], ["max"]), node("Min", ["ua", "ub"], ["min_u8"]),
             node("Sum", ["a", "b", "c"], ["sum"]), node("Mean", ["a", "c"], ["mean"]),
             node("Mod", ["ia", "ib"], ["mod"]), node("Mod", ["a", "b"], ["fmod"], fmod=1),
             node("BitwiseXor", ["ua", "ub"], ["bxor"]),
             node("BitShift", ["ua", "sh"], ["shl"], direction="LEFT"),
             node("IsNaN", ["a"], ["isnan"]), node("PRelu", ["a", "slope"], ["prelu"])]
    outs = [("lt", BOOL), ("ge", BOOL), ("eq", BOOL), ("gt_u8", BOOL), ("and", BOOL),
            ("xor", BOOL), ("not", BOOL), ("where", F32), ("max", F32), ("min_u8", U32),
            ("sum", F32), ("mean", F32), ("mod", I32), ("fmod", F32), ("bxor", U32),
            ("shl", U32), ("isnan", BOOL), ("prelu", F32)]
    inits = [init("c", randn(4)), init("slope", randn(4)),
             init("sh", np.array([0, 1, 3, 9], dtype=np.uint32))]
    m = model("logic", nodes,
              [("a", F32, ["N", 4]), ("b", F32, [1, 4]), ("ia", I32, ["N", 4]),
               ("ib", I32, ["N", 4]), ("ua", U32, ["N", 4]), ("ub", U32, ["N", 4])],
              outs, inits)

    def feeds(n):
        ib = rng.integers(-5, 6, (n, 4)).astype(np.int32)
        ib[ib == 0] = 3
        return {"a": randn(n, 4), "b": randn(1, 4), "ia": rng.integers(-20, 20, (n, 4)).astype(np.int32),
                "ib": ib, "ua": rng.integers(0, 2**32 - 1, (n, 4)).astype(np.uint32),
                "ub": rng.integers(0, 2**32 - 1, (n, 4)).astype(np.uint32)}
    check("logic", m, [feeds(n) for n in (2, 5)])


def casts():
    pairs = [("f32_to_f16", F32, F16), ("f32_to_f64", F32, F64), ("f32_to_i32", F32, I32),
             ("f32_to_u8", F32, U8), ("f32_to_bool", F32, BOOL), ("u16_to_f32", U16, F32),
             ("u16_to_i64", U16, I64), ("i64_to_u8", I64, U8), ("f16_to_f32", F16, F32)]
    nodes = [node("Cast", [f"in_{src}"], [name], to=dst) for name, src, dst in pairs]
    nodes.append(node("CastLike", ["in_1", "like"], ["castlike"]))
    srcs = sorted({src for _, src, _ in pairs})
    m = model("casts", nodes, [(f"in_{s}", s, ["N", 6]) for s in srcs],
              [(name, dst) for name, _, dst in pairs] + [("castlike", F64)],
              [init("like", np.zeros(1, dtype=np.float64))])
    np_of = {F32: np.float32, F16: np.float16, U16: np.uint16, I64: np.int64}

    def feeds(n):
        f = {}
        for s in srcs:
            if s in (F32, F16):
                f[f"in_{s}"] = (rng.uniform(0, 200, (n, 6)) * rng.choice([0, 1], (n, 6))).astype(np_of[s])
            else:
                f[f"in_{s}"] = rng.integers(0, 60000 if s == U16 else 250, (n, 6)).astype(np_of[s])
        return f
    check("casts", m, [feeds(n) for n in (1, 4)], max_rel=1e-3)


def generate():
    nodes = [node("Expand", ["x", "eshape"], ["expand"]),
             node("Tile", ["x", "reps"], ["tile"]),
             node("Trilu", ["m", "k"], ["triu"]), node("Trilu", ["m"], ["tril"], upper=0),
             node("EyeLike", ["m"], ["eye"], k=1, dtype=TensorProto.INT32),
             node("OneHot", ["idx", "depth", "vals"], ["onehot"], axis=0),
             node("Range", ["r0", "r1", "r2"], ["range"]),
             node("Shape", ["x"], ["xshape"]),
             node("ConstantOfShape", ["xshape"], ["cos"],
                  value=numpy_helper.from_array(np.array([7], dtype=np.uint8))),
             node("Size", ["x"], ["size"]), node("Dropout", ["x"], ["drop", "mask"])]
    inits = [init("eshape", np.array([2, 1, 3], dtype=np.int64)),
             init("reps", np.array([2, 3], dtype=np.int64)),
             init("k", np.array(-1, dtype=np.int64)), init("depth", np.array(5, dtype=np.int64)),
             init("vals", np.array([0.5, 2.0], dtype=np.float32)),
             init("r1", np.array(20, dtype=np.int64)), init("r2", np.array(3, dtype=np.int64))]
    m = model("generate", nodes,
              [("x", F32, ["N", 1]), ("m", F32, ["N", 4]), ("idx", I64, ["N"]), ("r0", I64, [])],
              [("expand", F32), ("tile", F32), ("triu", F32), ("tril", F32), ("eye", I32),
               ("onehot", F32), ("range", I64), ("cos", U8), ("size", I64), ("drop", F32),
               ("mask", BOOL)], inits)
    check("generate", m, [{"x": randn(n, 1), "m": randn(n, 4),
                           "idx": rng.integers(-5, 7, (n,)).astype(np.int64),
                           "r0": np.array(n, dtype=np.int64)} for n in (2, 5)])


for fn in (unary_math, logic, casts, generate):
    fn()

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("ALL PASS")
