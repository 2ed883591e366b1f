#!/usr/bin/env bash
# The fuzzing campaign (outside CI; the test suite only replays the corpora).
#
#   utils/fuzz.sh [--runs N] [--jobs J] [--merge] [TARGET...]
#
# TARGETs: import tensorproto signature weights (default: all). Builds the
# fuzz targets in build-fuzz with clang-22, ASan + UBSan and coverage on
# every Kiln source (-fsanitize=fuzzer-no-link), writes seed corpora
# (fuzz/make_seeds.py, with ./build's kilnc), then runs each target for N
# executions (default 1000000), J targets at a time (default 2). Logs,
# grown corpora and crash inputs go to build-fuzz/campaign/; the figures to
# build-fuzz/campaign/summary.json and as a table on stdout (docs/
# reliability.md records them). --merge then merges each grown corpus into
# fuzz/corpus/<target> (libFuzzer -merge=1: only inputs that add coverage),
# which the test suite replays. A crash input belongs in fuzz/regressions/
# <target>/ once fixed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS=1000000
JOBS=2
MERGE=0
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --merge) MERGE=1; shift ;;
    import|tensorproto|signature|weights) TARGETS+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the header of $0)" >&2; exit 1 ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(import tensorproto signature weights)
[ -x build/bin/kilnc ] || { echo "fuzz.sh: build ./build first (utils/build.sh)" >&2; exit 1; }

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -gline-tables-only"
if [ ! -f build-fuzz/build.ninja ]; then
  utils/configure.sh build-fuzz -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS=$SAN" "-DCMAKE_CXX_FLAGS=$SAN"
fi
ninja -C build-fuzz -j2 "${TARGETS[@]/#/kiln-fuzz-}"

OUT=build-fuzz/campaign
mkdir -p "$OUT"
rm -rf "$OUT/seeds"
.venv/bin/python fuzz/make_seeds.py build "$OUT/seeds"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

run_target() {
  local t="$1"
  mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
  local start end
  start=$(date +%s)
  # The grown corpus first (new inputs go there), then the seeds and the
  # checked-in corpus and regressions. A finding stops this target.
  set +e
  "build-fuzz/bin/kiln-fuzz-$t" -runs="$RUNS" -timeout=30 -rss_limit_mb=3072 \
    -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t/" "$OUT/corpus/$t" "$OUT/seeds/$t" \
    fuzz/corpus/$t fuzz/regressions/$t > "$OUT/$t.log" 2>&1
  local rc=$?
  set -e
  end=$(date +%s)
  echo "$rc $((end - start))" > "$OUT/$t.status"
  echo "fuzz.sh: $t finished (exit $rc) in $((end - start)) s"
}

running=0
for t in "${TARGETS[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

if [ "$MERGE" = 1 ]; then
  for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    "build-fuzz/bin/kiln-fuzz-$t" -merge=1 -timeout=30 -rss_limit_mb=3072 \
      "fuzz/corpus/$t" "$OUT/corpus/$t" > "$OUT/$t.merge.log" 2>&1
    echo "fuzz.sh: fuzz/corpus/$t: $(ls fuzz/corpus/$t | wc -l) inputs after the merge"
  done
fi

.venv/bin/python fuzz/summarize.py "$OUT" "${TARGETS[@]}"
