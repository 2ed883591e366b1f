"""Device tensors through DLPack (kiln.Model.run on a device model): the
fake CUDA driver of the runtime tests (test/Runtime/fake_cuda_driver.c,
whose "device memory" is host memory it allocated and checks every pointer
against) runs test/Runtime/fake_cuda_model.c (y = 2x + w, total = sum(y),
x f32 [3, 4]). The device tensors here are small DLPack producers over that
memory; the checks: results, the runtime reading and writing the tensors in
place (no host copies: the driver's counters), the stream handed to the
runtime and to each producer, and the errors naming the input.

On a real GPU, bench/python_gpu.py runs the same path with torch CUDA
tensors. Paths come from ctest's environment (test/CMakeLists.txt), else the
build folder next to the package."""
import ctypes
import os

import numpy as np
import pytest

import kiln

BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__))))
DRIVER = os.environ.get("KILN_TEST_FAKE_CUDA_DRIVER",
                        os.path.join(BUILD, "test/Runtime/kiln_test_fake_cuda_driver.so"))
MODEL = os.environ.get("KILN_TEST_FAKE_CUDA_MODEL",
                       os.path.join(BUILD, "test/Runtime/kiln_test_fake_cuda_model.so"))
WEIGHT = np.array([0.5, -1.0, 10.0, -100.0], np.float32)

if not (os.path.exists(DRIVER) and os.path.exists(MODEL)):
    pytest.skip(f"no fake CUDA driver and model at {DRIVER}, {MODEL} (ninja -C build)",
                allow_module_level=True)


class Stats(ctypes.Structure):
    """The leading counters of fake_cuda_stats (fake_cuda_driver.h)."""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "inits", "ctx_retains", "ctx_releases", "module_loads", "module_unloads",
        "function_lookups", "allocs", "frees", "live_allocs", "host_allocs", "htod",
        "htod_sync", "htod_bytes", "dtoh", "dtod", "launch_attempts", "launches",
        "kernel_runs", "syncs", "stream_creates", "stream_destroys", "capture_attempts",
        "captures", "instantiations", "graph_launches", "live_graphs", "live_graph_execs",
        "bad_pointers")] + [("last_launch_stream", ctypes.c_void_p),
                            ("rest", ctypes.c_byte * 512)]


# The same library the runtime opens (one dlopen handle, one state).
fake = ctypes.CDLL(DRIVER)
fake.fake_cuda_device_alloc.restype = ctypes.c_void_p
fake.fake_cuda_device_alloc.argtypes = [ctypes.c_size_t]
fake.fake_cuda_device_free.argtypes = [ctypes.c_void_p]
fake.fake_cuda_stream_create.restype = ctypes.c_void_p
fake.fake_cuda_stream_destroy.argtypes = [ctypes.c_void_p]
fake.fake_cuda_get_stats.restype = Stats


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DeviceTensor:
    """A float32 (or `code`/`bits`) tensor in the fake driver's device memory
    with DLPack's two methods; records the streams its consumers asked for."""

    def __init__(self, shape, device_type=2, device_id=0, code=2, bits=32, strides=None):
        self.shape = tuple(shape)
        self.nbytes = int(np.prod(self.shape)) * bits // 8
        self.ptr = fake.fake_cuda_device_alloc(max(self.nbytes, 1))
        assert self.ptr, "fake_cuda_device_alloc failed"
        self.device = (device_type, device_id)
        self.dtype = (code, bits)
        self.strides = strides
        self.streams = []
        self._keep = []

    def __del__(self):
        fake.fake_cuda_device_free(self.ptr)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        strides = (ctypes.cast((ctypes.c_int64 * len(self.strides))(*self.strides),
                               ctypes.POINTER(ctypes.c_int64)) if self.strides else None)
        managed = DLManagedTensor()
        managed.dl_tensor = DLTensor(self.ptr, DLDevice(*self.device), len(self.shape),
                                     DLDataType(self.dtype[0], self.dtype[1], 1),
                                     ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                                     strides, 0)
        self._keep.append((shape, strides, managed))  # alive while the tensor is
        return _capsule_new(ctypes.addressof(managed), b"dltensor", None)

    def write(self, array):
        data = np.ascontiguousarray(array, np.float32)
        assert data.nbytes == self.nbytes
        ctypes.memmove(self.ptr, data.ctypes.data, data.nbytes)

    def read(self):
        return np.frombuffer(ctypes.string_at(self.ptr, self.nbytes), np.float32).reshape(
            self.shape)


@pytest.fixture(scope="module")
def stream():
    """A fake driver stream, alive longer than the model (whose instances
    stay on the stream they ran on)."""
    handle = fake.fake_cuda_stream_create()
    yield handle
    fake.fake_cuda_stream_destroy(handle)


@pytest.fixture(scope="module")
def model(stream):
    return kiln.load(MODEL, driver=DRIVER, device=0)


def case(seed):
    return np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)


def test_device_run_in_place_on_the_callers_stream(model, stream):
    assert model.device.startswith("cuda")
    x, y, total = DeviceTensor((3, 4)), DeviceTensor((3, 4)), DeviceTensor(())
    for seed in range(3):  # the second and third runs replay the captured graph
        data = case(seed)
        x.write(data)
        before = fake.fake_cuda_get_stats()
        out = model.run([x], out=[y, total], stream=stream)
        after = fake.fake_cuda_get_stats()
        assert out[0] is y and out[1] is total
        np.testing.assert_array_equal(y.read(), 2 * data + WEIGHT)
        np.testing.assert_allclose(total.read(), (2 * data + WEIGHT).sum(), rtol=1e-6)
        # In place: no host copies of the tensors (the weight went up once,
        # at the first run), every pointer inside a live allocation.
        assert after.dtoh == before.dtoh
        assert after.htod - before.htod == (1 if seed == 0 else 0)
        assert after.bad_pointers == before.bad_pointers
        assert after.last_launch_stream == stream or after.graph_launches > before.graph_launches
        assert model.last_device_pointers == ([x.ptr], [y.ptr, total.ptr])
    # Each producer was asked for the run's stream.
    assert x.streams == [stream] * 3 and y.streams == [stream] * 3


