"""Benchmarks for bench/gpu_check.py: ResNet-50 (batch 1, 64) and a
BERT-base encoder (batch 1, 32; sequence 128) in float32.

Here (prepare): the networks come from utils/models/make_models.py, exported
with a symbolic batch (and sequence), and every initializer of 1 KiB or more
becomes a graph input ("weights as inputs"): the graph that travels is small,
and kilnc compiles it with --dim for each benchmarked shape.
There (run): the weights are regenerated from a seed (numpy, the same on any
machine), the model is checked against onnxruntime (CPU) on the same weights
and inputs, and timed through the C API (kiln_instance_run_device on torch's
stream, CUDA events, after warm-up) next to PyTorch eager (float32, TF32 off)
and torch.compile of the same architecture.
"""
from __future__ import annotations

import json
import os
import time

import kiln_tools
from kiln_tools.runtime import KilnModel, profile_runs, time_cuda

BENCH = [  # (network, dims, label, kilnc --precision)
    ("resnet50", {"batch": 1}, "ResNet-50 b1", "fp32"),
    ("resnet50", {"batch": 64}, "ResNet-50 b64", "fp32"),
    ("bert", {"batch": 1, "seq": 128}, "BERT-base b1 s128", "fp32"),
    ("bert", {"batch": 32, "seq": 128}, "BERT-base b32 s128", "fp32"),
    # Issue 6: what half precision already buys (no tensor-core kernels yet).
    ("resnet50", {"batch": 64}, "ResNet-50 b64 fp16", "fp16"),
    ("bert", {"batch": 32, "seq": 128}, "BERT-base b32 s128 fp16", "fp16"),
    # Codegen variants against the default build of the same shape
    # ("<precision>+<kilnc flag>").
    ("bert", {"batch": 1, "seq": 128}, "BERT-base b1 s128 no warp reductions",
     "fp32+--gpu-warp-reductions=false"),
    ("bert", {"batch": 32, "seq": 128}, "BERT-base b32 s128 no warp reductions",
     "fp32+--gpu-warp-reductions=false"),
]
MIN_WEIGHT_BYTES = 1024


# --------------------------------------------------------------------------
# prepare (here)
# --------------------------------------------------------------------------


def export_weightless(name, path):
    """Exports network `name` with symbolic batch (and seq) and turns its
    initializers of >= 1 KiB into graph inputs. Returns the weight names."""
    import onnx
    import torch
    make_models = kiln_tools.project_module("utils/models/make_models.py")

    torch.manual_seed(0)
    model, args, inputs, outputs, _ = make_models.MODELS[name](False)
    if name == "resnet50":
        dynamic = {"input": {0: "batch"}, "logits": {0: "batch"}}
    else:
        dynamic = {"input_ids": {0: "batch", 1: "seq"}, "hidden": {0: "batch", 1: "seq"}}
    tmp = path + ".full"
    with torch.no_grad():
        torch.onnx.export(model, args, tmp, opset_version=make_models.OPSET, input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic, do_constant_folding=True)
    m = onnx.load(tmp)
    os.remove(tmp)
    keep, weights = [], []
    for init in m.graph.initializer:
        nbytes = len(init.raw_data) if init.raw_data else 0
        if nbytes >= MIN_WEIGHT_BYTES and init.data_type == onnx.TensorProto.FLOAT:
            m.graph.input.append(onnx.helper.make_tensor_value_info(
                init.name, init.data_type, list(init.dims)))
            weights.append(init.name)
        else:
            keep.append(init)
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    m.ir_version = 8
    onnx.save(m, path)
    return weights


