"""Kiln from Python: compile ONNX models in-process and run them on arrays.

    import kiln, numpy as np
    model = kiln.compile("model.onnx", precision="fp16", shapes={"x": (1, 3, 224, 224)})
    y = model(np.zeros((1, 3, 224, 224), np.float32))
    model.run({"x": x})                     # a list of outputs, in signature order
    kiln.load("model.so")                   # a library kilnc wrote

Two extension modules: kiln._runtime (loading and running; no LLVM or MLIR)
and kiln._compiler (the compiler, imported on the first kiln.compile).
Inputs are numpy arrays or anything with __dlpack__ on the CPU (torch
tensors, ...), read in place; outputs are numpy arrays over the runtime's
own memory (torch.from_dlpack takes them without a copy). A device model
runs on device tensors (torch CUDA tensors, any DLPack producer) in place,
on torch's current stream or the one given (Model.run). Failures raise
kiln.Error, whose message is the runtime's or compiler's status (naming
the ONNX node or the input) and whose .code names the status.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ._runtime import Error
from ._runtime import Model as _NativeModel

__all__ = ["Error", "Model", "ValueInfo", "Compiler", "CheckReport", "check", "compile",
           "load", "version"]


class ValueInfo(NamedTuple):
    """An input or output: its name, dtype (a numpy dtype; bf16 and 8-bit
    floats as their bits) and shape (an int per static dim; a symbolic dim is
    its symbol's name, or None when it has none)."""
    name: str
    dtype: np.dtype
    shape: Tuple[Union[int, str, None], ...]


_DTYPES = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
           "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
           "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
           "bool": np.bool_}


def _info(entries) -> List[ValueInfo]:
    return [ValueInfo(name, np.dtype(_DTYPES.get(dtype, np.uint8)), shape)
            for name, dtype, shape in entries]


