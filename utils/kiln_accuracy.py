#!/usr/bin/env python3
"""kiln-accuracy: how much a reduced-precision build of a model differs from
its fp32 build, and where the error comes from.

  .venv/bin/python utils/kiln_accuracy.py MODEL.onnx [--precision fp16|bf16|tf32|int8]
      [--inputs DIR | --seed N] [--dim NAME=V ...] [--layers] [--top N]
      [--keep-fp32 LIST] [--calibrate DIR | --calibrate-samples M]
      [--calibration-method M] [--calibration-ranges FILE] [--int8-exclude LIST]
      [--int8-residuals on|off]
      [--int8-keep-fp32 N] [--candidates K] [--threshold X] [--samples N]
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

An int8 build has no such counterparts (each quantized layer is fused into
integer products), so --precision int8 --layers measures instead what each
int8 contraction costs the output: the calibrated int8 build saves its ranges
(kilnc --calibration-ranges) and lists its int8 layers (--report); one build
with --int8-keep-fp32=1 has kilnc's estimate rank them all (their own error
from the calibration histogram, which does not see later layers amplify it);
then the --candidates K layers of the largest estimate (default: all when
there are at most 24, else 16; 'all') each get a build with that layer alone
fp32 (--int8-exclude=NODE) on the saved ranges (no calibration run), all run
on the same inputs (and --samples) against the same fp32 build, one at a
time. A layer's measured sensitivity is how much keeping it fp32 lowers the
output's rel L2 (over the --samples inputs when given, else on the one input
set); "share" is the part of the all-int8 build's squared error that goes.
The table ranks the layers by it next to the estimate's rank, and the
recommended --int8-exclude list is the shortest prefix of that ranking whose
build brings the output under --threshold (default: half the all-int8
build's rel L2): a first guess from the measured effects, then a bisection
over the prefix length, one build a step; with --int8-keep-fp32 N instead,
the measured top N. The estimate's choice of the same size (kilnc
--int8-keep-fp32) is built beside it for comparison. With --workdir, each
measurement is kept there and a later run with the same model, ranges,
compiler, inputs and build flags reuses it (e.g. another --threshold).

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

Exit status 1 when an output gains NaN/Inf or exceeds --max-rel-l2, a
classifier's top-1 agreement is below --min-top1, or (int8 --layers) no
measured set of layers brings the output under a given --threshold.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

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


def write_calibration(model, directory, count, dims=None,
                      images=("smooth", IMAGENET_MEAN, IMAGENET_STD)):
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


def sample_feeds(model, samples, seed=0, dims=None,
                 images=("smooth", IMAGENET_MEAN, IMAGENET_STD)):
    """The feeds of `samples` seeded inputs (seeds seed, seed + 1, ...)."""
    return [image_feeds(model, seed + i, dims, images) for i in range(samples)]


def run_samples(kmodel, feeds):
    """{output name: its values over all `feeds`, stacked} of a `kiln` model."""
    import numpy as np
    names = [o.name for o in kmodel.outputs]
    outs = {n: [] for n in names}
    for f in feeds:
        for n, a in zip(names, kmodel.run(f)):
            outs[n].append(np.asarray(a))
    return {n: np.stack(v) for n, v in outs.items()}


def compare_samples(refs, gots, task="auto", det_threshold=0.3):
    """The task metric of each output over all samples (run_samples' dicts)."""
    import numpy as np
    out = []
    for n, ref in refs.items():
        got = gots[n]
        e = kiln_tools.error_stats(ref, got)
        e.update(name=n, shape=list(ref.shape[1:]), samples=int(ref.shape[0]))
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


def task_metrics(model, fp32_so, red_so, samples, seed=0, dims=None, task="auto", bindir=None,
                 images=("smooth", IMAGENET_MEAN, IMAGENET_STD), det_threshold=0.3):
    """Runs both builds on `samples` seeded inputs and compares each output
    over all of them: top-1 agreement for classifiers, the IoU of the maps
    thresholded at `det_threshold` for a detector's probability map, rel
    L2, max abs and max rel error for every output."""
    kiln = load_kiln(bindir or os.path.join(ROOT, "build", "bin"))
    feeds = sample_feeds(model, samples, seed, dims, images)
    return compare_samples(run_samples(kiln.load(fp32_so), feeds),
                           run_samples(kiln.load(red_so), feeds), task, det_threshold)


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


# int8 --layers: every int8 layer's measured effect on the output.
def default_candidates(count):
    """--candidates' default: every int8 layer when there are at most 24,
    else the 16 of the largest estimated own error."""
    return count if count <= 24 else 16


def worst_rel_l2(stats):
    """The largest rel L2 of error_stats() entries; inf when one has new NaN/Inf."""
    return max((float("inf") if e["nonfinite"] else e["rel_l2"] for e in stats), default=0.0)


def progress(msg):
    sys.stdout.flush()
    sys.stderr.write(f"kiln-accuracy: {msg}\n")
    sys.stderr.flush()


def first_classifier(samples, key):
    """`key` (top1_agree, iou_mean) of the first output that has it, or None."""
    return next((e[key] for e in samples or [] if key in e), None)


class Int8Layers:
    """The measured sensitivity of int8 layers (--precision int8 --layers).

    Each candidate gets one int8 build with that layer alone kept fp32
    (kilnc --int8-exclude=NODE), compiled on the ranges the calibrated
    default build saved (--calibration-ranges: no calibration run), and run
    on the same inputs as the default build against the same fp32 build; its
    measured sensitivity is how much keeping it fp32 lowers the output's rel
    L2 (over --samples when given, else on the inputs). The estimate
    (kilnc --int8-keep-fp32, InsertQDQ.cpp's own error of each layer) comes
    from one build with --int8-keep-fp32=1, whose report ranks every int8
    layer and which is also the measurement of the estimate's first layer.
    With `cache_key` (what identifies the model, ranges, compiler and
    inputs), measurements are kept in DIR/int8-layers/measurements.json and
    a build with the same flags is not compiled again."""

    def __init__(self, model, workdir, bindir, dims, flags, exclude, files, fp32_so,
                 samples=None, task="auto", det_threshold=0.3, cache_key=None):
        self.model, self.bindir, self.dims = model, bindir, dims
        self.dir = os.path.join(workdir, "int8-layers")
        os.makedirs(self.dir, exist_ok=True)
        # Every build's flags (ranges file, method, --keep-fp32) and the
        # user's --int8-exclude, which every build keeps.
        self.flags, self.exclude = list(flags), list(exclude)
        self.files = files
        self.ref = dict(kiln_tools.run_model(fp32_so, files, os.path.join(self.dir, "out_fp32"),
                                             bindir=bindir))
        self.outputs = [o.name for o in onnx.load(model, load_external_data=False).graph.output]
        self.samples = samples  # (kiln module, feeds, fp32 outputs) with --samples
        self.task, self.det_threshold = task, det_threshold
        self.builds, self.compile_s, self.planned, self.steps, self.reused = 0, 0.0, 0, 0, 0
        self.checked = {}  # frozenset of kept nodes -> measurement
        self.cache_key, self.cache = cache_key, {}
        self.cache_file = os.path.join(self.dir, "measurements.json")
        if cache_key and os.path.exists(self.cache_file):
            with open(self.cache_file) as f:
                self.cache = json.load(f)

    def exclude_flags(self, nodes):
        names = self.exclude + list(nodes)
        return [f"--int8-exclude={','.join(names)}"] if names else []

    def measure(self, so):
        """Output rel L2 of a build on the inputs (and the task metric over
        the samples); `rel_l2` is what the ranking uses."""
        got = dict(kiln_tools.run_model(so, self.files, os.path.join(self.dir, "out"),
                                        bindir=self.bindir))
        outs = []
        for n in self.outputs:
            if n in self.ref and n in got:
                e = kiln_tools.error_stats(self.ref[n], got[n])
                e.update(name=n)
                outs.append(e)
        m = {"inputs_rel_l2": worst_rel_l2(outs), "outputs": outs}
        m["rel_l2"] = m["inputs_rel_l2"]
        if self.samples:
            kiln, feeds, refs = self.samples
            red = kiln.load(so)
            m["samples"] = compare_samples(refs, run_samples(red, feeds), self.task,
                                           self.det_threshold)
            del red
            m["rel_l2"] = worst_rel_l2(m["samples"])
            for key, name in (("top1_agree", "top1"), ("iou_mean", "iou_mean")):
                v = first_classifier(m["samples"], key)
                if v is not None:
                    m[name] = v
        return m

    def build(self, label, what, flags):
        """Compiles and measures one int8 build; (measurement, report nodes)."""
        flags = self.flags + flags
        self.steps += 1
        step = f"[{self.steps}/{self.planned}] " if self.steps <= self.planned else "check: "
        key = None
        if self.cache_key:
            key = hashlib.sha256(json.dumps([self.cache_key, flags]).encode()).hexdigest()
            if key in self.cache:
                self.reused += 1
                m, plan = self.cache[key]
                progress(f"{step}{what}: measured before ({self.cache_file}), {describe(m)}")
                return m, plan
        so = os.path.join(self.dir, label + ".so")
        report = so + ".json"
        t0 = time.time()
        compile_model(self.bindir, self.model, so, "int8", self.dims, False,
                      flags + [f"--report={report}"])
        t1 = time.time()
        self.builds += 1
        self.compile_s += t1 - t0
        m = self.measure(so)
        with open(report) as f:
            plan = json.load(f)["precision"]["nodes"]
        m["compile_s"] = t1 - t0
        progress(f"{step}{what}: compiled in {t1 - t0:.1f} s, run in {time.time() - t1:.1f} s, "
                 f"{describe(m)}")
        os.remove(so)
        if key:
            self.cache[key] = [m, plan]
            with open(self.cache_file, "w") as f:
                json.dump(self.cache, f)
        return m, plan

    def check(self, nodes, what):
        """The measurement of a build with `nodes` (and the user's
        exclusions) fp32, built once."""
        key = frozenset(nodes)
        if key not in self.checked:
            self.checked[key] = self.build(f"keep-{len(self.checked)}", what,
                                           self.exclude_flags(nodes))[0]
        return self.checked[key]

    def run(self, default_plan, base, candidates=None, threshold=None, keep=None):
        """Measures the candidates and recommends; `base` is the default
        build's measurement."""
        fp32_before = {n["node"] for n in default_plan if n["precision"] != "int8"}
        int8 = [n for n in default_plan if n["precision"] == "int8"]
        if not int8:
            raise kiln_tools.Error("the int8 build quantizes no layer: nothing to rank")
        e0 = base["rel_l2"]
        count = len(int8) if candidates == "all" else min(
            candidates or default_candidates(len(int8)), len(int8))
        self.planned = count  # the first build below measures the estimate's first layer

        def isolated(plan, node):
            fp32 = {n["node"] for n in plan if n["precision"] != "int8"}
            return fp32 == fp32_before | {node}

        m1, plan1 = self.build("estimate-1", "the estimate's first layer fp32 "
                               "(--int8-keep-fp32=1, ranks every layer)",
                               ["--int8-keep-fp32=1"] + self.exclude_flags([]))
        est = {n["node"]: n for n in plan1 if n.get("sensitivity_rank")}
        first = next((n for n, e in est.items() if e["sensitivity_rank"] == 1), None)
        layers = [{"node": n["node"], "op": n["op"],
                   "estimate": est.get(n["node"], {}).get("sensitivity"),
                   "estimate_rank": est.get(n["node"], {}).get("sensitivity_rank")}
                  for n in int8]
        by_estimate = sorted(layers, key=lambda x: x["estimate_rank"] or len(layers) + 1)
        if first is not None and by_estimate[0]["node"] == first and isolated(plan1, first):
            self.checked[frozenset([first])] = m1
        else:
            self.planned += 1
        for i, x in enumerate(by_estimate[:count]):
            node = x["node"]
            if "," in node:
                x["skipped"] = "its name has a comma, which --int8-exclude splits lists at"
                continue
            key = frozenset([node])
            if key not in self.checked:
                m, plan = self.build(f"layer-{i}", f"'{node}' fp32", self.exclude_flags([node]))
                if not isolated(plan, node):
                    kept = sum(n["precision"] != "int8" for n in plan) - len(fp32_before)
                    x["skipped"] = (f"--int8-exclude={node} keeps {kept} layers fp32 "
                                    "(a node named like an op type)")
                    continue
                self.checked[key] = m
            m = self.checked[key]
            x.update(rel_l2=m["rel_l2"], inputs_rel_l2=m["inputs_rel_l2"],
                     reduction=e0 - m["rel_l2"],
                     share=1 - (m["rel_l2"] / e0) ** 2 if e0 > 0 else 0.0)
            for k in ("top1", "iou_mean", "compile_s"):
                if k in m:
                    x[k] = m[k]
        measured = sorted((x for x in layers if "rel_l2" in x), key=lambda x: x["rel_l2"])
        for r, x in enumerate(measured):
            x["measured_rank"] = r + 1
        out = {"all_int8": summary(base), "int8_layers": len(int8), "candidates": count,
               "user_exclude": self.exclude,
               "metric": ("rel L2 over %d inputs" % len(self.samples[1]) if self.samples
                          else "rel L2 on the inputs"),
               "layers": measured + [x for x in by_estimate if "rel_l2" not in x]}
        rec = self.recommend(measured, e0, base, threshold, keep)
        out["recommended"] = rec
        k = len(rec["exclude"]) - len(self.exclude)
        if k > 0:
            # What --int8-keep-fp32=k keeps: the same build as excluding them.
            nodes = [x["node"] for x in by_estimate[:k]]
            what = f"the estimate's top {k} fp32 (--int8-keep-fp32={k})"
            m = (self.check(nodes, what) if not any("," in n for n in nodes) else
                 self.build(f"estimate-{k}", what,
                            [f"--int8-keep-fp32={k}"] + self.exclude_flags([]))[0])
            out["estimate"] = dict(summary(m), count=k, flag=f"--int8-keep-fp32={k}",
                                   exclude=nodes)
        out["builds"], out["reused"], out["compile_s"] = self.builds, self.reused, self.compile_s
        return out

    def recommend(self, measured, e0, base, threshold, keep):
        """The fewest layers of the measured ranking whose exclusion brings
        the output under `threshold` (or the top `keep`), checked by a build
        of that set. If the layers' errors were independent and stayed
        small, their squares would add: keeping layer i fp32 would remove
        d_i = e0^2 - e_i^2 of e0^2, and the first try is the shortest prefix
        of the ranking predicted so to reach the threshold (predicted again
        from the measured error while a build misses it, at least doubling
        after the second miss). Then a bisection between the longest prefix
        that missed and the shortest that met it, one build a step: errors
        that amplify each other do not add (MobileNetV2: the prediction asks
        for 45 of 53 layers, whose build is 5x under the threshold)."""
        checks = []

        def check(k):
            m = self.check([x["node"] for x in measured[:k]], f"the measured top {k} fp32") \
                if k else base
            checks.append({"count": k, "rel_l2": m["rel_l2"]})
            return m

        if keep is not None:
            k = min(keep, len(measured))
            m, met = check(k), None
        else:
            helpful = sum(x["rel_l2"] < e0 for x in measured)
            d = [e0 ** 2 - x["rel_l2"] ** 2 for x in measured[:helpful]]

            def predict(start, have):
                total = start ** 2
                for j in range(have, len(d)):
                    total -= d[j]
                    if total <= threshold ** 2:
                        return j + 1
                return len(d)

            # lo: a prefix that misses (0, the all-int8 build); hi: one that meets it.
            lo, hi, missed, found, misses = 0, None, base, {}, 0
            if e0 <= threshold:
                hi, found[0] = 0, base
            while hi is None and lo < helpful:
                k = max(predict(missed["rel_l2"], lo), lo + 1,
                        min(2 * lo, helpful) if misses > 1 else 0)
                m = check(k)
                if m["rel_l2"] <= threshold:
                    hi, found[k] = k, m
                else:
                    lo, missed, misses = k, m, misses + 1
            while hi is not None and hi - lo > 1:
                k = (lo + hi) // 2
                m = check(k)
                if m["rel_l2"] <= threshold:
                    hi, found[k] = k, m
                else:
                    lo = k
            k = hi if hi is not None else lo
            m = found[hi] if hi is not None else missed
            met = hi is not None
        nodes = self.exclude + [x["node"] for x in measured[:k]]
        return dict(summary(m), exclude=nodes, threshold=threshold, keep=keep, met=met,
                    checks=checks, flag=f"--int8-exclude={','.join(nodes)}" if nodes else "")


def summary(m):
    """The measurement's numbers without its per-output lists."""
    return {k: m[k] for k in ("rel_l2", "inputs_rel_l2", "top1", "iou_mean") if k in m}


def describe(m):
    s = f"rel L2 {m['rel_l2']:.4g}"
    if "top1" in m:
        s += f", top-1 {100 * m['top1']:.1f}%"
    if "iou_mean" in m:
        s += f", IoU {m['iou_mean']:.4f}"
    return s


def print_int8_layers(r, wall):
    """The table ranked by measured sensitivity, the recommendation and the
    estimate's set of the same size."""
    base = r["all_int8"]
    print(f"  int8 layers by measured effect on the output ({r['metric']} with the layer alone "
          f"fp32; all int8: {describe(base)}; {r['candidates']} of {r['int8_layers']} "
          "measured, --candidates):")
    top1 = "top1" in base
    print("    rank  est.rank  est. own    rel L2  reduction   share" +
          ("   top-1" if top1 else "") + "  layer")
    for x in r["layers"]:
        est = (f"{x['estimate_rank']:8d}  {x['estimate']:8.2e}" if x["estimate_rank"]
               else f"{'-':>8}  {'-':>8}")
        name = f"{x['node']} ({x['op']})"
        if "rel_l2" not in x:
            why = x.get("skipped", "not measured: beyond --candidates")
            print(f"    {'-':>4}  {est}  {why}: {name}")
            continue
        t = f"  {100 * x['top1']:5.1f}%" if top1 and "top1" in x else ""
        print(f"    {x['measured_rank']:4d}  {est}  {x['rel_l2']:8.4g}  {x['reduction']:9.2e}  "
              f"{100 * x['share']:5.1f}%{t}  {name}")
    rec = r["recommended"]
    what = (f"the measured top {rec['keep']}" if rec["keep"] is not None else
            f"the fewest layers for rel L2 <= {rec['threshold']:.4g}" +
            (", half the all-int8 build's: --threshold" if rec.get("default_threshold") else ""))
    flag = rec["flag"] or "(none: the all-int8 build already meets it)"
    print(f"  recommended ({what}): {flag}")
    n = len(rec["exclude"])
    verdict = "" if rec["met"] is None else (" meets the threshold" if rec["met"]
                                             else " MISSES the threshold")
    checks = ", ".join(f"top {c['count']} {c['rel_l2']:.4g}" for c in rec["checks"])
    print(f"    {n} layer{'s' if n != 1 else ''} fp32: {describe(rec)}{verdict}" +
          (f" (builds checked: {checks})" if checks else ""))
    if rec["met"] is False and r["candidates"] < r["int8_layers"]:
        print(f"    (only {r['candidates']} of {r['int8_layers']} layers measured: "
              "--candidates all measures every one)")
    if "estimate" in r:
        e = r["estimate"]
        same = set(e["exclude"]) == set(rec["exclude"]) - set(r.get("user_exclude", []))
        print(f"  the estimate's top {e['count']} instead ({e['flag']}): " +
              ("the same layers" if same else describe(e)))
    reused = f"; {r['reused']} measurements of an earlier run reused" if r["reused"] else ""
    each = f": {r['compile_s'] / r['builds']:.1f} s each" if r["builds"] else ""
    print(f"  {r['builds'] + 2} builds (fp32, the default int8 build, {r['builds']} int8 "
          f"builds on its ranges{each}{reused}) in {wall:.0f} s")


def cache_key(model, ranges, bindir, files, evaluation):
    """What a measurement of an int8 build depends on besides its flags: the
    model, the ranges and input files (their contents), the compiler and
    runtime (their files' sizes and times) and how the samples are made."""
    sha = kiln_tools.file_sha256
    tools = [os.path.join(bindir, "kilnc")] + [
        os.path.join(bindir, "..", "lib", f"libkiln_{n}.so") for n in ("compiler", "runtime")]
    stamps = [[os.stat(t).st_size, os.stat(t).st_mtime_ns] for t in tools if os.path.exists(t)]
    return [sha(model), sha(ranges), [sha(p) for _, p in files], stamps, evaluation]


def check_int8_layers_args(args):
    """The option errors of --precision int8 --layers."""
    if args.candidates not in (None, "all"):
        if not args.candidates.isdigit() or int(args.candidates) < 1:
            fail(f"--candidates needs a positive count of layers or 'all', got "
                 f"'{args.candidates}'")
        args.candidates = int(args.candidates)
    if args.threshold is not None and not args.threshold > 0:
        fail(f"--threshold needs a positive output rel L2, got {args.threshold:g}")
    if args.int8_keep_fp32 is not None and args.int8_keep_fp32 < 1:
        fail(f"--int8-keep-fp32 needs a positive count of layers, got {args.int8_keep_fp32}")
    if args.threshold is not None and args.int8_keep_fp32 is not None:
        fail("--threshold and --int8-keep-fp32 both choose the recommended set with --layers: "
             "give one")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "tf32", "int8"])
    ap.add_argument("--inputs", help="folder of input_N.pb (or test_data_set_0/)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--dim", action="append", help="NAME=VALUE for symbolic dims (kilnc --dim)")
    ap.add_argument("--layers", action="store_true",
                    help="compare every intermediate value (int8: measure each int8 layer's "
                         "effect on the output, one build with it alone fp32 each)")
    ap.add_argument("--threshold", type=float, default=None,
                    help="fp16/bf16/tf32: layer error reported as too large (default 5e-3 "
                         "fp16/tf32, 2e-2 bf16); int8: the output rel L2 the recommended "
                         "--int8-exclude set must reach (default half the all-int8 build's)")
    ap.add_argument("--candidates", metavar="K|all",
                    help="int8 --layers: measure the K layers of the largest estimated own "
                         "error (kilnc --int8-keep-fp32's ranking), one build each (default: "
                         "every int8 layer when there are at most 24, else 16; 'all')")
    ap.add_argument("--jump", type=float, default=10.0,
                    help="error growth over the nodes before that counts as a jump")
    ap.add_argument("--top", type=int, default=10, help="list the N layers with the largest error")
    ap.add_argument("--keep-fp32", help="kilnc --keep-fp32 for the reduced build")
    ap.add_argument("--calibrate", help="kilnc --calibrate=DIR for the reduced build")
    ap.add_argument("--calibrate-samples", type=int,
                    help="write this many seeded inputs as the calibration folder (--calibrate)")
    ap.add_argument("--calibration-method", help="kilnc --calibration-method (int8)")
    ap.add_argument("--int8-exclude", help="kilnc --int8-exclude (int8)")
    ap.add_argument("--int8-residuals", choices=["on", "off"],
                    help="kilnc --int8-residuals (int8; default on: residual Adds "
                         "read the quantized activation)")
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
                    help="kilnc --int8-keep-fp32 (int8): the N most sensitive contractions fp32 "
                         "by the estimate; with --layers, recommend the N most sensitive by "
                         "measurement instead of a --threshold")
    ap.add_argument("--calibration-ranges",
                    help="kilnc --calibration-ranges (int8): with --calibrate save the ranges "
                         "there, without it reuse them (no calibration run)")
    ap.add_argument("--images", default="smooth", choices=["smooth", "scene", "document", "text"],
                    help="pictures of image inputs: smooth random fields, drawn scenes, "
                         "document pages, text pages (utils/models/corpus_inputs.py)")
    ap.add_argument("--image-mean", default=",".join(map(str, IMAGENET_MEAN)),
                    help="per-channel mean subtracted from pictures in [0, 1] (ImageNet's)")
    ap.add_argument("--image-std", default=",".join(map(str, IMAGENET_STD)),
                    help="per-channel std they are divided by (ImageNet's)")
    ap.add_argument("--min-top1", type=float, help="exit 1 when a top-1 agreement is below this")
    ap.add_argument("--workdir", help="keep builds and outputs here (default: a temporary "
                                      "folder); int8 --layers keeps its measurements there "
                                      "for a later run to reuse")
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
    if args.int8_residuals:
        extra.append(f"--int8-residuals={1 if args.int8_residuals == 'on' else 0}")
    int8_layers = args.layers and args.precision == "int8"
    if args.int8_keep_fp32 is not None and not int8_layers:
        extra.append(f"--int8-keep-fp32={args.int8_keep_fp32}")
    if args.candidates is not None and not int8_layers:
        fail("--candidates is for --precision int8 --layers (the layers measured one build each)")
    if int8_layers:
        check_int8_layers_args(args)
        if not args.samples:
            progress("note: without --samples the layers are ranked on the one input set "
                     "(N(0, 1) noise unless --inputs); --samples N ranks them on N pictures")
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
    if args.precision == "int8" and not (args.calibrate or args.calibration_ranges):
        fail("--precision int8 needs --calibrate DIR, --calibrate-samples N or "
             "--calibration-ranges FILE")
    ranges = args.calibration_ranges
    if int8_layers and not ranges:
        ranges = os.path.join(workdir, "ranges.json")
    if ranges:
        extra.append(f"--calibration-ranges={ranges}")
    int8_so = os.path.join(workdir, f"{args.precision}.so")
    if int8_layers:
        extra.append(f"--report={int8_so}.json")
        progress("compiling the fp32 build and the int8 build" +
                 (" (calibration)" if args.calibrate else ""))
    start = time.time()
    samples = None
    try:
        res = evaluate(args.model, args.precision, workdir, bindir=args.bin,
                       dims=dims, seed=args.seed, inputs=args.inputs,
                       layers=args.layers and not int8_layers, extra=extra)
        fp32_so = os.path.join(workdir, "fp32.so")
        if args.samples:
            kiln = load_kiln(args.bin)
            feeds = sample_feeds(args.model, args.samples, args.seed, dims, images)
            samples = (kiln, feeds, run_samples(kiln.load(fp32_so), feeds))
            res["samples"] = compare_samples(samples[2], run_samples(kiln.load(int8_so), feeds),
                                             args.task, args.det_threshold)
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
    if int8_layers:
        inputs = args.inputs or os.path.join(workdir, "inputs")
        own = ("--calibrate=", "--int8-exclude=", "--report=")
        flags = [f for f in extra if not f.startswith(own)]
        exclude = args.int8_exclude.split(",") if args.int8_exclude else []
        try:
            files = input_files(inputs)
            key = None if not args.workdir else cache_key(
                args.model, ranges, args.bin, files,
                [dims, args.samples, args.seed, images, args.task, args.det_threshold])
            search = Int8Layers(args.model, workdir, args.bin, dims, flags, exclude, files,
                                fp32_so, samples, args.task, args.det_threshold, key)
            with open(int8_so + ".json") as f:
                plan = json.load(f)["precision"]["nodes"]
            base = search.measure(int8_so)
            threshold = args.threshold if args.threshold is not None else base["rel_l2"] / 2
            res["int8_layers"] = search.run(plan, base, args.candidates,
                                            None if args.int8_keep_fp32 is not None
                                            else threshold, args.int8_keep_fp32)
        except (kiln_tools.Error, OSError) as e:
            fail(str(e))
        res["int8_layers"]["recommended"]["default_threshold"] = args.threshold is None
        res["int8_layers"]["wall_s"] = time.time() - start
        print_int8_layers(res["int8_layers"], res["int8_layers"]["wall_s"])
        if args.threshold is not None and res["int8_layers"]["recommended"]["met"] is False:
            bad = True
    elif args.layers:
        layers = res["layers"]
        above, jumped = analyze_layers(layers, args.precision, threshold, args.jump)
        print(f"  {len(layers)} intermediate values compared (program order)")
        if above:
            print(f"  first above {threshold:g}: '{above['name']}' "
                  f"{kiln_tools.format_stats(above)}")
        else:
            print(f"  no intermediate value above {threshold:g}")
        if jumped:
            print(f"  first jump (> {args.jump:g}x the largest error before it, "
                  f"{jumped['before']:.2e}): '{jumped['name']}' {kiln_tools.format_stats(jumped)}")
        res["first_above"] = above["name"] if above else None
        res["first_jump"] = jumped["name"] if jumped else None
        ranked = sorted(layers, key=lambda e: (-e["nonfinite"], -e["rel_l2"]))[: args.top]
        if ranked:
            print("  largest errors:")
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