def prepare(kilnc, payload, manifest, compile_one, log):
    manifest["bench"] = []
    for name in ("resnet50", "bert"):
        d = os.path.join(payload, "bench", name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        export_weightless(name, path)
        for net, dims, label, precision in BENCH:
            if net != name:
                continue
            prec, _, flag = precision.partition("+")
            tag = "_".join(f"{k}{v}" for k, v in dims.items()) + "_" + prec + (
                flag.replace("-", "_").replace("=", "_") if flag else "")
            so = os.path.join(d, f"model_{tag}.so")
            extra = [f"--dim={k}={v}" for k, v in dims.items()] + [f"--precision={prec}"]
            if flag:
                extra.append(flag)
            status, reason, dt = compile_one(kilnc, path, so, extra)
            log(f"  bench {label}: {status} {reason} ({dt:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB graph)")
            manifest["bench"].append({"net": name, "dims": dims, "label": label, "precision": precision,
                                      "so": os.path.relpath(so, payload),
                                      "onnx": os.path.relpath(path, payload), "compile": status,
                                      "reason": reason, "compile_s": round(dt, 1)})


# --------------------------------------------------------------------------
# run (there)
# --------------------------------------------------------------------------


def torch_model(net):
    import torch
    make_models = kiln_tools.project_module("utils/models/make_models.py")

    torch.manual_seed(0)
    model = make_models.MODELS[net](False)[0].eval().cuda()
    return model


def run(payload, manifest, log, out_dir):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lib = os.path.join(payload, "bin", "libkiln_runtime.so")
    rows = []
    torch_models = {}
    for b in manifest.get("bench", []):
        row = {"label": b["label"], "net": b["net"], "dims": b["dims"]}
        rows.append(row)
        if b["compile"] != "ok":
            row["error"] = "cuda compile: " + b["reason"]
            continue
        try:
            graph = onnx.load(os.path.join(payload, b["onnx"]))
            weights = kiln_tools.trained_weights(graph)
            # Token ids below BERT's vocabulary, drawn from seed 1.
            data = kiln_tools.seeded_inputs(graph, 1, b["dims"], int_high=30522,
                                            skip=set(weights))
            names = [vi.name for vi in graph.graph.input]
            feeds = {**weights, **data}
            # Correctness first: onnxruntime (CPU) on the same weights.
            t0 = time.time()
            ref = ort.InferenceSession(os.path.join(payload, b["onnx"]),
                                       providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            row["ort_cpu_s"] = round(time.time() - t0, 2)
            km = KilnModel(lib, os.path.join(payload, b["so"]))
            stream = torch.cuda.current_stream()
            km.set_stream(stream.cuda_stream)
            ins = [torch.from_numpy(feeds[n]).cuda() for n in names]
            out = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.float32)
            km.prepare(ins, [out])
            km.run()
            torch.cuda.synchronize()
            got = out.cpu().numpy()
            diff = got.astype(np.float64) - ref
            row["max_rel"] = float(np.max(np.abs(diff)) / np.max(np.abs(ref)))
            row["rel_l2"] = float(np.linalg.norm(diff) / np.linalg.norm(ref))
            if not np.isfinite(got).all():
                row["max_rel"] = row["rel_l2"] = float("inf")
            row["precision"] = b.get("precision", "fp32")
            row["kiln_ms"] = time_cuda(km.run)
            km.release()
            # Where the time goes: the runtime's per-kernel times (the
            # profile is set at instance creation; no graphs).
            prof = os.path.join(payload, "profile_" + b["label"].replace(" ", "_") + ".jsonl")
            rep, _ = profile_runs(lib, os.path.join(payload, b["so"]), ins, [out],
                                  stream.cuda_stream, prof, runs=6)
            # All profiles in one file (out_dir: what comes back).
            with open(os.path.join(out_dir, "profiles.jsonl"), "a") as fh:
                fh.write(json.dumps({"label": b["label"], **rep}) + "\n")
            runs = max(1, rep["runs"])
            row["profile"] = {"run_ms": rep["run_ms"] / runs, "kernel_ms": rep["kernel_ms"] / runs,
                              "launches_per_run": sum(k["launches"] for k in rep["kernels"]) / runs,
                              "top": [{"name": k["name"], "ms": k["total_ms"] / runs,
                                       "launches": k["launches"] / runs} for k in rep["kernels"][:8]]}
            if row["precision"] != "fp32":
                fp32 = next((r for r in rows if r["net"] == b["net"] and r["dims"] == b["dims"]
                             and r.get("precision") == "fp32" and "kiln_ms" in r), None)
                if fp32:
                    row["speedup_vs_fp32"] = fp32["kiln_ms"] / row["kiln_ms"]
                log(f"bench {row['label']}: rel L2 vs fp32 reference {row['rel_l2']:.1e}, max rel "
                    f"{row['max_rel']:.1e}; kiln {row['kiln_ms']:.2f} ms, "
                    f"{row.get('speedup_vs_fp32', float('nan')):.2f}x the fp32 build")
                continue
            # PyTorch eager and torch.compile, same architecture, own weights.
            if b["net"] not in torch_models:
                torch_models[b["net"]] = torch_model(b["net"])
            tm = torch_models[b["net"]]
            x = torch.from_numpy(data[names[0]] if names[0] in data else list(data.values())[0]).cuda()
            with torch.no_grad():
                row["eager_ms"] = time_cuda(lambda: tm(x))
                if os.environ.get("KILN_BENCH_TORCH_COMPILE", "1") != "0":
                    compiled = torch.compile(tm)
                    row["compile_ms"] = time_cuda(lambda: compiled(x), warmup=3)
                else:
                    row["compile_ms"] = float("nan")
            row["kiln_vs_eager"] = row["kiln_ms"] / row["eager_ms"]
        except Exception as e:  # report and continue with the next one
            import traceback
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            row["traceback"] = traceback.format_exc()[-1500:]
            log(row["traceback"])
        with open(os.path.join(out_dir, "bench_partial.json"), "w") as fh:
            json.dump(rows, fh, indent=1)
        log(f"bench {row['label']}: " + (row.get("error") or
            f"max rel err {row['max_rel']:.1e}; kiln {row['kiln_ms']:.2f} ms, eager {row['eager_ms']:.2f} ms, "
            f"torch.compile {row['compile_ms']:.2f} ms, kiln/eager {row['kiln_vs_eager']:.2f}x"))
    return rows
