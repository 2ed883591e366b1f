#!/usr/bin/env python3
"""Fills the weights of an ONNX model with seeded values scaled like a trained
network, and writes the filled model and (optionally) a Kiln weights file in
the layout `kilnc --external-weights` compiled a model.so for.

  fill_weights.py MODEL.onnx --seed N --out-model FILLED.onnx
                  [--weights FILE --manifest MODEL.weights.json]
  fill_weights.py MODEL.onnx --manifest MODEL.weights.json --weightless GRAPH.onnx

The first form fills the model's weights and writes FILLED.onnx (every
initializer embedded, for onnxruntime) and, with --weights, the Kiln weights
file: a 64-byte header (magic KILNWTS1, the layout hash, the file size, the
number of weights, the CRC-32 of the rest) and each weight's bytes exactly as ONNX stores raw_data, at
the offsets of the manifest kilnc wrote next to its own weights file
(FILE.json: name, dtype, dims, offset, bytes of every weight; the manifest is
the contract). A model.so compiled with --external-weights then runs on the
new weights without recompiling: `kiln-run model.so --weights FILE ...` (or
put FILE next to model.so under the name kilnc recorded).

The second form writes the "weightless" graph: MODEL.onnx with every floating
point tensor of the manifest turned into an ONNX external-data reference into
the weights file (location = the manifest's file name, offset, length). It is
small enough to carry to a machine without the original weights; fill it
there with the first form (onnxruntime can also load it directly when the
weights file lies next to it).

Which tensors are filled: with a manifest, exactly its tensors (the others
are embedded in model.so and keep their values); without one, every
floating-point initializer of at least --min-bytes bytes (kilnc's default,
1024) and every initializer whose data is missing. Integer and bool tensors
are never invented: their values are copied (they are indices, shapes, masks
or quantized data).

Values, by the op that consumes the tensor (through Identity, Cast,
Transpose, Reshape, (Un)Squeeze):
  Conv/ConvTranspose weight    He normal, std sqrt(2 / fan_in)
  Gemm/MatMul weight           std sqrt(1 / fan_in) (LeCun, variance preserving)
  biases (Conv, Gemm, Add, Sub) N(0, 0.02)
  BatchNormalization scale/bias, LayerNormalization, InstanceNormalization,
  GroupNormalization scale/bias  1 + N(0, 0.05) / N(0, 0.05)
  BatchNormalization mean/var  from data (below)
  Gather data (embeddings)     N(0, 0.02)
  LSTM/GRU/RNN W, R, B         U(-1/sqrt(hidden), 1/sqrt(hidden)) (torch)
  Mul/Div operand              1 + N(0, 0.05)
  anything else                N(0, 0.02)
"Normal" values are (u1 + u2 + u3 + u4 - 2) * sqrt(3) of uniforms u made from
the raw 64-bit outputs of numpy's PCG64 (np.random.default_rng([seed,
crc32(name)]), one stream per tensor name), using only IEEE-exact arithmetic:
the same seed gives bit-identical tensors on every machine and numpy version.

Statistics from data (unless --no-calibrate): the model runs in onnxruntime
on a seeded batch of inputs (--batch, --dim), layer by layer in topological
order, each step feeding the statistics fixed so far: every
BatchNormalization whose running mean/var are filled gets the mean and
variance of its input; every Conv whose weight is filled and whose output
feeds no BatchNormalization (a network exported with batch norms folded) is
rescaled per output channel so its output has mean N(0, 0.05) and standard
deviation 1 + N(0, 0.05), as folding a batch norm would. These numbers come
from onnxruntime's arithmetic, so they can differ in the last bits between
machines or onnxruntime versions: compare Kiln and onnxruntime on the files
written on the machine that runs them, or measure once with --save-stats
FILE.json and fill elsewhere with --load-stats FILE.json (no onnxruntime run;
the same bits everywhere).

Residual branches (--residual-scale): where an Add sums two computed tensors
that pass through different numbers of Convs (x + F(x), or a projection
shortcut + F(x)), the deeper one ends a residual branch; when a Conv (through
the calibration) or a BatchNormalization (its scale and bias) makes it, its
mean and standard deviation above are multiplied by K = 1/sqrt(R), R the
number of such branches (ResNet-50 16: 0.25; MobileNetV2 10: 0.32), so the
branches together add about as much variance as the shortcut path carries
(the scaling of SkipInit / Fixup and of zero-init-residual training). Why:
with random weights, every layer normalized about its data mean (what folding
a batch norm is) after a ReLU multiplies the energy of a random perturbation,
rounding included, relative to the signal by pi/(pi-1) = 1.47 (a third of the
ReLU's output energy is a per-channel constant, which the next layer's mean
removes; random weights pass noise and signal alike), and unit-std branches
let that compound over the whole depth: the network is chaotic, and fp16
rounding grows layer by layer. Measured (seed 1, batch 1, noise inputs,
onnxruntime): a 1e-3 relative input perturbation moved ResNet-50's logits by
3.1e-2 and fp16 storage gave rel L2 2.5e-2 against fp32 (MobileNetV2 1.9e-2 /
1.4e-2); with K = 1/sqrt(R) 1.8e-3 / 1.6e-3 (MobileNetV2 5.3e-3 / 3.7e-3: the
rest comes from its non-residual blocks). --residual-scale 1 gives the
earlier weights bit for bit.

Runs with numpy 1.x or 2.x, onnx >= 1.14 and onnxruntime (only for the
statistics); no LLVM, no Kiln build.
"""
import argparse
import json
import math
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper

