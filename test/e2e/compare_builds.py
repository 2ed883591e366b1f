# RUN: %python %s %t
"""utils/compare_builds.py: a build compared with itself has no differences
(exit 0); a "build" whose kilnc compiles in fp16 behind the same flags
differs (exit 1) and the table and the list say where."""
import os
import shutil
import stat
import subprocess
import sys

import kiln_tools

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
tool = os.path.join(kiln_tools.ROOT, "utils", "compare_builds.py")
build = os.path.dirname(os.path.dirname(kiln_tools.find_tool("kilnc")))


def compare(new, *extra):
    p = subprocess.run([sys.executable, tool, build, new, "--corpus", "examples", "--jobs", "1",
                        *extra], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    return p


p = compare(build)
assert p.returncode == 0, p.returncode
assert "| (default flags) | examples | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 0 |" in p.stdout
assert "no differences" in p.stdout

fake = os.path.join(work, "fake", "bin")
os.makedirs(fake)
with open(os.path.join(fake, "kilnc"), "w") as f:
    f.write(f'#!/bin/sh\nexec {os.path.join(build, "bin", "kilnc")} "$@" --precision=fp16\n')
os.chmod(os.path.join(fake, "kilnc"), stat.S_IRWXU)
os.symlink(os.path.join(build, "bin", "kiln-run"), os.path.join(fake, "kiln-run"))
p = compare(os.path.dirname(fake), "--compile-only=-O2")
assert p.returncode == 1, p.returncode
assert "| (default flags) | examples | 1 | 1 | 0 | 1 | 0 | 0 | 0 | 0 |" in p.stdout
assert "different: examples/mlp [(default flags)]: data set 0: output_0.pb differs" in p.stdout
assert "different: examples/mlp [-O2 [compile only: --dump-after=llvm]]: IR differs" in p.stdout
print("ALL PASS")
