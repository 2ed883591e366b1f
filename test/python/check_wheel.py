"""The wheel (ctest kiln-wheel): `pip wheel` of the source tree packaging
what the build tree built (KILN_WHEEL_FROM_BUILD, cmake/KilnWheelFromBuild.cmake;
no second compile of Kiln, no network: --no-build-isolation with .venv's
scikit-build-core and nanobind), installed into a fresh folder and used
from there alone: kiln.compile of a model and its run against numpy, a
library written and loaded back, and every Kiln library the process loaded
coming from the installed package (their RUNPATHs are $ORIGIN), not the
build tree.

  python check_wheel.py SOURCE_DIR BUILD_DIR
"""
import glob
import os
import subprocess
import sys
import tempfile
import time

USE = r'''
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import kiln
site = sys.argv[1]
assert kiln.__file__.startswith(site), kiln.__file__
rng = np.random.default_rng(0)
w = rng.standard_normal((8, 4)).astype(np.float32)
b = rng.standard_normal(4).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
     helper.make_node("Add", ["m", "b"], ["s"], name="bias"),
     helper.make_node("Relu", ["s"], ["y"], name="act")],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
compiler = kiln.Compiler("")
x = rng.standard_normal((5, 8)).astype(np.float32)
np.testing.assert_allclose(compiler.compile(proto)(x), np.maximum(x @ w + b, 0),
                           rtol=1e-5, atol=1e-6)
so = os.path.join(site, "..", "layer.so")
compiler.compile(proto, output=so)
np.testing.assert_allclose(kiln.load(so)(x), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
loaded = {line.split()[-1] for line in open("/proc/self/maps") if "libkiln_" in line
          or "kiln/_" in line}
assert loaded and all(p.startswith(site) for p in loaded), loaded
print("wheel: compile, run and load from", site, "with", sorted(map(os.path.basename, loaded)))
'''


def main():
    source, build = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        subprocess.run([sys.executable, "-m", "pip", "wheel", source, "-w",
                        os.path.join(tmp, "dist"), "--no-deps", "--no-build-isolation", "-q",
                        "-C", f"cmake.define.KILN_WHEEL_FROM_BUILD={build}"], check=True)
        wheels = glob.glob(os.path.join(tmp, "dist", "kiln-*.whl"))
        assert len(wheels) == 1, wheels
        built = time.time() - start
        site = os.path.join(tmp, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        site, wheels[0]], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = site
        subprocess.run([sys.executable, "-c", USE, site], env=env, check=True, cwd=tmp)
        print(f"{os.path.basename(wheels[0])}: {os.path.getsize(wheels[0]) / 2**20:.1f} MiB, "
              f"built in {built:.1f} s")


if __name__ == "__main__":
    main()
