#!/usr/bin/env python3
"""Generates and compiles the GEMM variants into a folder (manifest.json +
one cubin each) for bench/hopper/run.py: make.py OUTDIR"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_gemm_sm90 import gen  # noqa: E402

VARIANTS = [
    dict(bm=128, bn=128, stages=4, b_major="mn"),
    dict(bm=128, bn=256, stages=4, b_major="mn"),
    dict(bm=128, bn=128, stages=4),
    dict(bm=128, bn=256, stages=3),
    dict(bm=128, bn=256, stages=4),
    dict(bm=256, bn=128, stages=4),
    dict(bm=128, bn=64, stages=6),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    man = []
    for v in VARIANTS:
        for dt in ("f16", "bf16"):
            text, meta = gen(v["bm"], v["bn"], 64, v["stages"], dt, dt,
                             b_major=v.get("b_major", "k"), swap_bo=v.get("swap_bo", False))
            if meta["smem"] > 227 * 1024:
                continue
            p = os.path.join(out, meta["name"])
            open(p + ".mlir", "w").write(text)
            r = subprocess.run([os.path.join(here, "build.sh"), p + ".mlir", p], capture_output=True, text=True)
            if r.returncode:
                print(r.stdout, r.stderr)
                raise SystemExit(f"{meta['name']}: compile failed")
            meta["ptxas"] = r.stdout.strip()
            print(meta["name"], meta["smem"], meta["ptxas"].replace("\n", " | "))
            for ext in (".llvm.mlir", ".ll"):
                os.remove(p + ext)
            man.append(meta)
    json.dump(man, open(os.path.join(out, "manifest.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
