# REQUIRES: torch
# RUN: %python %s %t
"""The benchmark networks (ResNet-50 and MobileNetV2 1x3x224x224, BERT-base
at batch 1, sequence 128) and the test models' U-Net and LSTM compiled in
fp16 for every rocm chip (gfx90a,
gfx942, gfx1100) and checked in their code objects (compiled only: there is
no AMD GPU here). For ResNet-50's and BERT-base's three contraction kernels
of most FLOPs, the tiled kernel's ISA (llvm-objdump) must hold the chip's
matrix instruction (v_mfma_f32_16x16x16 on gfx9, v_wmma_f32_16x16x16 on
gfx11), reads of its LDS tiles (ds_read on gfx9, ds_load on gfx11), waits
(s_waitcnt) and 128-bit global loads of its operands (global_load_dwordx4,
gfx11's global_load_b128) where K is a multiple of 8 halves; its report
entry must give the tile and the registers, LDS and occupancy (distinct
kernels: one that kiln-dedup-kernels shares counts once). Prints those kernels as a table
(docs/amdgpu.md)."""
import json
import os
import re
import shutil
import subprocess
import sys

import kiln_tools

make_models = kiln_tools.project_module("utils/models/make_models.py")
KILNC = kiln_tools.tools.find_tool("kilnc")
OBJDUMP = shutil.which("llvm-objdump") or shutil.which("llvm-objdump-22")
DIMS = {"bert": ["--dim", "seq=128", "--dim", "batch=1"]}
CHIPS = ("gfx90a", "gfx942", "gfx1100")
CHECKED = ("resnet50", "bert")
TOP = 3


def isa_by_function(path, chip):
    """Disassembly of `path` split by function label."""
    text = subprocess.run([OBJDUMP, "-d", f"--mcpu={chip}", path], check=True,
                          stdout=subprocess.PIPE, text=True).stdout
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name:
            funcs[name].append(line)
    return {k: "\n".join(v) for k, v in funcs.items()}


def expected(chip):
    if chip == "gfx1100":
        return {"matrix instruction": r"v_wmma_f32_16x16x16_(f16|bf16)",
                "LDS reads": r"\bds_load_b(64|128)", "waits": r"\bs_waitcnt",
                "128-bit global loads": r"\bglobal_load_b128"}
    return {"matrix instruction": r"v_mfma_f32_16x16x16_?(f16|bf16)",
            "LDS reads": r"\bds_read2?_b(64|128)", "waits": r"\bs_waitcnt",
            "128-bit global loads": r"\bglobal_load_dwordx4"}


workdir = sys.argv[1]
os.makedirs(workdir, exist_ok=True)
bad, rows = [], []
for name in ("resnet50", "mobilenetv2", "bert", "unet", "lstm"):
    path = os.path.join(workdir, name + ".onnx")
    make_models.export(name, path, small=False)
    for chip in CHIPS:
        stem = os.path.join(workdir, f"{name}-{chip}")
        proc = subprocess.run([KILNC, path, f"--target=rocm:{chip}", "--precision=fp16",
                               "--external-weights", "-o", stem + ".so",
                               f"--report={stem}.json", f"--save-device-image={stem}.hsaco",
                               *DIMS.get(name, [])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            bad.append(f"{name} {chip}: kilnc failed: {proc.stderr.strip()[:300]}")
            continue
        print(f"{name} {chip}: compiled, {os.path.getsize(stem + '.hsaco')} bytes of code object")
        if name not in CHECKED:
            continue
        report = json.load(open(stem + ".json"))
        isa = isa_by_function(stem + ".hsaco", chip)
        contractions = [k for k in report["kernels"] if k.get("gpu_contractions")]
        contractions.sort(key=lambda k: -k.get("flops", 0))
        if len(contractions) < TOP:
            bad.append(f"{name} {chip}: {len(contractions)} tiled contractions, expected >= {TOP}")
        seen = set()
        for k in contractions:
            if len(seen) == TOP:
                break
            owner = k if k.get("device_kernels") else next(
                (o for o in report["kernels"] if o["name"] == k.get("code_of")), k)
            tiled = [d for d in owner.get("device_kernels", []) if d["lds_bytes"] > 0]
            if not tiled:
                bad.append(f"{name} {chip} {k['name']}: no device kernel with LDS tiles")
                continue
            d = max(tiled, key=lambda d: d["lds_bytes"])
            if d["name"] in seen:
                continue  # the same code as a larger one (kiln-dedup-kernels)
            seen.add(d["name"])
            body = isa.get(d["name"], "")
            want = expected(chip)
            # 128-bit loads need an operand contiguous along a multiple of 8
            # halves: not ResNet-50's first convolution (3 channels, 7x7).
            problem = re.match(r"(\d+)x(\d+)x(\d+)", k["gpu_contractions"][0])
            if problem and int(problem.group(3)) % 8 != 0:
                del want["128-bit global loads"]
            missing = [what for what, rx in want.items() if not re.search(rx, body)]
            if missing:
                bad.append(f"{name} {chip} {d['name']} ({', '.join(k['onnx_nodes'][:2])}): "
                           f"no {', '.join(missing)} in its ISA")
            wide = len(re.findall(want.get("128-bit global loads", r"^$"), body))
            rows.append(f"| {name} | {chip} | {', '.join(k['onnx_nodes'][:1])} | "
                        f"{k['gpu_contractions'][0]} | {d['vgprs']} | {d['agprs']} | "
                        f"{d['sgprs']} | {d['lds_bytes']} | {d['waves_per_simd']} "
                        f"({d['occupancy_limit']}) | {wide} |")
print("| model | chip | node | contraction (M x N x K: tile, instruction) | VGPRs | AGPRs | "
      "SGPRs | LDS bytes | waves/SIMD (limit) | 128-bit loads |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
if bad:
    print("FAILED:\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"all {len(CHIPS)} chips compile the five networks; the top {TOP} contractions of "
      f"{' and '.join(CHECKED)} run on the matrix instruction")
