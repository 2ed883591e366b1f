#!/usr/bin/env bash
# Installs everything Kiln needs on a fresh Debian 12 machine (as root) and creates the
# Python virtual environment in .venv. Idempotent: skips what is already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PKGS=(llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22 llvm-22-tools ninja-build cmake
      libonnx-dev libprotobuf-dev protobuf-compiler libgtest-dev python3-venv python3-dev libzstd-dev clang-format-22
      libclang-rt-22-dev  # libFuzzer and the sanitizer runtimes of clang-22 (test/fuzz)
      # HIP 5.x headers and runtime (libamdhip64.so.5: the HIP driver's tests, no GPU
      # needed) and the ROCm device bitcode the rocm target links
      libamdhip64-dev rocm-device-libs
      python3-torch python3-torchvision)  # torch: utils/models and test/models
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

VENV="$ROOT/.venv"
# (nvidia-cuda-nvdisasm: the SASS of the lit tests that assemble PTX, e.g.
# test/Target/NVPTX/quantize-rounding-sass.test)
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import onnx, onnxruntime, numpy, lit, pytest, nanobind, scikit_build_core; import importlib.metadata as m; m.version('nvidia-cuda-nvdisasm')" 2>/dev/null; then
  echo "== creating Python environment in $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -r "$ROOT/python/requirements.txt"
fi
