"""kiln_tools: the shared code of Kiln's own scripts (bench/, utils/, test/).

  tools     locate kilnc / kiln-run, run them (ToolError carries the command
            and its stderr), compile a model, run a model.so
  tensors   TensorProto .pb files <-> numpy arrays
  feeds     seeded inputs from a model's signature (symbolic dims filled),
            seeded weights scaled like a trained network's
  compare   onnxruntime reference runs, the project's max relative error
            (max|a - b| / max|b| over an output, NaN/Inf checked), error
            statistics between two builds, the end-to-end check
  nodetests ONNX backend node tests: discovery, materialization, one case
            through kilnc and kiln-run --expect
  graphs    small ONNX models for tests
  quantize  QDQ models from float ones (onnxruntime's quantize_static,
            seeded calibration), for the int8 tests and benchmarks
  runtime   the runtime's C API through ctypes (libkiln_runtime.so)
  scripts   importing a project script that is not part of the package
            (utils/models/make_models.py, ...) by its path

Scripts find the package through PYTHONPATH (lit sets it, test/lit.cfg.py)
or, run standalone, through one bootstrap line that puts <repo>/python on
sys.path. Needs numpy and onnx; onnxruntime only for `compare`, torch never
(make_models.py needs it). Not the user-facing `kiln` package.
"""
from kiln_tools.compare import (CheckFailure, check, collecting_check, error_stats, format_stats,
                                max_rel_error, max_rel_errors, ort_run)
from kiln_tools.feeds import image_inputs, seeded_inputs, trained_weights
from kiln_tools.graphs import make_model
from kiln_tools.scripts import project_module
from kiln_tools.tensors import read_outputs, read_pb, read_pb_named, write_inputs, write_pb
from kiln_tools.tools import (ROOT, Error, ToolError, compile_model, file_sha256, find_tool,
                              run_model, run_tool)

__all__ = [
    "CheckFailure", "Error", "ROOT", "ToolError", "check", "collecting_check", "compile_model",
    "error_stats", "file_sha256", "find_tool", "format_stats", "make_model", "max_rel_error", "max_rel_errors",
    "ort_run", "project_module", "read_outputs", "read_pb", "read_pb_named", "run_model",
    "run_tool", "image_inputs", "seeded_inputs", "trained_weights", "write_inputs", "write_pb",
]
