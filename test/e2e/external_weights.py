# RUN: %python %s %t
"""kilnc --external-weights end to end: a Conv + BatchNormalization + Relu +
GlobalAveragePool + Gemm network compiled once with its weights in a separate
file, run with kiln-run against onnxruntime; then new weights written by
utils/models/fill_weights.py (other seeds) are swapped in WITHOUT recompiling
and checked against onnxruntime on the filled model. Also: the weightless
graph (ONNX external data pointing into the weights file), determinism of the
filled values, and the failures (missing, truncated, foreign weights file;
manifest that does not match the model) as clear messages."""
import json
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

import kiln_tools

HERE = os.path.dirname(os.path.abspath(__file__))
fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")

FILL = os.path.join(HERE, "..", "..", "utils", "models", "fill_weights.py")
work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
rng = np.random.default_rng(3)


def run(cmd, ok=True):
    p = kiln_tools.run_tool(cmd, check=ok)
    if not ok and p.returncode == 0:
        sys.exit(f"FAIL: {' '.join(cmd)} succeeded, expected an error")
    return p


def expect_error(cmd, text):
    p = run(cmd, ok=False)
    if text not in p.stderr:
        sys.exit(f"FAIL: {' '.join(cmd)}: expected '{text}' in:\n{p.stderr}")
    print("error as expected:", p.stderr.strip().splitlines()[-1])


def build(c, fc_out=10, path="net.onnx"):
    f32 = lambda a: a.astype(np.float32)
    inits = [
        numpy_helper.from_array(f32(rng.standard_normal((c, 3, 3, 3)) * 0.3), "conv.w"),
        numpy_helper.from_array(f32(rng.standard_normal(c) * 0.1), "conv.b"),
        numpy_helper.from_array(f32(1 + 0.1 * rng.standard_normal(c)), "bn.scale"),
        numpy_helper.from_array(f32(0.1 * rng.standard_normal(c)), "bn.bias"),
        numpy_helper.from_array(f32(0.1 * rng.standard_normal(c)), "bn.mean"),
        numpy_helper.from_array(f32(1 + 0.5 * rng.random(c)), "bn.var"),
        numpy_helper.from_array(f32(rng.standard_normal((c, fc_out)) * 0.2), "fc.w"),
        numpy_helper.from_array(f32(rng.standard_normal(fc_out) * 0.1), "fc.b"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "flat_shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                         ["b"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Reshape", ["g", "flat_shape"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, fc_out])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)


