# REQUIRES: torch
# RUN: %python %s %t
"""Reduced MobileNetV2 (torchvision, width 0.25, 32x32 input; depthwise
convolutions, ReLU6, batch norm statistics from data) against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}]
model_util.check_model("mobilenetv2", sys.argv[1], feeds)
