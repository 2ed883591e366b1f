#!/usr/bin/env python3
"""The Python package on the GPU: torch CUDA tensors in and out of a Kiln
model through DLPack, without copies, on torch's streams (docs/python.md,
"Device tensors").

  prepare OUTDIR   (this machine: LLVM/MLIR, no GPU) compiles a small model
                   (y = Relu(x @ w + b), x [N, 256] with N symbolic, w
                   [256, 128]) with kiln.compile(target="cuda") into
                   OUTDIR/model.so, saves w and b, and copies what the GPU
                   machine needs to build the runtime's extension module
                   kiln._runtime there: the nanobind sources
                   (python/bindings), the package's .py files, the kiln-c
                   headers, build/lib/libkiln_runtime.so and a CMakeLists.txt
                   for that module alone. Run it with the build's package:
                   PYTHONPATH=build/python .venv/bin/python bench/python_gpu.py prepare .pygpu
  run OUTDIR --out DIR
                   (the GPU machine: python3 3.12 with torch, nanobind,
                   cmake, ninja; no LLVM, no internet) builds kiln._runtime
                   against the carried libkiln_runtime.so with that Python
                   (cmake + ninja), imports the package without its compiler
                   module (kiln.load only), then checks, each into the JSON
                   summary (printed, and written to DIR/python_gpu.json):
                   results against torch (fp32, TF32 off) at two sizes of N;
                   zero copies (the runtime got each input's data_ptr; each
                   output is a torch tensor the runtime wrote in place:
                   torch.from_dlpack(y).data_ptr() is the pointer the runtime
                   got, and a write through one shows in the other); torch's
                   current stream by default and on a side stream; out=
                   tensors; CuPy arrays (out= needed); the errors naming the
                   input; and the time of one call.

The command on the GPU machine, with OUTDIR carried:
  python3 bench/python_gpu.py run .pygpu --out $OUT
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K, M = 256, 128  # x [N, K] @ w [K, M]
SIZES = (8, 64)

MODULE_CMAKE = """\
# kiln._runtime alone (python/bindings/RuntimeModule.cpp), against the
# carried libkiln_runtime.so, for the Python that runs cmake
# (-DPython_EXECUTABLE) and its pip-installed nanobind. Written by
# bench/python_gpu.py prepare.
cmake_minimum_required(VERSION 3.18)
project(kiln_runtime_module LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
  OUTPUT_VARIABLE NB_DIR OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
find_package(nanobind CONFIG REQUIRED PATHS "${NB_DIR}" NO_DEFAULT_PATH)
set(PKG ${CMAKE_CURRENT_SOURCE_DIR}/../pkg/kiln)
add_library(kiln_runtime SHARED IMPORTED)
set_target_properties(kiln_runtime PROPERTIES IMPORTED_LOCATION ${PKG}/libkiln_runtime.so)
nanobind_add_module(_runtime NB_STATIC bindings/RuntimeModule.cpp)
target_include_directories(_runtime PRIVATE include bindings)
target_link_libraries(_runtime PRIVATE kiln_runtime)
set_target_properties(_runtime PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PKG}
  BUILD_RPATH "\\$ORIGIN")
"""


def make_model():
    """The ONNX model and its weights (seeded)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((K, M)) / np.sqrt(K)).astype(np.float32)
    b = (0.1 * rng.standard_normal(M)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
         helper.make_node("Add", ["m", "b"], ["s"], name="bias"),
         helper.make_node("Relu", ["s"], ["y"], name="act")],
        "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", M])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model, w, b


