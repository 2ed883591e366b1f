#!/usr/bin/env bash
# fuzz/replay.sh FUZZER DIR...: runs the libFuzzer binary FUZZER once on
# every file under the DIRs (no fuzzing, no randomness), in batches; fails
# on the first input that crashes, leaks, trips a sanitizer or hangs, and
# prints its libFuzzer report. Run by the test suite (kiln-fuzz-replay-*).
set -euo pipefail
fuzzer="$1"
shift
log="$(mktemp /tmp/kiln-fuzz-replay.XXXXXX)"
trap 'rm -f "$log"' EXIT
count=0
for dir in "$@"; do
  [ -d "$dir" ] || { echo "replay: no folder '$dir'" >&2; exit 1; }
  count=$((count + $(find "$dir" -type f ! -name README.md | wc -l)))
done
if [ "$count" -eq 0 ]; then
  echo "replay: no inputs under $*" >&2
  exit 1
fi
# -timeout: an input running longer than 30 s is a finding (a hang).
if ! find "$@" -type f ! -name README.md -print0 | sort -z |
    xargs -0 -n 200 "$fuzzer" -timeout=30 -rss_limit_mb=4096 > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "replay: $(basename "$fuzzer") failed on an input above"
  exit 1
fi
echo "replay: $(basename "$fuzzer"): $count inputs, no findings"
