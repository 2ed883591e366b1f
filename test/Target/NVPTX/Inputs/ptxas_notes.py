"""Reads kiln-opt's output (a gpu.binary in `isa` format: the PTX as an
escaped string) on stdin, assembles the PTX with the toolkit's ptxas -v for
the chip given as argv[1] and prints ptxas's notes (its info lines), for
FileCheck: e.g. that no wgmma is serialized (C7520) and ptxas inserted no
warpgroup arrive of its own (C7519)."""
import os
import re
import subprocess
import sys
import tempfile

text = sys.stdin.read()
m = re.search(r'assembly = "(.*?)"(?:\s*[>,}])', text, re.S) or re.search(r'"(\.version.*?)"', text, re.S)
if not m:
    sys.exit("no PTX in the input")
ptx = m.group(1)
ptx = re.sub(r"\\([0-9A-Fa-f]{2})", lambda h: chr(int(h.group(1), 16)), ptx)
ptx = ptx[ptx.index(".version"):]
ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "k.ptx")
    with open(src, "w") as f:
        f.write(ptx)
    p = subprocess.run([ptxas, f"-arch={sys.argv[1]}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                       capture_output=True, text=True)
sys.stdout.write(p.stdout + p.stderr)
sys.exit(p.returncode)
