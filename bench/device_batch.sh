#!/usr/bin/env bash
# Runs several staged GPU checks in one device call (the device is lent in
# short, scarce leases, so one call does as much as fits), each under its own
# time limit, its output in $OUT/<step>.log and its JSON beside it.
#
#   there:  bench/device_batch.sh STEP[:SECONDS] ...
#
# Steps and what each needs carried (prepared here, docs/gpu.md "The next
# lease's checklist"):
#   loop       .gpu/loop-condition     test/e2e/loop_condition_gpu.py
#   slanet     .gpu/slanet             the corpus's slanet on cuda
#   corpus     .gpu/corpusall/corpus/part<k> (the parts carried)
#   shapes     .shapeg + build/lib/libkiln_runtime.so   graphs per input shape
#   memory     .memory                 bench/memory.py (issue 16's table)
#   attention  .gpu/attention/stage.tar.xz   fused attention correctness
#   int8       .gpu/int8               QDQ models on both images
#   networks   .hnet + build/lib/libkiln_runtime.so     vs torch.compile
#   networks2  .hnet2 + build/lib/libkiln_runtime.so    BERT variants (--variant)
#   int8net    .hnet-int8 + build/lib/libkiln_runtime.so   int8 vs fp16 vs
#              torch.compile (issue 19; BERT's int8 .so as a .gz without the
#              int8 weights, recomputed there)
#   gemm       .hopper-kilnc           GEMMs vs torch.matmul
#   int8rn     .hnet-rn + build/lib/libkiln_runtime.so   ResNet-50 int8 vs fp16
#              (networks.py prepare .hnet-rn --int8 --only "ResNet-50 b64 int8")
#   f16var     .hnet-f16 + build/lib/libkiln_runtime.so   fp16 --variant rows
#              (e.g. the multicast tiles, docs/int8.md "Multicast tiles")
#   int8gemm   .i8g                    int8 products (bench/hopper/int8_gemm.py,
#              its --variant builds: tiles, multicast) vs fp16 and cuBLAS
#   ci         .gpu/stage.tar.xz       node tests, small models, differential
# A step whose stage is missing is reported and skipped. Exit status: the
# number of steps that failed or timed out.
set -u
OUT=${OUT:-/tmp/kiln-device-out}
mkdir -p "$OUT"
failed=0
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version \
  --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"

need() {
  for p in "$@"; do
    if [ ! -e "$p" ]; then
      echo "skipped: $p is not here (not carried?)"
      return 1
    fi
  done
}

for arg in "$@"; do
  step=${arg%%:*}
  limit=600
  [ "$step" != "$arg" ] && limit=${arg#*:}
  log="$OUT/$step.log"
  echo "=== $step (limit ${limit}s) $(date -u +%H:%M:%S)" | tee "$log"
  start=$(date +%s)
  case "$step" in
    loop) need .gpu/loop-condition &&
      timeout "$limit" python3 test/e2e/loop_condition_gpu.py run \
        .gpu/loop-condition ;;
    slanet) need .gpu/slanet &&
      timeout "$limit" python3 utils/models/corpus_gpu.py run \
        --stage .gpu/slanet --json "$OUT/slanet.json" ;;
    corpus) need .gpu/corpusall &&
      timeout "$limit" python3 utils/models/corpus_gpu.py run \
        --stage .gpu/corpusall --json "$OUT/corpus.json" ;;
    shapes) need .shapeg build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .shapeg/ &&
      timeout "$limit" python3 bench/hopper/shape_graphs.py run .shapeg \
        --json "$OUT/shapes.json" ;;
    memory) need .memory &&
      timeout "$limit" python3 bench/memory.py run .memory \
        --json "$OUT/memory.json" ;;
    attention) need .gpu/attention/stage.tar.xz &&
      timeout "$limit" python3 bench/gpu_check.py run --stage .gpu/attention \
        --skip-models --out "$OUT/attention" ;;
    int8) need .gpu/int8 &&
      timeout "$limit" python3 test/e2e/int8_gpu.py run .gpu/int8 ;;
    networks) need .hnet build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .hnet/ &&
      timeout "$limit" python3 bench/hopper/networks.py run .hnet \
        --trace 15 --json "$OUT/networks.json" ;;
    networks2) need .hnet2 build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .hnet2/ &&
      timeout "$limit" python3 bench/hopper/networks.py run .hnet2 \
        --trace 12 --json "$OUT/networks2.json" ;;
    int8net) need .hnet-int8 build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .hnet-int8/ &&
      timeout "$limit" python3 bench/hopper/networks.py run .hnet-int8 --trace 16 \
        --json "$OUT/int8net.json" ;;
    int8rn) need .hnet-rn build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .hnet-rn/ &&
      timeout "$limit" python3 bench/hopper/networks.py run .hnet-rn \
        --no-torch --json "$OUT/int8rn.json" ;;
    f16var) need .hnet-f16 build/lib/libkiln_runtime.so &&
      cp build/lib/libkiln_runtime.so .hnet-f16/ &&
      timeout "$limit" python3 bench/hopper/networks.py run .hnet-f16 \
        --no-torch --json "$OUT/f16var.json" ;;
    int8gemm) need .i8g &&
      timeout "$limit" python3 bench/hopper/int8_gemm.py run .i8g \
        --json "$OUT/int8gemm.json" ;;
    gemm) need .hopper-kilnc &&
      timeout "$limit" python3 bench/hopper/kilnc_gemm.py run .hopper-kilnc \
        --json "$OUT/gemm.json" ;;
    ci) need .gpu/stage.tar.xz &&
      timeout "$limit" python3 bench/gpu_check.py run --out "$OUT/ci" \
        --skip-bench --skip-corpus ;;
    *) echo "unknown step '$step'"; false ;;
  esac >>"$log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && failed=$((failed + 1))
  echo "=== $step: exit $rc after $(($(date +%s) - start))s" | tee -a "$log"
  tail -n 25 "$log" | grep -v '^===' 
done
echo "device_batch: $# steps, $failed failed or timed out"
exit "$failed"
