# RUN: %python %s %kiln_src
"""Generic compiler and runtime code never names a GPU vendor.

Fails if NVIDIA or AMD names (NVVM, NVPTX, CUDA, ROCDL, AMDGPU, HIP, ...)
appear in code, comments or CMake outside the vendor folders: the NVPTX
target (lib/Target/NVPTX, include/kiln/Target/NVPTX), the CUDA driver of the
runtime (lib/Runtime/Drivers/CUDA) and, when they exist, their AMD
counterparts. Those folders reach the rest only through the target-info
interface, the target table and the runtime's driver table.
"""
import os
import re
import sys

root = sys.argv[1]
GENERIC = ["include/kiln", "include/kiln-c", "lib"]
VENDOR = [
    "lib/Target/NVPTX", "include/kiln/Target/NVPTX",
    "lib/Target/AMDGPU", "include/kiln/Target/AMDGPU",
    "lib/Runtime/Drivers/CUDA", "lib/Runtime/Drivers/HIP",
]
# The target table: the one place that names each target (a row per kind and
# the CMake that adds each target's folder).
TABLE = ["lib/Target/Registry.cpp", "lib/Target/CMakeLists.txt",
         "include/kiln/Target/CMakeLists.txt"]
# Generated from the ONNX schemas: ONNX's own text, not Kiln's code.
GENERATED = ["include/kiln/Dialect/Onnx/IR/OnnxOps.td",
             "include/kiln/Dialect/Onnx/IR/OnnxSchema.inc"]
NAMES = re.compile(
    r"nvvm|nvptx|nvgpu|cuda|cubin|ptxas|libdevice|fatbin|\bptx\b|\bsm_\d+|"
    r"rocdl|amdgpu|\bhip\b|hsaco|\bgfx\d+|rocm",
    re.IGNORECASE)
# Driver-API identifiers (cuMemAlloc, CUresult, CU_STREAM_..., hipMalloc).
APIS = re.compile(r"\bcu[A-Z][A-Za-z]+|\bCU[a-z_][A-Za-z_]*|\bhip[A-Z][A-Za-z]+")
SUFFIXES = (".c", ".h", ".cpp", ".td", ".inc", ".def", ".txt", ".map")

hits = []
files = 0
for top in GENERIC:
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        rel_dir = os.path.relpath(dirpath, root)
        if any(rel_dir == v or rel_dir.startswith(v + os.sep) for v in VENDOR):
            dirnames[:] = []
            continue
        for name in sorted(filenames):
            rel = os.path.join(rel_dir, name)
            if not name.endswith(SUFFIXES) or rel in GENERATED + TABLE:
                continue
            files += 1
            with open(os.path.join(root, rel), errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = NAMES.search(line) or APIS.search(line)
                    if m:
                        hits.append(f"{rel}:{n}: '{m.group(0)}': {line.strip()}")
for h in hits:
    print(h)
print(f"{files} generic files checked, {len(hits)} vendor names")

# The patterns must find the vendor code, so the check cannot pass by
# matching nothing: each vendor folder that exists names its vendor.
controls = 0
for v in VENDOR:
    d = os.path.join(root, v)
    if not os.path.isdir(d):
        continue
    text = "".join(open(os.path.join(dp, f), errors="replace").read()
                   for dp, _, fs in os.walk(d) for f in fs if f.endswith(SUFFIXES))
    if not NAMES.search(text):
        sys.exit(f"control failed: no vendor name found in {v}")
    controls += 1
if controls < 2:
    sys.exit("control failed: expected the NVPTX target and the CUDA driver")
sys.exit(1 if hits or files < 50 else 0)
