#!/usr/bin/env bash
# utils/configure.sh DIR [CMAKE_ARG...]: configures a Kiln build in DIR the
# way every build here is configured (Ninja, clang-22, lld, Debian's LLVM 22
# and MLIR, lit, the .venv's Python), with the extra arguments after it
# (build type, sanitizer flags, ...). Quiet unless cmake fails; then its log
# (/tmp/kiln-configure-<DIR>.log) is printed and the exit status is 1. Used by
# utils/build.sh, sanitize.sh and fuzz.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
dir="$1"
shift
log="/tmp/kiln-configure-$(basename "$dir").log"
cmake -G Ninja -B "$dir" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DKILN_PYTHON="$ROOT/.venv/bin/python" "$@" > "$log" 2>&1 ||
  { cat "$log"; exit 1; }