def prepare(outdir):
    import numpy as np
    # The package as the build wrote it (build/python), unless one is
    # importable already (PYTHONPATH, an installed wheel).
    build_python = os.path.join(ROOT, "build", "python")
    if os.path.isdir(build_python) and build_python not in sys.path:
        sys.path.append(build_python)
    import kiln
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    pkg = os.path.join(outdir, "pkg", "kiln")
    module = os.path.join(outdir, "module")
    os.makedirs(pkg)
    proto, w, b = make_model()
    start = time.time()
    kiln.Compiler("").compile(proto, target="cuda", output=os.path.join(outdir, "model.so"))
    compile_s = time.time() - start
    np.savez(os.path.join(outdir, "weights.npz"), w=w, b=b)
    for f in glob.glob(os.path.join(ROOT, "python/package/kiln/*.py")) + glob.glob(
            os.path.join(ROOT, "python/package/kiln/*.pyi")):
        shutil.copy(f, pkg)
    shutil.copy(os.path.join(ROOT, "build/lib/libkiln_runtime.so"), pkg)
    shutil.copytree(os.path.join(ROOT, "python/bindings"), os.path.join(module, "bindings"))
    shutil.copytree(os.path.join(ROOT, "include/kiln-c"),
                    os.path.join(module, "include", "kiln-c"))
    with open(os.path.join(module, "CMakeLists.txt"), "w") as f:
        f.write(MODULE_CMAKE)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(outdir) for f in fs)
    print(f"prepared {outdir}: model.so compiled for cuda in {compile_s:.1f} s, "
          f"{size / 2**20:.2f} MiB in all")


