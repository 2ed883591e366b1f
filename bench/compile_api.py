#!/usr/bin/env python3
"""The compiler C API (libkiln_compiler.so) under concurrency and its cache.

  .venv/bin/python bench/compile_api.py [--models resnet50,mobilenetv2,bert,unet]
      [--small] [--threads 2] [--workdir DIR]

Calls the C API through ctypes (which releases the GIL during each call, so
Python threads really call it at once):

1. Each model compiled alone, one after the other, without a cache: the
   sequential total.
2. The same compiles from --threads threads at once (a fresh compiler
   without a cache): the wall time, and each compile's start and end against
   the others'. Overlapping intervals and a wall time below the sequential
   total show that nothing serializes compiles; on this 2-core machine the
   ideal is total / 2 (MLIR's own threads also share the 2 cores).
3. The cache: a cold compile (a miss, writing <key>.so) against a warm one
   (a hit: the key's hash and a dlopen), per model, with the counters.

Each model is checked to load and to report its inputs; speed of the
compiled code is not measured here (bench/cpu.py does that).
"""
import argparse
import ctypes
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln_tools  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
make_models = kiln_tools.project_module("utils/models/make_models.py")


class Api:
    """The C API's calls used here."""

    def __init__(self, libdir):
        self.rt = ctypes.CDLL(os.path.join(libdir, "libkiln_runtime.so"))
        self.c = ctypes.CDLL(os.path.join(libdir, "libkiln_compiler.so"))
        self.rt.kiln_status_message.restype = ctypes.c_char_p
        self.rt.kiln_status_message.argtypes = [ctypes.c_void_p]
        self.rt.kiln_status_free.argtypes = [ctypes.c_void_p]
        self.rt.kiln_model_release.argtypes = [ctypes.c_void_p]
        self.rt.kiln_model_num_inputs.argtypes = [ctypes.c_void_p]
        self.c.kiln_compiler_create.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        self.c.kiln_compiler_free.argtypes = [ctypes.c_void_p]
        self.c.kiln_compiler_compile_buffer.restype = ctypes.c_void_p
        self.c.kiln_compiler_compile_buffer.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
            ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
        self.c.kiln_compiler_cache_counters.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
        self.c.kiln_compiler_version.restype = ctypes.c_char_p

    def compiler(self, cache):
        c = ctypes.c_void_p()
        self.c.kiln_compiler_create(cache.encode(), ctypes.byref(c))
        return c

    def compile(self, compiler, data, name):
        """Compiles `data`; returns (seconds, inputs of the loaded model)."""
        model = ctypes.c_void_p()
        t0 = time.perf_counter()
        status = self.c.kiln_compiler_compile_buffer(
            compiler, data, len(data), None, name.encode(), None, ctypes.byref(model))
        t1 = time.perf_counter()
        if status:
            message = self.rt.kiln_status_message(status).decode()
            self.rt.kiln_status_free(status)
            raise RuntimeError(f"{name}: {message}")
        inputs = self.rt.kiln_model_num_inputs(model)
        self.rt.kiln_model_release(model)
        return t0, t1, inputs

    def counters(self, compiler):
        h, m = ctypes.c_uint64(), ctypes.c_uint64()
        self.c.kiln_compiler_cache_counters(compiler, ctypes.byref(h), ctypes.byref(m))
        return h.value, m.value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert,unet")
    ap.add_argument("--small", action="store_true", help="the reduced variants")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kiln-compile-api"))
    ap.add_argument("--libdir", default=os.path.join(ROOT, "build", "lib"))
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    api = Api(a.libdir)
    print(api.c.kiln_compiler_version().decode())
    models = {}
    for name in a.models.split(","):
        path = os.path.join(a.workdir, name + (".small" if a.small else "") + ".onnx")
        if not os.path.exists(path):
            make_models.export(name, path, small=a.small)
        models[name] = open(path, "rb").read()

    # 1. One after the other.
    sequential = {}
    compiler = api.compiler("")
    for name, data in models.items():
        t0, t1, _ = api.compile(compiler, data, name)
        sequential[name] = t1 - t0
    api.c.kiln_compiler_free(compiler)
    total = sum(sequential.values())

    # 2. At once.
    compiler = api.compiler("")
    spans, errors = {}, []
    names = list(models)

    def work(i):
        try:
            for name in names[i::a.threads]:
                t0, t1, _ = api.compile(compiler, models[name], name)
                spans[name] = (t0, t1)
        except RuntimeError as e:
            errors.append(str(e))

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    api.c.kiln_compiler_free(compiler)
    if errors:
        sys.exit("\n".join(errors))
    overlap = 0.0
    ordered = sorted(spans.values())
    for i, (s0, e0) in enumerate(ordered):
        for s1, e1 in ordered[i + 1:]:
            overlap += max(0.0, min(e0, e1) - max(s0, s1))

    print(f"\n| model | alone (s) | in {a.threads} threads: start - end (s) |")
    print("|---|---:|---|")
    for name in names:
        s, e = spans[name]
        print(f"| {name} | {sequential[name]:.2f} | {s - start:.2f} - {e - start:.2f} |")
    print(f"\nsequential total {total:.2f} s; {a.threads} threads: wall {wall:.2f} s "
          f"({total / wall:.2f}x); compiles overlapped for {overlap:.2f} s in all")

    # 3. The cache.
    cache = tempfile.mkdtemp(prefix="cache-", dir=a.workdir)
    compiler = api.compiler(cache)
    print("\n| model | miss (s) | hit (s) | miss / hit |")
    print("|---|---:|---:|---:|")
    for name, data in models.items():
        t0, t1, _ = api.compile(compiler, data, name)
        t2, t3, _ = api.compile(compiler, data, name)
        print(f"| {name} | {t1 - t0:.3f} | {t3 - t2:.3f} | {(t1 - t0) / (t3 - t2):.0f}x |")
    hits, misses = api.counters(compiler)
    print(f"\ncache counters: {hits} hits, {misses} misses (cache folder {cache})")
    api.c.kiln_compiler_free(compiler)


if __name__ == "__main__":
    main()