class Model:
    """A compiled model. Thread-safe: threads may run it at once."""

    def __init__(self, native: _NativeModel, device: int = -1):
        self._native = native
        self._device = device
        # The device pointers the last device run handed to the runtime:
        # (inputs, outputs).
        self.last_device_pointers: Optional[Tuple[List[int], List[int]]] = None
        self.inputs: List[ValueInfo] = _info(native._inputs())
        self.outputs: List[ValueInfo] = _info(native._outputs())

    @property
    def device(self) -> str:
        """"cpu", or "<kind>:<chip>" for a device model (e.g. "cuda:sm_90")."""
        return self._native.device

    def run(self, inputs: Union[Sequence[Any], Dict[str, Any]], out: Optional[Sequence[Any]] = None,
            stream: Any = None) -> List[Any]:
        """Runs once. `inputs`: arrays in signature order, or a dict by input
        name (every input once). Returns the outputs in signature order.

        Device tensors (DLPack, e.g. torch CUDA tensors) run a device model on
        the device, without copies: see _run_device for `out` and `stream`."""
        if isinstance(inputs, dict):
            names = [i.name for i in self.inputs]
            unknown = sorted(set(inputs) - set(names))
            if unknown:
                raise _error(f"unknown input {unknown[0]!r} (the model's inputs: "
                             f"{', '.join(names)})")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise _error(f"input {missing[0]!r} is missing")
            inputs = [inputs[n] for n in names]
        inputs = list(inputs)
        devices = [_dlpack_device(x) for x in inputs]
        if any(d is not None and d[0] not in _HOST_DEVICES for d in devices) or out is not None:
            return self._run_device(inputs, devices, out, stream)
        if stream is not None:
            raise _error("stream= is for device tensors; these inputs are on the CPU")
        return self._native._run([_as_array(x) for x in inputs])

    def __call__(self, *inputs: Any, out: Optional[Sequence[Any]] = None,
                 stream: Any = None) -> Any:
        """model(x, y, ...): the output, or a tuple of them."""
        result = self.run(list(inputs), out=out, stream=stream)
        return result[0] if len(result) == 1 else tuple(result)

    def _run_device(self, inputs: List[Any], devices: List[Any], out: Optional[Sequence[Any]],
                    stream: Any) -> List[Any]:
        """A device model on device tensors: kiln_instance_run_device.

        Every input must be a DLPack tensor on the model's device (the device
        it was loaded for), contiguous, of the signature's dtype and shape;
        it is read in place. `out`: device tensors to write the outputs into
        (in signature order); without it, when the inputs are torch tensors,
        each output is a new torch tensor on their device, allocated on the
        run's stream (Kiln's runtime has no device allocator for callers; any
        other framework passes `out`). The outputs returned are those
        tensors, written in place.

        `stream`: where the work is queued: a driver stream handle (an int)
        or an object with `cuda_stream` (torch.cuda.Stream) or `ptr`
        (cupy); default: torch's current stream of the inputs' device when
        they are torch tensors, else the legacy default stream. The call
        returns once the work is queued; the outputs are ready when that
        stream gets there (the inputs must stay alive until then). Each
        input's __dlpack__(stream=...) gets the same stream, so its producer
        orders its pending writes before the run."""
        names = [i.name for i in self.inputs]
        if self.device == "cpu":
            for name, d in zip(names, devices):
                if d is not None and d[0] not in _HOST_DEVICES:
                    raise _error(f"input {name!r} is a device tensor (DLPack device {d}), "
                                 "but the model runs on the cpu: compile it for a device "
                                 "target (target='cuda')")
            raise _error("out= is for device models; this one runs on the cpu")
        kind = self.device.split(":")[0]
        device_type = _DEVICE_TYPES.get(kind)
        if device_type is None:
            raise _error(f"device tensors are not supported for {kind} models")
        if len(inputs) != len(names):
            raise _error(f"the model takes {len(names)} inputs, got {len(inputs)}")
        for name, d in zip(names, devices):
            if d is None or d[0] != device_type:
                raise _error(f"input {name!r} is not a {kind} tensor (DLPack device {d}); "
                             f"the model runs on {self.device}: pass device tensors for "
                             "every input")
        device_id = self._device_ordinal(kind)
        for name, d in zip(names, devices):
            if d[1] != device_id:
                raise _error(f"input {name!r} is on {kind} device {d[1]}; the model runs "
                             f"on device {device_id} (kiln.load(..., device=N))")
        handle = _stream_handle(stream, inputs, kind, device_id)
        capsules = [_dlpack_capsule(x, handle) for x in inputs]
        if out is None:
            out = self._allocate_outputs(inputs, device_id, stream, handle)
        else:
            out = list(out)
            if len(out) != len(self.outputs):
                raise _error(f"out= has {len(out)} tensors; the model has "
                             f"{len(self.outputs)} outputs")
        out_capsules = []
        for o, info in zip(out, self.outputs):
            if not hasattr(o, "__dlpack__"):
                raise _error(f"output {info.name!r}: out= takes DLPack device tensors, "
                             f"not {type(o).__name__}")
            out_capsules.append(_dlpack_capsule(o, handle))
        self.last_device_pointers = self._native._run_device(
            capsules, out_capsules, device_type, device_id, handle)
        return out

    def _device_ordinal(self, kind: str) -> int:
        """The device the model was loaded for (the runtime's rule for -1:
        KILN_<KIND>_DEVICE if set, else 0)."""
        if self._device >= 0:
            return self._device
        return int(os.environ.get(f"KILN_{kind.upper()}_DEVICE") or 0)

    def _allocate_outputs(self, inputs: List[Any], device_id: int, stream: Any,
                          handle: int) -> List[Any]:
        """New torch tensors for the outputs, their dims from the signature
        and the symbols the inputs bind, allocated on the run's stream."""
        torch = sys.modules.get("torch")
        if torch is None or not all(isinstance(x, torch.Tensor) for x in inputs):
            raise _error("out= is needed: without torch tensors as inputs Kiln cannot "
                         "allocate device outputs (the runtime has no device allocator "
                         "for callers)")
        bound: Dict[str, int] = {}
        for info, x in zip(self.inputs, inputs):
            for d, n in zip(info.shape, x.shape):
                if isinstance(d, str):
                    bound.setdefault(d, int(n))
        tensors = []
        device = inputs[0].device
        with torch.cuda.stream(_torch_stream(torch, stream, handle, device)):
            for info, (_, kiln_dtype, _) in zip(self.outputs, self._native._outputs()):
                shape = []
                for d in info.shape:
                    if isinstance(d, int):
                        shape.append(d)
                    elif d in bound:
                        shape.append(bound[d])
                    else:
                        raise _error(f"output {info.name!r} has a dim the model computes "
                                     f"({d!r}): pass out= tensors of its shape")
                dtype = getattr(torch, _TORCH_DTYPES.get(kiln_dtype, ""), None)
                if dtype is None:
                    raise _error(f"output {info.name!r}: torch has no dtype for Kiln's "
                                 f"{kiln_dtype}: pass out= tensors")
                tensors.append(torch.empty(shape, dtype=dtype, device=device))
        return tensors


