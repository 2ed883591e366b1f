# RUN: %python %s %t
"""8-bit float Cast, compiled by kilnc and run by kiln-run: every bit pattern
of the four formats to f32, and f32 values (NaN, infinities, zeros,
subnormals, ties, overflow) to each format with and without saturation,
compared bit for bit with ml_dtypes (ONNX's reference) and with a few
hand-checked patterns."""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

import kiln_tools

FORMATS = [  # ONNX type, ml_dtypes type, name
    (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, "e4m3fn"),
    (TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, "e4m3fnuz"),
    (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, "e5m2"),
    (TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, "e5m2fnuz"),
]

VALUES = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, 1.0625, 1.1875, 3.0, 448.0, 464.0, 480.0,
     500.0, -500.0, 240.0, 57344.0, 61440.0, 65536.0, 1e6, -1e6,
     2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17,
     3 * 2.0 ** -17, 1e-30, -1e-30, 1e-45, np.inf, -np.inf, np.nan],
    dtype=np.float32)
rng = np.random.default_rng(8)
VALUES = np.concatenate(
    [VALUES, (rng.standard_normal(200) * 10.0 ** rng.integers(-6, 6, 200))
     .astype(np.float32)])


def reference(x, dt, saturate):
    if saturate:
        info = ml_dtypes.finfo(dt)
        x = np.clip(x, info.min, info.max)
    return x.astype(dt).view(np.uint8)


def same_bits(got, want, dt):
    """Equal bit patterns; any NaN matches any NaN."""
    gn = np.isnan(got.view(dt).astype(np.float32))
    wn = np.isnan(want.view(dt).astype(np.float32))
    return bool(np.all(gn == wn) and np.all((got == want) | gn))


def run_model(workdir, name, nodes, inputs, outputs, feeds):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)],
                          ir_version=10)
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, name + ".onnx")
    so = os.path.join(workdir, name + ".so")
    onnx.save(m, path)
    kiln_tools.compile_model(path, so)
    args = ["kiln-run", so]
    for i, t in enumerate(feeds):
        p = os.path.join(workdir, f"{name}_in{i}.pb")
        with open(p, "wb") as f:
            f.write(t.SerializeToString())
        args += ["--input", p]
    out = os.path.join(workdir, name + "_out")
    os.makedirs(out, exist_ok=True)
    kiln_tools.run_tool(args + ["--output-dir", out])
    results = []
    for i in range(len(outputs)):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        results.append(t)
    return results


def main(workdir):
    failed = False
    # f32 -> f8, saturate 0 and 1.
    nodes, outs = [], []
    for onnx_t, _, name in FORMATS:
        for sat in (0, 1):
            o = f"{name}_sat{sat}"
            nodes.append(helper.make_node("Cast", ["x"], [o], to=onnx_t,
                                          saturate=sat))
            outs.append(helper.make_tensor_value_info(o, onnx_t, [len(VALUES)]))
    x = onnx.numpy_helper.from_array(VALUES, "x")
    got = run_model(workdir, "to_f8", nodes,
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   [len(VALUES)])],
                    outs, [x])
    k = 0
    bits = {}
    for onnx_t, dt, name in FORMATS:
        for sat in (0, 1):
            t = got[k]
            k += 1
            assert t.data_type == onnx_t, (t.data_type, onnx_t)
            g = np.frombuffer(t.raw_data, dtype=np.uint8)
            want = reference(VALUES, dt, sat)
            bits[(name, sat)] = g
            if not same_bits(g, want, dt):
                bad = np.nonzero(g != want)[0][:5]
                print(f"FAIL f32->{name} saturate={sat}: at {bad}: values "
                      f"{VALUES[bad]} got {g[bad]} want {want[bad]}")
                failed = True
            else:
                print(f"f32->{name} saturate={sat}: {len(VALUES)} values exact")
    # Hand-checked patterns (value index in VALUES -> bits).
    def index(v):
        v = np.float32(v)
        return next(i for i in range(31)
                    if VALUES[i].tobytes() == v.tobytes())

    checks = [
        ("e4m3fn", 1, 1.0, 0x38), ("e4m3fn", 1, 448.0, 0x7E),
        ("e4m3fn", 1, 500.0, 0x7E), ("e4m3fn", 0, 500.0, 0x7F),
        ("e4m3fn", 0, 464.0, 0x7E),
        ("e4m3fn", 0, 480.0, 0x7F), ("e4m3fn", 0, 2.0 ** -9, 0x01),
        ("e4m3fn", 0, 2.0 ** -10, 0x00), ("e4m3fn", 0, 3 * 2.0 ** -10, 0x02),
        ("e4m3fn", 0, -0.0, 0x80), ("e4m3fn", 1, -np.inf, 0xFE),
        ("e4m3fnuz", 0, -0.0, 0x00), ("e4m3fnuz", 0, -1e-30, 0x00),
        ("e4m3fnuz", 0, np.inf, 0x80), ("e4m3fnuz", 1, 500.0, 0x7F),
        ("e5m2", 0, np.inf, 0x7C), ("e5m2", 0, -np.inf, 0xFC),
        ("e5m2", 1, np.inf, 0x7B), ("e5m2", 0, 65536.0, 0x7C),
        ("e5m2", 0, 2.0 ** -16, 0x01), ("e5m2", 0, 2.0 ** -17, 0x00),
        ("e5m2fnuz", 0, 1e6, 0x80), ("e5m2fnuz", 1, -1e6, 0xFF),
        ("e5m2fnuz", 0, 2.0 ** -17, 0x01),
    ]
    for name, sat, v, want in checks:
        g = int(bits[(name, sat)][index(v)])
        if g != want:
            print(f"FAIL {v} -> {name} saturate={sat}: got {g:#04x} want {want:#04x}")
            failed = True
    nan = int(bits[("e4m3fn", 0)][30])  # VALUES[30] is NaN
    if nan & 0x7F != 0x7F:
        print(f"FAIL NaN -> e4m3fn: got {nan:#04x}")
        failed = True
    # f8 -> f32: every bit pattern.
    nodes, ins, feeds, outs = [], [], [], []
    pattern = np.arange(256, dtype=np.uint8)
    for onnx_t, dt, name in FORMATS:
        nodes.append(helper.make_node("Cast", [name], [name + "_f32"],
                                      to=TensorProto.FLOAT))
        ins.append(helper.make_tensor_value_info(name, onnx_t, [256]))
        outs.append(helper.make_tensor_value_info(name + "_f32",
                                                  TensorProto.FLOAT, [256]))
        t = onnx.TensorProto(name=name, data_type=onnx_t, dims=[256])
        t.raw_data = pattern.tobytes()
        feeds.append(t)
    got = run_model(workdir, "from_f8", nodes, ins, outs, feeds)
    for (onnx_t, dt, name), t in zip(FORMATS, got):
        g = onnx.numpy_helper.to_array(t).astype(np.float32)
        want = pattern.view(dt).astype(np.float32)
        ok = np.all((g.view(np.uint32) == want.view(np.uint32)) |
                    (np.isnan(g) & np.isnan(want)))
        ok = ok and np.all(np.isnan(g) == np.isnan(want))
        if not ok:
            bad = np.nonzero(~((g == want) | (np.isnan(g) & np.isnan(want))))[0][:5]
            print(f"FAIL {name}->f32 at patterns {bad}: got {g[bad]} want {want[bad]}")
            failed = True
        else:
            print(f"{name}->f32: 256 patterns exact")
    if failed:
        sys.exit(1)
    print("PASS float8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/float8_e2e")
