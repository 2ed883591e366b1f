"""Helper of the model tests: export a network of utils/models/make_models.py
(small variant, fixed seed) and check it with kiln_tools.check."""
import os

import onnx

import kiln_tools

make_models = kiln_tools.project_module("utils/models/make_models.py")


def check_model(name, workdir, feeds_list, small=True, max_rel=1e-4):
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, name + "_export.onnx")
    make_models.export(name, path, small=small)
    return kiln_tools.check(onnx.load(path), workdir, feeds_list, name, max_rel=max_rel)
