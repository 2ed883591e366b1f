#!/usr/bin/env python3
"""kiln-accuracy: how much a reduced-precision build of a model differs from
its fp32 build, and where the error comes from.

  .venv/bin/python utils/kiln_accuracy.py MODEL.onnx [--precision fp16|bf16|tf32|int8]
      [--inputs DIR | --seed N] [--dim NAME=V ...] [--layers] [--top N]
      [--keep-fp32 LIST] [--calibrate DIR | --calibrate-samples M]
      [--calibration-method M] [--int8-exclude LIST] [--samples N]
      [--task auto|classify|values] [--min-top1 F]
      [--workdir DIR] [--json FILE] [--max-rel-l2 X] [--bin DIR]

Both builds are compiled with kilnc (-O2) and run with kiln-run on the same
inputs: the files of --inputs (input_N.pb, or its test_data_set_0), else
seeded random ones (floats N(0, 1); integer token ids below the row count of
the model's embedding table). For every output it prints

  rel L2   ||reduced - fp32|| / ||fp32||
  max abs  max |reduced - fp32|
  max rel  max |reduced - fp32| / max |fp32|
  NaN/Inf  non-finite values where the fp32 build has none

With --layers both builds also return every intermediate float value
(kilnc --expose-intermediates=all, named by ONNX node) and the tool reports,
in program order, the first node whose rel L2 error exceeds --threshold and
the first node where the error jumps (more than --jump times the largest
error of the nodes before it and above the precision's unit roundoff), plus
the --top nodes with the largest error.

With --samples N both builds also run on N seeded inputs (seeds --seed,
--seed + 1, ...; image-like pictures for image inputs, kiln_tools.image_inputs)
through the `kiln` Python package (build/python), and each output gets a task
metric over all of them: for a classifier (auto: an output of shape [B, C],
C >= 2; --task classify forces it) the top-1 agreement, the fraction of rows
whose argmax is the same in both builds; for a detector's probability map
(auto: an output [B, 1, H, W] with values in [0, 1], PP-OCR's DBNet; --task
detect forces it) the IoU of the pixels above --det-threshold (0.3, the
binarization PP-OCR's DBPostProcess traces its boxes on) in both builds,
mean and smallest over the inputs (--min-iou makes it a gate); for any
output the rel L2 over all samples, the max abs error and the max rel
error. --calibrate-samples M
writes M more seeded inputs (seeds 100000 + i: never evaluation inputs) as
the calibration folder of the reduced build (kilnc --calibrate), what
--precision=int8 needs.

Exit status 1 when an output gains NaN/Inf or exceeds --max-rel-l2, or a
classifier's top-1 agreement is below --min-top1.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402
from kiln_tools.tensors import numbered  # noqa: E402

ROOT = kiln_tools.ROOT
# Unit roundoff of each precision: the smallest error worth calling a jump.
UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "tf32": 2.0 ** -11, "fp32": 2.0 ** -24,
                 "int8": 2.0 ** -8}
# Seeds of the --calibrate-samples inputs: disjoint from the evaluation's.
CALIBRATION_SEED = 100000
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def fail(msg):
    sys.stderr.write(f"kiln-accuracy: {msg}\n")
    sys.exit(2)


def parse_dims(dims):
    out = {}
    for d in dims or []:
        k, _, v = d.partition("=")
        if not k or not v.isdigit():
            fail(f"--dim expects NAME=VALUE, got '{d}'")
        out[k] = int(v)
    return out


def input_files(directory):
    """(name, path) of DIR/input_N.pb, or of DIR/test_data_set_0/input_N.pb."""
    for d in (directory, os.path.join(directory, "test_data_set_0")):
        paths = numbered(d, "input") if os.path.isdir(d) else []
        if paths:
            return [(kiln_tools.read_pb_named(p)[0], p) for p in paths]
    fail(f"'{directory}' holds no input_N.pb files")


def compile_model(bindir, model, so, precision, dims, layers, extra=()):
    flags = [f"--precision={precision}"] + [f"--dim={k}={v}" for k, v in dims.items()]
    if layers:
        flags.append("--expose-intermediates=all")
    kiln_tools.compile_model(model, so, flags + list(extra), bindir=bindir)


def evaluate(model, precision, workdir, bindir=None, dims=None, seed=0, inputs=None,
             layers=False, extra=(), fp32_so=None):
    """Builds (or reuses `fp32_so`) and compares. Returns the result dict."""
    bindir = bindir or os.path.join(ROOT, "build", "bin")
    dims = dims or {}
    os.makedirs(workdir, exist_ok=True)
    files = input_files(inputs) if inputs else kiln_tools.write_inputs(
        kiln_tools.seeded_inputs(model, seed, dims), os.path.join(workdir, "inputs"))
    if fp32_so is None:
        fp32_so = os.path.join(workdir, "fp32.so")
        compile_model(bindir, model, fp32_so, "fp32", dims, layers)
    red_so = os.path.join(workdir, f"{precision}.so")
    compile_model(bindir, model, red_so, precision, dims, layers, extra)
    ref = kiln_tools.run_model(fp32_so, files, os.path.join(workdir, "out_fp32"), bindir=bindir)
    got = kiln_tools.run_model(red_so, files, os.path.join(workdir, f"out_{precision}"),
                               bindir=bindir)
    got_by_name = dict(got)
    m = onnx.load(model, load_external_data=False)
    model_outputs = [o.name for o in m.graph.output]
    result = {"model": os.path.basename(model), "precision": precision, "outputs": [], "layers": []}
    for name, value in ref:
        if name not in got_by_name:
            continue
        e = kiln_tools.error_stats(value, got_by_name[name])
        e.update(name=name, shape=list(value.shape))
        (result["outputs"] if name in model_outputs else result["layers"]).append(e)
    return result


def picture_source(kind):
    """(rng, h, w) -> [3, h, w] in [0, 1]: smooth random fields, or the
    drawn outdoor scenes and document pages of utils/models/corpus_inputs.py
    (resized), for image inputs."""
    if kind == "smooth":
        return None
    import numpy as np
    from PIL import Image
    corpus = kiln_tools.project_module("utils/models/corpus_inputs.py")

    def draw(rng, h, w):
        if kind == "scene":
            img = corpus.scene(300, 400, rng)
        elif kind == "text":
            img = corpus.text_page(int(rng.integers(h, h * 3 // 2 + 1)),
                                   int(rng.integers(w, w * 3 // 2 + 1)), rng)
        else:
            img = corpus.doc_page(700, 500, rng).rotate(90 * int(rng.integers(0, 4)), expand=True)
        img = img.convert("RGB").resize((w, h), Image.BILINEAR)
        return np.asarray(img, np.float64).transpose(2, 0, 1) / 255.0
    return draw


def image_feeds(model, seed, dims, images):
    """Seeded inputs, image inputs from `images` = (kind, mean, std)."""
    kind, mean, std = images
    return kiln_tools.image_inputs(model, seed, dims, mean=mean, std=std,
                                   picture=picture_source(kind))


def write_calibration(model, directory, count, dims=None, images=("smooth", IMAGENET_MEAN,
                                                                   IMAGENET_STD)):
    """`count` seeded inputs (image-like for image inputs) as
    DIR/test_data_set_<i>/input_<j>.pb, the layout kilnc --calibrate reads."""
    for i in range(count):
        feeds = image_feeds(model, CALIBRATION_SEED + i, dims, images)
        kiln_tools.write_inputs(feeds, os.path.join(directory, f"test_data_set_{i}"))
    return directory


def load_kiln(bindir):
    """The `kiln` Python package of the build that holds `bindir`."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(bindir)), "python"))
    import kiln  # noqa: E402
    return kiln


