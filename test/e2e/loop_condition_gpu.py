# RUN: %python %s %t
"""A decoder Loop whose body computes its next condition (slanet's, issue
14): a step counter below a limit and the step's token (an ArgMax) not the
end token, passed through Cast / Add / Cast to a bool[1] as paddle2onnx
exports it; the batch is symbolic, so the loop runs on the host (its body
sizes buffers at run time) and reads the condition from device memory each
step. On a GPU the host program moved the condition through a scalar
buffer with a one-thread launch and read that buffer back BEFORE the launch
that stored into it: each step saw the previous step's condition (the
first one an unset buffer), and slanet stopped after one step of 501.

Here (lit): the CPU build against onnxruntime at several trip counts, and
the cuda build when the toolkit's ptxas is there. The GPU half (no GPU on
the machine that compiles):

  .venv/bin/python test/e2e/loop_condition_gpu.py prepare .gpu/loop-condition
  # carry .gpu/loop-condition to the GPU machine, then there:
  python3 test/e2e/loop_condition_gpu.py run .gpu/loop-condition

prepare writes the cuda model.so, kiln-run and per feed the inputs and
onnxruntime's outputs (set<k>/input_<i>.pb, set<k>/output_<i>.pb); run
(python3 alone) runs kiln-run --expect on every set and exits 1 on a
mismatch. With the bug, t_final is 1 (or one step late) and h_final is off.
(`prepare DIR cpu` builds the CPU model instead: the run half checked here.)
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build_model():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

    def vi(name, elem, dims):
        return helper.make_tensor_value_info(name, elem, dims)

    w = np.array([[0.9, -0.6, 0.3, 0.2], [0.4, 0.8, -0.7, 0.1],
                  [-0.5, 0.3, 0.6, -0.9], [0.2, -0.4, 0.5, 0.7]], np.float32)
    # The step's scores: a row of `table` picked by the step (tokens 0, 3,
    # 1, 2, 0, ...), 2 apart, plus a tenth of the state's sum (|.| < 0.4 at
    # batch 3): the ArgMax reads the state, yet no near-tie can make
    # onnxruntime and the device disagree on a token.
    table = 2 * np.eye(4, dtype=np.float32)[[2, 0, 3, 1]]
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
         helper.make_node("Add", ["hw", "x"], ["hx"]),
         helper.make_node("Tanh", ["hx"], ["h_out"]),
         helper.make_node("Add", ["t_in", "one"], ["t_out"]),
         helper.make_node("Mod", ["t_out", "four"], ["k"]),
         helper.make_node("Gather", ["table", "k"], ["row"], axis=0),
         helper.make_node("ReduceSum", ["h_out", "axis0"], ["hs"], keepdims=1),
         helper.make_node("Mul", ["hs", "tenth"], ["hs10"]),
         helper.make_node("Add", ["row", "hs10"], ["s"]),
         helper.make_node("ArgMax", ["s"], ["tok"], axis=1, keepdims=0),
         helper.make_node("Less", ["t_out", "limit"], ["below"]),
         helper.make_node("Equal", ["tok", "end"], ["ended"]),
         helper.make_node("Not", ["ended"], ["going"]),
         helper.make_node("And", ["below", "going"], ["go"]),
         helper.make_node("Cast", ["go"], ["go_i"], to=I64),
         helper.make_node("Add", ["go_i", "zero"], ["go_j"]),
         helper.make_node("Cast", ["go_j"], ["cond_out"], to=B)],
        "body",
        [vi("i", I64, []), vi("cond_in", B, [1]), vi("h_in", F, ["N", 4]), vi("t_in", I64, [1])],
        [vi("cond_out", B, [1]), vi("h_out", F, ["N", 4]), vi("t_out", I64, [1])],
        [numpy_helper.from_array(np.array([1], np.int64), "one"),
         numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array([0], np.int64), "axis0"),
         numpy_helper.from_array(np.array([4], np.int64), "four"),
         numpy_helper.from_array(np.array(0.1, np.float32), "tenth"),
         numpy_helper.from_array(table, "table"),
         numpy_helper.from_array(w, "W")])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "half"], ["h0"]),
         helper.make_node("Loop", ["M", "go0", "h0", "t0"], ["h_final", "t_final"], body=body,
                          name="decode")],
        "loop_condition",
        [vi("x", F, ["N", 4]), vi("limit", I64, [1]), vi("end", I64, [1])],
        [vi("h_final", F, ["N", 4]), vi("t_final", I64, [1])],
        [numpy_helper.from_array(np.array(501, np.int64), "M"),
         numpy_helper.from_array(np.array([True]), "go0"),
         numpy_helper.from_array(np.array([0], np.int64), "t0"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def make_feeds():
    """Batches 1 and 3; stops by the limit (end token -1 never comes), by the
    end token, after the first step (limit 1), and at M (501)."""
    import numpy as np

    rng = np.random.default_rng(14)
    x1 = rng.standard_normal((1, 4)).astype(np.float32)
    x3 = rng.standard_normal((3, 4)).astype(np.float32)

    def feed(x, limit, end):
        return {"x": x, "limit": np.array([limit], np.int64), "end": np.array([end], np.int64)}

    return [feed(x1, 7, -1), feed(x3, 40, -1), feed(x3, 1, -1), feed(x1, 1000, -1),
            feed(x1, 100, 3), feed(x1, 100, 2), feed(x3, 100, 1), feed(x3, 100, 2)]


def prepare(stage, target="cuda"):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import onnx

    import kiln_tools
    from kiln_tools.tensors import write_pb

    os.makedirs(stage, exist_ok=True)
    path = os.path.join(stage, "loop_condition.onnx")
    onnx.save(build_model(), path)
    p = kiln_tools.compile_model(path, os.path.join(stage, "model.so"), flags=[f"--target={target}"])
    assert p.returncode == 0, p.stderr
    shutil.copy2(kiln_tools.find_tool("kiln-run"), os.path.join(stage, "kiln-run"))
    for k, feeds in enumerate(make_feeds()):
        d = os.path.join(stage, f"set{k}")
        os.makedirs(d, exist_ok=True)
        for i, (name, value) in enumerate(feeds.items()):
            write_pb(os.path.join(d, f"input_{i}.pb"), value, name)
        for i, ref in enumerate(kiln_tools.ort_run(path, feeds)):
            write_pb(os.path.join(d, f"output_{i}.pb"), ref)
        print(f"set{k}: {[f'{n}{list(v.shape)}' for n, v in feeds.items()]}")
    where = os.path.relpath(stage, ROOT) if stage.startswith(ROOT + os.sep) else stage
    print(f"prepared {where}: carry it, then run `python3 {os.path.relpath(__file__, ROOT)} run {where}`")


def run(stage):
    """The GPU half: python3 and kiln-run only."""
    sets = sorted((d for d in os.listdir(stage) if d.startswith("set")), key=lambda d: int(d[3:]))
    failed = 0
    for d in sets:
        files = sorted(os.listdir(os.path.join(stage, d)))
        cmd = [os.path.join(stage, "kiln-run"), os.path.join(stage, "model.so")]
        for f in files:
            if f.startswith("input_"):
                cmd += ["--input", os.path.join(stage, d, f)]
        for f in files:
            if f.startswith("output_"):
                cmd += ["--expect", os.path.join(stage, d, f)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        ok = p.returncode == 0
        failed += not ok
        last = (p.stdout + p.stderr).strip().splitlines()
        print(f"{d}: {'ok' if ok else 'FAIL'}" + ("" if ok else f" ({' | '.join(last[-4:])})"))
    print(f"loop condition on the device: {len(sets) - failed} of {len(sets)} sets match onnxruntime")
    return 1 if failed else 0


def lit(work):
    import onnx

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln_tools

    model = build_model()
    feeds = make_feeds()
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "loop_condition.onnx")
    onnx.save(model, path)
    # The feeds stop the loop in each way (checked on onnxruntime's counts).
    steps = [int(kiln_tools.ort_run(path, f)[1][0]) for f in feeds]
    print("steps:", steps)
    assert steps[:4] == [7, 40, 1, 501], steps
    assert all(1 < s < 100 for s in steps[4:]), steps
    kiln_tools.check(model, work, feeds, "loop_condition")
    if os.path.exists(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")):
        p = kiln_tools.compile_model(path, os.path.join(work, "loop_condition_cuda.so"),
                                     flags=["--target=cuda"])
        assert p.returncode == 0, p.stderr
        print("loop condition: compiles for cuda")


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "prepare":
        prepare(os.path.abspath(sys.argv[2]), sys.argv[3] if len(sys.argv) == 4 else "cuda")
    elif len(sys.argv) == 3 and sys.argv[1] == "run":
        sys.exit(run(os.path.abspath(sys.argv[2])))
    else:
        lit(sys.argv[1])
