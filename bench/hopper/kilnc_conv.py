#!/usr/bin/env python3
"""Single-Conv ONNX models compiled by kilnc, checked and timed on the GPU
against torch's conv2d (cuDNN, channels_last) in the same process (issue
12's convolution measurement).

  here:  python3 bench/hopper/kilnc_conv.py prepare DIR [--chip sm_90a]
  there: python3 bench/hopper/kilnc_conv.py run DIR [--json F]

Each model is Y = Conv(X, W) (+ B) in float16, X [N, C, H, W] a graph input
and the weights seeded initializers (saved beside the model for the
reference); on sm_90a Kiln runs the convolution channels-last as an
implicit GEMM on warpgroup MMA (the im2col copies of WarpgroupMatch.cpp),
so a call also transposes X to NHWC and Y back. The output is checked
against torch's float32 convolution of the same half-precision values
before timing; the table gives the whole call and the convolution kernel
alone (the runtime's per-kernel profile) against torch.conv2d on
channels_last tensors. `--layout-ab` also builds each shape with
--layout=nchw (the mma.sync strategy) for an A/B of the kernels.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

# name: (N, C, H, W, F, k, stride, pad, dilation)
SHAPES = {
    "rn50 l1 3x3 b64": (64, 64, 56, 56, 64, 3, 1, 1, 1),
    "rn50 l1 1x1 expand b64": (64, 64, 56, 56, 256, 1, 1, 0, 1),
    "rn50 l1 1x1 reduce b64": (64, 256, 56, 56, 64, 1, 1, 0, 1),
    "rn50 l2 3x3 s2 b64": (64, 128, 56, 56, 128, 3, 2, 1, 1),
    "rn50 l2 down 1x1 s2 b64": (64, 256, 56, 56, 512, 1, 2, 0, 1),
    "rn50 l2 3x3 b64": (64, 128, 28, 28, 128, 3, 1, 1, 1),
    "rn50 l3 3x3 b64": (64, 256, 14, 14, 256, 3, 1, 1, 1),
    "rn50 l4 3x3 b64": (64, 512, 7, 7, 512, 3, 1, 1, 1),
    "rn50 l4 1x1 reduce b64": (64, 2048, 7, 7, 512, 1, 1, 0, 1),
    "rn50 l3 3x3 b1": (1, 256, 14, 14, 256, 3, 1, 1, 1),
    "rn50 l1 1x1 expand b1": (1, 64, 56, 56, 256, 1, 1, 0, 1),
    "odd 5x5 c96 n3 h17": (3, 96, 17, 19, 104, 5, 1, 2, 1),
    "dilated 3x3 d2": (4, 64, 32, 32, 64, 3, 1, 2, 2),
    "7x7 s2 c64": (8, 64, 64, 64, 128, 7, 2, 3, 1),
}


def out_size(h, k, s, p, d):
    return (h + 2 * p - d * (k - 1) - 1) // s + 1


def prepare(a):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    rng = np.random.default_rng(0)
    man = []
    for name, (N, C, H, W, F, k, s, p, d) in SHAPES.items():
        tag = name.replace(" ", "_")
        w = (rng.standard_normal((F, C, k, k)) / np.sqrt(C * k * k)).astype(np.float16)
        b = (rng.standard_normal(F) * 0.1).astype(np.float16)
        np.save(os.path.join(a.dir, tag + ".w.npy"), w)
        np.save(os.path.join(a.dir, tag + ".b.npy"), b)
        OH, OW = out_size(H, k, s, p, d), out_size(W, k, s, p, d)
        g = helper.make_graph(
            [helper.make_node("Conv", ["X", "W", "B"], ["Y"], name="conv", strides=[s, s],
                              pads=[p, p, p, p], dilations=[d, d])], "conv",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [N, C, H, W])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [N, F, OH, OW])],
            [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(a.dir, tag + ".onnx")
        onnx.save(model, path)
        variants = [("nhwc", [])]
        if a.layout_ab:
            variants.append(("nchw", ["--layout=nchw"]))
        for layout, flags in variants:
            so = f"{tag}.{layout}.so"
            t0 = time.time()
            r = subprocess.run([kilnc, path, f"--target=cuda:{a.chip}", "-o",
                                os.path.join(a.dir, so)] + flags,
                               capture_output=True, text=True)
            ok = r.returncode == 0
            print(f"{tag} {layout}: {'ok' if ok else 'FAILED ' + r.stderr[:300]} "
                  f"({time.time() - t0:.1f} s)", flush=True)
            man.append(dict(shape=name, tag=tag, layout=layout, N=N, C=C, H=H, W=W, F=F, k=k,
                            stride=s, pad=p, dilation=d, OH=OH, OW=OW, so=so, ok=ok))
        os.remove(path)
    json.dump(man, open(os.path.join(a.dir, "manifest.json"), "w"), indent=1)


def run(a):
    import torch
    from kiln_tools.runtime import KilnModel, profile_runs, time_cuda

    lib = os.path.join(a.dir, "libkiln_runtime.so")
    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    stream = torch.cuda.current_stream()
    rows = []
    for m in man:
        if not m["ok"]:
            rows.append(dict(m, error="compile failed"))
            continue
        N, C, H, W, F = m["N"], m["C"], m["H"], m["W"], m["F"]
        s, p, d = m["stride"], m["pad"], m["dilation"]
        w = torch.from_numpy(np.load(os.path.join(a.dir, m["tag"] + ".w.npy"))).cuda()
        b = torch.from_numpy(np.load(os.path.join(a.dir, m["tag"] + ".b.npy"))).cuda()
        X = torch.randn(N, C, H, W, device="cuda").half()
        ref = torch.nn.functional.conv2d(X.float(), w.float(), b.float(), s, p, d)
        Y = torch.full((N, F, m["OH"], m["OW"]), float("nan"), device="cuda",
                       dtype=torch.float16)
        row = dict(m)
        try:
            km = KilnModel(lib, os.path.join(a.dir, m["so"]))
            km.set_stream(stream.cuda_stream)
            km.prepare([X], [Y])
            km.run()
            torch.cuda.synchronize()
            err = ((Y.float() - ref).abs().max() / ref.abs().max()).item()
            row["max_rel_err"] = err if torch.isfinite(Y.float()).all().item() else float("inf")
            row["kiln_ms"] = time_cuda(km.run, iters=30)
            km.release()
            _, summ = profile_runs(lib, os.path.join(a.dir, m["so"]), [X], [Y],
                                   stream.cuda_stream,
                                   os.path.join(a.dir, m["so"] + ".profile.jsonl"), runs=6)
            row["kernels"] = summ["top"]
            row["conv_kernel_ms"] = max(k["ms"] for k in summ["top"])
        except Exception as ex:  # noqa: BLE001 - recorded in the table
            row["error"] = str(ex)[:300]
        Xc = X.contiguous(memory_format=torch.channels_last)
        wc = w.contiguous(memory_format=torch.channels_last)
        conv = lambda: torch.nn.functional.conv2d(Xc, wc, b, s, p, d)  # noqa: E731
        row["torch_ms"] = time_cuda(conv, iters=30)
        flops = 2.0 * N * m["OH"] * m["OW"] * F * C * m["k"] ** 2
        row["torch_tflops"] = flops / row["torch_ms"] / 1e9
        if "conv_kernel_ms" in row:
            row["kernel_tflops"] = flops / row["conv_kernel_ms"] / 1e9
            row["kernel_vs_torch"] = row["torch_ms"] / row["conv_kernel_ms"]
        rows.append(row)
        print(f"{m['shape']:24s} {m['layout']} call {row.get('kiln_ms', float('nan')):7.3f} ms  "
              f"conv kernel {row.get('conv_kernel_ms', float('nan')):7.3f} ms "
              f"{row.get('kernel_tflops', 0):5.0f} TF/s  torch {row['torch_ms']:7.3f} ms "
              f"{row['torch_tflops']:5.0f} TF/s  x{row.get('kernel_vs_torch', 0):.2f}  "
              f"err {row.get('max_rel_err', float('nan')):.1e} {row.get('error', '')}", flush=True)
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--layout-ab", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    (prepare if a.mode == "prepare" else run)(a)


if __name__ == "__main__":
    main()
