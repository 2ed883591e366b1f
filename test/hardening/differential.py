# The cases Kiln checks (CHECKED below) must pass; the whole table, cases not
# checked yet included, is docs/reliability.md's (--report-only).
# RUN: %python %s --checked --workdir %t
"""Run-time error behaviour of Kiln against onnxruntime, case by case (issue
"Hardening", item 4).

Each case is a small ONNX model (opset 17, ir_version 8) and one input set
that breaks a precondition of the ONNX operator spec which can only be
checked at run time: the offending value (an index, a shape, a divisor, a
symbolic dim, ...) is a graph input, never a constant, so neither side can
reject it before the model runs. The inputs are written as TensorProto .pb
files and both sides run on the same files:

  onnxruntime  CPUExecutionProvider, in a subprocess (it may crash):
               error (raises), crash (killed by a signal), hang (timeout),
               ok (returns outputs)
  Kiln         kilnc model.onnx -o case.so (120 s), then kiln-run case.so
               --input NAME=FILE.pb ... --output-dir (60 s): compile-error
               (kilnc exits non-zero with a message), error (kiln-run exits
               non-zero, not by a signal), crash (a signal, or sanitizer or
               LLVM crash output from either tool), hang (timeout), ok

The verdict of a case is `pass` when Kiln gives error or compile-error
wherever onnxruntime errors, crashes or hangs, `pass (stricter)` when Kiln
errors where onnxruntime returns outputs, `pass` when both return outputs of
the same names, dtypes and shapes, and `FAIL` otherwise: Kiln returns
outputs where onnxruntime refuses, Kiln crashes or hangs, or both return
outputs that differ in shape or dtype. The report is a Markdown table (case,
op, precondition, each side's outcome and first message line, verdict) on
stdout and, with --out, in a file; its last line is `N passed, M failed`.
Exit status: 1 when a case fails (0 with --report-only), 2 when the runner
cannot run.

  .venv/bin/python test/hardening/differential.py --report-only --out /tmp/diff.md
  .venv/bin/python test/hardening/differential.py [--jobs 2] [--workdir DIR]
      [--only NAME[,NAME] | --checked] [--out FILE.md] [--report-only]

--checked runs the cases Kiln checks today (CHECKED), as the test suite
does: one of them failing fails the test.

On a machine without the compiler (the GPU machine), the check runs in two
halves: --prepare-only (here) compiles each case with `kilnc --target
TARGET` and runs onnxruntime, keeping both in the work folder (case.json);
--run-prepared DIR (there) runs kiln-run on them and reports as above.
bench/gpu_check.py does both for --target cuda: its checks of device data
(index ranges, divisors) run on the GPU.

  differential.py --target cuda --prepare-only --workdir DIR [--checked]
  differential.py --run-prepared DIR [--kiln-run PATH] [--out FILE.md]

kilnc and kiln-run are found on PATH, else in build/bin. The work folder
(default: a temporary one, removed afterwards) holds one folder per case:
model.onnx, input_<i>.pb, case.so and each side's output_<i>.pb.
"""
import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import signal
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kiln_tools import Error, find_tool, make_model, read_outputs, seeded_inputs, write_inputs  # noqa: E402
from kiln_tools.nodetests import run_with_timeout  # noqa: E402

COMPILE_TIMEOUT = 120  # seconds per kilnc run
RUN_TIMEOUT = 60  # seconds per kiln-run or onnxruntime run

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
INT32_MIN = np.iinfo(np.int32).min

# What a process prints when it crashed without dying of a signal.
CRASH_OUTPUT = re.compile(r"AddressSanitizer|LeakSanitizer|MemorySanitizer|ThreadSanitizer|"
                          r":\d+:\d+: runtime error:|Stack dump:|PLEASE submit a bug report")

# The part of onnxruntime's messages that repeats the op.
ORT_PREFIX = re.compile(r"Non-zero status code returned while running \w+ node\. "
                        r"Name:'[^']*' Status Message: ")

