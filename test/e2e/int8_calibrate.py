# RUN: %python %s %t
"""kilnc --precision=int8 --calibrate end to end (docs/int8.md): a small
float conv net (Conv + Relu, MaxPool, a strided Conv + Relu, a 1x1 Conv with
a residual Add and Relu, GlobalAveragePool, Gemm) calibrated on 16 seeded
image-like inputs and compiled to int8; checked against its fp32 build on 8
other batches of 4.

What must hold:
- every Conv and the Gemm is int8 in the report, each with its activation's
  range, scale and zero point; the graph after the graph stage has them as
  integer products (3 ConvInteger, 1 MatMulInteger) and no float Conv/Gemm;
- the logits are within the quantization's error of the fp32 ones. Bound:
  rel L2 <= 0.05. Each quantized activation (uint8 over its calibrated
  min-max range, rounding error uniform in +-s/2, s = range / 255) adds
  relative noise of about (s / sqrt(12)) / rms(x), with rms(x) about a
  quarter of the range for ReLU outputs: 0.45%; each weight channel (int8,
  s = max|w| / 127, rms about max / 3) 0.7%; four layers in quadrature about
  1.7%. The bound is three times that. Some error must remain (rel L2 >
  1e-4: the build is quantized, not fp32);
- top-1 agreement with fp32 of at least 90% of the 32 rows (logits of 10
  classes whose margins exceed the error above for most rows).
The same checks with --calibration-method=entropy and percentile."""
import json
import os
import subprocess
import sys

import numpy as np

import kiln_tools
from kiln_tools.quantize import int8_convnet

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)

model = int8_convnet(os.path.join(work, "convnet.onnx"), rng)

cal = os.path.join(work, "calibration")
for i in range(16):
    kiln_tools.write_inputs(kiln_tools.image_inputs(model, 1000 + i),
                            os.path.join(cal, f"test_data_set_{i}"))
evals = [kiln_tools.write_inputs(kiln_tools.image_inputs(model, i), os.path.join(work, f"eval{i}"))
         for i in range(8)]

fp32 = os.path.join(work, "fp32.so")
kiln_tools.compile_model(model, fp32)
ref = [kiln_tools.run_model(fp32, e, os.path.join(work, "out32"))[0][1] for e in evals]
failures = []
for method in ("minmax", "entropy", "percentile"):
    so = os.path.join(work, f"int8_{method}.so")
    report = so + ".json"
    flags = ["--precision=int8", f"--calibrate={cal}", f"--calibration-method={method}"]
    kiln_tools.compile_model(model, so, flags + [f"--report={report}"])
    prec = json.load(open(report))["precision"]
    int8 = {n["node"]: n for n in prec["nodes"] if n["precision"] == "int8"}
    if prec["calibration_method"] != ("percentile:99.99" if method == "percentile" else method):
        failures.append(f"{method}: report says method {prec['calibration_method']}")
    if sorted(int8) != ["conv1", "conv2", "conv3", "fc"]:
        failures.append(f"{method}: int8 nodes {sorted(int8)}, expected conv1..3 and fc")
    for n in int8.values():
        lo, hi = n["range"]
        if not (lo <= 0 <= hi and n["scale"] > 0 and 0 <= n["zero_point"] <= 255):
            failures.append(f"{method}: {n['node']} has range {n['range']}, scale {n['scale']}, "
                            f"zero point {n['zero_point']}")
    graph_ir = subprocess.run([kiln_tools.find_tool("kilnc"), model, *flags, "--dump-after=graph"],
                              capture_output=True, text=True, check=True).stdout
    counts = {op: graph_ir.count(f'"onnx.{op}"(') for op in
              ("ConvInteger", "MatMulInteger", "Conv", "Gemm")}
    if counts != {"ConvInteger": 3, "MatMulInteger": 1, "Conv": 0, "Gemm": 0}:
        failures.append(f"{method}: graph has {counts}")
    got = [kiln_tools.run_model(so, e, os.path.join(work, "out8"))[0][1] for e in evals]
    r, g = np.concatenate(ref), np.concatenate(got)
    stats = kiln_tools.error_stats(r, g)
    agree = float(np.mean(np.argmax(r, -1) == np.argmax(g, -1)))
    print(f"{method}: rel L2 {stats['rel_l2']:.4f}, max rel {stats['max_rel']:.4f}, "
          f"top-1 agreement {100 * agree:.0f}% of {len(r)} rows")
    if not 1e-4 < stats["rel_l2"] <= 0.05:
        failures.append(f"{method}: rel L2 {stats['rel_l2']:.4g} outside (1e-4, 0.05]")
    if agree < 0.9:
        failures.append(f"{method}: top-1 agreement {agree:.2f} < 0.9")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("OK")
