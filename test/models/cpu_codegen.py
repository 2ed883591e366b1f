# REQUIRES: torch
# RUN: %python %s %t
"""The three benchmark networks at full size (ResNet-50 and MobileNetV2
1x3x224x224, BERT-base at batch 1, sequence 128), compiled for the CPU:
every kernel of each must be vectorized and split across threads per
`kilnc --report` (weights external, so the compile is quick). Fails naming
each scalar or single-threaded kernel and its ONNX nodes."""
import json
import os
import subprocess
import sys

import kiln_tools

make_models = kiln_tools.project_module("utils/models/make_models.py")
KILNC = kiln_tools.tools.find_tool("kilnc")
DIMS = {"bert": ["--dim", "seq=128", "--dim", "batch=1"]}

workdir = sys.argv[1]
os.makedirs(workdir, exist_ok=True)
bad = []
for name in ("resnet50", "mobilenetv2", "bert"):
    path = os.path.join(workdir, name + ".onnx")
    make_models.export(name, path, small=False)
    so, rep = os.path.join(workdir, name + ".so"), os.path.join(workdir, name + ".json")
    subprocess.run([KILNC, path, "-o", so, "--external-weights", f"--report={rep}",
                    *DIMS.get(name, [])], check=True, stdout=subprocess.DEVNULL)
    kernels = json.load(open(rep))["kernels"]
    for k in kernels:
        what = []
        if k.get("vector_bits", 0) == 0:
            what.append("scalar")
        if k.get("parallel_ops", 0) == 0:
            what.append("single-threaded")
        if what:
            bad.append(f"{name} {k['name']} ({', '.join(k['onnx_nodes'][:4])}): "
                       + " and ".join(what))
    print(f"{name}: {len(kernels)} kernels")
if bad:
    print("kernels not vectorized or not on threads:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("every kernel vectorized and on threads")
