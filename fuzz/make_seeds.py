#!/usr/bin/env python3
"""Writes seed corpora for Kiln's fuzz targets (fuzz/CMakeLists.txt).

    make_seeds.py BUILD_DIR OUT_DIR

OUT_DIR/<target>/ gets:
  import       every model of ONNX's node tests (the onnx package) and a few
               networks built here (convolutions, external data, symbolic
               dims, an If)
  tensorproto  the node tests' input and output TensorProtos
  signature    the signatures of models compiled by BUILD_DIR's kilnc (cpu,
               cuda, symbolic dims, external weights)
  weights      a signature with external weights, a NUL, its weights file
utils/fuzz.sh runs this before a campaign; the campaign's merged corpus is
what fuzz/corpus/ holds.
"""
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def node_test_dir():
    import onnx.backend.test
    return pathlib.Path(onnx.backend.test.__file__).parent / "data" / "node"


def put(out: pathlib.Path, data: bytes):
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def small_models():
    """A few networks that reach the importer's less common paths."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(
        (rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "b")
    fc = numpy_helper.from_array(
        (rng.standard_normal((8, 4)) * 0.3).astype(np.float32), "fc")
    cnn = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("MatMul", ["f", "fc"], ["y"])],
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["n", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
        [w, b, fc])
    yield "cnn", helper.make_model(
        cnn, opset_imports=[helper.make_opsetid("", 17)])

    then = helper.make_graph(
        [helper.make_node("Neg", ["a"], ["o"])], "then", [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    other = helper.make_graph(
        [helper.make_node("Abs", ["a"], ["o"])], "else", [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    branchy = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then,
                          else_branch=other)],
        "branchy",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    yield "if", helper.make_model(
        branchy, opset_imports=[helper.make_opsetid("", 17)])

    shape = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
         helper.make_node("Concat", ["d", "m"], ["t"], axis=0),
         helper.make_node("Reshape", ["x", "t"], ["y"])],
        "shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6])],
        [numpy_helper.from_array(np.array([0], np.int64), "i"),
         numpy_helper.from_array(np.array([-1], np.int64), "m")])
    yield "shape", helper.make_model(
        shape, opset_imports=[helper.make_opsetid("", 17)])


def signature_of(so: pathlib.Path) -> bytes:
    data = so.read_bytes()
    start = data.find(b"kiln-signature 1\n")
    if start < 0:
        sys.exit(f"make_seeds: no signature in {so}")
    return data[start:data.index(b"\0", start)]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    kilnc = build / "bin" / "kilnc"
    node = node_test_dir()
    for model in sorted(node.glob("*/model.onnx")):
        put(out / "import", model.read_bytes())
        for pb in sorted(model.parent.glob("test_data_set_0/*.pb")):
            put(out / "tensorproto", pb.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, model in small_models():
            path = tmp / f"{name}.onnx"
            onnx.save(model, path)
            put(out / "import", path.read_bytes())
        # The same network with its weights as external data.
        cnn = next(small_models())[1]
        ext = tmp / "ext.onnx"
        onnx.save(cnn, ext, save_as_external_data=True,
                  all_tensors_to_one_file=True, location="ext.data",
                  size_threshold=0)
        put(out / "import", ext.read_bytes())
        builds = [
            ("cpu", ["--dim", "n=2"]),
            ("cpu-dynamic", []),
            ("cuda", ["--target=cuda:sm_90", "--dim", "n=2"]),
            ("weights", ["--external-weights",
                         "--external-weights-min-bytes=64"]),
            ("cuda-weights", ["--target=cuda:sm_90", "--external-weights",
                              "--external-weights-min-bytes=64"]),
        ]
        for name, flags in builds:
            so = tmp / f"{name}.so"
            subprocess.run([str(kilnc), str(tmp / "cnn.onnx"), "-o", str(so),
                            *flags], check=True)
            signature = signature_of(so)
            put(out / "signature", signature)
            weights = tmp / f"{name}.weights"
            if weights.exists():
                data = weights.read_bytes()
                put(out / "weights", signature + b"\0" + data)
                # Without the optional checksum (flag clear, CRC zero).
                plain = bytearray(data)
                plain[32:40] = bytes(8)
                put(out / "weights", signature + b"\0" + bytes(plain))
    for target in ("import", "tensorproto", "signature", "weights"):
        n = len(list((out / target).iterdir()))
        print(f"make_seeds: {target}: {n} seeds")


if __name__ == "__main__":
    main()
