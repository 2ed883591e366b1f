"""The runtime's public C API (include/kiln-c/runtime.h) through ctypes, for
timing a model.so on device tensors (bench/gpu_bench.py). Every C function
and struct of the runtime that Python uses is in this file."""
import ctypes


class KilnModel:
    """model.so through libkiln_runtime.so's C API, on torch tensors."""

    class View(ctypes.Structure):
        _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                    ("dims", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]

    class InstanceOptions(ctypes.Structure):
        """kiln_instance_options_t."""
        _fields_ = [("struct_size", ctypes.c_size_t), ("graphs", ctypes.c_int32),
                    ("profile_path", ctypes.c_char_p)]

    DTYPES = {"float16": 1, "bfloat16": 2, "float32": 3, "int8": 5, "int32": 7, "int64": 8,
              "uint8": 9}

    def __init__(self, lib_path, so_path, profile=None, graphs=None):
        """Loads `so_path` and creates an instance; with `profile` (a file),
        the instance writes its per-kernel times there (instance option
        profile_path); `graphs` 0 or 1 sets the instance option graphs
        (None: the default, on unless KILN_<KIND>_GRAPHS=0)."""
        lib = ctypes.CDLL(lib_path)
        for fn in ("kiln_model_load", "kiln_instance_create_with_options",
                   "kiln_instance_run_device", "kiln_instance_set_stream",
                   "kiln_status_message"):
            getattr(lib, fn).restype = ctypes.c_void_p
        lib.kiln_instance_options_init.argtypes = [ctypes.c_void_p]
        lib.kiln_instance_options_init.restype = None
        lib.kiln_instance_release.argtypes = [ctypes.c_void_p]
        lib.kiln_model_release.argtypes = [ctypes.c_void_p]
        lib.kiln_status_message.restype = ctypes.c_char_p
        lib.kiln_status_message.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.model = ctypes.c_void_p()
        self.check(lib.kiln_model_load(so_path.encode(), ctypes.byref(self.model)))
        lib.kiln_model_device.restype = ctypes.c_char_p
        lib.kiln_model_device.argtypes = [ctypes.c_void_p]
        # "cuda:sm_90a": the image a library of several took (KILN_CUDA_CHIP).
        self.device = lib.kiln_model_device(self.model).decode()
        self.inst = ctypes.c_void_p()
        opts = self.InstanceOptions()
        lib.kiln_instance_options_init(ctypes.byref(opts))
        if profile:
            opts.profile_path = profile.encode()
        if graphs is not None:
            opts.graphs = int(graphs)
        self.check(lib.kiln_instance_create_with_options(
            self.model, ctypes.byref(opts), ctypes.byref(self.inst)))

    def release(self):
        self.lib.kiln_instance_release(self.inst)
        self.lib.kiln_model_release(self.model)

    def check(self, status):
        if status:
            raise RuntimeError(self.lib.kiln_status_message(ctypes.c_void_p(status)).decode())

    def set_stream(self, stream_ptr):
        self.check(self.lib.kiln_instance_set_stream(self.inst, ctypes.c_void_p(stream_ptr)))

    def _views(self, tensors):
        arr = (self.View * len(tensors))()
        keep = []
        for i, t in enumerate(tensors):
            dims = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
            keep.append(dims)
            arr[i] = self.View(self.DTYPES[str(t.dtype).split(".")[1]], t.dim(), dims, t.data_ptr())
        return arr, keep

    def prepare(self, inputs, outputs):
        self.ins, self.k1 = self._views(inputs)
        self.outs, self.k2 = self._views(outputs)
        self.n_in, self.n_out = len(inputs), len(outputs)

    def run(self):
        self.check(self.lib.kiln_instance_run_device(self.inst, self.ins, self.n_in, self.outs, self.n_out))


def time_cuda(fn, warmup=5, iters=30):
    """Median milliseconds of `fn` on the current CUDA stream (torch events
    around each call, after `warmup` calls)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def time_cuda_pipelined(fn, warmup=5, iters=50):
    """Milliseconds per call of `fn` issued `iters` times back to back on
    the current CUDA stream (one pair of torch events around them all): the
    device time when the host issues faster than the device runs, where
    time_cuda also counts each call's host-side launch latency."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


def profile_runs(lib_path, so_path, inputs, outputs, stream_ptr, path, runs=11):
    """Runs `so_path` `runs` times on an instance that writes its per-kernel
    times to `path` (instance option profile_path: no graphs), on the given
    CUDA stream; returns the report (the last line of `path`, parsed) and
    a summary of the steady state: the kernels launched in every run (the
    first run also converts weights once), per run."""
    import json

    import torch

    kp = KilnModel(lib_path, so_path, profile=path)
    kp.set_stream(stream_ptr)
    kp.prepare(inputs, outputs)
    for _ in range(runs):
        kp.run()
    torch.cuda.synchronize()
    kp.release()
    with open(path) as f:
        rep = json.loads(f.readlines()[-1])
    n = max(1, rep["runs"])
    steady = [k for k in rep["kernels"] if k["launches"] >= n]
    summary = {"runs": n, "run_ms": rep["run_ms"] / n,
               "kernel_ms_per_run": sum(k["total_ms"] for k in steady) / n,
               "launches_per_run": sum(k["launches"] for k in steady) / n,
               "init_kernels": len(rep["kernels"]) - len(steady),
               "top": [{"name": k["name"], "ms": k["total_ms"] / n, "launches": k["launches"] / n}
                       for k in steady]}
    return rep, summary
