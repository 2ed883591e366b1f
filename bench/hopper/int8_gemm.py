#!/usr/bin/env python3
"""Quantized (QDQ) matrix products compiled by kilnc, timed on the GPU next
to Kiln's fp16 product of the same shape and to cuBLAS's int8 and fp16
products through torch (issue 19: is an int8 product's main loop twice as
fast as fp16's, as the tensor cores are?).

  here:  .venv/bin/python bench/hopper/int8_gemm.py prepare DIR [--shapes S,...]
             [--variant NAME=FLAGS]... [--chip sm_90a]
  there: python3 bench/hopper/int8_gemm.py run DIR [--json F] [--only LABELS]
  there, under Nsight Compute: ncu --clock-control none ... python3
             bench/hopper/int8_gemm.py run DIR --only LABEL --runs 3 --no-torch

Each int8 model is Y = Cast<f16>(DequantizeLinear(A) @ DequantizeLinear(W)
+ bias): A a uint8 [M, K] graph input with a per-tensor scale and zero
point (what a quantized activation is between two int8 layers), W a
constant int8 [K, N] with per-column scales (onnxruntime's quantize_static
per-channel form), so `kiln-onnx-fuse-qdq` makes it one u8 x s8 product
with the zero point's column sums, the scales and the bias in its epilogue
(docs/int8.md). `--epilogue gelu-q` shapes end as BERT's FFN1 does instead:
GELU (x * 0.5 * (1 + erf(x / sqrt(2)))) and a QuantizeLinear to uint8.
Each fp16 model is Y = A @ B + bias with A and B graph inputs (the payload
stays small; B N-major, as kilnc_gemm.py's). Every result is checked against
the float product of the same values before timing (rel L2).

The table gives, per shape, Kiln int8 and fp16 (CUDA graphs, kernel-only
times from the runtime's profile beside them), torch._int_mm (cuBLAS int8,
s8 x s8 -> s32) and torch.matmul fp16, in TOP/s, and int8 / fp16 per
library: the tensor cores' int8 rate is twice their fp16 rate, so a main
loop at the same efficiency gives 0.5.

--variant NAME=FLAGS builds every int8 model again with those kilnc flags
(rows "int8 +NAME"; the fp16 models too with --fp16-variants, "fp16 +NAME"): tiles (--gpu-tiles=...), --gpu-persistent=on,
--f32-constant-division for the gelu-q epilogue; a variant whose .so is the
default build's, byte for byte, is left out. The table compares a variant
with the default int8 build of its shape when both ran in the same call
(--no-fp16 leaves the fp16 models out of a variants-only directory).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

# name: (M, N, K, epilogue)
SHAPES = {
    "bert-qkv b32": (4096, 2304, 768, "dq"),
    "bert-out b32": (4096, 768, 768, "dq"),
    "bert-ffn1 b32": (4096, 3072, 768, "dq"),
    "bert-ffn1-gelu b32": (4096, 3072, 768, "gelu-q"),
    "bert-ffn2 b32": (4096, 768, 3072, "dq"),
    "rn50 l4 b64": (3136, 2048, 512, "dq"),
    "4096^3": (4096, 4096, 4096, "dq"),
    # ResNet-50's layer-1 and layer-2 1x1 convolutions at batch 64 as
    # products (NHWC: [N H W, C] x [C, F]): one or two K steps a tile.
    "rn50 l1 1x1 b64": (200704, 256, 64, "dq"),
    "rn50 l2 1x1 b64": (50176, 512, 128, "dq"),
    # Their block ends as the int8 network has them: the product, its bias,
    # the uint8 residual dequantized and added, ReLU, a QuantizeLinear to
    # uint8 (res-q); 115.6 MB and 57.9 MB moved.
    "rn50 l1 end b64": (200704, 256, 64, "res-q"),
    "rn50 l2 end b64": (50176, 512, 128, "res-q"),
    "rn50 l3 end b64": (12544, 1024, 256, "res-q"),
    # BERT-base's MLP block at batch 32 x 128, as a float model quantized by
    # kilnc --precision=int8 --calibrate (its float part in fp16, as the
    # network's int8 build has it) and built with --precision=fp16.
    "bert-mlp b32": (4096, 768, 3072, "mlp"),
}
SX, ZX = 0.02, 128  # A's scale and zero point
SY, ZY = 0.05, 20  # gelu-q's output quantization
SR, ZR = 0.04, 0  # res-q's residual (a ReLU's output: zero point 0)
SO, ZO = 0.06, 0  # res-q's output quantization


def file_sha256(path):
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def weights(K, N, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    wq = rng.integers(-127, 128, size=(K, N), dtype=np.int8)
    # Per-column scales of a trained layer's weights (max |w| about 3/sqrt(K)).
    sw = (3.0 / K ** 0.5 / 127 * (0.5 + rng.random(N))).astype(np.float32)
    bias = (rng.standard_normal(N) * 0.1).astype(np.float32)
    return wq, sw, bias


def int8_model(M, N, K, epilogue, seed):
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    wq, sw, bias = weights(K, N, seed)
    inits = [nh.from_array(wq, "Wq"), nh.from_array(sw, "sw"),
             nh.from_array(np.zeros(N, np.int8), "zw"),
             nh.from_array(np.array(SX, np.float32), "sx"),
             nh.from_array(np.array(ZX, np.uint8), "zx"),
             nh.from_array(bias, "bias")]
    nodes = [h.make_node("DequantizeLinear", ["A", "sx", "zx"], ["a"]),
             h.make_node("DequantizeLinear", ["Wq", "sw", "zw"], ["w"], axis=1),
             h.make_node("MatMul", ["a", "w"], ["p"]),
             h.make_node("Add", ["p", "bias"], ["y"])]
    if epilogue == "gelu-q":
        inits += [nh.from_array(np.array(2 ** 0.5, np.float32), "sqrt2"),
                  nh.from_array(np.array(1.0, np.float32), "one"),
                  nh.from_array(np.array(0.5, np.float32), "half"),
                  nh.from_array(np.array(SY, np.float32), "sy"),
                  nh.from_array(np.array(ZY, np.uint8), "zy")]
        nodes += [h.make_node("Div", ["y", "sqrt2"], ["g0"]),
                  h.make_node("Erf", ["g0"], ["g1"]),
                  h.make_node("Add", ["g1", "one"], ["g2"]),
                  h.make_node("Mul", ["y", "g2"], ["g3"]),
                  h.make_node("Mul", ["g3", "half"], ["g4"]),
                  h.make_node("QuantizeLinear", ["g4", "sy", "zy"], ["Y"])]
        out = h.make_tensor_value_info("Y", T.UINT8, [M, N])
    elif epilogue == "res-q":
        inits += [nh.from_array(np.array(SR, np.float32), "sr"),
                  nh.from_array(np.array(ZR, np.uint8), "zr"),
                  nh.from_array(np.array(SO, np.float32), "so"),
                  nh.from_array(np.array(ZO, np.uint8), "zo")]
        nodes += [h.make_node("DequantizeLinear", ["R", "sr", "zr"], ["r"]),
                  h.make_node("Add", ["y", "r"], ["s"]),
                  h.make_node("Relu", ["s"], ["t"]),
                  h.make_node("QuantizeLinear", ["t", "so", "zo"], ["Y"])]
        out = h.make_tensor_value_info("Y", T.UINT8, [M, N])
    else:
        nodes.append(h.make_node("Cast", ["y"], ["Y"], to=T.FLOAT16))
        out = h.make_tensor_value_info("Y", T.FLOAT16, [M, N])
    ins = [h.make_tensor_value_info("A", T.UINT8, [M, K])]
    if epilogue == "res-q":
        ins.append(h.make_tensor_value_info("R", T.UINT8, [M, N]))
    g = h.make_graph(nodes, "int8_gemm", ins, [out], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)


def mlp_model(M, H, F, seed):
    """x [M, H] -> MatMul(W1 [H, F]) + b1 -> GELU (as torch exports it) ->
    MatMul(W2 [F, H]) + b2 -> + x: BERT's MLP block, float weights scaled
    like a trained layer's."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(seed)
    c = {"W1": rng.standard_normal((H, F)) / H ** 0.5, "b1": rng.standard_normal(F) * 0.1,
         "W2": rng.standard_normal((F, H)) / F ** 0.5, "b2": rng.standard_normal(H) * 0.1,
         "sqrt2": np.array(2 ** 0.5), "one": np.array(1.0), "half": np.array(0.5)}
    inits = [nh.from_array(v.astype(np.float32), k) for k, v in c.items()]
    nodes = [h.make_node("MatMul", ["x", "W1"], ["p1"], name="ffn1"),
             h.make_node("Add", ["p1", "b1"], ["y1"]),
             h.make_node("Div", ["y1", "sqrt2"], ["g0"]),
             h.make_node("Erf", ["g0"], ["g1"]),
             h.make_node("Add", ["g1", "one"], ["g2"]),
             h.make_node("Mul", ["y1", "g2"], ["g3"]),
             h.make_node("Mul", ["g3", "half"], ["g4"]),
             h.make_node("MatMul", ["g4", "W2"], ["p2"], name="ffn2"),
             h.make_node("Add", ["p2", "b2"], ["y2"]),
             h.make_node("Add", ["y2", "x"], ["Y"])]
    g = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", T.FLOAT, [M, H])],
                     [h.make_tensor_value_info("Y", T.FLOAT, [M, H])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)


