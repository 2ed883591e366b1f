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

For a machine without kilnc (the H200 machine, which only runs what it is
given), the work splits in two, as in bench/hopper/networks.py:

  here:  .venv/bin/python bench/memory.py prepare DIR [--target cuda] [--precision fp32]
             [--models unet1024,resnet50b64,bert512] [--budgets 0.8x,0.6x,min]
  there: python3 bench/memory.py run DIR [--json FILE] [--iterations N] [--rounds R]
             [--runner python|kiln-run] [--models ...]

prepare exports each model with static shapes (unet<SIZE>[c<C>], skip<SIZE>,
resnet50b<BATCH>[s<SIZE>], mobilenetv2b<BATCH>, bert<SEQ> for BERT-base at
batch 1, bertsmall<SEQ> for make_models.py --small's), compiles it without a
budget and at each budget with --external-weights (one weights file per
model: kilnc writes the same manifest for every build, which prepare checks),
records the compiler's numbers in DIR/manifest.json and stages the .so files
and reports, the weightless graph, the weights manifest and the statistics
utils/models/fill_weights.py fills the weights from (measured on a smaller
image or batch), libkiln_runtime.so and kiln-run: a few MiB to carry instead
of the weights. With --external-weights a device build keeps the weights'
transforms (kiln_model_init) in persistent buffers of the arena, which no
budget lowers; so a budget Fx here is F times the natural peak of the
intermediates plus those buffers, in bytes (kilnc's own Fx is F times
both: the same where there are none). run regenerates the weights (checked
against the checksum taken here), runs every build once on the same seeded
inputs and compares its outputs with the unconstrained build's (bit-exact,
else the largest absolute and relative difference), times them in
interleaved rounds (CUDA events around kiln_instance_run_device on torch's
stream for a device build; kiln-run for a cpu one) and prints the table:
peak, x natural, arena, the largest scratch one kernel allocates on a device
(kilnc's report, "scr": held while that kernel runs, on top of the arena),
the device memory each instance took, recomputed and chunked launches, extra
FLOPs, p50 and min, extra time, identical.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools import run_tool  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
MIB = 1024.0 * 1024.0


def export_torch(model_name, path, size, channels, batch, calibrate=True):
    """Exports a static model; without `calibrate` the batch norms keep
    torch's initial statistics (for prepare, whose weights are filled anew)."""
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
    if calibrate:
        make_models._calibrate(model, lambda n: torch.randn(n, 3, size, size))
    model.eval()
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


# ---------------------------------------------------------------------------
# prepare here, run on another machine (the H200): issue 16's table
# ---------------------------------------------------------------------------

FILL = os.path.join(ROOT, "utils", "models", "fill_weights.py")
SEED = 1  # of the filled weights and the inputs
MIN_WEIGHT_BYTES = 64  # --external-weights-min-bytes
ONNX_DTYPES = {1: "float32", 10: "float16", 16: "bfloat16", 6: "int32", 7: "int64", 9: "bool"}


def parse_spec(tag):
    """A model of the prepare half by its name: unet1024 (unet<SIZE>[c<CHANNELS>][b<BATCH>]),
    skip<SIZE>[c..][b..], resnet50b64 (resnet50b<BATCH>[s<SIZE>]), mobilenetv2b<BATCH>[s..],
    bert512 (bert<SEQ>[b<BATCH>], BERT-base) and bertsmall<SEQ> (make_models.py --small's)."""
    m = re.fullmatch(r"(unet|skip)(\d+)(?:c(\d+))?(?:b(\d+))?", tag)
    if m:
        return {"tag": tag, "model": m[1], "size": int(m[2]), "channels": int(m[3] or 32),
                "batch": int(m[4] or 1)}
    m = re.fullmatch(r"(resnet50|mobilenetv2)b(\d+)(?:s(\d+))?", tag)
    if m:
        return {"tag": tag, "model": m[1], "batch": int(m[2]), "size": int(m[3] or 224),
                "channels": 0}
    m = re.fullmatch(r"bert(small)?(\d+)(?:b(\d+))?", tag)
    if m:
        return {"tag": tag, "model": "bert", "small": bool(m[1]), "seq": int(m[2]),
                "batch": int(m[3] or 1)}
    sys.exit(f"unknown model '{tag}' (unet<SIZE>[c<C>][b<B>], skip<SIZE>[c<C>][b<B>], "
             "resnet50b<B>[s<SIZE>], mobilenetv2b<B>[s<SIZE>], bert<SEQ>[b<B>], "
             "bertsmall<SEQ>[b<B>])")


def calibration_spec(spec):
    """The same model at the smaller size its statistics are measured at
    (onnxruntime, layer by layer: a U-Net at 1024x1024 or ResNet-50 at batch
    64 would take many minutes here), or None to measure on the model itself.
    The statistics are per channel, so a smaller image or batch gives them."""
    if spec["model"] in ("unet", "skip") and spec["size"] > 256:
        return dict(spec, size=256)
    if spec["model"] in ("resnet50", "mobilenetv2") and spec["batch"] > 4:
        return dict(spec, batch=4)
    return None


def export_spec(spec, path):
    if spec["model"] == "skip":
        export_skip(path, spec["size"], spec["channels"], spec["batch"])
    elif spec["model"] == "bert":
        import torch
        make_models = kiln_tools.project_module("utils/models/make_models.py")
        torch.manual_seed(0)
        model, _, inputs, outputs, _ = make_models.MODELS["bert"](spec["small"])
        ids = torch.randint(0, model.tok.num_embeddings, (spec["batch"], spec["seq"]))
        with torch.no_grad():  # static: batch and sequence fixed
            torch.onnx.export(model, (ids,), path, opset_version=make_models.OPSET,
                              input_names=inputs, output_names=outputs,
                              do_constant_folding=True)
    else:
        export_torch(spec["model"], path, spec["size"], spec["channels"], spec["batch"],
                     calibrate=False)


def kilnc_build(a, model, so, report, weights, budget=None):
    """kilnc for the prepare half: --external-weights=WEIGHTS (one file per
    model, shared by its builds), --report; returns (report, stderr)."""
    cmd = [os.path.join(BIN, "kilnc"), model, "-o", so, f"--target={a.target}",
           f"--precision={a.precision}", f"--external-weights={weights}",
           f"--external-weights-min-bytes={MIN_WEIGHT_BYTES}", f"--report={report}"]
    if budget:
        cmd.append(f"--max-memory={budget}")
    p = run_tool(cmd, check=False)
    if p.returncode != 0:
        return None, p.stderr.strip()
    with open(report) as f:
        return json.load(f), p.stderr.strip()


def graph_io(path):
    import onnx
    g = onnx.load(path, load_external_data=False).graph
    inits = {t.name for t in g.initializer}

    def desc(vi):
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if None in dims:
            sys.exit(f"{path}: '{vi.name}' has a symbolic dim (the exports are static)")
        return {"name": vi.name, "dtype": ONNX_DTYPES.get(tt.elem_type, str(tt.elem_type)),
                "shape": dims}
    return ([desc(v) for v in g.input if v.name not in inits], [desc(v) for v in g.output])


def prepare_model(a, spec, budgets, work):
    """Exports one model, compiles it unconstrained and at each budget, writes
    its weightless graph and statistics; returns its manifest entry."""
    tag = spec["tag"]
    t0 = time.time()
    for f in os.listdir(a.dir):  # an earlier staging of this model
        if f.startswith(tag + "."):
            os.remove(os.path.join(a.dir, f))
    src = os.path.join(work, tag + ".onnx")
    export_spec(spec, src)
    weights = os.path.join(a.dir, tag + ".weights")
    wman = weights + ".json"
    name = lambda b, ext: f"{tag}.{b.replace('.', '_')}{ext}"
    base, err = kilnc_build(a, src, os.path.join(a.dir, name("none", ".so")),
                            os.path.join(a.dir, name("none", ".json")), weights)
    if base is None:
        sys.exit(f"{tag}: kilnc failed:\n{err}")
    with open(wman) as f:
        layout = f.read()
    natural = base["peak_live_bytes"]
    # A first compile at 0.01x fails, naming the smallest arena kiln-remat
    # reaches and the persistent buffers (kiln_model_init's weight
    # transforms, with --external-weights) that every arena holds.
    _, err = kilnc_build(a, src, os.path.join(work, "probe.so"), os.path.join(work, "probe.json"),
                         os.path.join(work, "probe.weights"), "0.01x")
    m = re.search(r"--max-memory=(\d+) or", err)
    smallest = int(m.group(1)) if m else None
    m = re.search(r"with (\d+) bytes \([^)]*\) of persistent buffers", err)
    persistent = int(m.group(1)) if m else 0
    entry = {"tag": tag, "spec": spec, "weights": os.path.basename(weights),
             "natural_peak": natural, "natural_arena": base["arena_bytes"],
             "persistent": persistent, "total_flops": base["total_flops"],
             "builds": [{"budget": "none", "budget_bytes": None, "peak": natural,
                         "arena": base["arena_bytes"],
                         "scratch": base.get("device_scratch_bytes", 0),
                         "recomputed": 0, "chunked": 0,
                         "extra_flops": 0, "so": name("none", ".so"),
                         "report": name("none", ".json"),
                         "sha256": kiln_tools.file_sha256(
                             os.path.join(a.dir, name("none", ".so")))}]}
    print(f"{tag}: natural peak {natural / MIB:.2f} MiB, arena {base['arena_bytes'] / MIB:.2f} "
          f"MiB ({persistent / MIB:.2f} MiB persistent), {base['total_flops'] / 1e9:.3f} GFLOP",
          flush=True)
    for budget in budgets:
        if budget == "min":
            if smallest is None:
                sys.exit(f"{tag}: no smallest arena in kilnc's error at 0.01x:\n{err}")
            nbytes = str(smallest)
        elif budget.endswith("x"):
            # F times the natural peak of the intermediates, plus the
            # persistent buffers (kilnc's own Fx is F times both).
            nbytes = str(persistent + int(float(budget[:-1]) * natural))
        else:
            nbytes = budget
        so, rep_path = name(budget, ".so"), name(budget, ".json")
        rep, err = kilnc_build(a, src, os.path.join(a.dir, so), os.path.join(a.dir, rep_path),
                               weights, nbytes)
        if rep is None:
            m = re.search(r"memory budget of (\d+) bytes.*smallest peak reached is "
                          r"(\d+) bytes", err)
            if not m:
                sys.exit(f"{tag} at {budget}: kilnc failed:\n{err}")
            entry["builds"].append({"budget": budget, "budget_bytes": int(m.group(1)),
                                    "unreachable": int(m.group(2))})
            print(f"  {budget}: unreachable, smallest peak {int(m.group(2)) / MIB:.2f} MiB "
                  f"({int(m.group(2)) / natural:.2f}x)", flush=True)
            continue
        with open(wman) as f:
            if f.read() != layout:
                sys.exit(f"{tag} at {budget}: kilnc wrote another weights manifest than the "
                         "unconstrained build's; the builds cannot share one weights file")
        # A budget that gives the same build as another (min and 0.6x on
        # the U-Net) shares its file.
        sha = kiln_tools.file_sha256(os.path.join(a.dir, so))
        twin = next((b for b in entry["builds"] if b.get("sha256") == sha), None)
        if twin:
            os.remove(os.path.join(a.dir, so))
            so = twin["so"]
        remat = rep["remat"]
        entry["builds"].append({
            "budget": budget, "budget_bytes": remat["budget_bytes"],
            "peak": rep["peak_live_bytes"], "arena": rep["arena_bytes"],
            "scratch": rep.get("device_scratch_bytes", 0),
            "recomputed": len(remat["recomputed"]),
            "recomputed_nodes": [n for k in remat["recomputed"] for n in k["onnx_nodes"]],
            "chunked": len(remat.get("chunked", [])),
            "chunks": sorted({k["chunks"] for k in remat.get("chunked", [])}),
            "rows": any(k.get("rows") for k in remat.get("chunked", [])),
            "extra_flops": remat["extra_flops"], "so": so, "report": rep_path, "sha256": sha})
        print(f"  {budget}: peak {rep['peak_live_bytes'] / MIB:.2f} MiB "
              f"({rep['peak_live_bytes'] / natural:.2f}x), arena {rep['arena_bytes'] / MIB:.2f} "
              f"MiB, +{remat['extra_flops'] / 1e9:.3f} GFLOP", flush=True)

    # What the run needs to make the same weights there: the weightless
    # graph, the manifest (written by every build alike) and the statistics;
    # the weights' checksum to check them by.
    graph = os.path.join(a.dir, tag + ".graph.onnx")
    stats = os.path.join(a.dir, tag + ".stats.json")
    filled, check = os.path.join(work, "filled.onnx"), os.path.join(work, "check.weights")
    run_tool([sys.executable, FILL, src, "--manifest", wman, "--weightless", graph])
    fill = [sys.executable, FILL, graph, "--seed", str(SEED), "--out-model", filled,
            "--weights", check, "--manifest", wman, "--quiet"]
    cal = calibration_spec(spec)
    if cal:
        csrc = os.path.join(work, tag + ".calibration.onnx")
        export_spec(cal, csrc)
        run_tool([sys.executable, FILL, csrc, "--seed", str(SEED), "--out-model", filled,
                  "--manifest", wman, "--save-stats", stats, "--quiet"])
        run_tool(fill + ["--load-stats", stats])
        os.remove(csrc)
    else:
        run_tool(fill + ["--save-stats", stats])
    entry["weights_sha256"] = kiln_tools.file_sha256(check)
    entry["weights_bytes"] = os.path.getsize(check)
    entry["inputs"], entry["outputs"] = graph_io(graph)
    for path in (src, filled, check, weights):
        os.remove(path)  # the weights are regenerated there
    print(f"  {tag} staged in {time.time() - t0:.0f} s", flush=True)
    return entry


def prepare(argv):
    ap = argparse.ArgumentParser(
        prog="memory.py prepare",
        description="Compile the issue-16 table's builds for another machine (no kilnc there)")
    ap.add_argument("dir", help="where to stage (carry this folder)")
    ap.add_argument("--target", default="cuda", help="kilnc --target (cuda, cuda:sm_90a, cpu...)")
    ap.add_argument("--precision", default="fp32", help="kilnc --precision")
    ap.add_argument("--models", default="unet1024,resnet50b64,bert512",
                    help="comma-separated: unet<SIZE>[c<C>], resnet50b<B>, bert<SEQ>, ...")
    ap.add_argument("--budgets", default="0.8x,0.6x,min",
                    help="Fx (F times the natural peak, plus persistent buffers), bytes, or min")
    a = ap.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    man_path = os.path.join(a.dir, "manifest.json")
    man = {"format": "kiln-memory-bench", "version": 1, "target": a.target,
           "precision": a.precision, "seed": SEED, "models": []}
    if os.path.exists(man_path):  # staged model by model: add to it
        with open(man_path) as f:
            old = json.load(f)
        if (old.get("target"), old.get("precision")) == (a.target, a.precision):
            man = old
    work = tempfile.mkdtemp(prefix="kiln-memory-prepare-")
    budgets = [b for b in a.budgets.split(",") if b]
    for tag in a.models.split(","):
        entry = prepare_model(a, parse_spec(tag), budgets, work)
        man["models"] = [m for m in man["models"] if m["tag"] != tag] + [entry]
        with open(man_path, "w") as f:
            json.dump(man, f, indent=1)
    # The runtime (ctypes) and kiln-run (static), for a machine without a build.
    shutil.copy2(os.path.join(ROOT, "build", "lib", "libkiln_runtime.so"), a.dir)
    shutil.copy2(os.path.join(BIN, "kiln-run"), a.dir)
    shutil.rmtree(work, ignore_errors=True)
    total = 0
    for p in os.listdir(a.dir):
        total += os.path.getsize(os.path.join(a.dir, p))
    print(f"{a.dir}: {total / MIB:.1f} MiB to carry; there: python3 bench/memory.py run "
          f"{os.path.relpath(a.dir, ROOT) if a.dir.startswith(ROOT) else a.dir}")


class KilnRunRunner:
    """A build run by kiln-run (any target: CPU here, or a device): outputs
    through --output-dir, times through --export-times (a device's compute
    time between events when it has one, else the latency)."""

    def __init__(self, exe, so, inputs, threads, work):
        self.exe, self.so, self.threads, self.work = exe, so, threads, work
        self.args = [x for name, path in inputs for x in ("--input", f"{name}={path}")]
        if threads:
            self.args += ["--threads", str(threads)]
        self.device_bytes = None
        self.device = "kiln-run"

    def outputs(self):
        out = os.path.join(self.work, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        run_tool([self.exe, self.so, *self.args, "--output-dir", out])
        return [v for _, v in kiln_tools.read_outputs(out)]

    def times(self, n):
        path = os.path.join(self.work, "times.json")
        run_tool([self.exe, self.so, *self.args, "--iterations", str(n), "--export-times", path])
        with open(path) as f:
            t = json.load(f)
        self.device = t.get("device", self.device)
        key = "compute_ms" if t["times"] and "compute_ms" in t["times"][0] else "latency_ms"
        return [r[key] for r in t["times"]]

    def release(self):
        pass


class CudaRunner:
    """A build run in this process through the runtime's C API (ctypes, as
    bench/hopper/networks.py): kiln_instance_run_device on torch's stream
    and device tensors (CUDA graphs as the instance's default), each run
    timed by CUDA events; the device memory the instance took (free memory
    before it was created less after its first run)."""

    def __init__(self, lib, so, inputs, outputs):
        import torch
        from kiln_tools.runtime import KilnModel
        self.torch = torch
        self.outs = [torch.empty(o["shape"], dtype=getattr(torch, o["dtype"]), device="cuda")
                     for o in outputs]
        torch.cuda.synchronize()
        free = torch.cuda.mem_get_info()[0]
        self.km = KilnModel(lib, so)
        self.device = self.km.device
        self.km.set_stream(torch.cuda.current_stream().cuda_stream)
        self.km.prepare(inputs, self.outs)
        self.km.run()
        torch.cuda.synchronize()
        self.device_bytes = free - torch.cuda.mem_get_info()[0]

    def outputs(self):
        for o in self.outs:
            if o.is_floating_point():
                o.fill_(float("nan"))
        self.km.run()
        self.torch.cuda.synchronize()
        return [o.cpu().numpy() for o in self.outs]

    def times(self, n, warmup=3):
        torch = self.torch
        for _ in range(warmup):
            self.km.run()
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(n)]
        for start, end in events:
            start.record()
            self.km.run()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in events]

    def release(self):
        self.km.release()