def is_prob_map(ref):
    """A detector's probability map: [N, 1, H, W] (H, W >= 8) in [0, 1]."""
    import numpy as np
    return (ref.ndim == 5 and ref.shape[2] == 1 and min(ref.shape[3:]) >= 8 and
            float(np.min(ref)) >= 0 and float(np.max(ref)) <= 1)


def task_metrics(model, fp32_so, red_so, samples, seed=0, dims=None, task="auto", bindir=None,
                 images=("smooth", IMAGENET_MEAN, IMAGENET_STD), det_threshold=0.3):
    """Runs both builds on `samples` seeded inputs and compares each output
    over all of them: top-1 agreement for classifiers, the IoU of the maps
    thresholded at `det_threshold` for a detector's probability map, rel
    L2, max abs and max rel error for every output."""
    import numpy as np
    kiln = load_kiln(bindir or os.path.join(ROOT, "build", "bin"))
    ref_model, red_model = kiln.load(fp32_so), kiln.load(red_so)
    names = [o.name for o in ref_model.outputs]
    refs, gots = {n: [] for n in names}, {n: [] for n in names}
    for i in range(samples):
        feeds = image_feeds(model, seed + i, dims, images)
        for n, a, b in zip(names, ref_model.run(feeds), red_model.run(feeds)):
            refs[n].append(np.asarray(a))
            gots[n].append(np.asarray(b))
    out = []
    for n in names:
        ref, got = np.stack(refs[n]), np.stack(gots[n])
        e = kiln_tools.error_stats(ref, got)
        e.update(name=n, shape=list(ref.shape[1:]), samples=samples)
        classify = task == "classify" or (task == "auto" and ref.ndim == 3 and ref.shape[-1] >= 2)
        if classify:
            r, g = ref.reshape(-1, ref.shape[-1]), got.reshape(-1, got.shape[-1])
            e["top1_agree"] = float(np.mean(np.argmax(r, -1) == np.argmax(g, -1)))
            e["rows"] = int(r.shape[0])
        elif task == "detect" or (task == "auto" and is_prob_map(ref)):
            ious = [prob_map_iou(r, g, det_threshold) for r, g in zip(ref, got)]
            e.update(iou_mean=float(np.mean(ious)), iou_min=float(np.min(ious)),
                     threshold=det_threshold)
        out.append(e)
    return out