def mlp_input(M, H, seed):
    """LayerNorm-like rows: N(0, 1) values."""
    import numpy as np

    return np.random.default_rng(1000 + seed).standard_normal((M, H)).astype(np.float32)


def fp16_model(M, N, K):
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph(
        [h.make_node("MatMul", ["A", "B"], ["P"]), h.make_node("Add", ["P", "bias"], ["Y"])],
        "fp16_gemm",
        [h.make_tensor_value_info("A", T.FLOAT16, [M, K]),
         h.make_tensor_value_info("B", T.FLOAT16, [K, N]),
         h.make_tensor_value_info("bias", T.FLOAT16, [N])],
        [h.make_tensor_value_info("Y", T.FLOAT16, [M, N])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def prepare(a):
    import re

    import onnx

    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    names = a.shapes.split(",") if a.shapes else list(SHAPES)
    variants = [("", [])] + [(v.partition("=")[0], v.partition("=")[2].split())
                             for v in a.variant]
    man = []
    for i, name in enumerate(names):
        if name not in SHAPES:
            sys.exit(f"unknown shape '{name}'; known: {', '.join(SHAPES)}")
        M, N, K, epi = SHAPES[name]
        stem = name.replace(" ", "_").replace("^", "p")
        builds = []
        if epi in ("dq", "mlp") and not a.no_fp16:
            builds = [("fp16", vname, flags) for vname, flags in
                      (variants if a.fp16_variants else variants[:1])]
        builds += [("int8", vname, flags) for vname, flags in variants]
        default_sha = None
        for kind, vname, flags in builds:
            tag = f"{stem}_{kind}" + (f"_{vname}" if vname else "")
            path = os.path.join(a.dir, tag + ".onnx")
            so, report = os.path.join(a.dir, tag + ".so"), os.path.join(a.dir, tag + ".json")
            cmd = [kilnc, path, "-o", so, f"--target=cuda:{a.chip}", f"--report={report}",
                   *flags]
            if epi == "mlp":
                onnx.save(mlp_model(M, N, K, seed=i), path)
                if kind == "int8":
                    # One calibration sample of other values than the run's.
                    from kiln_tools import write_inputs
                    cal = os.path.join(a.dir, tag + ".calibration")
                    write_inputs({"x": mlp_input(M, N, seed=i + 500)},
                                 os.path.join(cal, "test_data_set_0"))
                    cmd += ["--precision=int8", f"--calibrate={cal}"]
                else:
                    cmd.append("--precision=fp16")
            else:
                onnx.save(int8_model(M, N, K, epi, seed=i) if kind == "int8" else
                          fp16_model(M, N, K), path)
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            os.remove(path)
            if epi == "mlp" and kind == "int8":
                shutil.rmtree(cal)
            ok = p.returncode == 0
            note = ""
            if ok:
                # A variant whose flags change nothing (--f32-constant-division
                # without divisions) is not carried twice.
                sha = file_sha256(so)
                if not vname:
                    default_sha = sha
                elif sha == default_sha:
                    os.remove(so)
                    os.remove(report)
                    print(f"{name:20s} {kind} +{vname}: the same .so as the default build, left out")
                    continue
            if ok:
                notes = re.findall(r'"(\d+x\d+x\d+[^"]*tile [^"]*)"', open(report).read())
                note = "; ".join(notes)
                os.remove(report)
            label = kind + (f" +{vname}" if vname else "")
            print(f"{name:20s} {label:16s} {'ok' if ok else 'FAILED ' + p.stderr[-300:]} "
                  f"({time.time() - t0:.1f} s) [{note}]", flush=True)
            man.append(dict(shape=name, M=M, N=N, K=K, epilogue=epi, kind=kind, label=label,
                            seed=i, so=tag + ".so", ok=ok, note=note))
    json.dump(man, open(os.path.join(a.dir, "manifest.json"), "w"), indent=1)
    runtime = os.path.join(ROOT, "build", "lib", "libkiln_runtime.so")
    shutil.copy(runtime, os.path.join(a.dir, "libkiln_runtime.so"))
    total = sum(os.path.getsize(os.path.join(a.dir, f)) for f in os.listdir(a.dir))
    print(f"{a.dir}: {total / 2**20:.1f} MiB to carry")
    bad = [m["so"] for m in man if not m["ok"]]
    if bad:
        sys.exit(f"{len(bad)} of {len(man)} models failed to compile: {', '.join(bad)}")


def reference(m, A, dev, R=None):
    """The float result the int8 model should give (float64 product of the
    dequantized values), from the same constants."""
    import torch

    wq, sw, bias = weights(m["K"], m["N"], m["seed"])
    a = (A.double() - ZX) * SX
    w = torch.from_numpy(wq).to(dev).double() * torch.from_numpy(sw).to(dev).double()
    y = a @ w + torch.from_numpy(bias).to(dev).double()
    if m["epilogue"] == "gelu-q":
        g = y * 0.5 * (1 + torch.erf(y / 2 ** 0.5))
        return torch.clamp(torch.round(g / SY) + ZY, 0, 255)
    if m["epilogue"] == "res-q":
        t = torch.relu(y + (R.double() - ZR) * SR)
        return torch.clamp(torch.round(t / SO) + ZO, 0, 255)
    return y


def run(a):
    import torch
    from kiln_tools.runtime import KilnModel, profile_runs, time_cuda

    lib = os.path.join(a.dir, "libkiln_runtime.so")
    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    only = set(a.only.split(",")) if a.only else None
    dev = "cuda"
    stream = torch.cuda.current_stream()
    rows, torch_done = [], {}
    for m in man:
        key = f"{m['shape']} {m['label']}"
        if not m["ok"] or (only and key not in only and m["shape"] not in only):
            continue
        M, N, K = m["M"], m["N"], m["K"]
        g = torch.Generator(device=dev).manual_seed(m["seed"])
        row = dict(m)
        if m["epilogue"] == "mlp":
            import numpy as np

            from onnx import numpy_helper  # noqa: F401

            x = torch.from_numpy(mlp_input(M, N, m["seed"])).to(dev)
            ins = [x]
            out_dt = torch.float32
            model = mlp_model(M, N, K, m["seed"])
            c = {t.name: torch.from_numpy(np.array(numpy_helper.to_array(t))).to(dev).double()
                 for t in model.graph.initializer}
            y1 = x.double() @ c["W1"] + c["b1"]
            ref = (y1 * 0.5 * (1 + torch.erf(y1 / 2 ** 0.5))) @ c["W2"] + c["b2"] + x.double()
        elif m["kind"] == "int8":
            # Activations around the zero point, as a quantized ReLU-free
            # layer's are (N(128, 30) clipped).
            A = torch.clamp(torch.randn(M, K, device=dev, generator=g) * 30 + ZX, 0, 255
                            ).round().to(torch.uint8)
            ins = [A]
            R = None
            if m["epilogue"] == "res-q":
                # A ReLU's quantized output: half zeros, the rest spread.
                R = torch.clamp(torch.randn(M, N, device=dev, generator=g) * 40, 0, 255
                                ).round().to(torch.uint8)
                ins.append(R)
            out_dt = torch.uint8 if m["epilogue"] in ("gelu-q", "res-q") else torch.float16
            ref = reference(m, A, dev, R)
        else:
            A = (torch.randn(M, K, device=dev, generator=g) * 0.5).half()
            B = (torch.randn(K, N, device=dev, generator=g) / K ** 0.5).half()
            bias = (torch.randn(N, device=dev, generator=g) * 0.1).half()
            ins = [A, B, bias]
            out_dt = torch.float16
            ref = A.double() @ B.double() + bias.double()
        Y = torch.zeros(M, N, device=dev, dtype=out_dt)
        try:
            km = KilnModel(lib, os.path.join(a.dir, m["so"]))
            km.set_stream(stream.cuda_stream)
            km.prepare(ins, [Y])
            km.run()
            torch.cuda.synchronize()
            d = Y.double() - ref
            if m["epilogue"] in ("gelu-q", "res-q"):
                # Quantized outputs: the share more than one step off.
                row["off_by_more_than_1"] = (d.abs() > 1).double().mean().item()
                row["rel_l2"] = (d.norm() / ref.norm()).item()
            else:
                row["rel_l2"] = (d.norm() / ref.norm()).item()
            for _ in range(a.runs - 1):
                km.run()
            if not a.no_torch:
                row["kiln_ms"] = time_cuda(km.run, iters=50)
            km.release()
            if not a.no_torch:
                _, prof = profile_runs(lib, os.path.join(a.dir, m["so"]), ins, [Y],
                                       stream.cuda_stream,
                                       os.path.join(a.dir, m["so"] + ".profile.jsonl"), runs=6)
                row["kernel_ms"] = prof["kernel_ms_per_run"]
                row["kernels"] = prof["top"]
        except Exception as ex:  # noqa: BLE001 - recorded in the table
            row["error"] = str(ex)[:300]
        ops = 2.0 * M * N * K * (2 if m["epilogue"] == "mlp" else 1)
        if "kernel_ms" in row:
            row["kiln_tops"] = ops / row["kernel_ms"] / 1e9
        if not a.no_torch and m["shape"] not in torch_done:
            t = {}
            a8 = torch.randint(-128, 128, (M, K), device=dev, dtype=torch.int8)
            b8 = torch.randint(-128, 128, (N, K), device=dev, dtype=torch.int8).t()
            try:
                t["int_mm_ms"] = time_cuda(lambda: torch._int_mm(a8, b8), iters=50)
            except Exception as ex:  # noqa: BLE001
                t["int_mm_error"] = str(ex)[:200]
            ah = torch.randn(M, K, device=dev).half()
            bh = torch.randn(K, N, device=dev).half()
            t["matmul_ms"] = time_cuda(lambda: torch.matmul(ah, bh), iters=50)
            torch_done[m["shape"]] = t
        row.update(torch_done.get(m["shape"], {}))
        rows.append(row)
        print(f"{m['shape']:20s} {m['label']:16s} kernel {row.get('kernel_ms', float('nan')):7.4f} ms"
              f" {row.get('kiln_tops', 0):6.0f} TOP/s  graph {row.get('kiln_ms', float('nan')):7.4f}"
              f" ms  rel L2 {row.get('rel_l2', float('nan')):.1e}"
              + (f" off>1 {row['off_by_more_than_1']:.1e}" if "off_by_more_than_1" in row else "")
              + f" {row.get('error', '')} [{m['note']}]", flush=True)
        if m["epilogue"] == "mlp":
            for k in row.get("kernels", []):
                print(f"    {k['name']:32s} {k['ms'] * 1e3:8.1f} us x{k['launches']:.0f}")
    if a.no_torch:
        return
    print("\n| shape | Kiln int8 | Kiln fp16 | int8 / fp16 | cuBLAS int8 (_int_mm) | cuBLAS fp16 "
          "| int8 / fp16 | Kiln int8 / cuBLAS int8 |")
    print("|---|---|---|---|---|---|---|---|")
    by = {(r["shape"], r["label"]): r for r in rows}
    ratios = []
    for name in dict.fromkeys(r["shape"] for r in rows):
        i8, f16 = by.get((name, "int8")), by.get((name, "fp16"))
        if not i8 or "kernel_ms" not in i8:
            continue
        M, N, K = i8["M"], i8["N"], i8["K"]
        ops = 2.0 * M * N * K * (2 if i8["epilogue"] == "mlp" else 1)

        def tops(ms):
            return f"{ms * 1e3:.1f} us, {ops / ms / 1e9:.0f} T" if ms else "-"

        cub8, cub16 = i8.get("int_mm_ms"), i8.get("matmul_ms")
        kr = i8["kernel_ms"] / f16["kernel_ms"] if f16 and "kernel_ms" in f16 else None
        if kr:
            ratios.append(kr)
        print(f"| {name} | {tops(i8['kernel_ms'])} | {tops(f16 and f16.get('kernel_ms'))} | "
              f"{kr and f'{kr:.2f}x' or '-'} | {tops(cub8)} | {tops(cub16)} | "
              f"{cub8 and cub16 and f'{cub8 / cub16:.2f}x' or '-'} | "
              f"{cub8 and '%.2fx' % (i8['kernel_ms'] / cub8) or '-'} |")
    for r in rows:
        if "+" in r["label"] and "kernel_ms" in r and (r["shape"], "int8") in by:
            base = by[(r["shape"], "int8")]
            if "kernel_ms" in base:
                print(f"{r['shape']:20s} {r['label']:16s} {r['kernel_ms'] / base['kernel_ms']:.3f}x"
                      f" the default int8 build's kernel time [{r['note']}]")
    if ratios:
        print(f"Kiln int8 / Kiln fp16 kernel time: median over {len(ratios)} shapes "
              f"{statistics.median(ratios):.2f}x")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--shapes", help="prepare: comma-separated shape names (default: all)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="prepare: every int8 model again with these kilnc flags")
    ap.add_argument("--no-fp16", action="store_true", help="prepare: the int8 models only")
    ap.add_argument("--fp16-variants", action="store_true",
                    help="prepare: build the fp16 models with every --variant too "
                         "(rows 'fp16 +NAME')")
    ap.add_argument("--only", help="run: comma-separated shapes or 'SHAPE LABEL' rows")
    ap.add_argument("--runs", type=int, default=1,
                    help="run: extra plain runs per model after the check (for ncu)")
    ap.add_argument("--no-torch", action="store_true",
                    help="run: no timing, no torch rows (for ncu: the check and --runs only)")
    ap.add_argument("--json")
    a = ap.parse_args()
    prepare(a) if a.mode == "prepare" else run(a)


if __name__ == "__main__":
    main()
