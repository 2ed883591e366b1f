# REQUIRES: torch
# RUN: %python %s %t
"""kilnc --max-memory on make_models.py's reduced networks at batch 1, where
only bands can split a peak that is one kernel's inputs and outputs: the
reduced ResNet-50's first bottleneck (its downsample and conv3 with the
residual, split in bands of channels, each with a slice of the biases) and
MobileNetV2's first inverted residual. Each build fits its budget and its
outputs are bit-identical to the unconstrained build's; the U-Net reaches
0.6x (its skip tensor recomputed, its first and last stages in bands of
rows)."""
import json
import os
import shutil
import sys

import kiln_tools
from kiln_tools import run_tool as run

make_models = kiln_tools.project_module("utils/models/make_models.py")
work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

for name, budget in [("resnet50", "0.8x"), ("mobilenetv2", "0.6x"), ("unet", "0.6x")]:
    model = f"{name}.onnx"
    make_models.export(name, model, small=name != "unet")
    run(["kilnc", model, "-o", f"{name}.so", f"--report={name}_full.json"])
    os.makedirs(f"{name}_ref", exist_ok=True)
    run(["kiln-run", f"{name}.so", "--seed", "1", "--output-dir", f"{name}_ref"])
    run(["kilnc", model, "-o", f"{name}_small.so", f"--max-memory={budget}",
         f"--report={name}.json"])
    report = json.load(open(f"{name}.json"))
    remat = report["remat"]
    chunked = remat["chunked"]
    assert chunked and all(c.get("rows") for c in chunked), chunked
    assert report["arena_bytes"] <= remat["budget_bytes"], remat
    full = json.load(open(f"{name}_full.json"))
    assert remat["extra_flops"] == report["total_flops"] - full["total_flops"], remat
    expect = []
    for out in sorted(os.listdir(f"{name}_ref")):
        expect += ["--expect", os.path.join(f"{name}_ref", out)]
    check = run(["kiln-run", f"{name}_small.so", "--seed", "1", *expect,
                 "--rtol", "0", "--atol", "0"]).stdout
    assert "max_abs_err=0" in check and "max_abs_err=0." not in check, check
    print(f"{name} at {budget}: peak {remat['peak_before']} -> {report['peak_live_bytes']}, "
          f"{len(chunked)} launches in bands, {len(remat['recomputed'])} recomputed, "
          f"+{remat['extra_flops']} FLOPs, bit-identical")
