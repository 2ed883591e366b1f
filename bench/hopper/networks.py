#!/usr/bin/env python3
"""Issue 12's network rows: Kiln fp16 on the H200 against PyTorch eager and
torch.compile(mode="reduce-overhead") fp16 in the same process; issue 19's
int8 rows (--int8): Kiln int8 next to Kiln fp16 and torch.compile fp16.

  here:  .venv/bin/python bench/hopper/networks.py prepare DIR [--chip all|sm_90a|...] [--only ROWS]
             [--fuse-attention] [--variant NAME=FLAGS]... [--int8 [--int8-parts]]
  there: python3 bench/hopper/networks.py run DIR [--json F] [--image sm_80 [--no-torch]] [--trace N]
  here, without a GPU: .venv/bin/python bench/hopper/networks.py run DIR --dry-run

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

int8 (--int8; issue 19, docs/int8.md): rows "ResNet-50 b64 int8" and
"BERT-base b32 s128 int8", each with the fp16 row of the same network and
shape (built too when --only leaves it out; without --only, --int8 builds
these four rows only). How an int8 model gets to the GPU machine, which has
no kilnc:
  (b) onnxruntime's quantize_static QDQ model compiled with --external-weights
      (its int8 initializers in the weights file, regenerated there) does not
      work: kiln-onnx-fuse-qdq makes a layer an integer product only when its
      8-bit weights are constants (their column sums for the activation's
      zero point are folded at compile time), and kiln-onnx-insert-qdq
      quantizes only constant float weights. With the weights external every
      contraction stays a float FMA kernel (a QDQ MLP and conv net,
      --target=cuda:sm_90a --external-weights: "tile 64x64x16, FMA" for all
      of them, with the weights embedded "wgmma m64n64k32 u8xs8"), so the
      row would time fp32 FMA code, not int8.
  (a) Kiln's own PTQ on the filled float model is what runs: `kilnc
      --precision=int8 --calibrate=DIR` (the default percentile method; one
      calibration sample holding the row's whole batch: ResNet-50 64 smooth
      random pictures as bench/int8.py --ptq and kiln_accuracy write them,
      seed kiln_accuracy.CALIBRATION_SEED; BERT 32 seeded token sequences);
      every Conv, MatMul and Gemm with constant weights becomes a u8 x s8
      product on an integer matrix instruction (ResNet-50: all 54, 45 on
      sm_90a's wgmma, 9 convolutions of fewer than 128 channels on mma.sync
      m16n8k32; BERT: the 48 weight products on wgmma, its 24 attention
      products Q.K^T and P.V of two activations stay fp32, on FMA kernels,
      where the fp16 build has tensor cores), the int8 weights derived constants
      embedded in the .so. One image (--target=cuda:sm_90a whatever --chip
      says): a two-image .so holds the weights twice (ResNet-50: 27.1 MB
      for sm_90a, 52.7 MB for both). The float model's weights are the fp16
      rows' (same seed, statistics and checksum), so run checks the int8 row
      against onnxruntime fp32 on the weights it regenerates there, and the
      .so's quantized weights come from those same bytes.
BERT's int8 .so holds 85 MB of int8 weights (90 MB; its float word
embeddings, 94 MB, a Gather, stay in a weights file written there from the
regenerated fp16 weights: --external-weights-min-bytes above every
product's weights), more than one device call carries (~50 MiB with the
rest of the stage). Without --int8-parts it is compiled, measured and left
out (the row says "not carried"); with --int8-parts every int8 .so larger
than --part-mib is cut into DIR.part1, DIR.part2, ... (one per earlier
device call of the same lease, each carried alone: a warm machine keeps
them), and run joins the parts it finds next to DIR (checked against the
whole file's sha256; a missing part fails that row, saying which).
An int8 .so larger than --part-mib is first cut down instead: the int8
weights of every MatMul that run can recompute from the regenerated float
model (int8_matmul_weights: Kiln's PTQ quantization redone in numpy, the
K-major layout) are found in the .so, zeroed, and the rest gzipped
(NAME.so.gz); run puts them back and checks the whole file's sha256.
BERT-base b32's 84.3 MiB .so carries as 1.9 MiB (48 blobs, 81.0 MiB), in
the one call with the rest. Parts are the fallback when some weights are
not found or the remainder is still too large.

The int8 rows are checked against onnxruntime fp32 on the same float weights
and inputs (ResNet-50: smooth pictures of another seed; BERT: the fp16
row's token ids): rel L2 and max relative error, and for ResNet-50's logits
top-1 agreement over the batch; reported, not asserted (what to expect: the
same PTQ built for this machine's CPU, --target=cpu, gives rel L2 0.019 and
top-1 62 of 64 for ResNet-50, rel L2 0.031 for BERT). They are timed as
the fp16 rows (the same process and stream, CUDA graphs, per-kernel
profile); their PyTorch columns are the fp16 row's, and the table at the
end gives int8 / Kiln fp16 (issue 19's bar: <= 0.7) and int8 /
torch.compile per network. Since the fp16 row is timed before torch.compile
runs in the process and the int8 row after it, each int8 row also times
both builds again in turns (ab_times: four rounds of 30 graph replays each,
medians), the column "in turns".

run --dry-run (no GPU, no torch): everything up to the CUDA calls, the
weights regenerated and checked, the parts joined, the references computed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kiln_tools  # noqa: E402
from int8_carry import join_parts, regen_int8, split_parts  # noqa: E402

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
# Issue 19's int8 rows, each compared with the fp16 row of its network and
# dims (its label without " int8").
INT8_ROWS = [
    ("ResNet-50 b64 int8", "resnet50", {"batch": 64}),
    ("BERT-base b32 s128 int8", "bert", {"batch": 32, "seq": 128}),
]
INT8_CHIP = "sm_90a"
# Float initializers of at least this many bytes stay out of an int8 .so
# (BERT's word embeddings, 94 MB; the largest product's weights are 9.4 MB
# and must be constants to be quantized).
INT8_EXTERNAL_MIN_BYTES = 1 << 25
CALIBRATION_SEED = 100000  # utils/kiln_accuracy.py's: disjoint from EVAL_SEED
EVAL_SEED = 0
DYNAMIC = {
    "resnet50": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "mobilenetv2": {"input": {0: "batch"}, "logits": {0: "batch"}},
    "bert": {"input_ids": {0: "batch", 1: "seq"}, "hidden": {0: "batch", 1: "seq"}},
}


def tag(net, dims):
    return net + "_" + "_".join(f"{k}{v}" for k, v in dims.items())


def partner(label):
    """The fp16 row an int8 row is compared with."""
    return label[:-len(" int8")] if label.endswith(" int8") else None


def selected_rows(a):
    """(fp16 rows, int8 rows) to build: --only's labels, else the int8 rows
    (--int8) or the fp16 ones; an int8 row brings its fp16 row."""
    if a.only:
        labels = a.only.split(",")
        unknown = set(labels) - {r[0] for r in ROWS + INT8_ROWS}
        if unknown:
            sys.exit(f"unknown rows: {', '.join(sorted(unknown))}")
    else:
        labels = [r[0] for r in (INT8_ROWS if a.int8 else ROWS)]
    int8 = [r for r in INT8_ROWS if r[0] in labels]
    labels += [partner(r[0]) for r in int8]
    return [r for r in ROWS if r[0] in labels], int8


def fill_args(net):
    """fill_weights.py's --dim flags: statistics at batch 1 (a sequence of
    128)."""
    dims = {"seq": 128} if net == "bert" else {}
    return [x for k, v in dims.items() for x in ("--dim", f"{k}={v}")]


def eval_feeds(net, graph, dims, int8):
    """The inputs a row is checked and timed on: seeded noise (token ids
    below the vocabulary for BERT); ResNet-50's int8 row smooth pictures
    (what it was calibrated on, another seed)."""
    import numpy as np

    fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
    if int8 and net != "bert":
        return kiln_tools.image_inputs(graph, EVAL_SEED, dims)
    inits = {t.name: t for t in graph.graph.initializer}
    rest = {k: v for k, v in dims.items() if k != "batch"}
    feeds = fill_weights.make_inputs(graph, SEED, dims["batch"], rest, inits, ":bench")
    if net == "bert":  # token ids below the vocabulary
        feeds = {k: (np.abs(v) % 30522).astype(np.int64) for k, v in feeds.items()}
    return feeds


def write_int8_weights(path, man_path, fp16_weights, fp16_man_path):
    """The weights file of an int8 .so (BERT's word embeddings) from the fp16
    rows' weights file (regenerated and checked): the same tensors' bytes at
    the int8 manifest's offsets, written as fill_weights.py writes it."""
    fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
    man = fill_weights.load_manifest(man_path)
    where = {w["name"]: w for w in fill_weights.load_manifest(fp16_man_path)["weights"]}
    with open(fp16_weights, "rb") as f:
        def data_of(name):
            w = where.get(name)
            if w is None:
                raise fill_weights.FillError(f"'{name}' is not in {fp16_man_path}")
            f.seek(w["offset"])
            return f.read(w["bytes"])
        fill_weights.write_weights(path, man, data_of)


def int8_summary(report):
    """Where the int8 build's products run, from its kilnc report."""
    rep = json.load(open(report))
    lines = [c for k in rep["kernels"] for c in k.get("gpu_contractions", [])]
    counts = rep["precision"]["counts"]
    return {"int8_nodes": counts.get("int8", 0), "fp32_nodes": counts.get("fp32", 0),
            "wgmma_int8": sum("wgmma" in c and ("u8xs8" in c or "s8xs8" in c)
                              for c in lines),
            "mma_sync_int8": sum("16x8x32" in c for c in lines),
            "fma": sum(", FMA," in c for c in lines),
            "int8_weight_bytes": rep["precision"].get("converted_bytes", 0)}


def build_int8(a, kilnc, row, filled, graph_path, weights, man_row, suffix="", extra=()):
    """Kiln's PTQ of the filled float model for one int8 row (route (a) of
    the docstring): calibration inputs, `kilnc --precision=int8 --calibrate`
    for sm_90a alone (with `extra` flags: an --int8-variant), the report's
    summary, the parts when too large."""
    import onnx

    label, net, dims = row
    base = os.path.join(a.dir, tag(net, dims) + "_int8" + suffix)
    so = base + ".so"
    cal = base + ".calibration"
    # One sample holding the row's batch (kilnc calibrates at the compiled
    # shape): seeded token ids, or smooth pictures (kiln_accuracy's
    # write_calibration: kiln_tools.image_inputs, ImageNet's normalization).
    if net == "bert":
        fill_weights = kiln_tools.project_module("utils/models/fill_weights.py")
        graph = onnx.load(graph_path, load_external_data=False)
        inits = {t.name: t for t in graph.graph.initializer}
        rest = {k: v for k, v in dims.items() if k != "batch"}
        feeds = fill_weights.make_inputs(graph, CALIBRATION_SEED, dims["batch"], rest, inits,
                                         ":calibration")
    else:
        feeds = kiln_tools.image_inputs(filled, CALIBRATION_SEED, dims)
    kiln_tools.write_inputs(feeds, os.path.join(cal, "test_data_set_0"))
    report = base + ".report.json"
    chip = INT8_CHIP if a.chip == "all" else a.chip
    cmd = [kilnc, filled, "-o", so, f"--target=cuda:{chip}", "--precision=int8",
           f"--calibrate={cal}", f"--report={report}"]
    cmd += [f"--dim={k}={v}" for k, v in dims.items()]
    cmd += list(extra)
    external = None
    if net == "bert":
        external = base + ".weights"
        cmd += [f"--external-weights={external}",
                f"--external-weights-min-bytes={INT8_EXTERNAL_MIN_BYTES}"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    shutil.rmtree(cal)
    man_row.update(precision="int8", route="kiln-ptq", chip=chip, ok=p.returncode == 0,
                   compile_s=round(time.time() - t0, 1))
    if p.returncode != 0:
        man_row["error"] = "kilnc failed: " + p.stderr[-400:]
        print(f"{label}: FAILED {p.stderr[-400:]}", flush=True)
        return
    man_row["build"] = int8_summary(report)
    if not a.keep_reports:
        os.remove(report)
    size = os.path.getsize(so)
    man_row["so_bytes"] = size
    man_row["so_sha256"] = kiln_tools.file_sha256(so)
    if external:
        # What run writes there from the regenerated fp16 weights, checked
        # against kilnc's own file here.
        kilnc_sha = kiln_tools.file_sha256(external)
        write_int8_weights(external, external + ".json", weights, weights + ".json")
        man_row["weights"] = {"file": os.path.basename(external),
                              "sha256": kiln_tools.file_sha256(external),
                              "same_as_kilnc": kiln_tools.file_sha256(external) == kilnc_sha}
        os.remove(external)
    note = ""
    regen = regen_int8(so, filled, a.part_mib) if size > a.part_mib << 20 else None
    if regen:
        man_row["regen"] = regen
        os.remove(so)
        note = (f", carried as {regen['file']} "
                f"({os.path.getsize(os.path.join(a.dir, regen['file'])) / 2**20:.1f} MiB: "
                f"{len(regen['blobs'])} int8 weight blobs, "
                f"{regen['zeroed_bytes'] / 2**20:.1f} MiB, recomputed there)")
    elif size > a.part_mib << 20:
        if a.int8_parts:
            man_row["parts"] = split_parts(a.dir, so, a.part_mib)
            note = f", in {len(man_row['parts'])} parts: " + ", ".join(
                p["dir"] for p in man_row["parts"])
        else:
            os.remove(so)
            man_row["ok"] = False
            man_row["error"] = (f"not carried: its .so is {size / 2**20:.1f} MiB (int8 weights "
                                f"embedded), more than --part-mib {a.part_mib}; prepare "
                                "--int8-parts carries it in parts over earlier calls")
            note = " (" + man_row["error"] + ")"
    print(f"{label}: compiled ({man_row['compile_s']} s, {size / 2**20:.1f} MiB, "
          f"{json.dumps(man_row['build'])}){note}", flush=True)


def prepare(a):
    import torch

    make_models = kiln_tools.project_module("utils/models/make_models.py")
    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    rows, int8_rows = selected_rows(a)
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
        # --variant NAME=FLAGS: every row again with FLAGS ("... +NAME").
        suffix = {}
        for v in a.variant:
            name, _, flags = v.partition("=")
            for label, n, dims in rows:
                variants.append((label + " +" + name, n, dims, flags.split()))
                suffix[label + " +" + name] = "_" + name
        for label, n, dims, extra in variants:
            if n != net:
                continue
            so = os.path.join(a.dir, tag(net, dims) +
                              suffix.get(label, "_flash" if extra else "") + ".so")
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
        stats = os.path.join(a.dir, net + ".stats.json")
        filled = os.path.join(a.dir, net + ".filled.onnx")
        kiln_tools.run_tool([sys.executable, FILL, graph, "--seed", str(SEED), "--out-model",
                             filled, "--weights", weights, "--manifest", manifest,
                             "--save-stats", stats, "--quiet", *fill_args(net)])
        man["nets"][net] = {"sha256": kiln_tools.file_sha256(weights)}
        for r in int8_rows:
            if r[1] == net:
                row = {"label": r[0], "net": net, "dims": r[2],
                       "so": tag(net, r[2]) + "_int8.so", "compare": partner(r[0])}
                man["rows"].append(row)
                build_int8(a, kilnc, r, filled, graph, weights, row, "",
                           a.int8_flags.split())
                # --int8-variant NAME=FLAGS: the row again with FLAGS.
                for v in a.int8_variant:
                    name, _, flags = v.partition("=")
                    vr = (r[0] + " +" + name, net, r[2])
                    row = {"label": vr[0], "net": net, "dims": r[2],
                           "so": tag(net, r[2]) + "_int8_" + name + ".so",
                           "compare": partner(r[0])}
                    man["rows"].append(row)
                    build_int8(a, kilnc, vr, filled, graph, weights, row, "_" + name,
                               a.int8_flags.split() + flags.split())
        for path in (src, weights, filled):
            os.remove(path)  # regenerated there
    with open(os.path.join(a.dir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    total = sum(os.path.getsize(os.path.join(a.dir, p)) for p in os.listdir(a.dir))
    print(f"{a.dir}: {total / 2**20:.1f} MiB to carry")
    for r in man["rows"]:
        for p in r.get("parts", []):
            print(f"{p['dir']}: {p['bytes'] / 2**20:.1f} MiB, to carry alone in an earlier "
                  "call of the same lease")


def torch_model(net):
    import torch

    make_models = kiln_tools.project_module("utils/models/make_models.py")
    torch.manual_seed(0)
    model = make_models.MODELS[net](False)[0].eval().cuda().half()
    if net != "bert":
        model = model.to(memory_format=torch.channels_last)
    return model


def check_errors(row, got, ref, top1):
    """rel L2, max relative error (and top-1 agreement over the batch) of
    `got` against the reference."""
    import numpy as np

    got = got.astype(np.float64)
    diff = got - ref
    finite = bool(np.isfinite(got).all())
    row["rel_l2"] = float(np.linalg.norm(diff) / np.linalg.norm(ref)) if finite else float("inf")
    row["max_rel"] = float(np.abs(diff).max() / np.abs(ref).max()) if finite else float("inf")
    if top1:
        row["top1_agree"] = float(np.mean(np.argmax(got.reshape(got.shape[0], -1), -1) ==
                                          np.argmax(ref.reshape(ref.shape[0], -1), -1)))


def variant_table(results):
    """Each '... +NAME' row (prepare --variant) against its plain row: Kiln's
    latency, and the sums of the traced kernel times when both have them."""
    plain = {r["label"]: r for r in results if " +" not in r["label"] and "kiln_ms" in r}
    lines = []
    for r in results:
        base, sep, name = r["label"].partition(" +")
        if not sep or "kiln_ms" not in r or base not in plain:
            continue
        p = plain[base]
        line = (f"| {base} | +{name} | {p['kiln_ms']:.3f} ms | {r['kiln_ms']:.3f} ms | "
                f"{r['kiln_ms'] / p['kiln_ms']:.3f}x | {r.get('kiln_vs_compile', float('nan')):.2f}x |")
        sums = [x.get("trace_kiln_total_us") for x in (p, r)]
        line += f" {sums[0]:.0f} / {sums[1]:.0f} us |" if all(sums) else " |"
        lines.append(line)
    if lines:
        print("\n| row | variant | plain | variant | variant / plain | variant / torch.compile "
              "| kernel time per run, plain / variant |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(lines))


def run(a):
    import numpy as np
    import onnx
    import onnxruntime as ort

    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    lib = os.path.join(a.dir, "libkiln_runtime.so")
    if a.image:
        os.environ["KILN_CUDA_CHIP"] = a.image  # read when a model loads
    if a.dry_run:
        torch = stream = None
        print(f"dry run (no CUDA calls): onnxruntime {ort.__version__}, numpy "
              f"{np.__version__}", flush=True)
    else:
        import torch
        from kiln_tools.runtime import KilnModel, profile_runs, time_cuda

        stream = torch.cuda.current_stream()
        print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, "
              f"{torch.cuda.get_device_name()}", flush=True)
    results = []
    by_label = {}
    for net, info in man["nets"].items():
        base = os.path.join(a.dir, net)
        kiln_tools.run_tool([sys.executable, FILL, base + ".graph.onnx", "--seed", str(SEED),
                             "--out-model", base + ".filled.onnx", "--weights",
                             base + ".weights", "--manifest", base + ".weights.json",
                             "--load-stats", base + ".stats.json", "--quiet", *fill_args(net)])
        same = kiln_tools.file_sha256(base + ".weights") == info["sha256"]
        print(f"{net}: weights regenerated, identical to the build machine's: {same}", flush=True)
        graph = onnx.load(base + ".graph.onnx", load_external_data=False)
        sess = ort.InferenceSession(base + ".filled.onnx", providers=["CPUExecutionProvider"])
        tm = None
        extra_files = []
        # PyTorch's times per shape: the rows of one shape (a --variant's
        # builds) are compared with one torch.compile measurement.
        torch_times = {}
        for r in man["rows"]:
            if r["net"] != net:
                continue
            int8 = r.get("precision") == "int8"
            row = {"label": r["label"], "dims": r["dims"], "weights_identical": same,
                   "precision": r.get("precision", "fp16")}
            results.append(row)
            by_label[r["label"]] = row
            if int8:
                row.update(compare=r["compare"], build=r.get("build"),
                           onnxruntime=ort.__version__)
            if not r["ok"]:
                row["error"] = r.get("error", "kilnc failed")
                print(f"{row['label']:26s} {row['error']}", flush=True)
                continue
            if int8:
                err = join_parts(a.dir, r)
                if not err and "weights" in r:
                    w = os.path.join(a.dir, r["weights"]["file"])
                    write_int8_weights(w, w + ".json", base + ".weights", base + ".weights.json")
                    extra_files.append(w)
                    if kiln_tools.file_sha256(w) != r["weights"]["sha256"]:
                        err = f"{r['weights']['file']} differs from the build machine's (sha256)"
                    else:
                        print(f"{r['label']}: {r['weights']['file']} written, identical to the "
                              "build machine's", flush=True)
                if err:
                    row["error"] = err
                    print(f"{row['label']:26s} {err}", flush=True)
                    continue
            feeds = eval_feeds(net, graph, r["dims"], int8)
            ref = sess.run(None, feeds)[0].astype(np.float64)
            if a.dry_run:
                print(f"{row['label']:26s} dry run: {r['so']} here, inputs "
                      f"{[v.shape for v in feeds.values()]}, reference {ref.shape}", flush=True)
                continue
            so = os.path.join(a.dir, r["so"])
            ins = [torch.from_numpy(np.ascontiguousarray(v)).cuda() for v in feeds.values()]
            try:
                km = KilnModel(lib, so)
                row["device"] = km.device
                km.set_stream(stream.cuda_stream)
                out = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.float32)
                km.prepare(ins, [out])
                km.run()
                torch.cuda.synchronize()
                check_errors(row, out.cpu().numpy(), ref, int8 and net != "bert")
                row["kiln_ms"] = time_cuda(km.run, warmup=10, iters=50)
                if a.trace and int8:
                    trace_by_role(row, km, so, a.trace)
                km.release()
                _, row["profile"] = profile_runs(lib, so, ins, [out], stream.cuda_stream,
                                                 so + ".profile.jsonl")
            except Exception as ex:  # noqa: BLE001 - recorded in the table
                row["error"] = str(ex)[:300]
            if int8 and "kiln_ms" in row:
                # The fp16 build again beside this one, in turns, in the same
                # state: the fp16 row was timed before torch.compile ran in
                # this process, this one after it (its memory pool and CUDA
                # graphs), which took BERT-base's int8 graph from 1.27-1.29
                # to 1.35-1.40 ms on an H100 (2026-12-07).
                fp16_man = next((x for x in man["rows"]
                                 if x["label"] == r["compare"] and x.get("ok")), None)
                if fp16_man:
                    try:
                        row["ab_fp16_ms"], row["ab_int8_ms"] = ab_times(
                            lib, [os.path.join(a.dir, fp16_man["so"]), so], ins,
                            ref.shape, stream)
                        row["ab_int8_vs_fp16"] = row["ab_int8_ms"] / row["ab_fp16_ms"]
                    except Exception as ex:  # noqa: BLE001 - recorded in the table
                        row["ab_error"] = str(ex)[:300]
            if int8:
                # PyTorch's columns are the fp16 row's, measured just before.
                fp16 = by_label.get(r["compare"], {})
                for k in ("eager_ms", "compile_ms"):
                    if k in fp16:
                        row["fp16_" + k] = fp16[k]
                if "kiln_ms" in row and "kiln_ms" in fp16:
                    row["fp16_kiln_ms"] = fp16["kiln_ms"]
                    row["int8_vs_fp16"] = row["kiln_ms"] / fp16["kiln_ms"]
                if "kiln_ms" in row and "compile_ms" in fp16:
                    row["kiln_vs_compile"] = row["kiln_ms"] / fp16["compile_ms"]
                top1 = (f"  top-1 {100 * row['top1_agree']:.1f}%" if "top1_agree" in row
                        else "")
                print(f"{row['label']:26s} ({row.get('device', '?')}) kiln "
                      f"{row.get('kiln_ms', float('nan')):7.3f} ms  int8/fp16 "
                      f"{row.get('int8_vs_fp16', float('nan')):5.2f}  int8/compile "
                      f"{row.get('kiln_vs_compile', float('nan')):5.2f}  vs onnxruntime fp32: "
                      f"rel L2 {row.get('rel_l2', float('nan')):.1e}  max rel "
                      f"{row.get('max_rel', float('nan')):.1e}{top1} {row.get('error', '')}",
                      flush=True)
            elif a.no_torch:
                # PyTorch on the same architecture, fp16: skipped.
                print(f"{row['label']:20s} kiln {row.get('kiln_ms', float('nan')):7.3f} ms "
                      f"({row.get('device', '?')})  rel L2 {row.get('rel_l2', float('nan')):.1e}"
                      f"  max rel {row.get('max_rel', float('nan')):.1e} {row.get('error', '')}",
                      flush=True)
                continue
            else:
                # PyTorch on the same architecture, fp16 (once per shape).
                shape_key = json.dumps(r["dims"], sort_keys=True)
                known = torch_times.get(shape_key)
                if known is None and tm is None:
                    tm = torch_model(net)
                x = ins[0] if net == "bert" else ins[0].half().to(
                    memory_format=torch.channels_last)
                with torch.no_grad():
                    compiled = None
                    if known is None:
                        row["eager_ms"] = time_cuda(lambda: tm(x), warmup=10, iters=50)
                        torch._dynamo.reset()
                        compiled = torch.compile(tm, mode="reduce-overhead")
                        for _ in range(3):
                            compiled(x)
                        row["compile_ms"] = time_cuda(lambda: compiled(x), warmup=10,
                                                      iters=50)
                        torch_times[shape_key] = (row["eager_ms"], row["compile_ms"])
                    else:
                        row["eager_ms"], row["compile_ms"] = known
                        row["torch_from"] = "the first row of this shape"
                    if a.trace and "kiln_ms" in row:
                        # Where each side's time goes, kernel by kernel
                        # (CUPTI timestamps of graph replays, no profiler
                        # replay): Kiln's graph and torch.compile's (its
                        # first row of a shape only).
                        from profile_gemm import kernel_times, print_kernel_times
                        kg = KilnModel(lib, so)
                        kg.set_stream(stream.cuda_stream)
                        kg.prepare(ins, [out])
                        sides = [("kiln", kg.run)]
                        if compiled is not None:
                            sides.append(("torch.compile", lambda: compiled(x)))
                        for label, fn in sides:
                            rows = kernel_times(fn, runs=10)
                            row["trace_" + label] = rows[:40]
                            row["trace_" + label + "_total_us"] = sum(us for _, us, _ in rows)
                            print_kernel_times(f"    {row['label']}, {label}", rows, top=a.trace)
                        kg.release()
                if "kiln_ms" in row:
                    row["kiln_vs_compile"] = row["kiln_ms"] / row["compile_ms"]
                    row["kiln_vs_eager"] = row["kiln_ms"] / row["eager_ms"]
                print(f"{row['label']:20s} ({row.get('device', '?')}) kiln "
                      f"{row.get('kiln_ms', float('nan')):7.3f} ms  eager "
                      f"{row['eager_ms']:7.3f}  compile {row['compile_ms']:7.3f}  kiln/compile "
                      f"{row.get('kiln_vs_compile', float('nan')):5.2f}  rel L2 "
                      f"{row.get('rel_l2', float('nan')):.1e}  max rel "
                      f"{row.get('max_rel', float('nan')):.1e} {row.get('error', '')}",
                      flush=True)
            prof = row.get("profile", {})
            if prof:
                print(f"    per run: {prof['launches_per_run']:.0f} launches, kernels "
                      f"{prof['kernel_ms_per_run']:.3f} ms (profiled, no graph)")
            for k in prof.get("top", [])[:15]:
                print(f"    {k['ms']:7.3f} ms x{k['launches']:.0f}  {k['name']}")
        for path in [base + ".weights", base + ".filled.onnx"] + extra_files:
            os.remove(path)
    int8_table(results)
    variant_table(results)
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)


def trace_by_role(row, km, so, top):
    """An int8 row's kernel times in graph replays (CUPTI, as --trace's fp16
    rows), and their sums by role: kernels named after the first ONNX node of
    their launch in the compile report (kept next to the .so by prepare
    --keep-reports), its layer index replaced by '*' (every layer's kernel is
    its own code: its scales are constants)."""
    from profile_gemm import kernel_times, print_kernel_times
    rows = kernel_times(km.run, runs=10)
    row["trace_kiln"] = rows[:40]
    row["trace_kiln_total_us"] = sum(us for _, us, _ in rows)
    print_kernel_times(f"    {row['label']}, kiln", rows, top=top)
    report = so[:-len(".so")] + ".report.json"
    if not os.path.exists(report):
        return
    first = {k["name"]: re.sub(r"\.[0-9]+/", ".*/", k["onnx_nodes"][0])
             for k in json.load(open(report))["kernels"] if k.get("onnx_nodes")}
    roles = {}
    for name, us, count in rows:
        role = first.get(name.removesuffix("_kernel"), name)
        t = roles.setdefault(role, [0.0, 0.0])
        t[0] += us
        t[1] += count
    row["trace_kiln_roles"] = roles
    print(f"    {row['label']}, kiln, by role (us a run, launches):")
    for role, (us, count) in sorted(roles.items(), key=lambda kv: -kv[1][0]):
        print(f"      {us:9.2f} us  x{count:.0f}  {us / max(count, 1):7.2f} us each  {role}")


def ab_times(lib, sos, ins, shape, stream, rounds=4):
    """Median graph-replay times (ms) of the .so files `sos` on the same
    inputs, timed in turns (`rounds` rounds of 30 runs each)."""
    import statistics

    import torch
    from kiln_tools.runtime import KilnModel, time_cuda

    models = []
    try:
        for so in sos:
            m = KilnModel(lib, so)
            models.append(m)
            m.set_stream(stream.cuda_stream)
            m.prepare(ins, [torch.empty(shape, device="cuda", dtype=torch.float32)])
        times = [[] for _ in sos]
        for _ in range(rounds):
            for i, m in enumerate(models):
                times[i].append(time_cuda(m.run, warmup=5, iters=30))
        return [statistics.median(t) for t in times]
    finally:
        for m in models:
            m.release()


def int8_table(results):
    """Issue 19's table: Kiln int8 against Kiln fp16 and torch.compile fp16."""
    rows = [r for r in results if r["precision"] == "int8"]
    if not rows:
        return
    nan = float("nan")
    print("\n| network | Kiln int8 | Kiln fp16 | torch.compile fp16 | int8 / Kiln fp16 (bar "
          "<= 0.7) | in turns: int8, fp16, ratio | int8 / torch.compile | int8 vs onnxruntime "
          "fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "kiln_ms" not in r:
            print(f"| {r['compare']} | {r.get('error', 'not run')} | | | | | | |")
            continue
        acc = f"rel L2 {r.get('rel_l2', nan):.1e}"
        if "top1_agree" in r:
            acc += f", top-1 {100 * r['top1_agree']:.1f}%"
        ab = (f"{r['ab_int8_ms']:.3f}, {r['ab_fp16_ms']:.3f} ms, {r['ab_int8_vs_fp16']:.2f}x"
              if "ab_int8_ms" in r else r.get("ab_error", "-"))
        print(f"| {r['compare']} | {r['kiln_ms']:.3f} ms | {r.get('fp16_kiln_ms', nan):.3f} ms | "
              f"{r.get('fp16_compile_ms', nan):.3f} ms | {r.get('int8_vs_fp16', nan):.2f}x | "
              f"{ab} | {r.get('kiln_vs_compile', nan):.2f}x | {acc} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="all",
                    help="prepare: all (--target=cuda, both images) or one chip (int8 rows: "
                         "sm_90a for all)")
    ap.add_argument("--image", help="run: the image of a two-image .so (KILN_CUDA_CHIP)")
    ap.add_argument("--no-torch", action="store_true", help="run: Kiln's columns only")
    ap.add_argument("--only", help="comma-separated row labels")
    ap.add_argument("--fuse-attention", action="store_true",
                    help="prepare: also the BERT rows compiled with --fuse-attention "
                         "(labelled '+flash'; the fused attention kernel)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="prepare: every row also compiled with these kilnc flags, labelled "
                         "'... +NAME' (repeatable), e.g. tiles192=--gpu-tiles=192x128")
    ap.add_argument("--int8", action="store_true",
                    help="prepare: the int8 rows (Kiln's PTQ) and their fp16 rows")
    ap.add_argument("--int8-variant", action="append", default=[], metavar="NAME=FLAGS",
                    help="prepare: every int8 row also compiled with these kilnc flags, labelled "
                         "'... int8 +NAME' (its ratio to the same fp16 row)")
    ap.add_argument("--int8-flags", default="",
                    help="prepare: extra kilnc flags of the int8 rows themselves (their "
                         "variants' too), e.g. --gpu-tiles=... for a build the cost model "
                         "does not choose yet")
    ap.add_argument("--keep-reports", action="store_true",
                    help="keep each int8 build's kilnc --report JSON beside its .so "
                         "(NAME_int8.report.json: its kernels, what each launch computes)")
    ap.add_argument("--int8-parts", action="store_true",
                    help="prepare: split an int8 .so larger than --part-mib into DIR.part<k> "
                         "(each carried alone in an earlier call) instead of leaving it out")
    ap.add_argument("--part-mib", type=int, default=45,
                    help="prepare: the largest int8 .so carried in DIR, and of a part")
    ap.add_argument("--trace", type=int, default=0, metavar="N",
                    help="run: list the N longest kernels of Kiln's run and of torch.compile's "
                         "(CUPTI times through torch.profiler)")
    ap.add_argument("--dry-run", action="store_true",
                    help="run: no GPU; everything up to the CUDA calls")
    ap.add_argument("--json")
    a = ap.parse_args()
    (prepare if a.mode == "prepare" else run)(a)


if __name__ == "__main__":
    main()
