# REQUIRES: torch
# RUN: %python %s %t
"""Small U-Net segmentation network (ConvTranspose upsampling, bilinear
Resize, Concat skips, batch norm statistics from data), 32x32 input,
against onnxruntime."""
import sys

import numpy as np

import model_util

rng = np.random.default_rng(0)
feeds = [{"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}]
model_util.check_model("unet", sys.argv[1], feeds)