def test_stream_object_and_positional_call(model, stream):
    class Stream:
        cuda_stream = stream
    x, y, total = DeviceTensor((3, 4)), DeviceTensor((3, 4)), DeviceTensor(())
    data = case(7)
    x.write(data)
    got_y, got_total = model(x, out=(y, total), stream=Stream())
    assert got_y is y and x.streams == [stream]
    np.testing.assert_array_equal(y.read(), 2 * data + WEIGHT)


def test_default_stream(model, stream):
    # Without torch tensors: the legacy default stream, CU_STREAM_LEGACY (1),
    # which is also DLPack's number for it; torch's name for it, 0, becomes
    # 1. (The fake driver, like the runtime's own use, has no legacy stream,
    # so runs here pass one of its streams.)
    x = DeviceTensor((3, 4))
    assert kiln._stream_handle(None, [x], "cuda", 0) == 1
    assert kiln._stream_handle(0, [x], "cuda", 0) == 1
    assert kiln._stream_handle(stream, [x], "cuda", 0) == stream
    # Another device kind keeps 0: the instance's own stream, waited for.
    assert kiln._stream_handle(None, [x], "rocm", 0) == 0


def test_device_errors_name_the_input(model, stream):
    y, total = DeviceTensor((3, 4)), DeviceTensor(())
    cases = [
        ([DeviceTensor((3, 4), device_id=1)], "input 'x' is on cuda device 1"),
        ([DeviceTensor((3, 4), device_type=10)], "input 'x' is not a cuda tensor"),
        ([np.zeros((3, 4), np.float32)], "input 'x' is not a cuda tensor"),
        ([DeviceTensor((3, 4), code=0, bits=32)], "('x'): dtype is i32, expected f32"),
        ([DeviceTensor((3, 5))], "('x')"),
        ([DeviceTensor((3, 4), strides=(1, 3))], "input 'x' is not contiguous"),
    ]
    for inputs, message in cases:
        with pytest.raises(kiln.Error) as e:
            model.run(inputs, out=[y, total], stream=stream)
        assert message in str(e.value) and e.value.code == "INVALID_ARGUMENT", str(e.value)
    x = DeviceTensor((3, 4))
    with pytest.raises(kiln.Error) as e:
        model.run([x], stream=stream)  # no torch inputs: nothing allocates outputs
    assert "out= is needed" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        model.run([x], out=[y], stream=stream)
    assert "out= has 1 tensors; the model has 2 outputs" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        model.run([x], out=[DeviceTensor((2, 4)), total], stream=stream)
    assert "'y'" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        model.run([x], out=[y, total], stream="fast")
    assert "stream= takes a stream handle" in str(e.value)


def test_host_arrays_on_a_device_model(model):
    """Host inputs (numpy, or a torch CPU tensor through DLPack) run a device
    model through the instance's device buffers and return numpy arrays."""
    x = case(7)
    y, total = model(x)
    np.testing.assert_array_equal(y, 2 * x + WEIGHT)
    torch = pytest.importorskip("torch")
    y, total = model(torch.from_numpy(x))
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, 2 * x + WEIGHT)
    np.testing.assert_allclose(total, (2 * x + WEIGHT).sum(), rtol=1e-6)


def test_cpu_model_refuses_device_tensors(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    cpu = kiln.Compiler("").compile(proto)
    with pytest.raises(kiln.Error) as e:
        cpu(DeviceTensor((3, 4)))
    assert "input 'x' is a device tensor" in str(e.value) and "runs on the cpu" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        cpu(np.zeros((3, 4), np.float32), out=[np.zeros((3, 4), np.float32)])
    assert "out= is for device models" in str(e.value)
    with pytest.raises(kiln.Error) as e:
        cpu(np.zeros((3, 4), np.float32), stream=5)
    assert "stream= is for device tensors" in str(e.value)


def test_cuda_library_of_two_images(tmp_path, monkeypatch):
    """kilnc --target=cuda writes an sm_90a and an sm_80 program: the fake
    driver (an H200, or an A100 with FAKE_CUDA_MODE=cc80) gets the first it
    runs; chip= picks one and names the images when it has none such."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    so = tmp_path / "relu.so"
    kiln.Compiler("").compile(proto, target="cuda", output=so)
    monkeypatch.delenv("FAKE_CUDA_MODE", raising=False)
    monkeypatch.delenv("KILN_CUDA_CHIP", raising=False)
    assert kiln.load(so, driver=DRIVER).device == "cuda:sm_90a"
    assert kiln.load(so, driver=DRIVER, chip="sm_80").device == "cuda:sm_80"
    with pytest.raises(kiln.Error) as e:
        kiln.load(so, driver=DRIVER, chip="sm_86")
    assert "the device_chip option is 'sm_86': the model has device images for sm_90a, sm_80" \
        in str(e.value)
    monkeypatch.setenv("FAKE_CUDA_MODE", "cc80")
    assert kiln.load(so, driver=DRIVER).device == "cuda:sm_80"
