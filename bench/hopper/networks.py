#!/usr/bin/env python3
"""Issue 12's network rows: Kiln fp16 on the H200 against PyTorch eager and
torch.compile(mode="reduce-overhead") fp16 in the same process.

  here:  .venv/bin/python bench/hopper/networks.py prepare DIR [--chip all|sm_90a|...] [--only ROWS]
             [--fuse-attention]
  there: python3 bench/hopper/networks.py run DIR [--json F] [--image sm_80 [--no-torch]]

--chip all (the default) builds what `kilnc --target=cuda` writes: one .so
with an sm_90a and a portable sm_80 image; the runtime takes sm_90a on the
H200, and run --image sm_80 (KILN_CUDA_CHIP) measures the portable image
there (--no-torch skips the PyTorch columns, already measured).
--fuse-attention adds each BERT row again compiled with `kilnc
--fuse-attention` (label "... +flash"): its attention chains run as the
fused kernel (docs/gpu.md, "Fused attention").

prepare exports each network with a symbolic batch (and sequence), compiles
one model.so per row with `kilnc --precision=fp16 --external-weights` (the
weights stay out of the .so; mixed precision converts them to half once per
instance, as for a user's model with initializers) and writes the weightless
graph, the weights manifest, the statistics and the checksum of the weights
file that utils/models/fill_weights.py writes from a seed (a few MiB to
carry instead of 0.5 GB). run regenerates the weights there (the same bytes,
checked), checks every row against onnxruntime (CPU, fp32, the same weights
and inputs: relative L2 and max relative error), then times Kiln
(kiln_instance_run_device on torch's stream, CUDA graphs) next to the same
architecture in PyTorch (fp16, channels_last for CNNs; its own seeded
weights: the time does not depend on their values), and the runtime's
per-kernel times (top kernels, achieved TFLOP/s for the matmuls).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kiln_tools  # noqa: E402

FILL = os.path.join(ROOT, "utils", "models", "fill_weights.py")
SEED = 1
# (label, network, dims)
ROWS = [
    ("ResNet-50 b1", "resnet50", {"batch": 1}),
    ("ResNet-50 b64", "resnet50", {"batch": 64}),
    ("BERT-base b1 s128", "bert", {"batch": 1, "seq": 128}),
    ("BERT-base b32 s128", "bert", {"batch": 32, "seq": 128}),
    ("MobileNetV2 b1", "mobilenetv2", {"batch": 1}),
]
DYNAMIC = {
    "resnet50": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "mobilenetv2": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "bert": {"input_ids": {0: "batch", 1: "seq"}, "hidden": {0: "batch", 1: "seq"}},
}



def tag(net, dims):
    return net + "_" + "_".join(f"{k}{v}" for k, v in dims.items())


def prepare(a):
    import torch

    make_models = kiln_tools.project_module("utils/models/make_models.py")
    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    rows = [r for r in ROWS if not a.only or r[0] in a.only.split(",")]
    man = {"chip": a.chip, "seed": SEED, "rows": [], "nets": {}}
    for net in dict.fromkeys(r[1] for r in rows):
        src = os.path.join(a.dir, net + ".onnx")
        torch.manual_seed(0)
        model, args, inputs, outputs, _ = make_models.MODELS[net](False)
        with torch.no_grad():
            torch.onnx.export(model, args, src, opset_version=make_models.OPSET,
                              input_names=inputs, output_names=outputs,
                              dynamic_axes=DYNAMIC[net], do_constant_folding=True)
        weights = os.path.join(a.dir, net + ".weights")
        variants = [(label, n, dims, []) for label, n, dims in rows]
        if a.fuse_attention:
            # The same BERT rows with the attention chains fused into one
            # kernel each (kilnc --fuse-attention; docs/gpu.md).
            variants += [(label + " +flash", n, dims, ["--fuse-attention"])
                         for label, n, dims in rows if n == "bert"]
        for label, n, dims, extra in variants:
            if n != net:
                continue
            so = os.path.join(a.dir, tag(net, dims) + ("_flash" if extra else "") + ".so")
            target = "cuda" if a.chip == "all" else f"cuda:{a.chip}"
            cmd = [kilnc, src, "-o", so, f"--target={target}", "--precision=fp16",
                   f"--external-weights={weights}", "--external-weights-min-bytes=64", *extra]
            cmd += [f"--dim={k}={v}" for k, v in dims.items()]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            ok = p.returncode == 0
            print(f"{label}: {'ok' if ok else 'FAILED ' + p.stderr[-400:]} "
                  f"({time.time() - t0:.1f} s)", flush=True)
            man["rows"].append({"label": label, "net": net, "dims": dims, "ok": ok,
                                "so": os.path.basename(so)})
        manifest = weights + ".json"
        graph = os.path.join(a.dir, net + ".graph.onnx")
        kiln_tools.run_tool([sys.executable, FILL, src, "--manifest", manifest,
                             "--weightless", graph])
        # Statistics at batch 1 (a sequence of 128), then the checksum of the
        # weights the run will regenerate.
        dims = {"seq": 128} if net == "bert" else {}
        dim_args = [x for k, v in dims.items() for x in ("--dim", f"{k}={v}")]
        stats = os.path.join(a.dir, net + ".stats.json")
        filled = os.path.join(a.dir, net + ".filled.onnx")
        kiln_tools.run_tool([sys.executable, FILL, graph, "--seed", str(SEED), "--out-model",
                             filled, "--weights", weights, "--manifest", manifest,
                             "--save-stats", stats, "--quiet", *dim_args])
        man["nets"][net] = {"sha256": kiln_tools.file_sha256(weights)}
        for path in (src, weights, filled):
            os.remove(path)  # regenerated there
    with open(os.path.join(a.dir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    total = sum(os.path.getsize(os.path.join(a.dir, p)) for p in os.listdir(a.dir))
    print(f"{a.dir}: {total / 2**20:.1f} MiB to carry")


def torch_model(net):
    import torch

    make_models = kiln_tools.project_module("utils/models/make_models.py")
    torch.manual_seed(0)
    model = make_models.MODELS[net](False)[0].eval().cuda().half()
    if net != "bert":
        model = model.to(memory_format=torch.channels_last)
    return model


def run(a):
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from kiln_tools.runtime import KilnModel, profile_runs, time_cuda

    fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    lib = os.path.join(a.dir, "libkiln_runtime.so")
    if a.image:
        os.environ["KILN_CUDA_CHIP"] = a.image  # read when a model loads
    stream = torch.cuda.current_stream()
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    results = []
    for net, info in man["nets"].items():
        base = os.path.join(a.dir, net)
        dims = {"seq": 128} if net == "bert" else {}
        dim_args = [x for k, v in dims.items() for x in ("--dim", f"{k}={v}")]
        kiln_tools.run_tool([sys.executable, FILL, base + ".graph.onnx", "--seed", str(SEED),
                             "--out-model", base + ".filled.onnx", "--weights",
                             base + ".weights", "--manifest", base + ".weights.json",
                             "--load-stats", base + ".stats.json", "--quiet", *dim_args])
        same = kiln_tools.file_sha256(base + ".weights") == info["sha256"]
        print(f"{net}: weights regenerated, identical to the build machine's: {same}", flush=True)
        graph = onnx.load(base + ".graph.onnx", load_external_data=False)
        inits = {t.name: t for t in graph.graph.initializer}
        sess = ort.InferenceSession(base + ".filled.onnx", providers=["CPUExecutionProvider"])
        tm = None
        for r in man["rows"]:
            if r["net"] != net:
                continue
            row = {"label": r["label"], "dims": r["dims"], "weights_identical": same}
            results.append(row)
            if not r["ok"]:
                row["error"] = "kilnc failed"
                continue
            rest = {k: v for k, v in r["dims"].items() if k != "batch"}
            feeds = fill_weights.make_inputs(graph, SEED, r["dims"]["batch"], rest, inits,
                                             ":bench")
            if net == "bert":  # token ids below the vocabulary
                feeds = {k: (np.abs(v) % 30522).astype(np.int64) for k, v in feeds.items()}
            ref = sess.run(None, feeds)[0]
            try:
                km = KilnModel(lib, os.path.join(a.dir, r["so"]))
                row["device"] = km.device
                km.set_stream(stream.cuda_stream)
                ins = [torch.from_numpy(np.ascontiguousarray(v)).cuda() for v in feeds.values()]
                out = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.float32)
                km.prepare(ins, [out])
                km.run()
                torch.cuda.synchronize()
                got = out.cpu().numpy().astype(np.float64)
                diff = got - ref
                finite = bool(np.isfinite(got).all())
                row["rel_l2"] = float(np.linalg.norm(diff) / np.linalg.norm(ref)) if finite else float("inf")
                row["max_rel"] = float(np.abs(diff).max() / np.abs(ref).max()) if finite else float("inf")
                row["kiln_ms"] = time_cuda(km.run, warmup=10, iters=50)
                km.release()
                _, row["profile"] = profile_runs(
                    lib, os.path.join(a.dir, r["so"]), ins, [out], stream.cuda_stream,
                    os.path.join(a.dir, r["so"] + ".profile.jsonl"))
            except Exception as ex:  # noqa: BLE001 - recorded in the table
                row["error"] = str(ex)[:300]
            # PyTorch on the same architecture, fp16.
            if a.no_torch:
                print(f"{row['label']:20s} kiln {row.get('kiln_ms', float('nan')):7.3f} ms "
                      f"({row.get('device', '?')})  rel L2 {row.get('rel_l2', float('nan')):.1e}"
                      f"  max rel {row.get('max_rel', float('nan')):.1e} {row.get('error', '')}",
                      flush=True)
                continue
            if tm is None:
                tm = torch_model(net)
            x = ins[0] if net == "bert" else ins[0].half().to(memory_format=torch.channels_last)
            with torch.no_grad():
                row["eager_ms"] = time_cuda(lambda: tm(x), warmup=10, iters=50)
                torch._dynamo.reset()
                compiled = torch.compile(tm, mode="reduce-overhead")
                for _ in range(3):
                    compiled(x)
                row["compile_ms"] = time_cuda(lambda: compiled(x), warmup=10, iters=50)
            if "kiln_ms" in row:
                row["kiln_vs_compile"] = row["kiln_ms"] / row["compile_ms"]
                row["kiln_vs_eager"] = row["kiln_ms"] / row["eager_ms"]
            print(f"{row['label']:20s} ({row.get('device', '?')}) kiln "
                  f"{row.get('kiln_ms', float('nan')):7.3f} ms  eager "
                  f"{row['eager_ms']:7.3f}  compile {row['compile_ms']:7.3f}  kiln/compile "
                  f"{row.get('kiln_vs_compile', float('nan')):5.2f}  rel L2 "
                  f"{row.get('rel_l2', float('nan')):.1e}  max rel {row.get('max_rel', float('nan')):.1e} "
                  f"{row.get('error', '')}", flush=True)
            prof = row.get("profile", {})
            if prof:
                print(f"    per run: {prof['launches_per_run']:.0f} launches, kernels "
                      f"{prof['kernel_ms_per_run']:.3f} ms (profiled, no graph)")
            for k in prof.get("top", [])[:15]:
                print(f"    {k['ms']:7.3f} ms x{k['launches']:.0f}  {k['name']}")
        for path in (base + ".weights", base + ".filled.onnx"):
            os.remove(path)
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="all",
                    help="prepare: all (--target=cuda, both images) or one chip")
    ap.add_argument("--image", help="run: the image of a two-image .so (KILN_CUDA_CHIP)")
    ap.add_argument("--no-torch", action="store_true", help="run: Kiln's columns only")
    ap.add_argument("--only", help="comma-separated row labels")
    ap.add_argument("--fuse-attention", action="store_true",
                    help="prepare: also the BERT rows compiled with --fuse-attention "
                         "(labelled '+flash'; the fused attention kernel)")
    ap.add_argument("--json")
    a = ap.parse_args()
    (prepare if a.mode == "prepare" else run)(a)


if __name__ == "__main__":
    main()
