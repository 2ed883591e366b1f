#!/usr/bin/env python3
"""Runs the generated Hopper GEMM kernels on the GPU: checks each against
torch.matmul (fp32 reference of the same fp16/bf16 inputs) and times it with
CUDA events against torch.matmul on the same inputs, in one process.

  python3 bench/hopper/run.py --dir <folder with manifest.json and cubins> [--shapes ...]

Needs only torch and the CUDA driver (libcuda.so.1, through ctypes); the TMA
descriptors are encoded here with cuTensorMapEncodeTiled, as Kiln's runtime
will do through its CUDA driver.
"""
import argparse
import ctypes
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes import SHAPES  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kiln_tools.runtime import time_cuda  # noqa: E402

cuda = ctypes.CDLL("libcuda.so.1")
CUresult = ctypes.c_int


def check(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: CUDA error {r} ({s.value.decode() if s.value else '?'})")


class Kernel:
    def __init__(self, path, meta):
        self.meta = meta
        data = open(path, "rb").read()
        self.mod = ctypes.c_void_p()
        check(cuda.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(data)), f"load {path}")
        self.fn = ctypes.c_void_p()
        check(cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, meta["name"].encode()), "get function")
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        check(cuda.cuFuncSetAttribute(self.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      ctypes.c_int(meta["smem"])), "set smem")


DT = {torch.float16: 6, torch.bfloat16: 9}  # CU_TENSOR_MAP_DATA_TYPE_FLOAT16 / BFLOAT16


def tensor_map(t, box_rows, box_k=64):
    """A 2-D tiled map of a row-major (rows x K) tensor, 128-byte swizzle:
    boxes of box_rows x box_k (K, the contiguous dim, innermost)."""
    rows, k = t.shape
    tmap = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * 2)(k, rows)
    strides = (ctypes.c_uint64 * 1)(k * t.element_size())
    box = (ctypes.c_uint32 * 2)(box_k, box_rows)
    estr = (ctypes.c_uint32 * 2)(1, 1)
    # interleave NONE=0, swizzle 128B=3, L2 promotion 256B=3, OOB fill NONE=0 (zeros)
    check(cuda.cuTensorMapEncodeTiled(tmap, DT[t.dtype], 2, ctypes.c_void_p(t.data_ptr()), dims, strides,
                                      box, estr, 0, 3, 3, 0), "cuTensorMapEncodeTiled")
    dev = torch.frombuffer(bytearray(bytes(tmap)), dtype=torch.uint8).cuda()
    return dev


def launch(k, dA, dB, C, M, N, K, stream):
    m = k.meta
    args = [ctypes.c_void_p(dA.data_ptr()), ctypes.c_void_p(dB.data_ptr()), ctypes.c_void_p(C.data_ptr()),
            ctypes.c_int32(M), ctypes.c_int32(N), ctypes.c_int32(K)]
    argv = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    gx = (N + m["bn"] - 1) // m["bn"]
    gy = (M + m["bm"] - 1) // m["bm"]
    check(cuda.cuLaunchKernel(k.fn, gx, gy, 1, m["threads"], 1, 1, m["smem"], ctypes.c_void_p(stream),
                              argv, None), "launch")




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES))
    ap.add_argument("--kernels", nargs="*")
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # makes the primary context current
    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    kernels = [Kernel(os.path.join(a.dir, m["name"] + ".cubin"), m) for m in man
               if not a.kernels or m["name"] in a.kernels]
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for sname in a.shapes:
        M, N, K = SHAPES[sname]
        flops = 2.0 * M * N * K
        for dt in (torch.float16, torch.bfloat16):
            A = (torch.randn(M, K, device="cuda") * 0.5).to(dt)
            Bt = (torch.randn(N, K, device="cuda") * (1.0 / K ** 0.5)).to(dt)
            ref = (A.float() @ Bt.float().T)
            t_torch = time_cuda(lambda: torch.matmul(A, Bt.T), iters=50)
            for k in kernels:
                if k.meta["dtype"] != {torch.float16: "f16", torch.bfloat16: "bf16"}[dt]:
                    continue
                C = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
                dA = tensor_map(A, k.meta["bm"])
                if k.meta.get("b_major", "k") == "k":
                    dB = tensor_map(Bt, k.meta["bn"])
                else:  # B as K x N, boxes of 64 (K rows) x 64 (N)
                    Bkn = Bt.T.contiguous()
                    dB = tensor_map(Bkn, 64)
                launch(k, dA, dB, C, M, N, K, stream)
                torch.cuda.synchronize()
                err = ((C.float() - ref).abs().max() / ref.abs().max()).item()
                bad = not torch.isfinite(C.float()).all().item()
                t = time_cuda(lambda: launch(k, dA, dB, C, M, N, K, stream), iters=50)
                rows.append(dict(shape=sname, M=M, N=N, K=K, dtype=str(dt).split(".")[-1], kernel=k.meta["name"],
                                 ms=t, tflops=flops / t / 1e9, torch_ms=t_torch, torch_tflops=flops / t_torch / 1e9,
                                 ratio=t_torch / t, max_rel_err=err, nonfinite=bad))
                r = rows[-1]
                print(f"{sname:20s} {r['dtype']:9s} {k.meta['name']:34s} {t:8.3f} ms {r['tflops']:6.0f} TF/s "
                      f"torch {t_torch:8.3f} ms {r['torch_tflops']:6.0f} TF/s  x{r['ratio']:.2f} "
                      f"err {err:.1e}{' NONFINITE' if bad else ''}", flush=True)
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
