#!/usr/bin/env python3
"""Carries networks to a machine without their weights (the GPU machine: no
LLVM, at most 64 MiB per call) and checks Kiln there against onnxruntime.

  # here (kilnc, torch): export, compile with --external-weights, write the
  # weightless graph, fill once to record the statistics and checksums
  .venv/bin/python utils/models/check_external_weights.py build OUT \\
      [--models resnet50,bert] [--small] [--target cuda] [--seed 1] [--precision fp16]
  # there (python3 with numpy, onnx, onnxruntime; build/bin/kiln-run carried)
  python3 utils/models/check_external_weights.py run OUT [--kiln-run build/bin/kiln-run]

OUT holds, per network, NAME.so, NAME.graph.onnx (initializers as external
data references into NAME.weights), NAME.weights.json (kilnc's manifest),
NAME.stats.json (the statistics fill_weights.py measured), an input and the
SHA-256 of the weights file written here: a few MiB instead of the weights.
`run` regenerates NAME.weights and the filled ONNX model with
fill_weights.py (same seed, --load-stats: the same bits as here, checked),
runs NAME.so with kiln-run and the filled model with onnxruntime, and prints
the largest error relative to the largest output value, and kiln-run's
latency (kiln-run --iterations 50). Exit code 1 when a check fails.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kiln_tools  # noqa: E402

FILL = os.path.join(HERE, "fill_weights.py")
DIMS = {"bert": {"seq": 128}, "gpt2": {"seq": 128}, "lstm": {"seq": 32}}
SMALL_DIMS = {"bert": {"seq": 16}, "gpt2": {"seq": 16}, "lstm": {"seq": 12}}



def build(args):
    import onnx
    fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
    make_models = kiln_tools.project_module("utils/models/make_models.py")

    os.makedirs(args.out, exist_ok=True)
    kilnc = os.path.join(args.bin, "kilnc")
    expected = {}
    for net in args.models.split(","):
        dims = (SMALL_DIMS if args.small else DIMS).get(net, {})
        # Half precision converts the weights at load (kiln_model_init).
        name = net if args.precision == "fp32" else f"{net}_{args.precision}"
        src = os.path.join(args.out, name + ".onnx")
        make_models.export(net, src, small=args.small)
        so = os.path.join(args.out, name + ".so")
        cmd = [kilnc, src, "-o", so, "--target", args.target, "--external-weights",
               f"--external-weights-min-bytes={args.min_bytes}",
               f"--precision={args.precision}"]
        for k, v in dims.items():
            cmd += ["--dim", f"{k}={v}"]
        kiln_tools.run_tool(cmd)
        manifest = os.path.join(args.out, name + ".weights.json")
        graph = os.path.join(args.out, name + ".graph.onnx")
        kiln_tools.run_tool([sys.executable, FILL, src, "--manifest", manifest, "--weightless", graph])
        stats = os.path.join(args.out, name + ".stats.json")
        weights = os.path.join(args.out, name + ".weights")
        dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
        kiln_tools.run_tool([sys.executable, FILL, graph, "--seed", str(args.seed), "--out-model",
            os.path.join(args.out, name + ".filled.onnx"), "--weights", weights, "--manifest",
            manifest, "--save-stats", stats, "--quiet", *dim_args])
        expected[name] = {"sha256": kiln_tools.file_sha256(weights), "seed": args.seed, "dims": dims,
                          "max_rel": 1e-4 if args.precision == "fp32" else 2e-2}
        # The input: fill_weights' seeded data (token ids in the vocabulary).
        model = onnx.load(graph, load_external_data=False)
        inits = {t.name: t for t in model.graph.initializer}
        feeds = fill_weights.make_inputs(model, args.seed, 1, dims, inits, ":check")
        for i, (k, v) in enumerate(feeds.items()):
            kiln_tools.write_pb(os.path.join(args.out, f"{name}.input_{i}.pb"), v, k)
        for path in (src, weights, os.path.join(args.out, name + ".filled.onnx")):
            os.remove(path)  # regenerated there
        print(f"{name}: {os.path.getsize(so) / 1e6:.1f} MB .so, weights sha256 "
              f"{expected[name]['sha256'][:16]}")
    path = os.path.join(args.out, "expected.json")
    if os.path.exists(path):  # several builds into one folder
        with open(path) as f:
            expected = {**json.load(f), **expected}
    with open(path, "w") as f:
        json.dump(expected, f, indent=1)
    total = sum(os.path.getsize(os.path.join(args.out, p)) for p in os.listdir(args.out))
    print(f"{args.out}: {total / 2**20:.1f} MiB to carry")


def run(args):
    import numpy as np
    import onnx
    import onnxruntime as ort

    print(f"numpy {np.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    with open(os.path.join(args.out, "expected.json")) as f:
        expected = json.load(f)
    ok = True
    for name, exp in expected.items():
        base = os.path.join(args.out, name)
        t = time.time()
        dim_args = [a for k, v in exp["dims"].items() for a in ("--dim", f"{k}={v}")]
        kiln_tools.run_tool([sys.executable, FILL, base + ".graph.onnx", "--seed", str(exp["seed"]),
            "--out-model", base + ".filled.onnx", "--weights", base + ".weights", "--manifest",
            base + ".weights.json", "--load-stats", base + ".stats.json", "--quiet", *dim_args])
        fill_s = time.time() - t
        same = kiln_tools.file_sha256(base + ".weights") == exp["sha256"]
        ok &= same
        inputs = sorted(p for p in os.listdir(args.out) if p.startswith(name + ".input_"))
        in_args, feeds = [], {}
        for p in inputs:
            in_args += ["--input", os.path.join(args.out, p)]
            k, v = kiln_tools.read_pb_named(os.path.join(args.out, p))
            feeds[k] = v
        outs = kiln_tools.run_model(base + ".so", in_args[1::2], os.path.join(args.out, name + ".out"),
                                    bindir=os.path.dirname(os.path.abspath(args.kiln_run)))
        worst = kiln_tools.max_rel_errors(outs, kiln_tools.ort_run(base + ".filled.onnx", feeds))
        ok &= worst <= exp.get("max_rel", args.max_rel)
        times = kiln_tools.tools.benchmark(base + ".so", in_args[1::2], 50,
                                           bindir=os.path.dirname(os.path.abspath(args.kiln_run)))
        lat = times["summary"]["latency_ms"]
        bench = (f"kiln-run: {times['iterations']} runs, latency p50 {lat['p50']:.4f} ms, "
                 f"p99 {lat['p99']:.4f} ms, {times['throughput_per_s']:.1f} inferences/s")
        if "compute_ms" in times["summary"]:
            s = times["summary"]
            bench += (f" (h2d {s['h2d_ms']['p50']:.4f}, compute {s['compute_ms']['p50']:.4f}, "
                      f"d2h {s['d2h_ms']['p50']:.4f} ms p50)")
        print(f"{name}: weights regenerated in {fill_s:.1f} s, identical to the build "
              f"machine's: {same}; max_rel_err vs onnxruntime {worst:.2e}; {bench}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("out")
    b.add_argument("--models", default="resnet50,bert")
    b.add_argument("--small", action="store_true")
    b.add_argument("--target", default="cuda")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"])
    b.add_argument("--min-bytes", type=int, default=64,
                   help="--external-weights-min-bytes (default 64: batch-norm and bias "
                        "vectors external too, so every weight is regenerated)")
    b.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "bin"))
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--kiln-run", default=os.path.join(HERE, "..", "..", "build", "bin",
                                                      "kiln-run"))
    r.add_argument("--max-rel", type=float, default=1e-4,
                   help="tolerance where the build recorded none")
    args = ap.parse_args()
    try:
        if args.cmd == "build":
            build(args)
            return 0
        return run(args)
    except kiln_tools.Error as e:
        sys.exit(f"check_external_weights: {e}")


if __name__ == "__main__":
    sys.exit(main())