def compare_outputs(got, ref):
    """Bit-identical, or the largest absolute difference (and relative to
    the reference's largest magnitude) over all outputs."""
    import numpy as np
    bit, max_abs, scale = True, 0.0, 0.0
    for g, r in zip(got, ref):
        if g.shape != r.shape or g.dtype != r.dtype:
            return {"bit_exact": False, "max_abs": float("inf"), "max_rel": float("inf"),
                    "note": f"shape/dtype {g.shape} {g.dtype} vs {r.shape} {r.dtype}"}
        bit = bit and g.tobytes() == r.tobytes()
        d = np.abs(g.astype(np.float64) - r.astype(np.float64))
        max_abs = max(max_abs, float(np.nan_to_num(d, nan=np.inf).max(initial=0.0)))
        scale = max(scale, float(np.abs(r.astype(np.float64)).max(initial=0.0)))
    return {"bit_exact": bit, "max_abs": max_abs,
            "max_rel": max_abs / scale if scale > 0 else max_abs}


def print_table(entry, rows, ms_what):
    natural, total = entry["natural_peak"], entry["total_flops"]
    print(f"\n{entry['tag']}: natural peak {natural / MIB:.2f} MiB, arena "
          f"{entry['natural_arena'] / MIB:.2f} MiB ({entry['persistent'] / MIB:.2f} MiB persistent "
          f"buffers), {total / 1e9:.3f} GFLOP; {ms_what}")
    print(f"{'model':<12} {'budget':>6} {'budget MiB':>10} {'peak MiB':>9} {'x nat':>6} "
          f"{'arena MiB':>9} {'scr MiB':>7} {'dev MiB':>8} {'recomp':>6} {'chunked':>10} "
          f"{'+FLOP%':>7} "
          f"{'p50 ms':>9} {'min ms':>9} {'+time%':>7}  identical")
    base = next((r for r in rows if r["budget"] == "none" and "ms" in r), None)
    for r in rows:
        b = "" if r["budget_bytes"] is None else f"{r['budget_bytes'] / MIB:.2f}"
        head = f"{entry['tag']:<12} {r['budget']:>6} {b:>10}"
        if "unreachable" in r:
            print(f"{head}  unreachable: smallest peak {r['unreachable'] / MIB:.2f} MiB "
                  f"({r['unreachable'] / natural:.2f}x)")
            continue
        if "error" in r:
            print(f"{head}  {r['error']}")
            continue
        chunked = (f"{r['chunked']} {'rows' if r.get('rows') else 'x'}"
                   f"{'/'.join(map(str, r.get('chunks', [])))}" if r.get("chunked") else "0")
        dev = "" if r.get("device_bytes") is None else f"{r['device_bytes'] / MIB:.0f}"
        lat = r.get("ms", {})
        extra_t = (f"{100.0 * (lat['p50'] / base['ms']['p50'] - 1):+.1f}"
                   if lat and base else "")
        c = r.get("compare", {})
        same = ("(reference)" if r["budget"] == "none" else "bit-exact" if c.get("bit_exact") else
                f"max abs {c['max_abs']:.1e} (rel {c['max_rel']:.1e})" if c else "")
        print(f"{head} {r['peak'] / MIB:>9.2f} {r['peak'] / natural:>6.2f} "
              f"{r['arena'] / MIB:>9.2f} {r.get('scratch', 0) / MIB:>7.1f} {dev:>8} "
              f"{r['recomputed']:>6} {chunked:>10} "
              f"{100.0 * r['extra_flops'] / total:>7.1f} "
              f"{lat.get('p50', float('nan')):>9.3f} {lat.get('min', float('nan')):>9.3f} "
              f"{extra_t:>7}  {same}", flush=True)


