"""Project scripts that are modules of their own (make_models.py needs torch,
fill_weights.py runs standalone on machines without Kiln): imported by their
path in the repository, once, under their file name."""
import importlib.util
import os
import sys

from kiln_tools.tools import ROOT


def project_module(relpath):
    """The module of <repo>/RELPATH (e.g. "utils/models/make_models.py"),
    registered in sys.modules under its file name."""
    name = os.path.splitext(os.path.basename(relpath))[0]
    path = os.path.join(ROOT, relpath)
    mod = sys.modules.get(name)
    if mod is not None and os.path.abspath(getattr(mod, "__file__", "")) == os.path.abspath(path):
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"no Python file {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod
