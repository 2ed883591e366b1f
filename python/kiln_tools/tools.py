"""Locating and calling kilnc and kiln-run."""
import hashlib
import os
import shutil
import subprocess

# The repository: <repo>/python/kiln_tools/tools.py.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Error(Exception):
    """Base of the errors kiln_tools raises."""


class ToolError(Error):
    """A command failed (non-zero exit, signal or timeout): the message holds
    the command line, the exit status and the command's output."""

    def __init__(self, cmd, returncode, stdout="", stderr="", timeout=None):
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stdout = stdout or ""
        self.stderr = stderr or ""
        self.timeout = timeout
        if timeout is not None:
            what = f"timed out after {timeout:g} s"
        elif returncode is not None and returncode < 0:
            what = f"was killed by signal {-returncode}"
        else:
            what = f"failed ({returncode})"
        out = "\n".join(s.rstrip() for s in (self.stdout, self.stderr) if s.strip())
        super().__init__(f"command {what}: {' '.join(map(str, self.cmd))}" +
                         (f"\n{out}" if out else ""))


def find_tool(name, bindir=None):
    """Path of Kiln tool `name` (kilnc, kiln-run, kiln-opt, ...): in `bindir`
    when given, else the first on PATH, else <repo>/build/bin. Raises Error
    when it is not an executable there."""
    if bindir:
        path = os.path.join(bindir, name)
    else:
        path = shutil.which(name) or os.path.join(ROOT, "build", "bin", name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        where = f"in {bindir}" if bindir else f"on PATH or in {os.path.join(ROOT, 'build', 'bin')}"
        raise Error(f"no executable {name} {where} (build Kiln first)")
    return path


def run_tool(cmd, timeout=None, check=True):
    """Runs `cmd` (output captured as text). With `check`, raises ToolError
    unless it exits 0; a timeout always raises ToolError."""
    cmd = [str(c) for c in cmd]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        raise ToolError(cmd, None, out, err, timeout=timeout) from None
    if check and p.returncode != 0:
        raise ToolError(cmd, p.returncode, p.stdout, p.stderr)
    return p


def compile_model(model, so, flags=(), bindir=None, timeout=None):
    """kilnc MODEL -o SO FLAGS...; returns the CompletedProcess."""
    return run_tool([find_tool("kilnc", bindir), model, "-o", so, *flags], timeout=timeout)


def run_model(so, inputs, outdir, flags=(), bindir=None, timeout=None):
    """kiln-run SO --input ... --output-dir OUTDIR FLAGS...; returns the
    outputs as [(name, array)] in signature order. `inputs`: paths, or
    (name, path) pairs (passed as --input name=path when name is set)."""
    from kiln_tools.tensors import read_outputs

    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    cmd = [find_tool("kiln-run", bindir), so]
    for item in inputs:
        name, path = item if isinstance(item, tuple) else ("", item)
        cmd += ["--input", f"{name}={path}" if name else path]
    run_tool(cmd + ["--output-dir", outdir, *flags], timeout=timeout)
    return read_outputs(outdir)


def benchmark(so, inputs, runs, bindir=None, timeout=None, flags=()):
    """`kiln-run SO --input ... --iterations RUNS --export-times FILE` (plus
    `flags`, e.g. --threads 2): the exported times as a dict (`summary` has
    latency_ms with mean, min, p50, p90, p95, p99, max; device models also
    h2d_ms, compute_ms, d2h_ms; `times` every run)."""
    import json
    import tempfile

    cmd = [find_tool("kiln-run", bindir), so, *flags]
    for path in inputs:
        cmd += ["--input", path]
    with tempfile.TemporaryDirectory() as tmp:
        times = os.path.join(tmp, "times.json")
        run_tool(cmd + ["--iterations", str(runs), "--export-times", times], timeout=timeout)
        with open(times) as f:
            return json.load(f)


def benchmark_ms(so, inputs, runs, bindir=None, timeout=None, flags=()):
    """Median latency in ms of RUNS timed runs of `kiln-run SO --input ...`
    after its warm-up (plus `flags`, e.g. --threads 2)."""
    return benchmark(so, inputs, runs, bindir, timeout, flags)["summary"]["latency_ms"]["p50"]


def file_sha256(path):
    """The SHA-256 of a file's bytes, as hex (read 1 MiB at a time)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ort_session(path, threads=2):
    """An onnxruntime CPU session of `path` on `threads` intra-op threads
    (one inter-op), as the benchmarks compare Kiln with."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_ms(sess, feeds, runs):
    """Median milliseconds of `runs` runs of `sess` on `feeds` (after 5
    warm-up runs), timed on the host clock."""
    import time

    import numpy as np

    for _ in range(5):
        sess.run(None, feeds)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))
