# REQUIRES: torch
# RUN: %python %s %t
"""The three benchmark networks at full size (ResNet-50 and MobileNetV2
1x3x224x224, BERT-base at batch 1, sequence 128), compiled for the CPU:
every kernel of each must be vectorized and split across threads per
`kilnc --report` (weights external, so the compile is quick), except that a
small full reduction to 0-d outputs (a run-time index check's) may run on one
thread. Fails naming
each scalar or single-threaded kernel and its ONNX nodes. The CPU runs
convolutions channels-last (docs/layout.md): in the two CNNs' graphs the
only activation transpose left is the one of the model's NCHW input (their
outputs are [1, 1000]; the weights' own transposes run at load time)."""
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
    graph = subprocess.run([KILNC, path, "-o", so, "--external-weights", f"--report={rep}",
                            "--dump-after=graph", *DIMS.get(name, [])],
                           check=True, stdout=subprocess.PIPE, text=True).stdout
    if name != "bert":
        to_last = graph.count("perm = [0, 2, 3, 1]")
        to_first = graph.count("perm = [0, 3, 1, 2]")
        print(f"{name}: activation transposes: {to_last} to channels-last, "
              f"{to_first} back")
        if (to_last, to_first) != (1, 0):
            bad.append(f"{name}: {to_last} transposes to channels-last and {to_first} back "
                       "(expected 1 and 0: the input's only)")
    kernels = json.load(open(rep))["kernels"]
    for k in kernels:
        what = []
        if k.get("vector_bits", 0) == 0:
            what.append("scalar")
        # A full reduction to 0-d outputs of under 1 MB (the min and max of a
        # Gather's indices that its run-time range check reads) has no output
        # dim to split and takes well under a microsecond on one thread.
        small_reduction = k.get("scalar_outputs") and k.get("bytes", 1 << 40) < (1 << 20)
        if k.get("parallel_ops", 0) == 0 and not small_reduction:
            what.append("single-threaded")
        if what:
            bad.append(f"{name} {k['name']} ({', '.join(k['onnx_nodes'][:4])}): "
                       + " and ".join(what))
    print(f"{name}: {len(kernels)} kernels")
if bad:
    print("kernels not vectorized or not on threads:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("every kernel vectorized and on threads")
