"""Writes BERT-base (utils/models/make_models.py, seeded weights) with a
symbolic batch and sequence, as bench/hopper/networks.py exports it, to
argv[1]."""
import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import kiln_tools  # noqa: E402

make_models = kiln_tools.project_module("utils/models/make_models.py")
torch.manual_seed(0)
model, args, inputs, outputs, _ = make_models.MODELS["bert"](False)
with torch.no_grad():
    torch.onnx.export(model, args, sys.argv[1], opset_version=make_models.OPSET,
                      input_names=inputs, output_names=outputs,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "hidden": {0: "batch", 1: "seq"}},
                      do_constant_folding=True)