# DLPack device types: the CPU and host memory a device can see; each device
# kind's memory.
_HOST_DEVICES = (1, 3)
_DEVICE_TYPES = {"cuda": 2, "rocm": 10}
# Kiln's dtype names to torch's.
_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
                 "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool"}


def _dlpack_device(x: Any) -> Optional[Tuple[int, int]]:
    """(DLPack device type, device id) of an object with
    __dlpack_device__, else None."""
    method = getattr(x, "__dlpack_device__", None)
    if method is None:
        return None
    device_type, device_id = method()
    return int(device_type), int(device_id)


def _stream_handle(stream: Any, inputs: List[Any], kind: str, device_id: int) -> int:
    """The driver stream handle a device run uses: `stream` as given (an int,
    or an object's cuda_stream / ptr), else torch's current stream when the
    inputs are torch tensors, else the legacy default stream. The legacy
    default stream is 1 (CU_STREAM_LEGACY, also DLPack's number for it):
    handle 0, torch's name for it, becomes 1; other kinds than cuda keep 0,
    the instance's own stream (waited for before the call returns)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if (kind == "cuda" and torch is not None and inputs
                and all(isinstance(x, torch.Tensor) for x in inputs)):
            stream = torch.cuda.current_stream(inputs[0].device).cuda_stream
        else:
            stream = 1 if kind == "cuda" else 0
    elif not isinstance(stream, int):
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                stream = getattr(stream, attr)
                break
        else:
            raise _error(f"stream= takes a stream handle (int) or an object with cuda_stream, "
                         f"not {type(stream).__name__}")
    stream = int(stream)
    return 1 if kind == "cuda" and stream == 0 else stream


def _torch_stream(torch: Any, stream: Any, handle: int, device: Any) -> Any:
    """The torch stream a run's outputs are allocated on."""
    if stream is not None and isinstance(stream, torch.cuda.Stream):
        return stream
    if handle in (0, 1):
        return torch.cuda.default_stream(device)
    current = torch.cuda.current_stream(device)
    if current.cuda_stream == handle:
        return current
    return torch.cuda.ExternalStream(handle, device=device)


def _dlpack_capsule(x: Any, handle: int) -> Any:
    """x.__dlpack__ with the run's stream (the producer orders its pending
    work before it), or without for producers that take no stream."""
    try:
        return x.__dlpack__(stream=handle)
    except TypeError:
        return x.__dlpack__()


def _error(message: str, code: str = "INVALID_ARGUMENT") -> Error:
    """A kiln.Error raised by the Python layer, with a code like the C API's."""
    e = Error(message)
    e.code = code
    return e


def _as_array(x: Any) -> Any:
    """Objects with __dlpack__ or the buffer protocol go in as they are
    (contiguous CPU data is read in place); anything else through numpy."""
    if hasattr(x, "__dlpack__"):
        if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
            return np.ascontiguousarray(x)
        return x
    return np.ascontiguousarray(x)


def load(path: Union[str, os.PathLike], weights: Optional[str] = None,
         device: Optional[int] = None, driver: Optional[str] = None,
         chip: Optional[str] = None) -> Model:
    """Loads a model.so written by kilnc (its weights file: `weights`, else
    the one kilnc wrote next to it). Device models: `device` the device
    index (default: KILN_<KIND>_DEVICE, else 0), `driver` the driver library
    (default: the system's), `chip` the image of a model built for several
    (kilnc --target=cuda: "sm_90a" or "sm_80"; default: KILN_<KIND>_CHIP,
    else the first the device runs)."""
    ordinal = -1 if device is None else int(device)
    return Model(_NativeModel.load(os.fspath(path), weights or "", driver or "", ordinal,
                                   chip or ""),
                 ordinal)