def prob_map_iou(a, b, threshold=0.3):
    """IoU of the pixels above `threshold` in two probability maps (a text
    detector's [N, 1, H, W]: PP-OCR's DBPostProcess binarizes at 0.3 before
    it traces boxes, so equal masks give equal boxes). 1.0 when both are
    empty."""
    import numpy as np
    x, y = np.asarray(a) > threshold, np.asarray(b) > threshold
    union = int(np.sum(x | y))
    return float(np.sum(x & y)) / union if union else 1.0


def analyze_layers(layers, precision, threshold, jump):
    """First node above `threshold`, first jump, in program order."""
    u = UNIT_ROUNDOFF.get(precision, 2.0 ** -11)
    first_above = first_jump = None
    worst_before = 0.0
    for e in layers:
        err = e["rel_l2"] if not e["nonfinite"] else float("inf")
        if first_above is None and err > threshold:
            first_above = e
        if first_jump is None and err > u and err > jump * max(worst_before, u):
            first_jump = dict(e, before=worst_before)
        worst_before = max(worst_before, err)
    return first_above, first_jump


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "tf32", "int8"])
    ap.add_argument("--inputs", help="folder of input_N.pb (or test_data_set_0/)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--dim", action="append", help="NAME=VALUE for symbolic dims (kilnc --dim)")
    ap.add_argument("--layers", action="store_true", help="compare every intermediate value")
    ap.add_argument("--threshold", type=float, default=None,
                    help="layer error reported as too large (default 5e-3 fp16/tf32, 2e-2 bf16)")
    ap.add_argument("--jump", type=float, default=10.0,
                    help="error growth over the nodes before that counts as a jump")
    ap.add_argument("--top", type=int, default=10, help="list the N layers with the largest error")
    ap.add_argument("--keep-fp32", help="kilnc --keep-fp32 for the reduced build")
    ap.add_argument("--calibrate", help="kilnc --calibrate=DIR for the reduced build")
    ap.add_argument("--calibrate-samples", type=int,
                    help="write this many seeded inputs as the calibration folder (--calibrate)")
    ap.add_argument("--calibration-method", help="kilnc --calibration-method (int8)")
    ap.add_argument("--int8-exclude", help="kilnc --int8-exclude (int8)")
    ap.add_argument("--samples", type=int, default=0,
                    help="also compare over N seeded inputs with the task metric")
    ap.add_argument("--task", default="auto", choices=["auto", "classify", "detect", "values"],
                    help="classify: top-1 agreement per output row (auto: outputs [B, C]); "
                         "detect: IoU of the thresholded probability maps (auto: outputs "
                         "[B, 1, H, W] in [0, 1])")
    ap.add_argument("--det-threshold", type=float, default=0.3,
                    help="detect: the probability a pixel counts as text above (PP-OCR's "
                         "DBPostProcess thresh)")
    ap.add_argument("--min-iou", type=float,
                    help="exit 1 when a detector's smallest IoU is below this")
    ap.add_argument("--int8-keep-fp32", type=int,
                    help="kilnc --int8-keep-fp32 (int8): the N most sensitive contractions fp32")
    ap.add_argument("--images", default="smooth", choices=["smooth", "scene", "document", "text"],
                    help="pictures of image inputs: smooth random fields, drawn scenes, "
                         "document pages, text pages (utils/models/corpus_inputs.py)")
    ap.add_argument("--image-mean", default=",".join(map(str, IMAGENET_MEAN)),
                    help="per-channel mean subtracted from pictures in [0, 1] (ImageNet's)")
    ap.add_argument("--image-std", default=",".join(map(str, IMAGENET_STD)),
                    help="per-channel std they are divided by (ImageNet's)")
    ap.add_argument("--min-top1", type=float, help="exit 1 when a top-1 agreement is below this")
    ap.add_argument("--workdir", help="keep builds and outputs here (default: a temporary folder)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="kilnc and kiln-run")
    ap.add_argument("--json", help="write the full results here")
    ap.add_argument("--max-rel-l2", type=float, help="exit 1 when an output's rel L2 exceeds this")
    args = ap.parse_args()

    extra = []
    if args.keep_fp32:
        extra.append(f"--keep-fp32={args.keep_fp32}")
    if args.calibration_method:
        extra.append(f"--calibration-method={args.calibration_method}")
    if args.int8_exclude:
        extra.append(f"--int8-exclude={args.int8_exclude}")
    if args.int8_keep_fp32:
        extra.append(f"--int8-keep-fp32={args.int8_keep_fp32}")
    if args.layers and args.precision == "int8":
        fail("--layers compares values by node; int8 builds fuse each quantized layer into "
             "other nodes (kiln-onnx-fuse-qdq): use --samples")
    threshold = args.threshold if args.threshold is not None else (
        2e-2 if args.precision == "bf16" else 5e-3)
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-accuracy-")
    dims = parse_dims(args.dim)
    images = (args.images, [float(v) for v in args.image_mean.split(",")],
              [float(v) for v in args.image_std.split(",")])
    if args.calibrate_samples:
        args.calibrate = write_calibration(args.model, os.path.join(workdir, "calibration"),
                                           args.calibrate_samples, dims, images)
    if args.calibrate:
        extra.append(f"--calibrate={args.calibrate}")
    if args.precision == "int8" and not args.calibrate:
        fail("--precision int8 needs --calibrate DIR or --calibrate-samples N")
    try:
        res = evaluate(args.model, args.precision, workdir, bindir=args.bin,
                       dims=dims, seed=args.seed, inputs=args.inputs,
                       layers=args.layers, extra=extra)
        if args.samples:
            res["samples"] = task_metrics(args.model, os.path.join(workdir, "fp32.so"),
                                          os.path.join(workdir, f"{args.precision}.so"),
                                          args.samples, args.seed, dims, args.task, args.bin,
                                          images, args.det_threshold)
    except (kiln_tools.Error, OSError) as e:
        fail(str(e))
    src = f"inputs {args.inputs}" if args.inputs else f"random inputs, seed {args.seed}"
    print(f"kiln-accuracy: {res['model']}, {args.precision} vs fp32, {src}")
    bad = False
    for e in res["outputs"]:
        print(f"  output '{e['name']}' {e['shape']}: {kiln_tools.format_stats(e)}")
        bad |= e["nonfinite"] > 0
        if args.max_rel_l2 is not None and e["rel_l2"] > args.max_rel_l2:
            bad = True
    for e in res.get("samples", []):
        top1 = ""
        if "top1_agree" in e:
            top1 = f"top-1 agreement {100 * e['top1_agree']:.1f}% of {e['rows']} rows, "
            if args.min_top1 is not None and e["top1_agree"] < args.min_top1:
                bad = True
        if "iou_mean" in e:
            top1 = (f"IoU of the maps > {e['threshold']:g}: mean {e['iou_mean']:.4f}, "
                    f"min {e['iou_min']:.4f}, ")
            if args.min_iou is not None and e["iou_min"] < args.min_iou:
                bad = True
        print(f"  output '{e['name']}' over {e['samples']} inputs: {top1}"
              f"{kiln_tools.format_stats(e)}")
    if args.layers:
        layers = res["layers"]
        above, jumped = analyze_layers(layers, args.precision, threshold, args.jump)
        print(f"  {len(layers)} intermediate values compared (program order)")
        if above:
            print(f"  first above {threshold:g}: '{above['name']}' {kiln_tools.format_stats(above)}")
        else:
            print(f"  no intermediate value above {threshold:g}")
        if jumped:
            print(f"  first jump (> {args.jump:g}x the largest error before it, "
                  f"{jumped['before']:.2e}): '{jumped['name']}' {kiln_tools.format_stats(jumped)}")
        res["first_above"] = above["name"] if above else None
        res["first_jump"] = jumped["name"] if jumped else None
        ranked = sorted(layers, key=lambda e: (-e["nonfinite"], -e["rel_l2"]))[: args.top]
        if ranked:
            print(f"  largest errors:")
            for e in ranked:
                print(f"    {e['name']}: {kiln_tools.format_stats(e)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