HEADER_BYTES = 64
MAGIC = b"KILNWTS1"

# ONNX element type -> (Kiln dtype name, numpy dtype or None, bytes, kind)
# kind: "float" (filled), "bf16" (filled, stored as bits), "int" (copied)
TYPES = {
    TensorProto.FLOAT: ("f32", np.float32, 4, "float"),
    TensorProto.DOUBLE: ("f64", np.float64, 8, "float"),
    TensorProto.FLOAT16: ("f16", np.float16, 2, "float"),
    TensorProto.BFLOAT16: ("bf16", np.uint16, 2, "bf16"),
    TensorProto.INT8: ("i8", np.int8, 1, "int"),
    TensorProto.INT16: ("i16", np.int16, 2, "int"),
    TensorProto.INT32: ("i32", np.int32, 4, "int"),
    TensorProto.INT64: ("i64", np.int64, 8, "int"),
    TensorProto.UINT8: ("u8", np.uint8, 1, "int"),
    TensorProto.UINT16: ("u16", np.uint16, 2, "int"),
    TensorProto.UINT32: ("u32", np.uint32, 4, "int"),
    TensorProto.UINT64: ("u64", np.uint64, 8, "int"),
    TensorProto.BOOL: ("bool", np.uint8, 1, "int"),
    17: ("f8e4m3fn", np.uint8, 1, "int"),
    18: ("f8e4m3fnuz", np.uint8, 1, "int"),
    19: ("f8e5m2", np.uint8, 1, "int"),
    20: ("f8e5m2fnuz", np.uint8, 1, "int"),
}
PASS_THROUGH = {"Identity", "Cast", "Transpose", "Reshape", "Squeeze", "Unsqueeze",
                "Flatten"}


class FillError(Exception):
    pass


# ---------------------------------------------------------------------------
# Deterministic values
# ---------------------------------------------------------------------------

CHUNK = 1 << 20