def build_module(outdir, summary):
    """cmake + ninja: kiln._runtime into OUTDIR/pkg/kiln."""
    module = os.path.abspath(os.path.join(outdir, "module"))
    build = "/tmp/kiln-python-gpu-build"
    shutil.rmtree(build, ignore_errors=True)
    # cmake and ninja: on PATH, else pip's beside this Python.
    def tool(name):
        return shutil.which(name) or os.path.join(os.path.dirname(sys.executable), name)
    start = time.time()
    for cmd in ([tool("cmake"), "-S", module, "-B", build, "-G", "Ninja",
                 f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}",
                 f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"],
                [tool("cmake"), "--build", build]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            summary["build"] = {"ok": False, "command": " ".join(cmd),
                                "output": (p.stdout + p.stderr)[-4000:]}
            return False
    import nanobind
    summary["build"] = {"ok": True, "seconds": round(time.time() - start, 1),
                        "python": sys.version.split()[0], "nanobind": nanobind.__version__}
    return True


def check(summary, name, fn):
    """Runs one check, recording its result or its failure."""
    try:
        result = fn()
        summary["checks"][name] = dict(ok=True, **(result or {}))
    except Exception as e:  # recorded, the other checks still run
        summary["checks"][name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}


def run(outdir, out):
    summary = {"checks": {}}
    if build_module(outdir, summary):
        sys.path.insert(0, os.path.abspath(os.path.join(outdir, "pkg")))
        import numpy as np
        import torch
        import kiln
        torch.backends.cuda.matmul.allow_tf32 = False
        summary.update(torch=torch.__version__, cuda_available=torch.cuda.is_available())
        try:
            weights = np.load(os.path.join(outdir, "weights.npz"))
            w = torch.from_numpy(weights["w"]).cuda()
            b = torch.from_numpy(weights["b"]).cuda()
            model = kiln.load(os.path.join(outdir, "model.so"))
            summary.update(device=model.device, gpu=torch.cuda.get_device_name(0),
                           compiler_module_loaded="kiln._compiler" in sys.modules)
        except Exception as e:
            summary["checks"]["load"] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            model = None

        def reference(x):
            return torch.relu(x @ w + b)

        def max_err(y, x):
            ref = reference(x)
            return float((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30))

        def results():
            errs = {}
            for n in SIZES:
                x = torch.randn(n, K, device="cuda")
                y = model(x)  # torch's current stream (the default one)
                torch.cuda.synchronize()
                assert isinstance(y, torch.Tensor) and y.is_cuda and y.shape == (n, M)
                errs[str(n)] = max_err(y, x)
                assert errs[str(n)] < 1e-5, errs
            return {"max_rel_err": errs}

        def zero_copy():
            x = torch.randn(SIZES[1], K, device="cuda")
            y = model(x)
            torch.cuda.synchronize()
            ins, outs = model.last_device_pointers
            t = torch.from_dlpack(y)
            result = {"input_ptr_is_tensors": ins[0] == x.data_ptr(),
                      "output_ptr_is_runtimes": t.data_ptr() == outs[0] == y.data_ptr()}
            t[0, 0] = 12345.0  # through the DLPack view ...
            result["write_through_dlpack_visible"] = float(y[0, 0]) == 12345.0
            y[1, 1] = -7.0     # ... and back
            result["write_back_visible"] = float(t[1, 1]) == -7.0
            assert all(result.values()), result
            return result

        def side_stream():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                x = torch.randn(SIZES[0], K, device="cuda")
                y = model(x)  # torch's current stream: s
                ref = reference(x)
            s.synchronize()
            explicit = torch.cuda.Stream()
            x2 = torch.randn(SIZES[1], K, device="cuda")
            explicit.wait_stream(torch.cuda.current_stream())  # x2 is written
            y2 = model(x2, stream=explicit)
            explicit.synchronize()
            err = float((y - ref).abs().max())
            err2 = max_err(y2, x2)
            assert err < 1e-4 and err2 < 1e-5, (err, err2)
            return {"current_side_stream_err": err, "explicit_stream_rel_err": err2}

        def out_tensors():
            x = torch.randn(SIZES[0], K, device="cuda")
            o = torch.empty(SIZES[0], M, device="cuda")
            (y,) = model.run([x], out=[o])
            torch.cuda.synchronize()
            assert y is o and model.last_device_pointers[1][0] == o.data_ptr()
            return {"max_rel_err": max_err(o, x)}

        def cupy_arrays():
            import cupy
            x = cupy.random.standard_normal((SIZES[0], K), dtype=cupy.float32)
            try:
                model(x)
                raise AssertionError("no error without out=")
            except kiln.Error as e:
                assert "out= is needed" in str(e)
            o = cupy.empty((SIZES[0], M), dtype=cupy.float32)
            stream = cupy.cuda.get_current_stream()
            model(x, out=(o,), stream=stream)
            stream.synchronize()
            err = max_err(torch.from_dlpack(o), torch.from_dlpack(x))
            assert err < 1e-5 and model.last_device_pointers[0][0] == x.data.ptr
            return {"max_rel_err": err}

        def host_inputs():
            # A device model also runs on host arrays (staged through the
            # instance's device buffers): host results, no device tensor.
            x = torch.randn(SIZES[0], K)
            y = model(x)
            got = y if isinstance(y, torch.Tensor) else torch.from_numpy(np.asarray(y))
            assert not got.is_cuda and got.shape == (SIZES[0], M), (type(y), got.shape)
            ref = reference(x.cuda()).cpu()
            err = float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30))
            assert err < 1e-5, err
            return {"max_rel_err": err, "returned": type(y).__name__}

        def errors():
            messages = {}
            for label, x in (("float64", torch.randn(8, K, device="cuda", dtype=torch.float64)),
                             ("shape", torch.randn(8, K - 1, device="cuda")),
                             ("strided", torch.randn(K, 8, device="cuda").t())):
                try:
                    model(x)
                    raise AssertionError(f"{label}: no error")
                except kiln.Error as e:
                    assert "'x'" in str(e), str(e)
                    messages[label] = str(e)
            return {"messages": messages}

        def timing():
            x = torch.randn(SIZES[1], K, device="cuda")
            o = torch.empty(SIZES[1], M, device="cuda")
            for _ in range(20):
                model(x, out=(o,))
            torch.cuda.synchronize()
            n = 500
            start = time.perf_counter()
            for _ in range(n):
                model(x, out=(o,))
            torch.cuda.synchronize()
            call = (time.perf_counter() - start) / n
            start = time.perf_counter()
            for _ in range(n):
                reference(x)
            torch.cuda.synchronize()
            ref = (time.perf_counter() - start) / n
            return {"kiln_us_per_call": round(call * 1e6, 1), "torch_us_per_call": round(ref * 1e6, 1)}

        for name, fn in () if model is None else (("results", results), ("zero_copy", zero_copy),
                         ("side_stream", side_stream), ("out_tensors", out_tensors),
                         ("cupy", cupy_arrays), ("host_inputs", host_inputs),
                         ("errors", errors), ("timing", timing)):
            check(summary, name, fn)
    summary["ok"] = summary["build"]["ok"] and all(c["ok"] for c in summary["checks"].values())
    text = json.dumps(summary, indent=2)
    print(text)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "python_gpu.json"), "w") as f:
            f.write(text + "\n")
    return 0 if summary["ok"] else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("prepare").add_argument("outdir")
    r = sub.add_parser("run")
    r.add_argument("outdir")
    r.add_argument("--out", default="")
    args = p.parse_args()
    if args.cmd == "prepare":
        prepare(args.outdir)
        return 0
    return run(args.outdir, args.out)


if __name__ == "__main__":
    sys.exit(main())
