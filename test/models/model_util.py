"""Helpers of the model tests: export a network of utils/models/make_models.py
(small variant, fixed seed) and check it with e2e_util.check."""
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils", "models"))
import e2e_util  # noqa: E402
import make_models  # noqa: E402


def check_model(name, workdir, feeds_list, small=True, max_rel=1e-4):
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, name + "_export.onnx")
    make_models.export(name, path, small=small)
    return e2e_util.check(onnx.load(path), workdir, feeds_list, name, max_rel=max_rel)
