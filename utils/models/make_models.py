#!/usr/bin/env python3
"""Writes the real networks Kiln is checked on as ONNX files (seeds fixed, so
the same command always writes the same models; nothing here is committed).

  .venv/bin/python utils/models/make_models.py OUTDIR [--small] [--only a,b]

Networks (full size; --small gives the reduced variants the lit tests use):
  resnet50      torchvision ResNet-50, 1x3x224x224      (small: bottleneck ResNet [1,1,1,1], width 16, 32x32)
  mobilenetv2   torchvision MobileNetV2, 1x3x224x224    (small: width 0.25, 32x32)
  bert          BERT-base encoder: 12 layers, hidden 768, 12 heads, GELU,
                LayerNorm, token ids [batch, seq] with seq symbolic (small: 2 layers, hidden 64)
  gpt2          GPT-2-small decoder: 12 layers, 768, causal mask, tied LM head,
                token ids [batch, seq] with seq symbolic (small: 2 layers, hidden 64, vocab 512)
  lstm          2-layer bidirectional torch.nn.LSTM sequence tagger, features
                [seq, batch, 64] with seq symbolic (small: 1 layer, 16 features)
  unet          U-Net segmentation net with ConvTranspose and Resize (bilinear),
                1x3x128x128 (small: 32x32, fewer channels)

Needs torch 1.13 / torchvision 0.14 (Debian's python3-torch, python3-torchvision;
utils/setup.sh installs them); exported at opset 17. Batch-norm statistics come
from a few forward passes in training mode on random data before export.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17


def _calibrate(model, make_input, steps=3):
    """Running statistics of the batch norms from random data, then eval()."""
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(steps):
                model(make_input(4))
    model.eval()
    return model


# --------------------------------------------------------------------------
# CNNs (torchvision)
# --------------------------------------------------------------------------


def resnet50(small):
    import torchvision
    from torchvision.models.resnet import Bottleneck, ResNet

    if small:
        model = ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, width_per_group=16)
        size = 32
    else:
        model = torchvision.models.resnet50(weights=None)
        size = 224
    make = lambda n: torch.randn(n, 3, size, size)
    _calibrate(model, make)
    return model, (make(1),), ["input"], ["logits"], None


def mobilenetv2(small):
    import torchvision

    if small:
        model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25, num_classes=10)
        size = 32
    else:
        model = torchvision.models.mobilenet_v2(weights=None)
        size = 224
    make = lambda n: torch.randn(n, 3, size, size)
    _calibrate(model, make)
    return model, (make(1),), ["input"], ["logits"], None


# --------------------------------------------------------------------------
# Transformers (hand-written torch.nn modules)
# --------------------------------------------------------------------------


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, causal, max_len):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.causal = causal
        if causal:
            mask = torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        split = lambda y: y.reshape(b, t, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if self.causal:
            scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, c)
        return self.out(y)


class Block(nn.Module):
    """Post-LN (BERT) or pre-LN (GPT-2) transformer layer with a GELU MLP."""

    def __init__(self, hidden, heads, causal, max_len, pre_ln):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, causal, max_len)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))
        self.pre_ln = pre_ln

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class Transformer(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, max_len, causal):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.blocks = nn.ModuleList(
            Block(hidden, heads, causal, max_len, pre_ln=causal) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.causal = causal

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        if not self.causal:
            x = self.ln(x)  # BERT: embedding LayerNorm, post-LN layers
        for blk in self.blocks:
            x = blk(x)
        if self.causal:
            x = self.ln(x)  # GPT-2: final LayerNorm, LM head tied to the embedding
            return torch.matmul(x, self.tok.weight.t())
        return x


def bert(small):
    if small:
        model = Transformer(vocab=256, hidden=64, layers=2, heads=4, max_len=64, causal=False)
    else:
        model = Transformer(vocab=30522, hidden=768, layers=12, heads=12, max_len=512,
                            causal=False)
    model.eval()
    ids = torch.randint(0, model.tok.num_embeddings, (1, 16))
    return model, (ids,), ["input_ids"], ["hidden"], {"input_ids": {1: "seq"},
                                                      "hidden": {1: "seq"}}


def gpt2(small):
    if small:
        model = Transformer(vocab=512, hidden=64, layers=2, heads=4, max_len=64, causal=True)
    else:
        model = Transformer(vocab=50257, hidden=768, layers=12, heads=12, max_len=1024,
                            causal=True)
    model.eval()
    ids = torch.randint(0, model.tok.num_embeddings, (1, 16))
    return model, (ids,), ["input_ids"], ["logits"], {"input_ids": {1: "seq"},
                                                      "logits": {1: "seq"}}


# --------------------------------------------------------------------------
# LSTM sequence model
# --------------------------------------------------------------------------


class SequenceTagger(nn.Module):
    def __init__(self, features, hidden, layers, classes):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=layers, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def lstm(small):
    if small:
        model, feat = SequenceTagger(16, 16, 1, 5), 16
    else:
        model, feat = SequenceTagger(64, 128, 2, 10), 64
    model.eval()
    x = torch.randn(12, 1, feat)
    return model, (x,), ["features"], ["tags"], {"features": {0: "seq"}, "tags": {0: "seq"}}


# --------------------------------------------------------------------------
# Segmentation (U-Net with ConvTranspose and Resize)
# --------------------------------------------------------------------------


def _conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Two levels down; up once with ConvTranspose, once with bilinear Resize."""

    def __init__(self, c, classes):
        super().__init__()
        self.enc1, self.enc2 = _conv_block(3, c), _conv_block(c, 2 * c)
        self.mid = _conv_block(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = _conv_block(4 * c, 2 * c)
        self.reduce1 = nn.Conv2d(2 * c, c, 1)
        self.dec1 = _conv_block(2 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        u1 = F.interpolate(self.reduce1(d2), scale_factor=2.0, mode="bilinear",
                           align_corners=False)
        d1 = self.dec1(torch.cat([u1, e1], dim=1))
        return self.head(d1)


def unet(small):
    c, size = (4, 32) if small else (32, 128)
    model = UNet(c, classes=5)
    make = lambda n: torch.randn(n, 3, size, size)
    _calibrate(model, make)
    return model, (make(1),), ["image"], ["masks"], None


MODELS = {
    "resnet50": resnet50,
    "mobilenetv2": mobilenetv2,
    "bert": bert,
    "gpt2": gpt2,
    "lstm": lstm,
    "unet": unet,
}


def export(name, path, small=False, seed=0):
    """Builds model `name` (seeded) and writes it to `path`; returns the
    number of parameters."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    model, args, inputs, outputs, dynamic = MODELS[name](small)
    params = sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET, input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic,
                          do_constant_folding=True)
    return params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--small", action="store_true", help="the reduced variants")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(MODELS))
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model '{n}' (known: {', '.join(MODELS)})")
    os.makedirs(a.outdir, exist_ok=True)
    for n in names:
        path = os.path.join(a.outdir, n + ".onnx")
        params = export(n, path, a.small)
        print(f"{path}: {params:,} parameters, {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
