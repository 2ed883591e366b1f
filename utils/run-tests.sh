#!/usr/bin/env bash
# Kiln's whole test suite: sets up what is missing (packages, .venv, build),
# builds with -j2, runs lit (importer, dialects, passes, end to end) and the
# runtime's gtest suite through ctest, and ends with ctest's summary line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./utils/setup.sh
./utils/build.sh
export PATH="$ROOT/.venv/bin:$PATH"
cd build
ctest --output-on-failure -j2 "$@"