class Compiler:
    """A compiler with its compile cache: `cache_dir` None for the default
    folder ($KILN_CACHE_DIR, else the XDG cache's kiln folder), "" for none.
    Thread-safe; compiles run at once."""

    def __init__(self, cache_dir: Optional[Union[str, os.PathLike]] = None):
        from . import _compiler
        self._native = _compiler.Compiler(None if cache_dir is None else os.fspath(cache_dir))

    @property
    def cache_dir(self) -> str:
        return self._native.cache_dir

    @property
    def cache_counters(self) -> Tuple[int, int]:
        """(hits, misses) since the compiler was created."""
        return self._native.cache_counters

    def compile(self, model: Any, target: str = "cpu", precision: str = "fp32",
                shapes: Optional[Dict[str, Sequence[int]]] = None,
                dims: Optional[Dict[str, int]] = None, opt_level: int = 2,
                output: Optional[Union[str, os.PathLike]] = None,
                **options: Any) -> Optional[Model]:
        """See kiln.compile."""
        settings = _settings(target, precision, shapes, dims, opt_level, options)
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if output is None:
                return Model(_NativeModel._adopt(self._native.compile_file(path, settings)))
            with open(path, "rb") as f:
                data = f.read()
            base, name = os.path.dirname(os.path.abspath(path)), path
        else:
            if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
                data = model.SerializeToString()
                name = getattr(getattr(model, "graph", None), "name", "") or "<ModelProto>"
            elif isinstance(model, (bytes, bytearray, memoryview)):
                data, name = bytes(model), "<bytes>"
            else:
                raise TypeError("kiln.compile: model must be a path, bytes or an "
                                f"onnx.ModelProto, not {type(model).__name__}")
            base = ""
        if output is not None:
            self._native.compile_to_file(data, base, name, settings, os.fspath(output))
            return None
        return Model(_NativeModel._adopt(self._native.compile_buffer(data, base, name, settings)))


def _settings(target, precision, shapes, dims, opt_level, options) -> List[Tuple[str, str]]:
    """kilnc's options by name, as the C API takes them."""
    s = [("target", target), ("precision", precision), ("O", str(opt_level))]
    for name, value in (dims or {}).items():
        s.append(("dim", f"{name}={value}"))
    if shapes:
        s.append(("shapes", ",".join(f"{name}:{'x'.join(str(int(d)) for d in shape)}"
                                     for name, shape in shapes.items())))
    for key, value in options.items():
        name = key.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            s.append((name, ("1" if v else "0") if isinstance(v, bool) else str(v)))
    return s


_default: Optional[Compiler] = None
_default_lock = threading.Lock()


def compile(model: Any, target: str = "cpu", precision: str = "fp32",
            shapes: Optional[Dict[str, Sequence[int]]] = None,
            dims: Optional[Dict[str, int]] = None, opt_level: int = 2,
            output: Optional[Union[str, os.PathLike]] = None, **options: Any) -> Optional[Model]:
    """Compiles `model` (a path, the bytes of a ModelProto, or an
    onnx.ModelProto) with the default compiler (the default cache) into a
    loaded Model, or into the library `output` (returning None).

    target: "cpu", "cpu:<chip>", "cuda[:sm_XX]", "rocm[:gfxXXX]";
    precision: "fp32", "tf32", "fp16", "bf16"; shapes: {"x": (1, 3, 224, 224)}
    fixes inputs' shapes; dims: {"batch": 1} fixes symbolic dims; opt_level:
    0-3. Other kilnc options by name with '_' for '-': layout="nhwc",
    keep_fp32=["Softmax"], external_weights=True, gpu_tensor_cores=False, ...
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Compiler()
    return _default.compile(model, target, precision, shapes, dims, opt_level, output, **options)


class CheckReport(NamedTuple):
    """kilnc --check's report: `text` is its table (operator, opset, count,
    supported) and summary line; `unsupported` counts the operator types
    Kiln does not support."""
    text: str
    unsupported: int

    @property
    def supported(self) -> bool:
        return self.unsupported == 0

    def __str__(self) -> str:
        return self.text


def check(model: Any) -> CheckReport:
    """Which operators of `model` (a path, bytes or an onnx.ModelProto) Kiln
    supports, without compiling it."""
    from . import _compiler
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            data, name = f.read(), os.fspath(model)
    elif hasattr(model, "SerializeToString"):
        data, name = model.SerializeToString(), "<ModelProto>"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data, name = bytes(model), "<bytes>"
    else:
        raise TypeError(f"kiln.check: model must be a path, bytes or an onnx.ModelProto, "
                        f"not {type(model).__name__}")
    text, unsupported = _compiler.check(data, name)
    return CheckReport(text, unsupported)


def version() -> str:
    """The compiler library's version and build id."""
    from . import _compiler
    return _compiler.version()
