"""ONNX's backend node tests: finding them (shipped with onnx, or generated
into a cache from onnx's test-case definitions), and running one case
through kilnc and kiln-run --expect (ONNX's per-test tolerances), or
through kilnc alone for a device that is not here (compile_case). Used by
utils/conformance.py (the report), utils/compare_builds.py,
bench/mixed_precision.py and bench/gpu_check.py (the GPU side runs cases
compiled elsewhere)."""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import time

from kiln_tools.tensors import numbered
from kiln_tools.tools import ROOT

PASSED = "passed"
WRONG = "wrong result"
COMPILE_ERROR = "compile error"
RUN_ERROR = "run error"
CRASH = "crash"
STATUSES = [PASSED, WRONG, COMPILE_ERROR, RUN_ERROR, CRASH]
# A compile-only case (compile_case): kilnc wrote the library; nothing ran.
COMPILED = "compiled"
COMPILE_STATUSES = [COMPILED, COMPILE_ERROR, CRASH]
# Which status a case gets when its data sets disagree: the worst.
SEVERITY = {PASSED: 0, WRONG: 1, RUN_ERROR: 2, COMPILE_ERROR: 3, CRASH: 4}

COMPILE_TIMEOUT = 60  # seconds, per kilnc run (--compile-timeout)
RUN_TIMEOUT = 60  # seconds, per kiln-run run (--run-timeout)
# compile_case: while kilnc is missing, half-written or replaced under a
# compile (a build relinking it), wait this long and retry, this many times.
TOOL_WAIT = 60  # seconds
TOOL_WAITS = 10
DEFAULT_RTOL = 1e-3  # onnx.backend.test.loader's defaults
DEFAULT_ATOL = 1e-7
# Where materialized tests go unless told (utils/conformance.py --cache).
DEFAULT_CACHE = os.path.join(ROOT, "build", "conformance")


class Case:
    def __init__(self, name, model_dir, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL):
        self.name = name
        self.model_dir = model_dir
        self.rtol = rtol
        self.atol = atol


