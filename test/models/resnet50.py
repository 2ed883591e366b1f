# REQUIRES: torch
# RUN: %python %s %t
"""Reduced ResNet-50 (torchvision bottleneck ResNet, one block per stage,
width 16, 32x32 input; batch norm statistics from data) against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}]
model_util.check_model("resnet50", sys.argv[1], feeds)
