# REQUIRES: torch
# RUN: %python %s %t
"""Reduced GPT-2 decoder (2 pre-LN layers, hidden 64, 4 heads, causal mask
sliced to the symbolic sequence length, tied LM head), run at sequence
lengths 3 and 16, against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"input_ids": rng.integers(0, 512, (1, t)).astype(np.int64)} for t in (3, 16)]
model_util.check_model("gpt2", sys.argv[1], feeds)
