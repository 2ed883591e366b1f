# RUN: %python %s %t
"""Each stage pipeline built by name in kiln-opt equals the one kilnc runs.

Two checks, for several option sets (precision, -O, target, GPU choices):
1. `kilnc --print-pipeline=STAGE <flags>` against `kiln-opt
   --kiln-STAGE-pipeline=<options> --dump-pass-pipeline`: the same passes
   with the same options;
2. on a small model, `kilnc --dump-after=STAGE <flags>` against
   kiln-translate --import-onnx piped through kiln-opt's stage pipelines one
   after the other: the same IR after every stage.
"""
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
STAGES = ["graph", "lower", "kernels", "host", "bufferize", "codegen", "llvm"]
has_ptxas = os.path.exists("/usr/local/cuda/bin/ptxas")


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p


def lines(text):
    # gpu-module-to-binary records how long ptxas took: not part of the IR.
    text = re.sub(r"properties = \{[^}]*TimeInMs[^}]*\}, ", "", text)
    return [l for l in text.splitlines() if l.strip()]


# (kilnc flags, kiln-opt pipeline options); the same choices in both spellings.
CONFIGS = [
    ([], ""),
    (["-O0"], "opt-level=0"),
    (["--precision=fp16", "--keep-fp32=Softmax"], "precision=fp16 keep-fp32=Softmax"),
    (["--precision=bf16", "-O1"], "precision=bf16 opt-level=1"),
    (["--expose-intermediates=all"], "expose-intermediates=all"),
    (["--max-memory=64M"], "max-memory=64M"),
    (["--max-memory=64M", "--max-memory-weights"],
     "max-memory=64M max-memory-weights=true"),
    (["--target=cuda"], "target=cuda"),
    (["--target=cuda:sm_80", "--precision=fp16", "--gpu-tensor-cores=false",
      "--gpu-warp-reductions=false", "--gpu-tiled-contractions=false"],
     "target=cuda:sm_80 precision=fp16 gpu-tensor-cores=false "
     "gpu-warp-reductions=false gpu-tiled-contractions=false"),
    (["--target=cuda", "--gpu-block-size=128", "--gpu-fill-blocks=100",
      "--gpu-min-threads=1024"],
     "target=cuda gpu-block-size=128 gpu-fill-blocks=100 gpu-min-threads=1024"),
]

checked = 0
for flags, opts in CONFIGS:
    for stage in STAGES:
        a = run(["kilnc", f"--print-pipeline={stage}"] + flags).stdout
        pipe = f"--kiln-{stage}-pipeline" + (f"={opts}" if opts else "")
        # The dump comes before the run (which may fail on an empty module:
        # the host stage needs a model function).
        b = subprocess.run(["kiln-opt", pipe, "--dump-pass-pipeline",
                            "/dev/null", "-o", "/dev/null"],
                           capture_output=True, text=True).stderr
        if not b.startswith("Pass Manager with"):
            sys.exit(f"kiln-opt {pipe} printed no pipeline:\n{b}")
        b = b[:b.find("/dev/null:")] if "/dev/null:" in b else b
        b = "\n".join(lines(b)[1:])  # drop "Pass Manager with N passes:"
        if lines(a) != lines(b):
            sys.exit(f"pipelines differ for {stage} {flags}:\nkilnc:\n{a}\n"
                     f"kiln-opt ({pipe}):\n{b}")
        checked += 1
# The options must matter: a different option gives a different pipeline.
a = run(["kilnc", "--print-pipeline=graph", "--precision=fp16"]).stdout
b = run(["kilnc", "--print-pipeline=graph"]).stdout
assert lines(a) != lines(b), "precision does not change the graph stage"
print(f"{checked} stage pipelines: kilnc == kiln-opt")

# A small model: Conv, Relu, Gemm-like MatMul with bias, Softmax.
rng = np.random.default_rng(0)
w = numpy_helper.from_array(
    (rng.standard_normal((4, 3, 3, 3)) * 0.2).astype(np.float32), "w")
m = numpy_helper.from_array(
    (rng.standard_normal((4 * 6 * 6, 10)) * 0.05).astype(np.float32), "m")
shape = numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape")
nodes = [
    helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("Reshape", ["r", "shape"], ["f"], name="flatten"),
    helper.make_node("MatMul", ["f", "m"], ["y0"], name="fc"),
    helper.make_node("Softmax", ["y0"], ["y"], name="softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "pipelines",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    [w, m, shape])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(out, "model.onnx")
with open(path, "wb") as f:
    f.write(model.SerializeToString())

compared = 0
for flags, opts in CONFIGS:
    cuda = any(f.startswith("--target=cuda") for f in flags)
    stages = STAGES if (not cuda or has_ptxas) else STAGES[:STAGES.index("codegen")]
    # Locations (the ONNX node names) travel through the chain as debug info.
    dbg = ["--mlir-print-debuginfo"]
    ir_dbg = run(["kiln-translate", "--import-onnx", path] + dbg).stdout
    for stage in stages:
        pipe = f"--kiln-{stage}-pipeline" + (f"={opts}" if opts else "")
        ir_dbg = run(["kiln-opt", pipe] + dbg, stdin=ir_dbg).stdout
        ir = run(["kiln-opt"], stdin=ir_dbg).stdout
        want = run(["kilnc", path, f"--dump-after={stage}"] + flags).stdout
        if lines(ir) != lines(want):
            a, b = os.path.join(out, "kiln-opt.mlir"), os.path.join(out, "kilnc.mlir")
            open(a, "w").write(ir)
            open(b, "w").write(want)
            sys.exit(f"IR after {stage} differs for {flags}: diff {a} {b}")
        compared += 1
print(f"{compared} stage outputs: kilnc --dump-after == kiln-opt chain")
