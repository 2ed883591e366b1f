"""Reads kiln-opt's output (a gpu.binary in `isa` format: the PTX as an
escaped string) on stdin, assembles the PTX with the toolkit's ptxas -v for
the chip given as argv[1] and prints ptxas's notes (its info lines), for
FileCheck: e.g. that no wgmma is serialized (C7520) and ptxas inserted no
warpgroup arrive of its own (C7519). With --sass after the chip, the cubin's
SASS follows (nvdisasm, $KILN_NVDISASM: lit's feature nvdisasm)."""
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
    cubin = os.path.join(d, "k.cubin")
    p = subprocess.run([ptxas, f"-arch={sys.argv[1]}", "-v", src, "-o", cubin],
                       capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode == 0 and "--sass" in sys.argv[2:]:
        s = subprocess.run([os.environ["KILN_NVDISASM"], cubin],
                           capture_output=True, text=True)
        sys.stdout.write(s.stdout + s.stderr)
        sys.exit(s.returncode)
sys.exit(p.returncode)
