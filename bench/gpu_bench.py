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

import ctypes
import os
import subprocess
import time

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
    import make_models

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


def fill_weights(model, seed=0):
    """Seeded weights for every graph input that is a weight, scaled like a
    trained network's (He/Glorot by fan-in; small biases; LayerNorm and
    BatchNorm scale near 1; embeddings N(0, 0.02))."""
    import numpy as np

    rng = np.random.default_rng(seed)
    role = {}
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            role.setdefault(name, (node.op_type, i, node))
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if any(d.dim_param for d in vi.type.tensor_type.shape.dim) or vi.name not in role:
            continue
        op, idx, node = role[vi.name]
        shape = tuple(dims)
        n = rng.standard_normal(shape)
        if op == "Conv" and idx == 1:
            w = n * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
        elif op in ("MatMul", "Gemm") and len(shape) == 2 and idx == 1:
            trans = op == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
            fan_in = shape[1] if trans else shape[0]
            w = n * np.sqrt(1.0 / fan_in)
        elif op == "Gather" and idx == 0:
            w = n * 0.02
        elif op in ("LayerNormalization", "BatchNormalization") and idx == 1:
            w = 1.0 + 0.1 * n
        elif op == "BatchNormalization" and idx == 4:
            w = rng.uniform(0.5, 1.5, shape)
        else:
            w = 0.02 * n
        feeds[vi.name] = w.astype(np.float32)
    return feeds


def data_inputs(model, dims, seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value if not d.dim_param else dims[d.dim_param]
                 for d in vi.type.tensor_type.shape.dim]
        if not any(d.dim_param for d in vi.type.tensor_type.shape.dim):
            continue
        if vi.type.tensor_type.elem_type == 7:  # int64 token ids
            feeds[vi.name] = rng.integers(0, 30522, shape).astype(np.int64)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


class KilnModel:
    """model.so through libkiln_runtime.so's C API, on torch tensors."""

    class View(ctypes.Structure):
        _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                    ("dims", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]

    DTYPES = {"float32": 3, "int64": 8}

    def __init__(self, lib_path, so_path):
        lib = ctypes.CDLL(lib_path)
        for fn in ("kiln_model_load", "kiln_instance_create", "kiln_instance_run_device",
                   "kiln_instance_set_cuda_stream", "kiln_status_message"):
            getattr(lib, fn).restype = ctypes.c_void_p
        lib.kiln_instance_release.argtypes = [ctypes.c_void_p]
        lib.kiln_model_release.argtypes = [ctypes.c_void_p]
        lib.kiln_status_message.restype = ctypes.c_char_p
        lib.kiln_status_message.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.model = ctypes.c_void_p()
        self.check(lib.kiln_model_load(so_path.encode(), ctypes.byref(self.model)))
        self.inst = ctypes.c_void_p()
        self.check(lib.kiln_instance_create(self.model, ctypes.byref(self.inst)))

    def release(self):
        self.lib.kiln_instance_release(self.inst)
        self.lib.kiln_model_release(self.model)

    def check(self, status):
        if status:
            raise RuntimeError(self.lib.kiln_status_message(ctypes.c_void_p(status)).decode())

    def set_stream(self, stream_ptr):
        self.check(self.lib.kiln_instance_set_cuda_stream(self.inst, ctypes.c_void_p(stream_ptr)))

    def _views(self, tensors):
        arr = (self.View * len(tensors))()
        keep = []
        for i, t in enumerate(tensors):
            dims = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
            keep.append(dims)
            arr[i] = self.View(self.DTYPES[str(t.dtype).split(".")[1]], t.dim(), dims, t.data_ptr())
        return arr, keep

    def prepare(self, inputs, outputs):
        self.ins, self.k1 = self._views(inputs)
        self.outs, self.k2 = self._views(outputs)
        self.n_in, self.n_out = len(inputs), len(outputs)

    def run(self):
        self.check(self.lib.kiln_instance_run_device(self.inst, self.ins, self.n_in, self.outs, self.n_out))


def time_cuda(fn, warmup=5, iters=30):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def torch_model(net):
    import make_models
    import torch

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
            weights = fill_weights(graph)
            data = data_inputs(graph, b["dims"])
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
            # Where the time goes: the runtime's per-kernel times
            # (KILN_CUDA_PROFILE, read at instance creation; no graphs).
            prof = os.path.join(payload, "profile_" + b["label"].replace(" ", "_") + ".jsonl")
            os.environ["KILN_CUDA_PROFILE"] = prof
            try:
                kp = KilnModel(lib, os.path.join(payload, b["so"]))
                kp.set_stream(stream.cuda_stream)
                kp.prepare(ins, [out])
                for _ in range(6):
                    kp.run()
                torch.cuda.synchronize()
                kp.release()
            finally:
                del os.environ["KILN_CUDA_PROFILE"]
            import json
            with open(prof) as fh:
                rep = json.loads(fh.readlines()[-1])
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
        import json
        with open(os.path.join(out_dir, "bench_partial.json"), "w") as fh:
            json.dump(rows, fh, indent=1)
        log(f"bench {row['label']}: " + (row.get("error") or
            f"max rel err {row['max_rel']:.1e}; kiln {row['kiln_ms']:.2f} ms, eager {row['eager_ms']:.2f} ms, "
            f"torch.compile {row['compile_ms']:.2f} ms, kiln/eager {row['kiln_vs_eager']:.2f}x"))
    return rows
