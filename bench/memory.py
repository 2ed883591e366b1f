#!/usr/bin/env python3
"""kilnc --max-memory (kiln-remat) on the test models' U-Net and CNNs: peak,
arena, recomputation, batch chunking and run time at several budgets against
the unconstrained build.

  .venv/bin/python bench/memory.py [--model unet|skip|resnet50|mobilenetv2]
      [--size 256] [--channels 32] [--batch 1] [--budgets 0.9x,0.8x,0.6x,min]
      [--iterations 30] [--rounds 3] [--threads N] [--workdir DIR] [--json FILE]

`unet` is the U-Net of utils/models/make_models.py (two levels down,
ConvTranspose and bilinear Resize up, skip connections) exported at SIZE x SIZE
with CHANNELS base channels (the model's own sizes: 32 and 128); `skip` is the
model of test/tools/max-memory-e2e.py (a Relu skip tensor of CHANNELS/2
channels across a pooled middle of wider convolutions) at SIZE; `resnet50` and
`mobilenetv2` are torchvision's (random weights, batch-norm statistics
calibrated as make_models.py does) at SIZE (224 is theirs). Every model takes
BATCH images (a static batch: kiln-remat chunks it when recomputation cannot
reach a budget). It is compiled
without a budget (--report), then at each budget; `min` asks for the smallest
arena kiln-remat reaches (a first compile at 0.01x fails with that number in
its error, then that many bytes). A budget kiln-remat cannot reach is listed
with the smallest peak it reached. For each build that fits, the outputs of
one seeded input are compared bit for bit with the unconstrained build's
(kiln-run --rtol 0 --atol 0) before anything is timed; then kiln-run
--export-times times every build in ROUNDS interleaved rounds (N runs each in
all), so a load that comes and goes falls on every build alike: the latency's
p50, mean and min over all runs.
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools import run_tool  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
MIB = 1024.0 * 1024.0


def export_torch(model_name, path, size, channels, batch):
    import torch
    make_models = kiln_tools.project_module("utils/models/make_models.py")
    torch.manual_seed(0)
    if model_name == "unet":
        model = make_models.UNet(channels, classes=5)
        names = (["image"], ["masks"])
    else:
        import torchvision
        model = (torchvision.models.resnet50 if model_name == "resnet50"
                 else torchvision.models.mobilenet_v2)(weights=None)
        names = (["input"], ["logits"])
    make_models._calibrate(model, lambda n: torch.randn(n, 3, size, size))
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(batch, 3, size, size),), path,
                          opset_version=make_models.OPSET, input_names=names[0],
                          output_names=names[1], do_constant_folding=True)


def export_skip(path, size, channels, batch):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    f32 = lambda a: a.astype(np.float32)
    c, m = channels // 2, channels * 11 // 8
    inits = [
        numpy_helper.from_array(f32(rng.standard_normal((m, c, 3, 3)) * 0.1), "w1"),
        numpy_helper.from_array(f32(rng.standard_normal((m, m, 3, 3)) * 0.05), "w2"),
        numpy_helper.from_array(f32(rng.standard_normal((8, m, 1, 1)) * 0.1), "w3"),
        numpy_helper.from_array(f32(rng.standard_normal((4, 8 + c, 3, 3)) * 0.1), "w4"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]
    node = helper.make_node
    nodes = [
        node("Relu", ["x"], ["a"], name="skip_relu"),
        node("MaxPool", ["a"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"], name="relu2"),
        node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
        node("Resize", ["c3", "", "scales"], ["u"], name="up", mode="nearest"),
        node("Concat", ["u", "a"], ["cat"], name="cat", axis=1),
        node("Conv", ["cat", "w4"], ["y"], name="head", pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "skip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, size, size])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def kilnc(model, so, report, budget=None):
    cmd = [os.path.join(BIN, "kilnc"), model, "-o", so, f"--report={report}"]
    if budget:
        cmd.append(f"--max-memory={budget}")
    p = run_tool(cmd, check=False)
    if p.returncode != 0:
        return None, p.stderr.strip()
    with open(report) as f:
        return json.load(f), ""


def run_times(so, iterations, threads, seed, workdir):
    """The latency of each of `iterations` runs of `so` (ms)."""
    times = os.path.join(workdir, os.path.basename(so) + ".times.json")
    cmd = [os.path.join(BIN, "kiln-run"), so, "--seed", str(seed), "--iterations",
           str(iterations), "--export-times", times]
    if threads:
        cmd += ["--threads", str(threads)]
    run_tool(cmd)
    with open(times) as f:
        return [t["latency_ms"] for t in json.load(f)["times"]]


def time_builds(rows, iterations, rounds, threads, seed, workdir):
    """Times every build in `rounds` interleaved rounds (each build's
    iterations split between them, so a load that comes and goes on a shared
    machine falls on all builds alike); sets each row's p50, mean and min."""
    per_round = max(1, -(-iterations // rounds))
    samples = {id(r): [] for r in rows}
    for _ in range(rounds):
        for r in rows:
            samples[id(r)] += run_times(r["so"], per_round, threads, seed, workdir)
    for r in rows:
        t = sorted(samples[id(r)])
        r["latency"] = {"p50": t[len(t) // 2], "mean": sum(t) / len(t), "min": t[0],
                        "runs": len(t)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="unet",
                    choices=["unet", "skip", "resnet50", "mobilenetv2"])
    ap.add_argument("--size", type=int, default=256, help="input resolution")
    ap.add_argument("--channels", type=int, default=32,
                    help="base channels (unet, skip)")
    ap.add_argument("--batch", type=int, default=1, help="images per run")
    ap.add_argument("--budgets", default="0.9x,0.8x,0.6x,min",
                    help="comma-separated --max-memory values, or min")
    ap.add_argument("--iterations", type=int, default=30,
                    help="timed runs of each build, over all rounds")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved timing rounds (each build once a round)")
    ap.add_argument("--threads", type=int, default=0, help="kiln-run --threads")
    ap.add_argument("--seed", type=int, default=1, help="the input's seed")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--json", default="", help="also write the rows here")
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="kiln-memory-")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, f"{a.model}{a.size}c{a.channels}b{a.batch}.onnx")
    if not os.path.exists(model):
        if a.model == "skip":
            export_skip(model, a.size, a.channels, a.batch)
        else:
            export_torch(a.model, model, a.size, a.channels, a.batch)
    print(f"{a.model} {a.batch}x{a.size}x{a.size}, {a.channels} channels: {model}")

    base_so = os.path.join(work, "unconstrained.so")
    base, err = kilnc(model, base_so, os.path.join(work, "unconstrained.json"))
    if base is None:
        sys.exit(err)
    ref = os.path.join(work, "ref")
    os.makedirs(ref, exist_ok=True)
    run_tool([os.path.join(BIN, "kiln-run"), base_so, "--seed", str(a.seed),
              "--output-dir", ref])
    natural = base["peak_live_bytes"]
    rows = [{"budget": "none", "budget_bytes": None, "peak": natural,
             "arena": base["arena_bytes"], "recomputed": 0, "chunked": 0,
             "extra_flops": 0, "so": base_so}]

    for budget in a.budgets.split(","):
        spec = budget
        if budget == "min":
            _, err = kilnc(model, os.path.join(work, "probe.so"),
                           os.path.join(work, "probe.json"), "0.01x")
            m = re.search(r"--max-memory=(\d+) or", err)
            if not m:
                sys.exit(f"no smallest arena in kilnc's error:\n{err}")
            spec = m.group(1)
        tag = budget.replace(".", "_")
        so = os.path.join(work, f"budget_{tag}.so")
        report, err = kilnc(model, so, os.path.join(work, f"budget_{tag}.json"), spec)
        if report is None:
            m = re.search(r"memory budget of (\d+) bytes.*smallest peak reached is "
                          r"(\d+) bytes", err)
            if not m:
                sys.exit(err)
            rows.append({"budget": budget, "budget_bytes": int(m.group(1)),
                         "unreachable": int(m.group(2))})
            continue
        remat = report["remat"]
        # Bit-identical first.
        run_tool([os.path.join(BIN, "kiln-run"), so, "--seed", str(a.seed),
                  "--expect", os.path.join(ref, "output_0.pb"), "--rtol", "0",
                  "--atol", "0"])
        rows.append({"budget": budget, "budget_bytes": remat["budget_bytes"],
                     "peak": report["peak_live_bytes"], "arena": report["arena_bytes"],
                     "recomputed": len(remat["recomputed"]),
                     "recomputed_nodes": [n for k in remat["recomputed"]
                                          for n in k["onnx_nodes"]],
                     "chunked": len(remat.get("chunked", [])),
                     "chunks": sorted({k["chunks"] for k in remat.get("chunked", [])}),
                     "extra_flops": remat["extra_flops"],
                     "so": so})

    time_builds([r for r in rows if "so" in r], a.iterations, a.rounds, a.threads,
                a.seed, work)
    total = base["total_flops"]
    base_p50 = rows[0]["latency"]["p50"]
    print(f"natural peak {natural / MIB:.2f} MiB, arena {base['arena_bytes'] / MIB:.2f} "
          f"MiB, {total / 1e9:.3f} GFLOP; outputs bit-identical to the unconstrained "
          f"build where listed; latency over {a.iterations} runs")
    print(f"{'budget':>8} {'bytes':>10} {'peak MiB':>9} {'x nat':>6} {'arena MiB':>9} "
          f"{'recomp':>6} {'chunked':>9} {'+GFLOP':>7} {'+FLOP%':>6} {'p50 ms':>8} "
          f"{'mean ms':>8} {'min ms':>8} {'p50 x':>6}")
    for r in rows:
        b = "" if r["budget_bytes"] is None else str(r["budget_bytes"])
        if "unreachable" in r:
            print(f"{r['budget']:>8} {b:>10}  unreachable: smallest peak "
                  f"{r['unreachable'] / MIB:.2f} MiB ({r['unreachable'] / natural:.2f}x)")
            continue
        lat = r["latency"]
        chunked = (f"{r['chunked']} x{'/'.join(map(str, r['chunks']))}"
                   if r.get("chunked") else "0")
        print(f"{r['budget']:>8} {b:>10} {r['peak'] / MIB:>9.2f} {r['peak'] / natural:>6.2f} "
              f"{r['arena'] / MIB:>9.2f} {r['recomputed']:>6} {chunked:>9} "
              f"{r['extra_flops'] / 1e9:>7.3f} {100.0 * r['extra_flops'] / total:>6.1f} "
              f"{lat['p50']:>8.2f} {lat['mean']:>8.2f} {lat['min']:>8.2f} "
              f"{lat['p50'] / base_p50:>6.2f}")
        if r.get("recomputed_nodes"):
            print(f"{'':>8} recomputed: {', '.join(r['recomputed_nodes'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "size": a.size, "channels": a.channels,
                       "batch": a.batch, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