def run_model_builds(a, man, entry, tools, fill_weights):
    import numpy as np
    import onnx
    tag = entry["tag"]
    weights = os.path.join(a.dir, entry["weights"])
    graph_path = os.path.join(a.dir, tag + ".graph.onnx")
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="kiln-memory-run-") as tmp:
        run_tool([sys.executable, FILL, graph_path, "--seed", str(man["seed"]), "--out-model",
                  os.path.join(tmp, "filled.onnx"), "--weights", weights, "--manifest",
                  weights + ".json", "--load-stats", os.path.join(a.dir, tag + ".stats.json"),
                  "--quiet"])
    same = kiln_tools.file_sha256(weights) == entry["weights_sha256"]
    print(f"{tag}: weights regenerated in {time.time() - t0:.0f} s, identical to the build "
          f"machine's: {same}", flush=True)
    graph = onnx.load(graph_path, load_external_data=False)
    inits = {t.name: t for t in graph.graph.initializer}
    feeds = fill_weights.make_inputs(graph, man["seed"], 1, {}, inits, ":memory")
    rows = [dict(b) for b in entry["builds"]]
    for r in rows:
        r["weights_identical"] = same
    work = tempfile.mkdtemp(prefix="kiln-memory-run-")
    runners = {}
    try:
        if tools["runner"] == "python":
            import torch
            ins = [torch.from_numpy(np.ascontiguousarray(v)).cuda() for v in feeds.values()]
            make = lambda so: CudaRunner(tools["lib"], so, ins, entry["outputs"])
        else:
            paths = kiln_tools.write_inputs(feeds, os.path.join(work, "inputs"))
            make = lambda so: KilnRunRunner(tools["kiln-run"], so, paths, a.threads,
                                            os.path.join(work, "kr"))
        os.makedirs(os.path.join(work, "kr"), exist_ok=True)
        ref = None
        for r in rows:
            if "so" not in r:
                continue
            try:
                runner = make(os.path.join(a.dir, r["so"]))
                got = runner.outputs()
            except Exception as ex:  # noqa: BLE001 - recorded in the table
                r["error"] = f"failed: {(str(ex).strip().splitlines() or [repr(ex)])[-1][:200]}"
                if r["budget"] == "none":
                    print(f"{tag}: the unconstrained build failed: {ex}", flush=True)
                    return rows
                continue
            runners[id(r)] = runner
            r["device"], r["device_bytes"] = runner.device, runner.device_bytes
            if ref is None:
                ref = got
                r["finite"] = all(bool(np.isfinite(g).all()) for g in got
                                  if g.dtype.kind == "f")
                r["compare"] = {"bit_exact": True, "max_abs": 0.0, "max_rel": 0.0}
                if not r["finite"]:
                    print(f"{tag}: warning: the unconstrained build's outputs are not all "
                          "finite", flush=True)
            else:
                r["compare"] = compare_outputs(got, ref)
        # Interleaved rounds: each build in turn, so what comes and goes
        # on the machine falls on every build alike.
        timed = [r for r in rows if id(r) in runners]
        per_round = max(1, -(-a.iterations // a.rounds))
        samples = {id(r): [] for r in timed}
        for _ in range(a.rounds):
            for r in timed:
                samples[id(r)] += runners[id(r)].times(per_round)
        for r in timed:
            t = sorted(samples[id(r)])
            r["ms"] = {"p50": t[len(t) // 2], "mean": sum(t) / len(t), "min": t[0],
                       "runs": len(t)}
    finally:
        for runner in runners.values():
            runner.release()
        shutil.rmtree(work, ignore_errors=True)
        if not a.keep_weights:
            os.remove(weights)
    return rows


def run_dir(argv):
    ap = argparse.ArgumentParser(
        prog="memory.py run",
        description="Run the builds `memory.py prepare` staged (no kilnc needed)")
    ap.add_argument("dir")
    ap.add_argument("--models", default="", help="comma-separated subset of the staged models")
    ap.add_argument("--runner", choices=["python", "kiln-run"],
                    help="python: the runtime through ctypes on torch's CUDA tensors (default "
                         "for cuda builds); kiln-run: the staged kiln-run (default for cpu)")
    ap.add_argument("--iterations", type=int, default=0,
                    help="timed runs of each build over all rounds (default 50 on a device, "
                         "30 on the CPU)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--threads", type=int, default=0, help="kiln-run --threads (cpu)")
    ap.add_argument("--keep-weights", action="store_true",
                    help="keep the regenerated weights files")
    ap.add_argument("--json", default="", help="also write the rows here")
    a = ap.parse_args(argv)
    with open(os.path.join(a.dir, "manifest.json")) as f:
        man = json.load(f)
    on_cpu = man["target"].split(":")[0] == "cpu"
    a.iterations = a.iterations or (30 if on_cpu else 50)
    find = lambda name, *alts: next((p for p in (os.path.join(a.dir, name), *alts)
                                     if os.path.exists(p)), None)
    tools = {"runner": a.runner or ("kiln-run" if on_cpu else "python"),
             "lib": find("libkiln_runtime.so", os.path.join(ROOT, "build", "lib",
                                                            "libkiln_runtime.so")),
             "kiln-run": find("kiln-run", os.path.join(BIN, "kiln-run"))}
    if tools["runner"] == "python" and on_cpu:
        sys.exit("the python runner runs device builds (kiln_instance_run_device); "
                 "use --runner kiln-run for cpu builds")
    if not tools["lib" if tools["runner"] == "python" else "kiln-run"]:
        sys.exit(f"no libkiln_runtime.so / kiln-run in {a.dir} or build/")
    fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
    if tools["runner"] == "python":
        import torch
        what = (f"{torch.cuda.get_device_name()}, torch {torch.__version__}; ms: CUDA events "
                "around each kiln_instance_run_device")
    else:
        what = "ms: kiln-run --export-times (a device's compute_ms, else the latency)"
    print(f"{man['target']} {man['precision']}, {tools['runner']}: {what}; "
          f"{a.iterations} runs per build in {a.rounds} interleaved rounds", flush=True)
    wanted = [m for m in a.models.split(",") if m]
    results = []
    for entry in man["models"]:
        if wanted and entry["tag"] not in wanted:
            continue
        rows = run_model_builds(a, man, entry, tools, fill_weights)
        print_table(entry, rows, what)
        results.append({**{k: v for k, v in entry.items() if k != "builds"}, "rows": rows})
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"target": man["target"], "precision": man["precision"],
                           "runner": tools["runner"], "timing": what, "models": results},
                          f, indent=1)
    if len(results) > 1:
        print("\nall models:")
        for res in results:
            print_table(res, res["rows"], what)

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("prepare", "run"):
        (prepare if sys.argv[1] == "prepare" else run_dir)(sys.argv[2:])
    else:
        main()
