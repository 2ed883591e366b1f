#!/usr/bin/env bash
# Compiles one generated kernel (MLIR) to PTX and an sm_90a cubin: build.sh in.mlir out-prefix
set -euo pipefail
B=/usr/lib/llvm-22/bin
$B/mlir-opt "$1" --convert-nvvm-to-llvm --reconcile-unrealized-casts -o "$2.llvm.mlir"
$B/mlir-translate --mlir-to-llvmir "$2.llvm.mlir" -o "$2.ll"
$B/llc -march=nvptx64 -mcpu=sm_90a -mattr=+ptx80 -O3 "$2.ll" -o "$2.ptx"
/usr/local/cuda/bin/ptxas -arch=sm_90a -O3 -v "$2.ptx" -o "$2.cubin" 2>&1 | grep -E 'registers|spill|error' || true