def shipped_node_dir():
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def _write_value(path, value, type_proto, name):
    """Writes one data-set value the way onnx's cmd_tools generate-data does."""
    from onnx import TensorProto, numpy_helper

    if type_proto.HasField("map_type"):
        proto = numpy_helper.from_dict(value, name)
    elif type_proto.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif type_proto.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def materialize_node_tests(cache_node_dir, log):
    """Generates the node tests into cache_node_dir (for onnx packages that
    do not ship backend/test/data/node). Returns the directory."""
    import onnx

    stamp = os.path.join(cache_node_dir, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read().strip() == onnx.__version__:
        return cache_node_dir
    log(f"materializing ONNX node tests into {cache_node_dir} ...")
    import onnx.backend.test.case.node as node_test

    if os.path.isdir(cache_node_dir):
        shutil.rmtree(cache_node_dir)
    os.makedirs(cache_node_dir)
    for case in node_test.collect_testcases(None):
        case_dir = os.path.join(cache_node_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        model = case.model
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            with open(os.path.join(case_dir, "data.json"), "w") as f:
                json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for j, value in enumerate(inputs):
                vi = model.graph.input[j]
                _write_value(os.path.join(ds, f"input_{j}.pb"), value, vi.type, vi.name)
            for j, value in enumerate(outputs):
                vi = model.graph.output[j]
                _write_value(os.path.join(ds, f"output_{j}.pb"), value, vi.type, vi.name)
    with open(stamp, "w") as f:
        f.write(onnx.__version__ + "\n")
    return cache_node_dir


def discover_cases(data_dir=None, materialize=False, cache=DEFAULT_CACHE, log=print):
    """The node tests, sorted by name, and where they came from: `data_dir`
    (a folder of <name>/model.onnx, test_data_set_N/), else the ones onnx
    ships, else (or with `materialize`) generated into CACHE/node."""
    from onnx.backend.test import loader

    if data_dir:
        node_dir = os.path.abspath(data_dir)
        source = node_dir
    elif os.path.isdir(shipped_node_dir()) and not materialize:
        node_dir = shipped_node_dir()
        source = "onnx package (backend/test/data/node)"
    else:
        node_dir = materialize_node_tests(os.path.join(cache, "node"), log)
        source = f"materialized into {node_dir}"
    # load_model_tests reads <data_dir>/<kind>/ and picks up per-test
    # rtol/atol overrides from data.json.
    tests = loader.load_model_tests(data_dir=os.path.dirname(node_dir), kind=os.path.basename(node_dir))
    cases = [Case(t.name, t.model_dir, t.rtol, t.atol) for t in tests if t.model_dir]
    cases.sort(key=lambda c: c.name)
    return cases, source


def data_sets(model_dir):
    """[(folder, input files, output files)] of MODEL_DIR/test_data_set_N,
    in numeric order of N and of the files."""
    dirs = [d for d in os.listdir(model_dir)
            if d.startswith("test_data_set_") and d[len("test_data_set_"):].isdigit()]
    out = []
    for d in sorted(dirs, key=lambda d: int(d[len("test_data_set_"):])):
        ds = os.path.join(model_dir, d)
        out.append((ds, numbered(ds, "input"), numbered(ds, "output")))
    return out



def _value_kind(type_proto):
    which = type_proto.WhichOneof("value")
    return {
        "tensor_type": "tensor",
        "sequence_type": "sequence",
        "optional_type": "optional",
        "map_type": "map",
        "sparse_tensor_type": "sparse tensor",
        None: "untyped",
    }.get(which, which)


def _signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except (ValueError, AttributeError):
        return f"signal {-rc}"


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _kilnc_message(stderr, model_path):
    """First error line of kilnc's output, without the file path prefix."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    chosen = next((l for l in lines if "error:" in l), lines[0] if lines else "")
    chosen = chosen.replace(model_path, "<model>")
    chosen = re.sub(r"^<model>(:\d+)*:\s*", "", chosen)
    chosen = re.sub(r"^(kilnc:\s*)?error:\s*", "", chosen)
    return chosen.strip() or "(no message)"


def run_with_timeout(cmd, timeout):
    """Runs cmd in its own process group; on timeout kills the whole group.
    Returns (exit status or None on timeout, stdout, stderr, seconds, timed out)."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        timed_out = True
    rc = None if timed_out else p.returncode
    return rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start, timed_out


def _compile(kilnc, model_path, so, kilnc_args, timeout, non_tensor=()):
    """kilnc MODEL -o SO ARGS...: (status, reason, stderr tail or None,
    seconds), status None when kilnc wrote SO, else CRASH (timeout or
    signal) or COMPILE_ERROR."""
    rc, out, err, dt, timed_out = run_with_timeout([kilnc, model_path, "-o", so, *kilnc_args], timeout)
    if timed_out:
        return CRASH, f"kilnc timed out after {timeout:g} s", None, dt
    if rc < 0:
        return CRASH, f"kilnc killed by {_signal_name(rc)}: {_kilnc_message(err, model_path)}", err[-4000:], dt
    if rc != 0:
        msg = _kilnc_message(err, model_path)
        if rc != 1:
            msg = f"(kilnc exit code {rc}) {msg}"
        if non_tensor:
            msg += f" [{'; '.join(non_tensor)}]"
        return COMPILE_ERROR, msg, err[-4000:], dt
    if not os.path.exists(so):
        return COMPILE_ERROR, "kilnc exited 0 but wrote no library", None, dt
    return None, "", None, dt


def tool_stamp(kilnc):
    """What changes when a build replaces kilnc or the runtime archive it
    links into every library (<prefix>/lib/libKilnModelRuntime.a)."""
    stamp = []
    for path in (kilnc, os.path.join(os.path.dirname(os.path.dirname(kilnc)), "lib", "libKilnModelRuntime.a")):
        try:
            st = os.stat(path)
            stamp.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append(None)
    return stamp


# Starting kilnc fails with these while a build is linking it.
_TOOL_BUSY = (errno.ENOENT, errno.ETXTBSY, errno.ENOEXEC, errno.EACCES)


def _device_code(report_path):
    """What kilnc --report says about a compiled library's device code:
    kernels (graph kernels), shared_kernels (those running another
    kernel's code: `code_of`), host_kernels (those with no device code),
    device_kernels, spills (VGPRs and SGPRs spilled, summed) and
    scratch_bytes (the most of one device kernel); {} without a report."""
    try:
        with open(report_path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return {}
    kernels = report.get("kernels", [])
    device = report.get("device_kernels", [])
    return {"kernels": len(kernels),
            "shared_kernels": sum(1 for k in kernels if k.get("code_of")),
            "host_kernels": sum(1 for k in kernels if not k.get("device_kernels") and not k.get("code_of")),
            "device_kernels": len(device),
            "spills": sum(d.get("vgpr_spills", 0) + d.get("sgpr_spills", 0) for d in device),
            "scratch_bytes": max((d.get("scratch_bytes", 0) for d in device), default=0)}


def compile_case(case_name, model_dir, kilnc, work_root, keep, compile_timeout=COMPILE_TIMEOUT,
                 kilnc_args=(), tool_wait=TOOL_WAIT, tool_waits=TOOL_WAITS):
    """Compiles one case with `kilnc_args` (e.g. --target=rocm:gfx942) and
    stops there: the check of a device target that has no device here.
    Status COMPILED, COMPILE_ERROR or CRASH; a compiled case also holds
    its device code's counts from kilnc --report (_device_code). When
    kilnc cannot be started (missing, half-written: another build is
    linking it), or a failed compile saw kilnc or its runtime archive
    replaced, waits `tool_wait` seconds and compiles again, at most
    `tool_waits` times; `tool_retries` counts the waits and
    `tool_retry_reason` says why the last one was needed."""
    import onnx

    model_path = os.path.join(model_dir, "model.onnx")
    result = {"name": case_name, "status": None, "reason": "", "ops": [], "compile_s": None}
    try:
        result["ops"] = [n.op_type for n in onnx.load(model_path, load_external_data=False).graph.node]
    except Exception as e:  # kilnc still gets the model; its message says why
        result["load_error"] = str(e)
    work = os.path.join(work_root, case_name)
    os.makedirs(work, exist_ok=True)
    so = os.path.join(work, "model.so")
    report = os.path.join(work, "report.json")
    try:
        for attempt in range(tool_waits + 1):
            for path in (so, report):
                if os.path.exists(path):
                    os.remove(path)
            before = tool_stamp(kilnc)
            try:
                status, reason, err, dt = _compile(kilnc, model_path, so, [*kilnc_args, f"--report={report}"],
                                                   compile_timeout)
            except OSError as e:
                if e.errno not in _TOOL_BUSY or attempt == tool_waits:
                    raise
                reason = f"cannot start kilnc: {e.strerror}"
            else:
                if status is None or tool_stamp(kilnc) == before or attempt == tool_waits:
                    break
            result["tool_retries"] = attempt + 1
            result["tool_retry_reason"] = reason
            time.sleep(tool_wait)
        result.update(status=status or COMPILED, reason=reason, compile_s=round(dt, 3))
        if err is not None:
            result["stderr"] = err
        if status is None:
            result["library_bytes"] = os.path.getsize(so)
            result.update(_device_code(report))
        return result
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def make_symbolic(model):
    """`model` (a ModelProto, changed in place) with every dim of its graph
    inputs symbolic (dim_param `<input>_d<axis>`) and its outputs' dims
    unknown: what the dynamic-shapes issue's node-test rerun compiles."""
    initializers = {i.name for i in model.graph.initializer}
    for v in model.graph.input:
        if v.name in initializers or not v.type.HasField("tensor_type"):
            continue
        for axis, dim in enumerate(v.type.tensor_type.shape.dim):
            dim.Clear()
            dim.dim_param = f"{v.name}_d{axis}"
    for v in model.graph.output:
        if v.type.HasField("tensor_type"):
            for dim in v.type.tensor_type.shape.dim:
                dim.Clear()
    del model.graph.value_info[:]
    return model


def run_case(case_name, model_dir, rtol, atol, kilnc, kiln_run, work_root, keep,
             compile_timeout=COMPILE_TIMEOUT, run_timeout=RUN_TIMEOUT,
             kilnc_args=(), prebuilt=None, symbolic=False):
    """Compiles (with `kilnc_args`, e.g. --target=cuda) and runs one case.
    With `prebuilt`, runs that model.so instead of compiling (the GPU check
    runs libraries compiled on another machine). With `symbolic`, compiles
    the model with every input dim made symbolic (make_symbolic)."""
    import onnx

    model_path = os.path.join(model_dir, "model.onnx")
    result = {
        "name": case_name,
        "status": None,
        "reason": "",
        "ops": [],
        "rtol": rtol,
        "atol": atol,
        "compile_s": None,
        "run_s": 0.0,
        "data_sets": [],
    }
    non_tensor = []
    try:
        model = onnx.load(model_path, load_external_data=False)
        result["ops"] = [n.op_type for n in model.graph.node]
        initializers = {i.name for i in model.graph.initializer}
        for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
            for v in values:
                if kind == "input" and v.name in initializers:
                    continue
                k = _value_kind(v.type)
                if k != "tensor":
                    non_tensor.append(f"{kind} '{v.name}' is {'an' if k[0] in 'aeiou' else 'a'} {k}")
    except Exception as e:  # a model onnx cannot load is still counted
        result["ops"] = []
        result["load_error"] = str(e)

    work = os.path.join(work_root, case_name)
    os.makedirs(work, exist_ok=True)
    if symbolic and "load_error" not in result:
        model_path = os.path.join(work, "model_symbolic.onnx")
        onnx.save(make_symbolic(model), model_path)
    so = prebuilt or os.path.join(work, "model.so")
    if not prebuilt and os.path.exists(so):
        os.remove(so)
    try:
        if prebuilt:
            status, dt = None, 0.0
        else:
            status, reason, err, dt = _compile(kilnc, model_path, so, kilnc_args, compile_timeout, non_tensor)
        result["compile_s"] = round(dt, 3)
        if status:
            result.update(status=status, reason=reason)
            if err is not None:
                result["stderr"] = err
            return result
        if non_tensor:
            # kiln-run reads TensorProto only; the data set holds
            # SequenceProto/OptionalProto/MapProto files for these.
            result.update(status=RUN_ERROR,
                          reason="kiln-run cannot feed or check non-tensor values: " + "; ".join(non_tensor))
            return result

        sets = data_sets(model_dir)
        if not sets:
            result.update(status=RUN_ERROR, reason="test has no data sets")
            return result
        worst = PASSED
        worst_reason = ""
        for ds, inputs, outputs in sets:
            cmd = [kiln_run, so]
            for f in inputs:
                cmd += ["--input", f]
            for f in outputs:
                cmd += ["--expect", f]
            cmd += ["--rtol", repr(rtol), "--atol", repr(atol)]
            rc, out, err, dt, timed_out = run_with_timeout(cmd, run_timeout)
            result["run_s"] = round(result["run_s"] + dt, 3)
            ds_name = os.path.basename(ds)
            if timed_out:
                status, reason = CRASH, f"kiln-run timed out after {run_timeout:g} s"
            elif rc < 0:
                status, reason = CRASH, f"kiln-run killed by {_signal_name(rc)}"
            elif rc == 0:
                status, reason = PASSED, ""
            else:
                mismatch = next((l.strip() for l in out.splitlines() if "MISMATCH" in l), None)
                if rc == 1 and mismatch:
                    status, reason = WRONG, mismatch
                else:
                    msg = _first_line(err).replace(so, "<model.so>").replace(model_dir + os.sep, "")
                    status = RUN_ERROR
                    reason = msg or "(no message)"
                    if rc != 1:
                        reason = f"(kiln-run exit code {rc}) {reason}"
            entry = {"data_set": ds_name, "status": status, "reason": reason, "seconds": round(dt, 3)}
            if status != PASSED:
                entry["stdout"] = out[-2000:]
                entry["stderr"] = err[-2000:]
            result["data_sets"].append(entry)
            if SEVERITY[status] > SEVERITY[worst]:
                worst = status
                worst_reason = reason if len(sets) == 1 else f"{ds_name}: {reason}"
        result.update(status=worst, reason=worst_reason)
        return result
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def run_case_safe(*args):
    return _safe(run_case, args)


def compile_case_safe(*args):
    return _safe(compile_case, args)


def _safe(fn, args):
    try:
        return fn(*args)
    except Exception as e:  # the runner's own failure for this case
        return {"name": args[0], "status": None, "runner_error": f"{type(e).__name__}: {e}", "ops": []}

