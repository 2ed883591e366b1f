"""The Python package `kiln` (build/python/kiln): compile from a path, bytes
and an onnx.ModelProto; run with lists, dicts and positional arrays; one
compiled model at two sizes of a symbolic dim; failures as kiln.Error naming
the node or the input; the cache's counters; 4 threads compiling and running
at once; DLPack in and out with torch CPU tensors (no copies: the data
pointers agree). Every expected value comes from numpy or onnxruntime."""
import os
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln


def make_model(rows="n", domain=""):
    """y = Relu(x @ w + b): x [rows, 8] (rows symbolic by default), w [8, 4],
    b [4], seeded like a trained layer's weights."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 4)) / np.sqrt(8)).astype(np.float32)
    b = (0.1 * rng.standard_normal(4)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["s"], name="bias"),
             helper.make_node("FancyRelu" if domain else "Relu", ["s"], ["y"],
                              name="act", domain=domain)]
    graph = helper.make_graph(
        nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), w, b


def reference(x, w, b):
    return np.maximum(x @ w + b, 0)


@pytest.fixture
def compiler(tmp_path):
    return kiln.Compiler(tmp_path / "cache")


def inputs(rows, seed=1):
    return np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)


def test_compile_from_model_proto_bytes_and_path(compiler, tmp_path):
    proto, w, b = make_model()
    path = tmp_path / "layer.onnx"
    onnx.save(proto, path)
    x = inputs(3)
    for source in (proto, proto.SerializeToString(), str(path), path):
        model = compiler.compile(source)
        np.testing.assert_allclose(model(x), reference(x, w, b), rtol=1e-5, atol=1e-6)


def test_inputs_outputs_and_run_forms(compiler):
    proto, w, b = make_model()
    model = compiler.compile(proto)
    assert model.device == "cpu"
    assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [("x", np.float32, ("n", 8))]
    assert [(o.name, o.shape) for o in model.outputs] == [("y", ("n", 4))]
    x = inputs(5)
    want = reference(x, w, b)
    (by_list,) = model.run([x])
    (by_dict,) = model.run({"x": x})
    np.testing.assert_allclose(by_list, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(by_dict, by_list)
    assert isinstance(by_list, np.ndarray) and by_list.dtype == np.float32


def test_one_model_two_sizes_matches_onnxruntime(compiler):
    import onnxruntime as ort  # in the test environment (python/requirements.txt)
    proto, _, _ = make_model()
    model = compiler.compile(proto)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows in (1, 37):
        x = inputs(rows, seed=rows)
        got = model(x)
        want = session.run(None, {"x": x})[0]
        assert got.shape == (rows, 4)
        assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-5


def test_fixed_shapes_and_options(compiler):
    proto, w, b = make_model()
    model = compiler.compile(proto, shapes={"x": (6, 8)}, opt_level=0)
    assert model.inputs[0].shape == (6, 8)
    x = inputs(6)
    np.testing.assert_allclose(model(x), reference(x, w, b), rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.Error) as e:
        model(inputs(5))
    assert "'x'" in str(e.value) and e.value.code == "INVALID_ARGUMENT"


def test_errors_name_the_node(compiler):
    proto, _, _ = make_model(domain="com.example")
    with pytest.raises(kiln.Error) as e:
        compiler.compile(proto)
    assert "node 'act' (FancyRelu" in str(e.value) and e.value.code == "UNIMPLEMENTED"
    with pytest.raises(kiln.Error) as e:
        compiler.compile(b"not a model")
    assert "not a valid ONNX model" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        compiler.compile(make_model()[0], precision="fp64")
    assert "unknown precision 'fp64' (expected fp32, tf32, fp16, bf16 or int8)" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        compiler.compile(make_model()[0], frobnicate=1)
    assert "unknown compile option 'frobnicate'" in str(e.value)
    model = compiler.compile(make_model()[0])
    with pytest.raises(kiln.Error) as e:
        model.run({"z": inputs(2)})
    assert "unknown input 'z'" in str(e.value) and e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(kiln.Error) as e:
        model(inputs(2).astype(np.float64))
    assert "input 0" in str(e.value) or "'x'" in str(e.value)
    with pytest.raises(TypeError):
        compiler.compile(12)


def test_check():
    report = kiln.check(make_model()[0])
    assert report.supported and "3 operators, 3 nodes: all supported" in str(report)
    bad = kiln.check(make_model(domain="com.example")[0])
    assert not bad.supported and bad.unsupported == 1
    assert "com.example.FancyRelu" in bad.text and "NO" in bad.text
    with pytest.raises(kiln.Error) as e:
        kiln.check(b"junk")
    assert "is not an ONNX model" in str(e.value)


def test_cache_counters(tmp_path):
    proto, _, _ = make_model()
    first = kiln.Compiler(tmp_path / "c")
    first.compile(proto)
    first.compile(proto)
    assert first.cache_counters == (1, 1)
    assert first.cache_dir == str(tmp_path / "c")
    second = kiln.Compiler(tmp_path / "c")
    second.compile(proto)
    assert second.cache_counters == (1, 0)
    assert kiln.Compiler("").cache_dir == ""


def test_compile_to_file_and_load(compiler, tmp_path):
    proto, w, b = make_model(rows=3)
    so = tmp_path / "layer.so"
    assert compiler.compile(proto, output=so) is None
    model = kiln.load(so)
    x = inputs(3)
    np.testing.assert_allclose(model(x), reference(x, w, b), rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.Error) as e:
        kiln.load(tmp_path / "missing.so")
    assert e.value.code == "NOT_FOUND"


def test_threads_compile_and_run_at_once(compiler):
    proto, w, b = make_model()
    results, errors = [0] * 4, []

    def work(t):
        try:
            model = compiler.compile(proto, dims={"n": t + 1} if t % 2 else None)
            for rep in range(20):
                x = inputs(t + 1, seed=rep)
                if np.allclose(model(x), reference(x, w, b), rtol=1e-5, atol=1e-6):
                    results[t] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [20] * 4


def test_dlpack_torch_in_and_out(compiler):
    import torch  # Debian's python3-torch, visible to the venv (utils/setup.sh)
    proto, w, b = make_model()
    model = compiler.compile(proto)
    x = torch.from_numpy(inputs(4))
    y = model(x)  # a torch tensor in: read in place through __dlpack__
    np.testing.assert_allclose(y, reference(x.numpy(), w, b), rtol=1e-5, atol=1e-6)
    t = torch.from_dlpack(y)  # out: no copy
    assert t.data_ptr() == y.__array_interface__["data"][0]
    assert t.shape == (4, 4)
