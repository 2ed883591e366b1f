# RUN: %python %s %t
"""python/kiln_tools, the scripts' shared package: the project's max relative
error, seeded feeds, tool errors that name the command and its stderr, the
end-to-end check passing and failing, and its recording mode."""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln_tools
from kiln_tools import compare

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def expect_raises(exc, fn, *needles):
    try:
        fn()
    except exc as e:
        missing = [n for n in needles if n not in str(e)]
        assert not missing, f"{exc.__name__} without {missing}: {e}"
        return e
    raise AssertionError(f"no {exc.__name__}")


# Max relative error: max|a - b| / max|b|; inf for new NaN/Inf; shapes.
assert abs(kiln_tools.max_rel_error(np.float32([1, 2]), np.float32([1, 2.5])) - 0.2) < 1e-12
assert kiln_tools.max_rel_error(np.float32([0.5]), np.float32([0])) == 0.5
assert kiln_tools.max_rel_error(np.float32([np.nan]), np.float32([1])) == float("inf")
expect_raises(ValueError, lambda: kiln_tools.max_rel_error(np.zeros(2), np.zeros(3)), "(2,)")
expect_raises(ValueError, lambda: kiln_tools.max_rel_errors([np.zeros(2)], []), "1 outputs")
e = kiln_tools.error_stats(np.float32([3, 4]), np.float32([3, 4.5]))
assert abs(e["rel_l2"] - 0.1) < 1e-12 and e["max_abs"] == 0.5 and e["nonfinite"] == 0, e

# Seeded inputs: symbolic dims filled, token ids below the embedding rows,
# initializers skipped, the same values for the same seed.
emb = numpy_helper.from_array(np.zeros((50, 4), np.float32), "emb")
g = helper.make_graph(
    [helper.make_node("Gather", ["emb", "ids"], ["e"]),
     helper.make_node("Add", ["e", "x"], ["y"])], "g",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "seq"]),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4]),
     helper.make_tensor_value_info("emb", TensorProto.FLOAT, [50, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 4])], [emb])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
f = kiln_tools.seeded_inputs(m, 3, {"seq": 7})
assert list(f) == ["ids", "x"], list(f)
assert f["ids"].shape == (1, 7) and f["ids"].dtype == np.int64 and f["ids"].max() < 50
assert f["x"].shape == (1, 7, 4) and f["x"].dtype == np.float32
assert all(np.array_equal(a, b) for a, b in zip(f.values(), kiln_tools.seeded_inputs(m, 3, {"seq": 7}).values()))
assert kiln_tools.seeded_inputs(m, 3)["x"].shape == (1, 1, 4)
w = kiln_tools.trained_weights(m)
assert list(w) == ["emb"] and abs(float(w["emb"].std()) - 0.02) < 0.01, w

# A failing tool: the error names the command and carries its stderr.
missing = os.path.join(work, "missing.onnx")
err = expect_raises(kiln_tools.ToolError,
                    lambda: kiln_tools.compile_model(missing, os.path.join(work, "m.so")),
                    "kilnc", "missing.onnx", "failed (1)")
assert "missing.onnx" in err.stderr and err.returncode == 1, err.stderr

# The end-to-end check passes at fp32 and fails (CheckFailure) when the
# tolerance is below what fp16 gives.
feeds = [{"ids": f["ids"], "x": f["x"]}]
emb.CopyFrom(numpy_helper.from_array(
    np.random.default_rng(0).standard_normal((50, 4)).astype(np.float32), "emb"))
worst = kiln_tools.check(m, work, feeds, "gather_add")
assert worst < 1e-6, worst
rng = np.random.default_rng(1)
mm = kiln_tools.make_model(
    "mm", [helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", TensorProto.FLOAT, [8, 64])],
    [("y", TensorProto.FLOAT, [8, 64])],
    [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")])
mm_feeds = [{"x": rng.standard_normal((8, 64)).astype(np.float32)}]
assert kiln_tools.check(mm, work, mm_feeds, "mm") < 1e-5
expect_raises(kiln_tools.CheckFailure,
              lambda: kiln_tools.check(mm, work, mm_feeds, "mm_fp16", max_rel=1e-6,
                                       flags=["--precision=fp16"]), "max relative error")
failures = []
kiln_tools.collecting_check(work, failures)("bad_model", onnx.ModelProto(), feeds)
assert failures == ["bad_model"], failures

# Recording mode (utils/compare_builds.py): the model and its inputs in the
# node-test layout, nothing compiled.
corpus = os.path.join(work, "corpus")
os.environ[compare.CORPUS_ENV] = corpus
kiln_tools.check(m, os.path.join(work, "not_used"), feeds * 2, "rec")
del os.environ[compare.CORPUS_ENV]
assert not os.path.exists(os.path.join(work, "not_used"))
assert onnx.load(os.path.join(corpus, "rec", "model.onnx")) == m
name, ids = kiln_tools.read_pb_named(os.path.join(corpus, "rec", "test_data_set_1", "input_0.pb"))
assert name == "ids" and np.array_equal(ids, f["ids"])
print("ALL PASS")
