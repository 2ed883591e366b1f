#!/usr/bin/env bash
# Kiln's style checks (a ctest test, so the test command runs them):
#   1. every C/C++ source is formatted by clang-format-22 with the tree's
#      .clang-format (LLVM style);
#   2. no hand-written source file has more than 1,000 lines (generated files
#      excepted: the onnx dialect's ODS and schema table, docs/generated).
# Prints each violation and exits 1 when there is one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CLANG_FORMAT="${CLANG_FORMAT:-clang-format-22}"
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check-style: $CLANG_FORMAT not found (utils/setup.sh installs clang-format-22)" >&2
  exit 1
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files --cached --others --exclude-standard "$@"; }
else
  list() { find . -type f \( -false $(printf -- ' -o -name %s' "$@") \) \
             -not -path './build/*' -not -path './.venv/*' | sed 's|^\./||'; }
fi

failed=0
mapfile -t sources < <(list '*.c' '*.h' '*.cpp' | grep -v '\.inc$' | sort)
for f in "${sources[@]}"; do
  [ -f "$f" ] || continue
  if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "check-style: $f is not clang-formatted (run: $CLANG_FORMAT -i $f)"
    failed=1
  fi
done

# Generated: utils/gen_onnx_ops.py writes OnnxOps.td and OnnxSchema.inc.
mapfile -t hand < <(list '*.c' '*.h' '*.cpp' '*.td' '*.py' '*.sh' '*.cmake' 'CMakeLists.txt' |
  grep -v -e '^include/kiln/Dialect/Onnx/IR/OnnxOps.td$' -e '\.inc$' -e '^docs/generated/' | sort)
for f in "${hand[@]}"; do
  [ -f "$f" ] || continue
  n=$(wc -l < "$f")
  if [ "$n" -gt 1000 ]; then
    echo "check-style: $f has $n lines (at most 1000 for a hand-written source file)"
    failed=1
  fi
done

echo "check-style: ${#sources[@]} C/C++ files checked for format, ${#hand[@]} files for length"
exit $failed
