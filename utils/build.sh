#!/usr/bin/env bash
# Configures (once) and builds Kiln in ./build with clang-22 and -j2.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LAUNCHER=()
if command -v ccache >/dev/null; then  # optional: shares objects between checkouts
  # The precompiled headers (kiln_precompile_headers) are cached only with
  # these sloppiness settings and without the PCH's timestamp.
  CCACHE="env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache"
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER="$CCACHE" -DCMAKE_CXX_COMPILER_LAUNCHER="$CCACHE"
            "-DCMAKE_CXX_FLAGS=-Xclang -fno-pch-timestamp")
fi
if [ ! -f build/build.ninja ]; then
  utils/configure.sh build "${LAUNCHER[@]}" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C build -j2
