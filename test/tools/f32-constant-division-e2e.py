# RUN: %python %s %t
"""kilnc --f32-constant-division (kiln-half-division's f32, docs/int8.md):
f32 divisions by a constant become the product by the correctly rounded
reciprocal with one FMA correction, which is the IEEE quotient for every
|x| >= 2^-104. A model dividing by GELU's sqrt(2), by 3.7 and by 0.1, and
quantizing by a scale of 0.0235294 (QuantizeLinear's x / scale), compiled
with and without the flag for the CPU: the outputs are bit-identical on
seeded inputs of every magnitude from 2^-100 to 2^100, on +-inf and on
values whose quotient overflows; the flag's build has no division left in
its kernels. With --precision=int8 the flag is on unless it is given as
false; without it, off. Without the flag a QuantizeLinear's division (every
use rounded to an integer) takes the correction on a GPU target only: on
the host CPU the vector division is cheaper (BERT-base's QDQ model 1.9x
slower with the correction)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kiln_tools import run_tool as run

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

N = 4096
node = helper.make_node
consts = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
          [("sqrt2", np.sqrt(2.0)), ("c37", 3.7), ("tenth", 0.1), ("scale", 0.0235294)]]
consts.append(numpy_helper.from_array(np.array(128, np.uint8), "zp"))
graph = helper.make_graph(
    [node("Div", ["x", "sqrt2"], ["a"], name="gelu_div"),
     node("Div", ["x", "c37"], ["b"], name="div_37"),
     node("Div", ["x", "tenth"], ["c"], name="div_tenth"),
     node("QuantizeLinear", ["x", "scale", "zp"], ["q"], name="quantize")],
    "divisions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [N]) for n in "abc"] +
    [helper.make_tensor_value_info("q", TensorProto.UINT8, [N])], consts)
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, "div.onnx")

rng = np.random.default_rng(7)
mag = np.exp2(rng.uniform(-100, 100, N)).astype(np.float32)
x = (mag * rng.choice([-1.0, 1.0], N)).astype(np.float32)
x[:64] = rng.standard_normal(64).astype(np.float32) * 3  # around the scale
x[64:66] = [np.inf, -np.inf]
x[66:68] = [np.float32(3.0e38), np.float32(-3.0e38)]  # x / 0.1 overflows
with open("x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())

run(["kilnc", "div.onnx", "-o", "plain.so"])
run(["kilnc", "div.onnx", "-o", "fma.so", "--f32-constant-division"])
os.makedirs("ref", exist_ok=True)
run(["kiln-run", "plain.so", "--input", "x.pb", "--output-dir", "ref"])
expect = [a for i in range(4) for a in ("--expect", f"ref/output_{i}.pb")]
check = run(["kiln-run", "fma.so", "--input", "x.pb", *expect, "--rtol", "0",
             "--atol", "0"]).stdout
assert check.count("max_abs_err=0") == 4, check
kernels = run(["kilnc", "div.onnx", "--f32-constant-division",
               "--dump-after=kernels", "-o", "dump.so"]).stdout
assert "arith.divf" not in kernels and kernels.count("math.fma") == 8, kernels[-2000:]
print("f32-constant-division: 4 outputs bit-identical, no division left")

# The default: on for --precision=int8 (calibrated on the same x), off
# otherwise; an explicit false turns it off for int8.
os.makedirs("cal", exist_ok=True)
shutil.copy("x.pb", os.path.join("cal", "input_0.pb"))
plain = run(["kilnc", "div.onnx", "--dump-after=kernels", "-o", "d0.so"]).stdout
assert plain.count("arith.divf") == 4, plain[-2000:]
# For a GPU the QuantizeLinear's division is a corrected product even so
# (the kernels' dump comes before the device code; the build itself may
# need ptxas, which this check does not).
gpu = subprocess.run(["kilnc", "div.onnx", "--target=cuda:sm_90a", "--dump-after=kernels",
                      "-o", "dg.so"], capture_output=True, text=True).stdout
assert gpu.count("arith.divf") == 3 and gpu.count("math.fma") == 2, gpu[-2000:]
int8 = run(["kilnc", "div.onnx", "--precision=int8", "--calibrate=cal",
            "--dump-after=kernels", "-o", "d1.so"]).stdout
assert "arith.divf" not in int8 and int8.count("math.fma") == 8, int8[-2000:]
off = run(["kilnc", "div.onnx", "--precision=int8", "--calibrate=cal",
           "--f32-constant-division=false", "--dump-after=kernels", "-o", "d2.so"]).stdout
assert off.count("arith.divf") == 4, off[-2000:]
print("f32-constant-division: on by default for int8 only")
