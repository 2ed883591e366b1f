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
own memory (torch.from_dlpack takes them without a copy). Failures raise
kiln.Error, whose message is the runtime's or compiler's status (naming
the ONNX node or the input) and whose .code names the status.
"""
from __future__ import annotations

import os
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

    def __init__(self, native: _NativeModel):
        self._native = native
        self.inputs: List[ValueInfo] = _info(native._inputs())
        self.outputs: List[ValueInfo] = _info(native._outputs())

    @property
    def device(self) -> str:
        """"cpu", or "<kind> <chip>" for a device model."""
        return self._native.device

    def run(self, inputs: Union[Sequence[Any], Dict[str, Any]]) -> List[np.ndarray]:
        """Runs once. `inputs`: arrays in signature order, or a dict by input
        name (every input once). Returns the outputs in signature order."""
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
        return self._native._run([_as_array(x) for x in inputs])

    def __call__(self, *inputs: Any) -> Union[np.ndarray, Tuple[np.ndarray, ...]]:
        """model(x, y, ...): the output, or a tuple of them."""
        out = self.run(list(inputs))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return (f"kiln.Model(device={self.device!r}, inputs={[i.name for i in self.inputs]}, "
                f"outputs={[o.name for o in self.outputs]})")


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


def load(path: Union[str, os.PathLike], weights: Optional[str] = None) -> Model:
    """Loads a model.so written by kilnc (its weights file: `weights`, else
    the one kilnc wrote next to it)."""
    return Model(_NativeModel.load(os.fspath(path), weights or ""))


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
