#!/usr/bin/env python3
"""CUDA graphs per input shape (issue 14 item 5) on a GPU: one .so with
symbolic batch and sequence serves several shapes; an instance keeps a graph
for each shape it has run (docs/runtime.md, "CUDA graphs"). This times runs
that alternate between the shapes with graphs on and off, in one process,
and checks that both give the same outputs.

  .venv/bin/python bench/hopper/shape_graphs.py prepare DIR     # here (kilnc)
  python3 bench/hopper/shape_graphs.py run DIR [--json FILE]    # on the GPU

The model is utils/models/make_models.py's small BERT (2 layers, hidden 64,
4 heads; launch-bound: what graphs help), exported with dims `batch` and
`seq` symbolic and compiled once with `kilnc --target=cuda --precision=fp16`.
`run` needs torch (CUDA) and DIR/libkiln_runtime.so (copy
build/lib/libkiln_runtime.so there).

For each mode (graphs on, off) one instance runs the shapes in turn
(b1 s16, b1 s32, b1 s64, b4 s64, then again), ROUNDS cycles after a warm-up
cycle of two runs per shape; CUDA events around each cycle give the
milliseconds per run, the median over cycles. Each shape alone (the same
shape run after run) is timed too, as the steady-state reference.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kiln_tools  # noqa: E402

SHAPES = [(1, 16), (1, 32), (1, 64), (4, 64)]


def prepare(a):
    import torch

    make_models = kiln_tools.project_module("utils/models/make_models.py")
    os.makedirs(a.dir, exist_ok=True)
    torch.manual_seed(0)
    model, args, inputs, outputs, _ = make_models.MODELS["bert"](True)
    src = os.path.join(a.dir, "bert_small.onnx")
    with torch.no_grad():
        torch.onnx.export(model, args, src, opset_version=make_models.OPSET,
                          input_names=inputs, output_names=outputs,
                          dynamic_axes={inputs[0]: {0: "batch", 1: "seq"},
                                        outputs[0]: {0: "batch", 1: "seq"}},
                          do_constant_folding=True)
    so = os.path.join(a.dir, "bert_small.so")
    subprocess.run([os.path.join(ROOT, "build", "bin", "kilnc"), src, "-o", so,
                    "--target=cuda", "--precision=fp16"], check=True)
    os.remove(src)
    with open(os.path.join(a.dir, "manifest.json"), "w") as f:
        json.dump({"so": "bert_small.so", "shapes": SHAPES, "vocab": 256}, f)
    print(f"{so}: {os.path.getsize(so) / 2**20:.1f} MiB")


def run(a):
    import numpy as np
    import torch
    from kiln_tools.runtime import KilnModel

    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    lib = os.path.join(a.dir, "libkiln_runtime.so")
    so = os.path.join(a.dir, man["so"])
    stream = torch.cuda.current_stream()
    rng = np.random.default_rng(1)
    feeds = {}
    for b, s in man["shapes"]:
        ids = torch.from_numpy(rng.integers(0, man["vocab"], (b, s), dtype=np.int64)).cuda()
        feeds[(b, s)] = ids
    result = {"device": torch.cuda.get_device_name(), "rounds": a.rounds, "modes": {}}
    outputs = {}
    for mode, graphs in (("graphs on", 1), ("graphs off", 0)):
        km = KilnModel(lib, so, graphs=graphs)
        km.set_stream(stream.cuda_stream)
        outs = {k: torch.empty((k[0], k[1], 64), device="cuda", dtype=torch.float32)
                for k in feeds}

        def run_shape(k):
            km.prepare([feeds[k]], [outs[k]])
            km.run()

        for _ in range(2):  # warm-up: the plain run, then the capture
            for k in feeds:
                run_shape(k)
        torch.cuda.synchronize()
        cycles = []
        for _ in range(a.rounds):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for k in feeds:
                run_shape(k)
            e1.record()
            e1.synchronize()
            cycles.append(e0.elapsed_time(e1) / len(feeds))
        cycles.sort()
        alone = {}
        for k in feeds:
            times = []
            for _ in range(a.rounds):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                run_shape(k)
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            times.sort()
            alone[f"b{k[0]} s{k[1]}"] = times[len(times) // 2]
        outputs[mode] = {k: v.cpu().numpy() for k, v in outs.items()}
        km.release()
        result["modes"][mode] = {"alternating_ms_per_run": cycles[len(cycles) // 2],
                                 "alone_ms": alone}
    same = all(np.array_equal(outputs["graphs on"][k], outputs["graphs off"][k])
               for k in feeds)
    finite = all(np.isfinite(v).all() for v in outputs["graphs on"].values())
    result["outputs_identical"] = bool(same)
    result["outputs_finite"] = bool(finite)
    on, off = result["modes"]["graphs on"], result["modes"]["graphs off"]
    print(f"{result['device']}: {len(feeds)} shapes of one .so, median of {a.rounds}")
    print("| shapes | graphs on (ms/run) | graphs off (ms/run) | on / off |")
    print("|---|---|---|---|")
    print(f"| alternating | {on['alternating_ms_per_run']:.4f} | "
          f"{off['alternating_ms_per_run']:.4f} | "
          f"{on['alternating_ms_per_run'] / off['alternating_ms_per_run']:.2f}x |")
    for k in on["alone_ms"]:
        print(f"| {k} alone | {on['alone_ms'][k]:.4f} | {off['alone_ms'][k]:.4f} | "
              f"{on['alone_ms'][k] / off['alone_ms'][k]:.2f}x |")
    print(f"outputs identical with and without graphs: {same}; finite: {finite}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if same and finite else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--rounds", type=int, default=50)
    r.add_argument("--json", default="")
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a)
        return 0
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