x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
with open("x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())


def kiln(so, *extra):
    os.makedirs("out", exist_ok=True)
    run(["kiln-run", so, "--input", "x.pb", "--output-dir", "out", *extra])
    t = onnx.TensorProto()
    with open("out/output_0.pb", "rb") as f:
        t.ParseFromString(f.read())
    os.remove("out/output_0.pb")
    return numpy_helper.to_array(t)


def reference(model_path):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def compare(got, ref, what):
    rel = float(np.max(np.abs(got.astype(np.float64) - ref)) / np.max(np.abs(ref)))
    print(f"{what}: max_rel_err={rel:.3e}")
    if not rel <= 1e-5:
        sys.exit(f"FAIL {what}: {rel:.3e}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


# --- Every initializer of >= 64 bytes external (batch-norm parameters too).
build(64)
run(["kilnc", "net.onnx", "-o", "net.so", "--external-weights", "--external-weights-min-bytes=64"])
man = json.load(open("net.weights.json"))
names = [w["name"] for w in man["weights"]]
assert names == ["conv.w", "conv.b", "bn.scale", "bn.bias", "bn.mean", "bn.var", "fc.w"], names
assert all(w["offset"] % 64 == 0 for w in man["weights"])
data = read("net.weights")
assert len(data) == man["file_bytes"] and data[:8] == b"KILNWTS1"
# The header's CRC-32 of everything after it (flag bit 0 at [36, 40)), as in the manifest.
assert int.from_bytes(data[32:36], "little") == zlib.crc32(data[64:]) == int(
    man["checksum_crc32"], 16) and data[36] & 1
init = {t.name: t for t in onnx.load("net.onnx").graph.initializer}
for w in man["weights"]:  # ONNX raw_data bytes at the recorded offsets
    assert data[w["offset"]:w["offset"] + w["bytes"]] == numpy_helper.to_array(
        init[w["name"]]).tobytes(), w["name"]
y0 = kiln("net.so")
compare(y0, reference("net.onnx"), "original weights")

# New weights, no recompilation.
for seed in (11, 12):
    run([sys.executable, FILL, "net.onnx", "--seed", str(seed), "--out-model",
         f"filled{seed}.onnx", "--weights", f"w{seed}.weights", "--manifest", "net.weights.json"])
    y = kiln("net.so", "--weights", f"w{seed}.weights", "--verify-weights")
    compare(y, reference(f"filled{seed}.onnx"), f"seed {seed} weights")
    assert np.max(np.abs(y - y0)) > 0.1, "the new weights changed nothing"
# Batch-norm statistics come from data: y = relu(bn(conv)) has per-channel
# mean ~ bn.bias over the calibration inputs, so the filled var is > 0.
filled = {t.name: numpy_helper.to_array(t) for t in onnx.load("filled11.onnx").graph.initializer}
assert (filled["bn.var"] > 0).all() and np.abs(filled["bn.mean"]).max() > 0
std = float(filled["conv.w"].std())
assert abs(std / np.sqrt(2.0 / 27) - 1) < 0.1, std  # He normal, fan-in 27
# The file next to the model, replaced in place.
shutil.copy("w11.weights", "net.weights")
compare(kiln("net.so"), reference("filled11.onnx"), "replaced default weights file")

# Determinism: same seed, same bytes; another seed, other bytes. The values
# are made from PCG64's raw output with exact arithmetic (these are the same
# on every machine and numpy version).
run([sys.executable, FILL, "net.onnx", "--seed", "11", "--out-model", "again.onnx",
     "--weights", "again.weights", "--manifest", "net.weights.json", "--quiet"])
assert read("again.weights") == read("w11.weights")
# The measured statistics, saved and reused without onnxruntime: same bits.
run([sys.executable, FILL, "net.onnx", "--seed", "11", "--out-model", "s.onnx",
     "--manifest", "net.weights.json", "--save-stats", "stats.json", "--quiet"])
run([sys.executable, FILL, "net.onnx", "--seed", "11", "--out-model", "s.onnx",
     "--weights", "s.weights", "--manifest", "net.weights.json", "--load-stats", "stats.json"])
assert read("s.weights") == read("w11.weights")
expect_error([sys.executable, FILL, "net.onnx", "--seed", "12", "--out-model", "s.onnx",
              "--load-stats", "stats.json"], "not from fill_weights.py --save-stats with seed 12")
assert read("w12.weights") != read("w11.weights")
golden = fill_weights.normal(0, "conv.w", 4)
print("normal(seed 0, 'conv.w')[:4] =", golden.tolist())
assert np.array_equal(golden, np.array([1.0200139558056647, -1.151738251662981,
                                        -0.1493824836418846, -1.9538832997015605])), golden

# The weightless graph: external-data references into the weights file.
os.makedirs("graph", exist_ok=True)
run([sys.executable, FILL, "net.onnx", "--manifest", "net.weights.json",
     "--weightless", "graph/net.graph.onnx"])
g = onnx.load("graph/net.graph.onnx", load_external_data=False)
ext = [t.name for t in g.graph.initializer if t.data_location == TensorProto.EXTERNAL]
assert ext == names, ext
assert os.path.getsize("graph/net.graph.onnx") < 2000
# Filling the weightless graph gives the same weights as filling the model.
run([sys.executable, FILL, "graph/net.graph.onnx", "--seed", "11", "--out-model",
     "graph/filled.onnx", "--weights", "graph/w11.weights", "--manifest", "net.weights.json"])
assert read("graph/w11.weights") == read("w11.weights")
# onnxruntime reads the Kiln weights file as ONNX external data.
shutil.copy("w11.weights", "graph/" + man["file"])
compare(kiln("net.so", "--weights", "w11.weights"), reference("graph/net.graph.onnx"),
        "weightless graph + weights file in onnxruntime")

# --- Default threshold (1024 bytes): the 64-channel batch-norm parameters
# (256 bytes) stay embedded; only conv.w and fc.w are external.
os.makedirs("default", exist_ok=True)
shutil.copy("net.onnx", "default/net.onnx")
run(["kilnc", "default/net.onnx", "-o", "default/net.so", "--external-weights"])
man2 = json.load(open("default/net.weights.json"))
assert [w["name"] for w in man2["weights"]] == ["conv.w", "fc.w"], man2
compare(kiln("default/net.so"), reference("net.onnx"), "default threshold, original weights")
p = run([sys.executable, FILL, "default/net.onnx", "--seed", "5", "--out-model",
         "default/filled.onnx", "--weights", "default/w5.weights", "--manifest",
         "default/net.weights.json"])
print(p.stderr.strip())
assert "running statistics are not in the set of filled tensors" in p.stderr
compare(kiln("default/net.so", "--weights", "default/w5.weights"),
        reference("default/filled.onnx"), "default threshold, seed 5 weights")

# --- Failures.
expect_error(["kiln-run", "net.so", "--input", "x.pb", "--weights", "missing.weights"],
             "kiln-run: cannot open the weights file 'missing.weights' of model 'net.so': "
             "No such file or directory")
os.rename("net.weights", "moved.weights")
expect_error(["kiln-run", "net.so", "--input", "x.pb"],
             "cannot open the weights file 'net.weights' of model 'net.so'")
os.rename("moved.weights", "net.weights")
with open("short.weights", "wb") as f:
    f.write(read("net.weights")[:man["file_bytes"] - 100])
fc = man["weights"][-1]
expect_error(["kiln-run", "net.so", "--input", "x.pb", "--weights", "short.weights"],
             f"weights file 'short.weights' is truncated: it has {man['file_bytes'] - 100} bytes, "
             f"weight 6 ('fc.w', f32 [64, 10]) needs bytes [{fc['offset']}, "
             f"{fc['offset'] + fc['bytes']})")
expect_error(["kiln-run", "net.so", "--input", "x.pb", "--weights", "default/w5.weights"],
             "weights file 'default/w5.weights' has weight layout " + man2["layout_hash"] +
             ", model 'net.so' expects " + man["layout_hash"])
expect_error(["kiln-run", "net.so", "--input", "x.pb", "--weights", "x.pb"],
             "'x.pb' is not a Kiln weights file")
# A manifest of another model: fc has 12 outputs here.
build(64, fc_out=12, path="other.onnx")
expect_error([sys.executable, FILL, "other.onnx", "--seed", "1", "--out-model", "o.onnx",
              "--weights", "o.weights", "--manifest", "net.weights.json"],
             "initializer 'fc.w' is f32 [64, 12] in the model, f32 [64, 10] in the manifest "
             "'net.weights.json': the model and the manifest do not match")
expect_error([sys.executable, FILL, "net.onnx", "--seed", "1", "--out-model", "o.onnx",
              "--weights", "o.weights"],
             "this needs the manifest kilnc wrote next to its weights file")
expect_error(["kilnc", "net.onnx", "-o", "n.so", "--external-weights-min-bytes=8"],
             "kilnc: --external-weights-min-bytes needs --external-weights")
print("PASS external_weights")
