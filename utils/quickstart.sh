#!/usr/bin/env bash
# Installs everything, builds Kiln, compiles the bundled example model with
# kilnc and runs it with kiln-run, printing the result.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./utils/setup.sh
./utils/build.sh
mkdir -p build/example
./build/bin/kilnc examples/mlp.onnx -o build/example/mlp.so
./build/bin/kiln-run build/example/mlp.so --input examples/input_0.pb --print
