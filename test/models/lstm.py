# REQUIRES: torch
# RUN: %python %s %t
"""Bidirectional torch.nn.LSTM sequence tagger (ONNX LSTM op) with a symbolic
sequence length, run at lengths 1 and 12, against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"features": rng.standard_normal((t, 1, 16)).astype(np.float32)} for t in (1, 12)]
model_util.check_model("lstm", sys.argv[1], feeds)
