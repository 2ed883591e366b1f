# RUN: %python %s %t
"""NonMaxSuppression and Unique (outputs sized at run time), compiled by
kilnc and compared with onnxruntime."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import kiln_tools

rng = np.random.default_rng(23)
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(name, nodes, inputs, outputs, opset=18):
    return kiln_tools.make_model(name, nodes, inputs, outputs, opset=opset)


failures = []
check = kiln_tools.collecting_check(sys.argv[1], failures)


os.makedirs(sys.argv[1], exist_ok=True)


def corner_boxes(b, n):
    lo = rng.uniform(0, 10, (b, n, 2)).astype(np.float32)
    size = rng.uniform(1, 4, (b, n, 2)).astype(np.float32)
    # Half of the boxes with flipped corners.
    box = np.concatenate([lo, lo + size], axis=2)
    flip = rng.random((b, n)) < 0.5
    box[flip] = box[flip][:, [2, 3, 0, 1]]
    return box


def center_boxes(b, n):
    c = rng.uniform(0, 10, (b, n, 2)).astype(np.float32)
    wh = rng.uniform(1, 4, (b, n, 2)).astype(np.float32)
    return np.concatenate([c, wh], axis=2)


# NonMaxSuppression over 2 batches x 3 classes, both box formats, with a
# score threshold; the number of boxes is dynamic (two sizes).
for cpb, gen in [(0, corner_boxes), (1, center_boxes)]:
    node = helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou", "st"], ["y"],
                            center_point_box=cpb)
    m = model(f"nms_{cpb}", [node],
              [("b", F32, [2, None, 4]), ("s", F32, [2, 3, None]), ("m", I64, [1]),
               ("iou", F32, [1]), ("st", F32, [1])], [("y", I64, [None, 3])])
    feeds = []
    for n, mx in [(20, 4), (7, 10)]:
        feeds.append({"b": gen(2, n), "s": rng.random((2, 3, n)).astype(np.float32),
                      "m": np.array([mx], np.int64), "iou": np.array([0.3], np.float32),
                      "st": np.array([0.2], np.float32)})
    check(f"nms_center_{cpb}", m, feeds)

# Without a score threshold, scalar thresholds; without max_output the output
# is empty.
node = helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou"], ["y"])
m = model("nms_noscore", [node], [("b", F32, [1, 12, 4]), ("s", F32, [1, 2, 12]),
                                  ("m", I64, []), ("iou", F32, [])], [("y", I64, [None, 3])])
check("nms_noscore", m, [{"b": corner_boxes(1, 12), "s": rng.random((1, 2, 12)).astype(np.float32),
                          "m": np.array(100, np.int64), "iou": np.array(0.1, np.float32)}])
node = helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])
m = model("nms_nomax", [node], [("b", F32, [1, 5, 4]), ("s", F32, [1, 1, 5])],
          [("y", I64, [None, 3])])
check("nms_nomax", m, [{"b": corner_boxes(1, 5), "s": rng.random((1, 1, 5)).astype(np.float32)}])

# Unique of a flattened float tensor, sorted and not, dynamic size.
for srt in [1, 0]:
    node = helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], sorted=srt)
    m = model(f"unique_{srt}", [node], [("x", F32, [None, 4])],
              [("y", F32, [None]), ("i", I64, [None]), ("v", I64, [None]), ("c", I64, [None])])
    check(f"unique_flat_{srt}", m,
          [{"x": rng.integers(-3, 4, (r, 4)).astype(np.float32)} for r in (5, 2)])

# Unique of int64 columns (axis 1) with repeated columns, sorted and not.
for srt in [1, 0]:
    node = helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], axis=1, sorted=srt)
    m = model(f"unique_axis_{srt}", [node], [("x", I64, [3, 8])],
              [("y", I64, [3, None]), ("i", I64, [None]), ("v", I64, [8]), ("c", I64, [None])])
    cols = rng.integers(0, 3, (3, 3)).astype(np.int64)
    x = cols[:, rng.integers(0, 3, 8)]
    check(f"unique_axis_{srt}", m, [{"x": x}])

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all passed")