# The onnxruntime side: argv is the model, the output folder and the .pb
# inputs; the outputs go to OUTDIR/output_<i>.pb (kiln-run's layout), the
# exception to stderr with exit status 1. onnxruntime's own log is silenced
# so that stderr holds the exception only.
ORT_CHILD = """
import os
import sys
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ort.set_default_logger_severity(4)
model, outdir, *paths = sys.argv[1:]
feeds = {}
for path in paths:
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    feeds[tensor.name] = numpy_helper.to_array(tensor)
try:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
except Exception as e:
    sys.exit(f"session creation failed: {e}")
try:
    outputs = session.run(None, feeds)
except Exception as e:
    sys.exit(str(e))
for i, (info, value) in enumerate(zip(session.get_outputs(), outputs)):
    with open(os.path.join(outdir, f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(value, info.name).SerializeToString())
"""


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    op: str
    precondition: str
    model: onnx.ModelProto
    feeds: dict  # {input name: numpy array}, in signature order


@dataclasses.dataclass(frozen=True)
class Outcome:
    kind: str  # ok, error, compile-error, crash, hang
    message: str
    outputs: tuple = ()  # ok: ((name, dtype, shape), ...)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


def make_node(op, *inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def i64(*values):
    return np.array(values, np.int64)


def i32(*values):
    return np.array(values, np.int32)


def out(name, elem_type, rank):
    """A graph output of known rank and unknown dims."""
    return name, elem_type, [None] * rank


def case(name, precondition, node, inputs, outputs, values, op=None, dims=None):
    """A case of one node: `inputs`, `outputs` as make_model takes them,
    `values` the feeds that break the precondition; the other inputs get
    seeded values (symbolic dims from `dims`). `op` defaults to the node's
    op type."""
    model = make_model(name, [node], inputs, outputs)
    onnx.checker.check_model(model, full_check=True)
    feeds = {**seeded_inputs(model, seed=0, dims=dims), **values}
    return Case(name, op or node.op_type, precondition, model, feeds)


def cases():
    x6, x23 = ("x", F, [6]), ("x", F, [2, 3])
    y1, y2 = [out("y", F, 1)], [out("y", F, 2)]
    reshape = make_node("Reshape", "x", "shape")
    reshape_inputs = [x6, ("shape", I64, [2])]
    topk = make_node("TopK", "x", "k", outputs=("values", "indices"))
    topk_inputs = [("x", F, [5]), ("k", I64, [1])]
    topk_outputs = [out("values", F, 1), out("indices", I64, 1)]
    slice_node = make_node("Slice", "x", "starts", "ends", "axes", "steps")
    slice_inputs = [x23] + [(name, I64, [1]) for name in ("starts", "ends", "axes", "steps")]
    onehot = make_node("OneHot", "indices", "depth", "values")
    onehot_inputs = [("indices", I64, [3]), ("depth", I64, []), ("values", F, [2])]
    int32_pair = [("a", I32, [2]), ("b", I32, [2])]
    y_int32 = [out("y", I32, 1)]
    return [
        case("reshape_count_mismatch", "the new shape has the input's element count ([4, 4] from 6)",
             reshape, reshape_inputs, y2, {"shape": i64(4, 4)}),
        case("reshape_two_inferred_dims", "at most one dim of the shape is -1",
             reshape, reshape_inputs, y2, {"shape": i64(-1, -1)}),
        case("reshape_huge_shape", "the new shape has the input's element count ([1048576, 256] from 6)",
             reshape, reshape_inputs, y2, {"shape": i64(1048576, 256)}),
        case("reshape_zero_copies_dim", "allowzero=0: a 0 copies the input's dim, [0, 6] is [6, 6] "
             "(36 elements from 6)", reshape, reshape_inputs, y2, {"shape": i64(0, 6)}),
        case("reshape_zero_beyond_rank", "allowzero=0: a 0 copies an input dim that exists "
             "([6, 0] from rank 1)", reshape, reshape_inputs, y2, {"shape": i64(6, 0)}),
        case("reshape_negative_dim", "the shape's dims are >= -1 ([-2, 3])",
             reshape, reshape_inputs, y2, {"shape": i64(-2, 3)}),
        case("gather_index_out_of_range", "indices in [-s, s-1] (3 on a dim of 3)",
             make_node("Gather", "x", "indices", axis=0), [("x", F, [3, 4]), ("indices", I64, [1])], y2,
             {"indices": i64(3)}),
        case("gather_index_below_neg_size", "indices in [-s, s-1] (-4 on a dim of 3)",
             make_node("Gather", "x", "indices", axis=0), [("x", F, [3, 4]), ("indices", I64, [1])], y2,
             {"indices": i64(-4)}),
        case("gather_empty_axis", "indices in [-s, s-1] (0 on an axis of size 0)",
             make_node("Gather", "x", "indices", axis=1), [("x", F, [2, 0]), ("indices", I64, [1])], y2,
             {"indices": i64(0)}),
        case("gatherelements_index_out_of_range", "indices in [-s, s-1] along the axis (3 on a dim of 3)",
             make_node("GatherElements", "x", "indices", axis=1), [x23, ("indices", I64, [2, 2])], y2,
             {"indices": np.array([[0, 1], [3, 0]], np.int64)}),
        case("gathernd_index_out_of_range", "each index tuple in range (column 3 of 3)",
             make_node("GatherND", "x", "indices"), [x23, ("indices", I64, [1, 2])], y1,
             {"indices": np.array([[1, 3]], np.int64)}),
        case("scatterelements_index_out_of_range", "indices in [-s, s-1] along the axis (3 on a dim of 3)",
             make_node("ScatterElements", "x", "indices", "updates", axis=1),
             [x23, ("indices", I64, [1, 2]), ("updates", F, [1, 2])], y2,
             {"indices": np.array([[0, 3]], np.int64)}),
        case("scatternd_index_out_of_range", "each index tuple in range (row 4 of 4)",
             make_node("ScatterND", "x", "indices", "updates"),
             [("x", F, [4, 3]), ("indices", I64, [1, 1]), ("updates", F, [1, 3])], y2,
             {"indices": np.array([[4]], np.int64)}),
        case("topk_k_too_large", "k <= the axis' size (6 of 5)", topk, topk_inputs, topk_outputs,
             {"k": i64(6)}),
        case("topk_k_negative", "k >= 0 (-1)", topk, topk_inputs, topk_outputs, {"k": i64(-1)}),
        case("slice_step_zero", "steps are not 0", slice_node, slice_inputs, y2,
             {"starts": i64(0), "ends": i64(3), "axes": i64(1), "steps": i64(0)}),
        case("slice_axis_out_of_range", "axes in [-r, r-1] (2 on rank 2)", slice_node, slice_inputs, y2,
             {"starts": i64(0), "ends": i64(1), "axes": i64(2), "steps": i64(1)}),
        case("slice_axes_repeated", "axes are distinct ([0, 0])",
             make_node("Slice", "x", "starts", "ends", "axes"),
             [x23, ("starts", I64, [2]), ("ends", I64, [2]), ("axes", I64, [2])], y2,
             {"starts": i64(0, 0), "ends": i64(1, 1), "axes": i64(0, 0)}),
        case("cumsum_axis_out_of_range", "axis in [-r, r-1] (2 on rank 2)", make_node("CumSum", "x", "axis"),
             [x23, ("axis", I64, [])], y2, {"axis": np.array(2, np.int64)}),
        case("split_sizes_mismatch", "the split sizes sum to the dim (2 + 3 of 6)",
             make_node("Split", "x", "split", outputs=("y0", "y1")), [x6, ("split", I64, [2])],
             [out("y0", F, 1), out("y1", F, 1)], {"split": i64(2, 3)}),
        case("onehot_depth_zero", "depth > 0 (0)", onehot, onehot_inputs, y2,
             {"indices": i64(0, 1, 2), "depth": np.array(0, np.int64)}),
        case("onehot_depth_negative", "depth > 0 (-3)", onehot, onehot_inputs, y2,
             {"indices": i64(0, 1, 2), "depth": np.array(-3, np.int64)}),
        case("resize_scale_zero", "scales > 0 ([1, 1, 0, 2])", make_node("Resize", "x", "", "scales"),
             [("x", F, [1, 1, 2, 2]), ("scales", F, [4])], [out("y", F, 4)],
             {"scales": np.array([1, 1, 0, 2], np.float32)}),
        case("div_int32_by_zero", "an integer divisor is not 0", make_node("Div", "a", "b"),
             int32_pair, y_int32, {"b": i32(1, 0)}),
        case("div_int32_overflow", "the integer quotient is representable (INT32_MIN / -1)",
             make_node("Div", "a", "b"), int32_pair, y_int32, {"a": i32(7, INT32_MIN), "b": i32(1, -1)}),
        case("div_int64_by_zero", "an integer divisor is not 0", make_node("Div", "a", "b"),
             [("a", I64, [2]), ("b", I64, [2])], [out("y", I64, 1)], {"b": i64(1, 0)}),
        case("mod_int32_by_zero", "an integer divisor is not 0", make_node("Mod", "a", "b"),
             int32_pair, y_int32, {"b": i32(1, 0)}),
        case("expand_incompatible_shape", "the shape broadcasts with the input's ([3] to [4])",
             make_node("Expand", "x", "shape"), [("x", F, [3]), ("shape", I64, [1])], y1, {"shape": i64(4)}),
        case("tile_negative_repeats", "repeats >= 0 ([1, -1])", make_node("Tile", "x", "repeats"),
             [x23, ("repeats", I64, [2])], y2, {"repeats": i64(1, -1)}),
        case("constantofshape_negative_dim", "the shape's dims are >= 0 ([2, -1])",
             make_node("ConstantOfShape", "shape"), [("shape", I64, [2])], y2, {"shape": i64(2, -1)}),
        case("range_delta_zero", "delta is not 0 (0 to 10 by 0)",
             make_node("Range", "start", "limit", "delta"),
             [("start", F, []), ("limit", F, []), ("delta", F, [])], y1,
             {"start": np.array(0, np.float32), "limit": np.array(10, np.float32),
              "delta": np.array(0, np.float32)}),
        case("pad_negative_beyond_size", "each output dim (dim + pads) is >= 0 ([3] padded by -2, -2)",
             make_node("Pad", "x", "pads"), [("x", F, [3]), ("pads", I64, [2])], y1, {"pads": i64(-2, -2)}),
        case("unsqueeze_axis_out_of_range", "axes in [-r, r-1] of the output's rank (5 of 3; output "
             "declared [2, 3, 1])", make_node("Unsqueeze", "x", "axes"), [x23, ("axes", I64, [1])],
             [("y", F, [2, 3, 1])], {"axes": i64(5)}),
        case("squeeze_dim_not_one", "a squeezed dim is 1 (axis 1 of [1, 2, 3]; output declared [2, 3])",
             make_node("Squeeze", "x", "axes"), [("x", F, [1, 2, 3]), ("axes", I64, [1])], [("y", F, [2, 3])],
             {"axes": i64(1)}),
        case("reducesum_axis_out_of_range", "axes in [-r, r-1] (2 on rank 2)",
             make_node("ReduceSum", "x", "axes"), [x23, ("axes", I64, [1])], y2, {"axes": i64(2)}),
        case("nonmaxsuppression_box_count_mismatch", "boxes and scores have the same box count (3 and 4)",
             make_node("NonMaxSuppression", "boxes", "scores"),
             [("boxes", F, [1, "N", 4]), ("scores", F, [1, 1, "M"])], [out("y", I64, 2)], {},
             dims={"N": 3, "M": 4}),
        case("add_broadcast_mismatch", "the shapes broadcast ([3] and [4])", make_node("Add", "a", "b"),
             [("a", F, ["N"]), ("b", F, ["M"])], y1, {}, dims={"N": 3, "M": 4}),
        case("matmul_inner_dim_mismatch", "the inner dims agree ([2, 3] x [4, 3])",
             make_node("MatMul", "a", "b"), [("a", F, [2, "K"]), ("b", F, ["M", 3])], y2, {},
             dims={"K": 3, "M": 4}),
        case("concat_dim_mismatch", "the inputs agree off the axis ([2, 3] and [2, 4] on axis 0)",
             make_node("Concat", "a", "b", axis=0), [("a", F, [2, "N"]), ("b", F, [2, "M"])], y2, {},
             dims={"N": 3, "M": 4}),
        case("conv_channel_mismatch", "the input's channels are the weight's (3 against 2)",
             make_node("Conv", "x", "w"), [("x", F, [1, "C", 4, 4]), ("w", F, [1, 2, 3, 3])],
             [out("y", F, 4)], {}, dims={"C": 3}),
        case("conv_kernel_larger_than_input", "the padded input is at least the kernel's size "
             "(1x1 input, 3x3 kernel)",
             make_node("Conv", "x", "w"), [("x", F, [1, 2, "H", "W"]), ("w", F, [1, 2, 3, 3])],
             [out("y", F, 4)], {}, dims={"H": 1, "W": 1}),
        case("input_shape_mismatch", "an input has its declared shape ([2, 3] fed [3, 3])",
             make_node("Relu", "x"), [x23], [("y", F, [2, 3])], {"x": np.ones((3, 3), np.float32)},
             op="(graph input)"),
        case("input_rank_mismatch", "an input has its declared rank ([2, 3] fed [6])",
             make_node("Relu", "x"), [x23], [("y", F, [2, 3])], {"x": np.ones(6, np.float32)},
             op="(graph input)"),
        case("input_dtype_mismatch", "an input has its declared dtype (float fed int32)",
             make_node("Relu", "x"), [x23], [("y", F, [2, 3])], {"x": np.ones((2, 3), np.int32)},
             op="(graph input)"),
        case("output_shape_mismatch", "an output has its declared shape ([5, 4], computed [2, 4])",
             make_node("Relu", "x"), [("x", F, ["N", 4])], [("y", F, [5, 4])], {}, dims={"N": 2},
             op="(graph output)"),
    ]


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def first_line(text, prefer=None):
    """The first non-blank line of `text` (the first containing `prefer`
    when one does), stripped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    preferred = [line for line in lines if prefer and prefer in line]
    return (preferred or lines or [""])[0]


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def classify(tool, cmd, timeout, error_kind, clean):
    """Runs `cmd` and names its outcome: hang, crash, `error_kind` (a
    non-zero exit) or ok, with the first line of its message (stderr) passed
    through `clean`."""
    rc, out, err, _, timed_out = run_with_timeout(cmd, timeout)
    if timed_out:
        return Outcome("hang", f"{tool} timed out after {timeout} s")
    crash = CRASH_OUTPUT.search(out + err)
    if rc < 0 or crash:
        how = f"killed by {signal_name(rc)}" if rc < 0 else f"exit {rc}"
        message = clean(first_line(out + err, crash and crash.group(0)))
        return Outcome("crash", f"{tool} {how}: {message}" if message else f"{tool} {how}")
    if rc != 0:
        return Outcome(error_kind, clean(first_line(err, "error")) or f"{tool} exit {rc}, no message")
    return Outcome("ok", "")


def with_outputs(outcome, outdir):
    """An ok outcome with the outputs' names, dtypes and shapes from the
    output_<i>.pb files in `outdir`; any other outcome as it is."""
    if outcome.kind != "ok":
        return outcome
    outputs = tuple((name, str(a.dtype), list(a.shape)) for name, a in read_outputs(outdir))
    message = "; ".join(f"{name}: {dtype} {shape}" for name, dtype, shape in outputs)
    return Outcome("ok", message, outputs)


def run_kiln(directory, so, kiln_run, inputs, clean):
    """Kiln's run outcome of a compiled case."""
    kiln_out = os.path.join(directory, "kiln")
    cmd = [kiln_run, so, "--output-dir", kiln_out]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    return with_outputs(classify("kiln-run", cmd, RUN_TIMEOUT, "error", clean), kiln_out)


def run_case(c, workdir, kilnc, kiln_run, target=None, prepare_only=False, kilnc_args=()):
    """(onnxruntime's outcome, Kiln's outcome) of one case; with
    `prepare_only`, Kiln's is the compile's and case.json keeps both."""
    directory = os.path.join(workdir, c.name)
    shutil.rmtree(directory, ignore_errors=True)
    ort_out, kiln_out = os.path.join(directory, "onnxruntime"), os.path.join(directory, "kiln")
    os.makedirs(ort_out)
    os.makedirs(kiln_out)
    model = os.path.join(directory, "model.onnx")
    so = os.path.join(directory, "case.so")
    onnx.save(c.model, model)
    inputs = write_inputs(c.feeds, directory)

    def clean(text):
        return text.replace(directory + os.sep, "")

    ort_cmd = [sys.executable, "-c", ORT_CHILD, model, ort_out, *(path for _, path in inputs)]
    ort = with_outputs(classify("onnxruntime", ort_cmd, RUN_TIMEOUT, "error",
                                lambda text: ORT_PREFIX.sub("", clean(text))), ort_out)
    target_flags = [f"--target={target}"] if target else []
    kiln = classify("kilnc", [kilnc, model, "-o", so, *target_flags, *kilnc_args], COMPILE_TIMEOUT,
                    "compile-error", clean)
    if prepare_only:
        with open(os.path.join(directory, "case.json"), "w") as f:
            json.dump({"onnxruntime": dataclasses.asdict(ort), "compile": dataclasses.asdict(kiln),
                       "inputs": [[name, os.path.relpath(path, directory)] for name, path in inputs]},
                      f)
        return ort, kiln
    if kiln.kind == "ok":
        kiln = run_kiln(directory, so, kiln_run, inputs, clean)
    return ort, kiln


def outcome_of(d):
    return Outcome(d["kind"], d["message"], tuple(tuple(o[:2]) + (list(o[2]),) for o in d["outputs"]))


def run_prepared(c, workdir, kiln_run):
    """(onnxruntime's outcome, Kiln's outcome) of a case --prepare-only made."""
    directory = os.path.join(workdir, c.name)
    with open(os.path.join(directory, "case.json")) as f:
        saved = json.load(f)
    ort, kiln = outcome_of(saved["onnxruntime"]), outcome_of(saved["compile"])
    if kiln.kind == "ok":
        inputs = [(name, os.path.join(directory, path)) for name, path in saved["inputs"]]
        shutil.rmtree(os.path.join(directory, "kiln"), ignore_errors=True)
        os.makedirs(os.path.join(directory, "kiln"))
        kiln = run_kiln(directory, os.path.join(directory, "case.so"), kiln_run, inputs,
                        lambda text: text.replace(directory + os.sep, ""))
    return ort, kiln


def verdict(ort, kiln):
    if kiln.kind in ("error", "compile-error"):
        return "pass (stricter)" if ort.kind == "ok" else "pass"
    return "pass" if ort.kind == kiln.kind == "ok" and ort.outputs == kiln.outputs else "FAIL"


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def cell(text):
    return text.replace("|", "\\|").replace("`", "'")


def report(rows):
    """The Markdown report of [(case, onnxruntime's outcome, Kiln's outcome, verdict)]."""
    import onnxruntime

    passed = sum(1 for *_, v in rows if v != "FAIL")
    lines = [
        "# Run-time error behaviour: Kiln against onnxruntime",
        "",
        f"Generated by `test/hardening/differential.py` (onnxruntime {onnxruntime.__version__}, "
        "CPUExecutionProvider).",
        "",
        "| Case | Op | Precondition | onnxruntime | onnxruntime message | Kiln | Kiln message | Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c, ort, kiln, v in rows:
        lines.append(f"| {c.name} | {c.op} | {cell(c.precondition)} | {ort.kind} | {cell(ort.message)} | "
                     f"{kiln.kind} | {cell(kiln.message)} | {v} |")
    lines += ["", f"{passed} passed, {len(rows) - passed} failed"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


# The cases Kiln's generated code and runtime check today: the test
# (--checked) fails when one of them regresses. The others are reported.
CHECKED = [
    "reshape_count_mismatch",
    "reshape_two_inferred_dims",
    "reshape_huge_shape",
    "reshape_zero_copies_dim",
    "reshape_zero_beyond_rank",
    "reshape_negative_dim",
    "gather_index_out_of_range",
    "gather_index_below_neg_size",
    "gather_empty_axis",
    "gatherelements_index_out_of_range",
    "gathernd_index_out_of_range",
    "scatterelements_index_out_of_range",
    "scatternd_index_out_of_range",
    "topk_k_too_large",
    "topk_k_negative",
    "slice_step_zero",
    "slice_axis_out_of_range",
    "slice_axes_repeated",
    "cumsum_axis_out_of_range",
    "split_sizes_mismatch",
    "onehot_depth_zero",
    "onehot_depth_negative",
    "resize_scale_zero",
    "div_int32_by_zero",
    "div_int32_overflow",
    "div_int64_by_zero",
    "mod_int32_by_zero",
    "expand_incompatible_shape",
    "tile_negative_repeats",
    "constantofshape_negative_dim",
    "range_delta_zero",
    "pad_negative_beyond_size",
    "reducesum_axis_out_of_range",
    "unsqueeze_axis_out_of_range",
    "squeeze_dim_not_one",
    "nonmaxsuppression_box_count_mismatch",
    "add_broadcast_mismatch",
    "matmul_inner_dim_mismatch",
    "concat_dim_mismatch",
    "conv_channel_mismatch",
    "conv_kernel_larger_than_input",
    "input_shape_mismatch",
    "input_rank_mismatch",
    "input_dtype_mismatch",
    "output_shape_mismatch",
]


def parse_args(argv):
    p = argparse.ArgumentParser(description="Run-time error behaviour of Kiln against onnxruntime.")
    p.add_argument("--jobs", "-j", type=int, default=2, help="cases run in parallel (default 2)")
    p.add_argument("--workdir", help="folder for the cases' models, inputs, libraries and outputs "
                   "(default: a temporary folder, removed afterwards)")
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--checked", action="store_true",
                   help="only the cases Kiln checks today (CHECKED), which must pass")
    p.add_argument("--out", help="also write the Markdown report here")
    p.add_argument("--report-only", action="store_true", help="exit 0 even when a case fails")
    p.add_argument("--target", help="kilnc's --target for the cases (default: kilnc's)")
    p.add_argument("--prepare-only", action="store_true",
                   help="compile and run onnxruntime only, keeping both in --workdir")
    p.add_argument("--run-prepared", metavar="DIR",
                   help="run kiln-run on the cases --prepare-only left in DIR")
    p.add_argument("--kiln-run", help="kiln-run to use (default: PATH, else build/bin)")
    p.add_argument("--kilnc-arg", action="append", default=[],
                   help="one more argument for kilnc (repeatable; utils/sanitize.sh links "
                   "the sanitized runtime with --kilnc-arg=--model-runtime=FILE)")
    args = p.parse_args(argv)
    if args.prepare_only and not args.workdir:
        p.error("--prepare-only needs --workdir")
    return args


def main(argv):
    args = parse_args(argv)

    def fail(message):
        print(f"differential: error: {message}", file=sys.stderr)
        return 2

    if args.jobs < 1:
        return fail("--jobs must be at least 1")
    try:
        kilnc = None if args.run_prepared else find_tool("kilnc")
        kiln_run = None if args.prepare_only else (args.kiln_run or find_tool("kiln-run"))
    except Error as e:
        return fail(str(e))
    if args.run_prepared:
        prepared = set(os.listdir(args.run_prepared))
        args.only = ",".join(c.name for c in cases() if c.name in prepared)
        args.workdir = args.run_prepared
    selected = cases()
    if args.checked:
        args.only = ",".join(CHECKED)
    if args.only:
        known = {c.name: c for c in selected}
        wanted = list(dict.fromkeys(name for name in args.only.split(",") if name))
        unknown = [name for name in wanted if name not in known]
        if unknown:
            return fail(f"--only names unknown cases: {', '.join(unknown)} (known: {', '.join(known)})")
        selected = [known[name] for name in wanted]

    workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="kiln-differential-")
    os.makedirs(workdir, exist_ok=True)
    rows = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            if args.run_prepared:
                futures = [pool.submit(run_prepared, c, workdir, kiln_run) for c in selected]
            else:
                futures = [pool.submit(run_case, c, workdir, kilnc, kiln_run, args.target,
                                       args.prepare_only, args.kilnc_arg) for c in selected]
            for c, future in zip(selected, futures):
                try:
                    ort, kiln = future.result()
                except OSError as e:  # e.g. kilnc missing while it is relinked
                    pool.shutdown(cancel_futures=True)
                    return fail(f"{c.name}: {e}")
                rows.append((c, ort, kiln, verdict(ort, kiln)))
                what = f"compile {kiln.kind}" if args.prepare_only else f"Kiln {kiln.kind}: {rows[-1][3]}"
                print(f"differential: {c.name}: onnxruntime {ort.kind}, {what}",
                      file=sys.stderr, flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    if args.prepare_only:
        compiled = sum(1 for _, _, kiln, _ in rows if kiln.kind == "ok")
        print(f"differential: prepared {len(rows)} cases in {workdir} ({compiled} compiled)")
        return 0
    text = report(rows)
    sys.stdout.write(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    failed = any(v == "FAIL" for *_, v in rows)
    return 1 if failed and not args.report_only else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
