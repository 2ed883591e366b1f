# REQUIRES: torch
# RUN: %python %s %t
"""Reduced BERT encoder (2 post-LN layers, hidden 64, 4 heads, GELU,
LayerNorm) with a symbolic sequence length, compiled once and run at
sequence lengths 5 and 16, against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"input_ids": rng.integers(0, 256, (1, t)).astype(np.int64)} for t in (5, 16)]
model_util.check_model("bert", sys.argv[1], feeds)