def _stream(seed, key):
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def _uniform01(rng, n):
    raw = rng.bit_generator.random_raw(n)
    return (raw >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def normal(seed, key, n, std=1.0, mean=0.0):
    """n values of mean + std * (u1+u2+u3+u4-2)*sqrt(3), as float64."""
    rng = _stream(seed, key)
    out = np.empty(n, np.float64)
    s3 = math.sqrt(3.0)
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        u = _uniform01(rng, 4 * m).reshape(4, m)
        z = ((u[0] + u[1]) + (u[2] + u[3]) - 2.0) * s3
        out[start:start + m] = z * std + mean
    return out


def uniform(seed, key, n, a):
    rng = _stream(seed, key)
    out = np.empty(n, np.float64)
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        out[start:start + m] = _uniform01(rng, m) * (2.0 * a) - a
    return out


def to_bf16_bits(x32):
    bits = x32.astype(np.float32).view(np.uint32)
    rounding = ((bits >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
    return ((bits + rounding) >> np.uint32(16)).astype(np.uint16)


def encode(values64, onnx_type):
    """float64 values -> little-endian bytes of `onnx_type`."""
    _, npt, _, kind = TYPES[onnx_type]
    if kind == "bf16":
        return to_bf16_bits(values64.astype(np.float32)).astype("<u2").tobytes()
    return values64.astype(np.dtype(npt).newbyteorder("<")).tobytes()


def decode(raw, onnx_type, dims):
    """Bytes of a float tensor -> float64 array of shape dims."""
    _, npt, _, kind = TYPES[onnx_type]
    if kind == "bf16":
        bits = np.frombuffer(raw, "<u2").astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64).reshape(dims)
    return np.frombuffer(raw, np.dtype(npt).newbyteorder("<")).astype(np.float64).reshape(dims)


# ---------------------------------------------------------------------------
# Tensor data
# ---------------------------------------------------------------------------


def numel(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n


def tensor_nbytes(t):
    if t.data_type not in TYPES:
        return None
    return numel(t.dims) * TYPES[t.data_type][2]


def external_info(t):
    info = {kv.key: kv.value for kv in t.external_data}
    return info.get("location"), int(info.get("offset", 0) or 0), (
        int(info["length"]) if info.get("length") else None)


def raw_bytes(t, base_dir):
    """The tensor's data as raw little-endian bytes (ONNX raw_data layout), or
    None when it is stored externally in a file that is not there."""
    if t.data_location == TensorProto.EXTERNAL:
        location, offset, length = external_info(t)
        path = os.path.join(base_dir, location or "")
        if not location or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            f.seek(offset)
            n = length if length is not None else tensor_nbytes(t)
            data = f.read(n)
        if len(data) != n:
            raise FillError(f"initializer '{t.name}': external data in '{path}' is truncated")
        return data
    if t.HasField("raw_data"):
        return t.raw_data
    n = numel(t.dims)
    if n == 0:
        return b""
    _, npt, _, _ = TYPES[t.data_type]
    if t.data_type == TensorProto.FLOAT:
        return np.asarray(t.float_data, "<f4").tobytes()
    if t.data_type == TensorProto.DOUBLE:
        return np.asarray(t.double_data, "<f8").tobytes()
    if t.data_type == TensorProto.INT64:
        return np.asarray(t.int64_data, "<i8").tobytes()
    if t.data_type in (TensorProto.UINT32, TensorProto.UINT64):
        return np.asarray(t.uint64_data, np.uint64).astype(
            np.dtype(npt).newbyteorder("<")).tobytes()
    # int32_data holds one element (or its bit pattern) per entry.
    vals = np.asarray(t.int32_data, np.int64)
    if len(vals) == 0:
        return None
    layout = {TensorProto.INT32: "<i4", TensorProto.INT16: "<i2", TensorProto.INT8: "<i1",
              TensorProto.UINT16: "<u2", TensorProto.FLOAT16: "<u2",
              TensorProto.BFLOAT16: "<u2"}.get(t.data_type, "<u1")
    return vals.astype(layout).tobytes()


def set_raw(t, data):
    t.ClearField("float_data")
    t.ClearField("double_data")
    t.ClearField("int32_data")
    t.ClearField("int64_data")
    t.ClearField("uint64_data")
    t.ClearField("external_data")
    t.data_location = TensorProto.DEFAULT
    t.raw_data = data


# ---------------------------------------------------------------------------
# Roles
# ---------------------------------------------------------------------------


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def consumers_of(graph):
    uses = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((node, i))
    return uses


def role_of(name, dims, uses, depth=0):
    """(node, input index, effective dims) of the first real consumer."""
    for node, idx in uses.get(name, []):
        if node.op_type in PASS_THROUGH and idx == 0 and depth < 8 and node.output:
            eff = list(dims)
            if node.op_type == "Transpose":
                perm = attr(node, "perm") or list(reversed(range(len(dims))))
                if len(perm) == len(dims):
                    eff = [dims[p] for p in perm]
            found = role_of(node.output[0], eff, uses, depth + 1)
            if found[0] is not None:
                return found
            continue
        return node, idx, list(dims)
    return None, None, list(dims)


def residual_branches(graph):
    """The residual branches' last layers: for every Add of two computed
    tensors (no initializer) whose operands pass through different numbers of
    Convs from the graph's inputs -- x + F(x), or a projection shortcut +
    F(x) -- the deeper operand, F(x), when a Conv or a BatchNormalization
    produces it. Returns {that tensor's name: 1 / sqrt(number of such Adds)}."""
    inits = {t.name for t in graph.initializer}
    producer = {}
    depth = {}
    for node in graph.node:
        d = max([depth.get(n, 0) for n in node.input if n] + [0])
        d += node.op_type in ("Conv", "ConvTranspose")
        for o in node.output:
            producer[o] = node
            depth[o] = d
    ends = []
    for node in graph.node:
        if node.op_type != "Add" or len(node.input) != 2 or any(
                n in inits or not n for n in node.input):
            continue
        a, b = node.input
        if depth.get(a, 0) == depth.get(b, 0):
            continue
        end = a if depth.get(a, 0) > depth.get(b, 0) else b
        if end in producer and producer[end].op_type in ("Conv", "BatchNormalization"):
            ends.append(end)
    return {e: 1.0 / math.sqrt(len(ends)) for e in ends}


def fill_spec(name, dims, uses, branches=None):
    """('normal', std, mean) or ('uniform', a) for a weight. `branches`:
    residual_branches() of the graph (a batch norm ending a branch gets its
    scale and bias times the branch factor)."""
    node, idx, eff = role_of(name, dims, uses)
    op = node.op_type if node is not None else ""
    small = ("normal", 0.02, 0.0)
    if op == "Conv" and idx == 1 and len(eff) >= 2:
        fan_in = numel(eff[1:])
        return ("normal", math.sqrt(2.0 / max(fan_in, 1)), 0.0)
    if op == "ConvTranspose" and idx == 1 and len(eff) >= 2:
        fan_in = eff[0] * numel(eff[2:])
        return ("normal", math.sqrt(1.0 / max(fan_in, 1)), 0.0)
    if op in ("Conv", "ConvTranspose") and idx == 2:
        return small
    if op == "Gemm" and idx in (0, 1) and len(eff) == 2:
        if idx == 1:
            fan_in = eff[1] if attr(node, "transB", 0) else eff[0]
        else:
            fan_in = eff[0] if attr(node, "transA", 0) else eff[1]
        return ("normal", math.sqrt(1.0 / max(fan_in, 1)), 0.0)
    if op == "Gemm" and idx == 2:
        return small
    if op == "MatMul" and len(eff) >= 2:
        fan_in = eff[-2] if idx == 1 else eff[-1]
        return ("normal", math.sqrt(1.0 / max(fan_in, 1)), 0.0)
    if op == "BatchNormalization" and idx in (1, 2) and node.output[0] in (branches or {}):
        k = branches[node.output[0]]
        return ("normal", 0.05 * k, k) if idx == 1 else ("normal", 0.05 * k, 0.0)
    if op in ("BatchNormalization", "LayerNormalization", "InstanceNormalization",
              "GroupNormalization", "SkipLayerNormalization"):
        if idx == 1 or (op == "SkipLayerNormalization" and idx == 2):
            return ("normal", 0.05, 1.0)
        if op == "BatchNormalization" and idx == 3:
            return ("normal", 0.0, 0.0)  # measured from data
        if op == "BatchNormalization" and idx == 4:
            return ("normal", 0.0, 1.0)  # measured from data
        return ("normal", 0.05, 0.0)
    if op == "Gather" and idx == 0:
        return small
    if op in ("LSTM", "GRU", "RNN") and idx in (1, 2, 3):
        hidden = attr(node, "hidden_size") or (eff[-1] if eff else 1)
        return ("uniform", 1.0 / math.sqrt(max(hidden, 1)))
    if op in ("Mul", "Div"):
        return ("normal", 0.05, 1.0)
    if op == "PRelu":
        return ("normal", 0.02, 0.25)
    return small


# ---------------------------------------------------------------------------
# Calibration (statistics from data)
# ---------------------------------------------------------------------------


MIN_SAMPLES = 64
MAX_BATCHES = 32


def make_inputs(model, seed, batch, dims_override, inits, tag):
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    uses = consumers_of(graph)
    feeds = {}
    for vi in graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(d.dim_value)
            elif d.dim_param and d.dim_param in dims_override:
                shape.append(dims_override[d.dim_param])
            elif k == 0:
                shape.append(batch)
            else:
                raise FillError(
                    f"input '{vi.name}' dimension {k} ('{d.dim_param or '?'}') is symbolic: "
                    f"give it a size with --dim {d.dim_param or 'NAME'}=N")
        n = numel(shape)
        et = tt.elem_type
        if et in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
            v = normal(seed, "input:" + vi.name + tag, n).reshape(shape)
            feeds[vi.name] = v.astype({TensorProto.FLOAT: np.float32,
                                       TensorProto.FLOAT16: np.float16,
                                       TensorProto.DOUBLE: np.float64}[et])
        elif et == TensorProto.BOOL:
            feeds[vi.name] = uniform(seed, "input:" + vi.name + tag, n, 1.0).reshape(shape) > 0
        elif et in TYPES and TYPES[et][3] == "int":
            high = 2
            for node, idx in uses.get(vi.name, []):
                if node.op_type == "Gather" and idx == 1 and node.input[0] in inits:
                    t = inits[node.input[0]]
                    axis = attr(node, "axis", 0)
                    high = int(t.dims[axis])
            u = uniform(seed, "input:" + vi.name + tag, n, 0.5) + 0.5
            feeds[vi.name] = np.minimum((u * high).astype(np.int64), high - 1).astype(
                TYPES[et][1]).reshape(shape)
        else:
            raise FillError(f"input '{vi.name}' has an element type ({et}) the calibration "
                            "cannot make data for; use --no-calibrate")
    return feeds


def _hex(a):
    return [float(v).hex() for v in np.asarray(a, np.float64).reshape(-1)]


def _unhex(values, name, n):
    if not isinstance(values, list) or len(values) != n:
        raise FillError(f"statistics file: '{name}' needs {n} values")
    return np.array([float.fromhex(v) for v in values], np.float64)


def apply_stats(values, stats, seed):
    """Applies statistics saved by --save-stats (exact float64 values), so the
    filled tensors are the same bits as where they were measured."""
    if stats.get("format") != "kiln-fill-stats" or stats.get("seed") != seed:
        raise FillError(f"the statistics file is not from fill_weights.py --save-stats with "
                        f"seed {seed}")
    for e in stats["layers"]:
        names = [e["mean"], e["var"]] if e["kind"] == "bn" else [e["weight"]] + (
            [e["bias"]] if e.get("bias") else [])
        for name in names:
            if name not in values:
                raise FillError(f"statistics file: '{name}' is not a tensor being filled")
        if e["kind"] == "bn":
            for key in ("mean", "var"):
                v = values[e[key]]
                values[e[key]] = _unhex(e[key + "_values"], e[key], v.size).reshape(v.shape)
        else:
            w = values[e["weight"]]
            c = w.shape[0]
            scale = _unhex(e["scale"], e["weight"], c)
            values[e["weight"]] = w * scale.reshape([c] + [1] * (w.ndim - 1))
            if e.get("bias"):
                b = values[e["bias"]]
                values[e["bias"]] = _unhex(e["bias_values"], e["bias"], b.size).reshape(b.shape)
    return len(stats["layers"])


def calibrate(model, values, targets, seed, batch, dims_override, base_dir, log, record,
              branches=None):
    """Sets BatchNormalization running statistics and rescales Convs without a
    batch norm from the model's own activations, layer by layer. `values`
    maps a filled tensor's name to its float64 array (updated in place);
    what was set is appended to `record` (for --save-stats). `branches`:
    residual_branches() (a Conv ending a branch gets the branch factor times
    the usual mean and standard deviation)."""
    branches = branches or {}
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    uses = consumers_of(graph)
    float_types = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE)
    points = []  # (node index, kind, measured tensor, params)
    for i, node in enumerate(graph.node):
        if node.op_type == "BatchNormalization" and len(node.input) >= 5:
            mean, var = node.input[3], node.input[4]
            if mean in targets and var in targets:
                if inits[mean].data_type not in float_types:
                    log(f"warning: batch norm '{node.name}': statistics of type "
                        f"{inits[mean].data_type} are not calibrated")
                    continue
                points.append((i, "bn", node.input[0], [mean, var]))
        elif node.op_type == "Conv" and len(node.input) >= 2 and node.input[1] in targets:
            out = node.output[0]
            if any(u[0].op_type == "BatchNormalization" and u[1] == 0
                   for u in uses.get(out, [])):
                continue
            if inits[node.input[1]].data_type not in float_types:
                continue
            bias = node.input[2] if len(node.input) > 2 and node.input[2] in targets else None
            params = [node.input[1]] + ([bias] if bias else [])
            points.append((i, "conv", out, params))
    # Batch norms whose statistics stay as they are while the layers before
    # them change.
    affected = set(targets)
    for node in graph.node:
        if (node.op_type == "BatchNormalization" and len(node.input) >= 5 and
                node.input[3] not in targets and node.input[0] in affected):
            log(f"warning: batch norm '{node.name}': its running statistics are not in the "
                "set of filled tensors (embedded in the model: compile with a smaller "
                "--external-weights-min-bytes to make them external), so they are not "
                "calibrated")
        if any(n in affected for n in node.input if n):
            affected.update(node.output)
    if not points:
        return 0

    # Levels: a point depends on the points upstream of what it measures.
    point_at = {p[0]: k for k, p in enumerate(points)}
    level = [0] * len(points)
    dep = {}  # value name -> max level of points upstream

    def value_dep(name):
        return dep.get(name, 0)

    for i, node in enumerate(graph.node):
        d = max([value_dep(n) for n in node.input if n] + [0])
        if i in point_at:
            k = point_at[i]
            level[k] = d + 1
            d_out = d + 1
        else:
            d_out = d
        for o in node.output:
            dep[o] = d_out

    # The calibration model: parameters being calibrated become inputs,
    # measured tensors outputs.
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    cal_params = []
    for p in points:
        cal_params += p[3]
    cal_set = set(cal_params)
    keep = [t for t in m.graph.initializer if t.name not in cal_set]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    for name in cal_params:
        t = inits[name]
        m.graph.input.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
        types = {vi.name: vi.type.tensor_type.elem_type for vi in inferred.graph.value_info}
    except Exception:
        types = {}
    for vi in list(m.graph.input) + list(m.graph.output):
        types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    del m.graph.output[:]
    for p in points:
        et = types.get(p[2]) or inits[p[3][0]].data_type
        m.graph.output.append(helper.make_tensor_value_info(p[2], et, None))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    np_type = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16,
               TensorProto.DOUBLE: np.float64}
    # Enough samples per channel: a static batch of 1 with a small spatial
    # size leaves few values per channel in late layers, so the statistics
    # pool several seeded batches (at least MIN_SAMPLES values per channel,
    # at most MAX_BATCHES batches).
    feeds0 = make_inputs(model, seed, batch, dims_override, inits, "")
    for name in cal_params:
        feeds0[name] = values[name].astype(np_type[inits[name].data_type])
    samples = min(max(numel(o.shape) // max(o.shape[1], 1), 1) if o.ndim >= 2 else 1
                  for o in sess.run([p[2] for p in points], feeds0))
    runs = min(MAX_BATCHES, -(-MIN_SAMPLES // samples))
    batches = [feeds0] + [make_inputs(model, seed, batch, dims_override, inits, f":{r}")
                          for r in range(1, runs)]
    for lv in range(1, max(level) + 1):
        todo = [k for k in range(len(points)) if level[k] == lv]
        sums = {}
        for feeds in batches:
            for name in cal_params:
                feeds[name] = values[name].astype(np_type[inits[name].data_type])
            outs = sess.run([points[k][2] for k in todo], feeds)
            for k, out in zip(todo, outs):
                x = np.asarray(out, np.float64)
                if x.ndim < 2:
                    continue
                axes = tuple(a for a in range(x.ndim) if a != 1)
                n = numel(x.shape) // x.shape[1]
                s1, s2, cnt = sums.get(k, (0.0, 0.0, 0))
                sums[k] = (s1 + x.sum(axis=axes), s2 + (x * x).sum(axis=axes), cnt + n)
        for k in todo:
            if k not in sums:
                continue
            _, kind, measured, params = points[k]
            s1, s2, cnt = sums[k]
            mean = s1 / cnt
            var = np.maximum(s2 / cnt - mean * mean, 0.0)
            if kind == "bn":
                values[params[0]] = mean.reshape(values[params[0]].shape)
                values[params[1]] = var.reshape(values[params[1]].shape)
                record.append({"kind": "bn", "mean": params[0], "var": params[1],
                               "mean_values": _hex(mean), "var_values": _hex(var)})
            else:
                w = values[params[0]]
                c = w.shape[0]
                if mean.shape[0] != c:
                    continue
                std = np.sqrt(var)
                gamma = normal(seed, "calibrate:" + params[0], c, 0.05, 1.0)
                beta = normal(seed, "calibrate-shift:" + params[0], c, 0.05, 0.0)
                k = branches.get(measured)
                if k is not None and k != 1.0:
                    gamma, beta = gamma * k, beta * k
                scale = np.where(std > 1e-6, gamma / np.where(std > 1e-6, std, 1.0), 1.0)
                values[params[0]] = w * scale.reshape([c] + [1] * (w.ndim - 1))
                entry = {"kind": "conv", "weight": params[0], "scale": _hex(scale)}
                if len(params) > 1:
                    b = values[params[1]]
                    values[params[1]] = ((b - mean) * scale + beta).reshape(b.shape)
                    entry.update(bias=params[1], bias_values=_hex(values[params[1]]))
                record.append(entry)
    return len(points)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def load_manifest(path):
    try:
        with open(path) as f:
            man = json.load(f)
    except OSError as e:
        raise FillError(f"cannot read the manifest '{path}': {e.strerror}")
    except ValueError as e:
        raise FillError(f"'{path}' is not a JSON manifest: {e}")
    if man.get("format") != "kiln-weights" or man.get("version") != 1:
        raise FillError(f"'{path}' is not a Kiln weights manifest (format kiln-weights, "
                        "version 1)")
    return man


def check_against_manifest(inits, man, man_path):
    for w in man["weights"]:
        t = inits.get(w["name"])
        if t is None:
            raise FillError(f"the manifest '{man_path}' lists '{w['name']}', which is not an "
                            "initializer of the model: the model and the manifest do not match")
        dtype = TYPES.get(t.data_type, ("?",))[0]
        if dtype != w["dtype"] or list(t.dims) != list(w["dims"]):
            raise FillError(
                f"initializer '{w['name']}' is {dtype} {list(t.dims)} in the model, "
                f"{w['dtype']} {list(w['dims'])} in the manifest '{man_path}': the model and "
                "the manifest do not match")
        if numel(t.dims) * TYPES[t.data_type][2] != w["bytes"]:
            raise FillError(f"manifest '{man_path}': '{w['name']}' has {w['bytes']} bytes, "
                            f"expected {numel(t.dims) * TYPES[t.data_type][2]}")


def write_weights(path, man, data_of):
    size = int(man["file_bytes"])
    header = bytearray(HEADER_BYTES)
    header[0:8] = MAGIC
    header[8:16] = int(man["layout_hash"], 16).to_bytes(8, "little")
    header[16:24] = size.to_bytes(8, "little")
    header[24:32] = len(man["weights"]).to_bytes(8, "little")
    tmp = path + ".tmp"
    crc = 0
    with open(tmp, "wb") as f:
        f.write(header)
        at = HEADER_BYTES
        for w in sorted(man["weights"], key=lambda w: w["offset"]):
            data = data_of(w["name"])
            if len(data) != w["bytes"]:
                raise FillError(f"'{w['name']}': {len(data)} bytes, the manifest says "
                                f"{w['bytes']}")
            if w["offset"] < at:
                raise FillError(f"manifest: '{w['name']}' overlaps the previous weight")
            pad = b"\0" * (w["offset"] - at)
            f.write(pad)
            f.write(data)
            crc = zlib.crc32(data, zlib.crc32(pad, crc))
            at = w["offset"] + w["bytes"]
        if at != size:
            raise FillError(f"manifest: the weights end at {at}, file_bytes is {size}")
        # The CRC-32 of everything after the header, and the flag saying it is there.
        f.seek(32)
        f.write(crc.to_bytes(4, "little") + (1).to_bytes(4, "little"))
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fill an ONNX model's weights with seeded values (and write a Kiln "
                    "weights file), or write its weightless graph.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, help="seed of every value (required to fill)")
    ap.add_argument("--out-model", help="the filled ONNX model (initializers embedded)")
    ap.add_argument("--weights", help="also write the Kiln weights file (needs the manifest)")
    ap.add_argument("--manifest", help="the manifest kilnc --external-weights wrote "
                    "(FILE.weights.json); default: WEIGHTS.json when it exists")
    ap.add_argument("--weightless", metavar="GRAPH.onnx",
                    help="write the graph with the manifest's float tensors as external-data "
                         "references instead of filling")
    ap.add_argument("--min-bytes", type=int, default=1024,
                    help="without a manifest: fill float initializers of at least this many "
                         "bytes (kilnc's default, 1024)")
    ap.add_argument("--batch", type=int, default=4,
                    help="batch size of the calibration inputs' first symbolic dim (default 4)")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                    help="size of a symbolic input dim for the calibration run")
    ap.add_argument("--save-stats", metavar="FILE.json",
                    help="write the statistics taken from data (exact values; small)")
    ap.add_argument("--load-stats", metavar="FILE.json",
                    help="use statistics saved by --save-stats (same seed) instead of running "
                         "onnxruntime: the same tensors, bit for bit, on another machine")
    ap.add_argument("--no-calibrate", action="store_true",
                    help="no statistics from data (batch-norm mean 0, var 1)")
    ap.add_argument("--residual-scale", type=float, metavar="K",
                    help="standard deviation of the last layer of every residual branch "
                         "(default 1/sqrt(number of residual branches); 1: unit, like every "
                         "other layer)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))

    try:
        return run(args, log)
    except FillError as e:
        print(f"fill_weights.py: error: {e}", file=sys.stderr)
        return 1


def run(args, log):
    if args.weightless and (args.seed is not None or args.out_model or args.weights):
        raise FillError("--weightless writes a graph only; fill it in a second call")
    if not args.weightless and (args.seed is None or not args.out_model):
        raise FillError("give --seed N and --out-model FILLED.onnx (or --weightless GRAPH.onnx)")
    manifest_path = args.manifest
    if not manifest_path and args.weights and os.path.isfile(args.weights + ".json"):
        manifest_path = args.weights + ".json"
    if (args.weights or args.weightless) and not manifest_path:
        raise FillError("this needs the manifest kilnc wrote next to its weights file "
                        "(--manifest MODEL.weights.json)")
    man = load_manifest(manifest_path) if manifest_path else None

    try:
        model = onnx.load(args.model, load_external_data=False)
    except Exception as e:  # onnx raises several kinds
        raise FillError(f"cannot read the ONNX model '{args.model}': {e}")
    base_dir = os.path.dirname(os.path.abspath(args.model))
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    if man:
        check_against_manifest(inits, man, manifest_path)

    if args.weightless:
        strip = 0
        for w in man["weights"]:
            t = inits[w["name"]]
            if TYPES[t.data_type][3] == "int":
                data = raw_bytes(t, base_dir)
                if data is None:
                    raise FillError(f"initializer '{t.name}' has no data")
                set_raw(t, data)
                continue
            set_raw(t, b"")
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", man["file"]), ("offset", str(w["offset"])),
                         ("length", str(w["bytes"]))):
                e = t.external_data.add()
                e.key, e.value = k, v
            strip += 1
        for t in graph.initializer:
            if t.data_location == TensorProto.EXTERNAL and t.name not in {
                    w["name"] for w in man["weights"]}:
                data = raw_bytes(t, base_dir)
                if data is None:
                    raise FillError(f"initializer '{t.name}' is stored in a missing external file")
                set_raw(t, data)
        onnx.save(model, args.weightless)
        log(f"wrote {args.weightless}: {strip} tensors refer to '{man['file']}'")
        return 0

    # Which tensors to fill.
    if man:
        targets = {w["name"] for w in man["weights"]}
    else:
        targets = set()
        for t in graph.initializer:
            if t.data_type not in TYPES:
                continue
            missing = t.data_location == TensorProto.EXTERNAL and raw_bytes(t, base_dir) is None
            if missing or (TYPES[t.data_type][3] != "int" and tensor_nbytes(t) >= args.min_bytes):
                targets.add(t.name)

    uses = consumers_of(graph)
    branches = residual_branches(graph)
    if args.residual_scale is not None:
        if not args.residual_scale > 0:
            raise FillError("--residual-scale must be positive")
        branches = {e: args.residual_scale for e in branches}
    if branches:
        log(f"{len(branches)} residual branches, their last layers at std "
            f"{next(iter(branches.values())):.3g}")
    values = {}  # filled float tensors: float64 arrays
    copied = {}  # everything else: raw bytes
    for t in graph.initializer:
        kind = TYPES.get(t.data_type, (None, None, None, None))[3]
        if t.name in targets and kind in ("float", "bf16"):
            spec = fill_spec(t.name, list(t.dims), uses, branches)
            n = numel(t.dims)
            if spec[0] == "uniform":
                v = uniform(args.seed, t.name, n, spec[1])
            else:
                v = normal(args.seed, t.name, n, spec[1], spec[2])
            values[t.name] = v.reshape([int(d) for d in t.dims])
        else:
            data = raw_bytes(t, base_dir) if t.data_type in TYPES else None
            if data is None and t.data_type in TYPES:
                raise FillError(
                    f"initializer '{t.name}' ({TYPES[t.data_type][0]}) has no data (its external "
                    "file is missing) and is not a floating-point tensor to fill")
            copied[t.name] = data

    calibrated = 0
    record = []
    if args.load_stats:
        try:
            with open(args.load_stats) as f:
                stats = json.load(f)
        except (OSError, ValueError) as e:
            raise FillError(f"cannot read the statistics file '{args.load_stats}': {e}")
        calibrated = apply_stats(values, stats, args.seed)
    elif not args.no_calibrate:
        dims_override = {}
        for d in args.dim:
            name, _, v = d.partition("=")
            if not name or not v.isdigit():
                raise FillError(f"--dim expects NAME=N, got '{d}'")
            dims_override[name] = int(v)
        # The model as filled so far, for onnxruntime.
        work = onnx.ModelProto()
        work.CopyFrom(model)
        for t in work.graph.initializer:
            if t.name in values:
                set_raw(t, encode(values[t.name].reshape(-1), t.data_type))
            elif copied.get(t.name) is not None:
                set_raw(t, copied[t.name])
        calibrated = calibrate(work, values, targets, args.seed, args.batch, dims_override,
                               base_dir, log, record, branches)
        if args.save_stats:
            with open(args.save_stats, "w") as f:
                json.dump({"format": "kiln-fill-stats", "seed": args.seed, "layers": record}, f)

    def data_of(name):
        t = inits[name]
        if name in values:
            return encode(values[name].reshape(-1), t.data_type)
        return copied[name]

    for t in graph.initializer:
        if t.data_type in TYPES:
            set_raw(t, data_of(t.name))
    if model.ByteSize() > 2_000_000_000:
        raise FillError("the filled model is larger than 2 GB, more than one protobuf holds")
    onnx.save(model, args.out_model)
    log(f"wrote {args.out_model}: {len(values)} tensors filled (seed {args.seed}), "
        f"{calibrated} layers calibrated from data")
    if args.weights:
        write_weights(args.weights, man, data_of)
        log(f"wrote {args.weights}: {len(man['weights'])} weights, {man['file_bytes']} bytes, "
            f"layout {man['layout_hash']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
