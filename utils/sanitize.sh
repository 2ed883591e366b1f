#!/usr/bin/env bash
# The runtime under the sanitizers (docs/reliability.md). Run by the test
# suite (ctest: kiln-sanitizers); any sanitizer report fails (halt_on_error,
# leaks included).
#  1. ASan + UBSan (build-san, clang-22 -fsanitize=address,undefined): the
#     runtime's own tests, the signature parser's, kiln-run and kiln-stress,
#     and the runtime's fuzz targets replaying fuzz/corpus and
#     fuzz/regressions;
#     the fake models the runtime tests load are linked with the sanitized
#     model runtime too.
#  2. Models compiled by ./build's kilnc with that sanitized model runtime
#     linked in (kilnc --model-runtime; the archive names the sanitizer
#     runtime in KilnModelLinkFlags.txt): a CNN with a symbolic batch run by
#     kiln-stress (4 threads), the MLP example with embedded and with
#     external weights (--verify-weights), and every checked case of the
#     differential test (test/hardening/differential.py: invalid run-time
#     values, each an error path of the runtime and the generated checks).
#  3. ThreadSanitizer (build-tsan): the model runtime and kiln-stress, the
#     CNN compiled with that runtime, 4 instances on 4 threads.
# Needs ./build (utils/build.sh) for kilnc.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# The fake models are shared objects linked with --no-undefined: the
# sanitizer runtimes are shared libraries (one copy, the test's and the
# models'), found through the rpath.
RT="$(clang-22 -print-resource-dir)/lib/linux"
LINK="-fsanitize=address,undefined -shared-libsan -Wl,-rpath,$RT"
# What a model linked with a sanitized runtime archive needs (ld.lld's
# arguments, written to KilnModelLinkFlags.txt beside the archive).
ASAN_MODEL_LINK="$RT/libclang_rt.asan-x86_64.so;-rpath;$RT"
[ -x build/bin/kilnc ] || { echo "sanitize.sh: build ./build first (utils/build.sh)" >&2; exit 1; }
if [ -f build-san/build.ninja ] &&
   ! grep -q "KILN_MODEL_RUNTIME_LINK_FLAGS:STRING=$ASAN_MODEL_LINK" build-san/CMakeCache.txt; then
  utils/configure.sh build-san "-DKILN_MODEL_RUNTIME_LINK_FLAGS=$ASAN_MODEL_LINK"
fi
if [ ! -f build-san/build.ninja ]; then
  utils/configure.sh build-san -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS=$SAN" "-DCMAKE_CXX_FLAGS=$SAN" \
    "-DCMAKE_EXE_LINKER_FLAGS=$LINK" "-DCMAKE_SHARED_LINKER_FLAGS=$LINK" \
    "-DCMAKE_MODULE_LINKER_FLAGS=$LINK" \
    "-DKILN_MODEL_RUNTIME_LINK_FLAGS=$ASAN_MODEL_LINK"
fi
ninja -C build-san -j2 KilnRuntimeTests KilnSignatureTests KilnHipRuntimeTests \
  KilnHipDriverTests kiln-run kiln-stress KilnModelRuntime kiln-fuzz-tensorproto \
  kiln-fuzz-signature kiln-fuzz-weights
# allocator_may_return_null: the tests ask for absurd sizes on purpose and
# expect RESOURCE_EXHAUSTED, as malloc gives without ASan.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build-san/test/Runtime/KilnSignatureTests --gtest_brief=1
build-san/test/Runtime/KilnRuntimeTests --gtest_brief=1
# The HIP driver through its fakes and Debian's real libamdhip64 (no GPU).
build-san/test/Runtime/KilnHipRuntimeTests --gtest_brief=1
build-san/test/Runtime/KilnHipDriverTests --gtest_brief=1
# The runtime's fuzz targets over their corpora and regression inputs, now
# with ASan + UBSan (the test suite replays them unsanitized too).
for t in tensorproto signature weights; do
  fuzz/replay.sh "build-san/bin/kiln-fuzz-$t" "fuzz/corpus/$t" "fuzz/regressions/$t"
done

# 2. Compiled models with the sanitized model runtime.
KILNC=build/bin/kilnc
SAN_RT=--model-runtime=build-san/lib/libKilnModelRuntime.a
M=build-san/models
rm -rf "$M"
mkdir -p "$M"
PYTHONPATH=python .venv/bin/python test/e2e/cnn.py "$M/src" > /dev/null
"$KILNC" "$M/src/cnn.onnx" -o "$M/cnn.so" "$SAN_RT"
build-san/bin/kiln-stress "$M/cnn.so" --threads 4 --iterations 10 --batch 3
"$KILNC" examples/mlp.onnx -o "$M/mlp.so" "$SAN_RT"
build-san/bin/kiln-run "$M/mlp.so" --input examples/input_0.pb --benchmark 5 > /dev/null
"$KILNC" examples/mlp.onnx -o "$M/mlp-ext.so" --external-weights="$M/mlp.weights" \
  --external-weights-min-bytes=64 "$SAN_RT"
build-san/bin/kiln-run "$M/mlp-ext.so" --weights "$M/mlp.weights" --verify-weights \
  --input examples/input_0.pb > /dev/null
.venv/bin/python test/hardening/differential.py --checked --workdir "$M/differential" \
  --kiln-run build-san/bin/kiln-run "--kilnc-arg=$SAN_RT" > "$M/differential.md"
tail -n 1 "$M/differential.md"

# 3. ThreadSanitizer: several instances of one model on several threads
# (one shared TSan runtime for kiln-stress and the model it loads).
TSAN="-fsanitize=thread -fno-omit-frame-pointer"
if [ ! -f build-tsan/build.ninja ]; then
  utils/configure.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS=$TSAN" "-DCMAKE_CXX_FLAGS=$TSAN" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -shared-libsan -Wl,-rpath,$RT" \
    "-DKILN_MODEL_RUNTIME_LINK_FLAGS=$RT/libclang_rt.tsan-x86_64.so;-rpath;$RT"
fi
ninja -C build-tsan -j2 kiln-stress KilnModelRuntime
"$KILNC" "$M/src/cnn.onnx" -o "$M/cnn-tsan.so" \
  --model-runtime=build-tsan/lib/libKilnModelRuntime.a
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  build-tsan/bin/kiln-stress "$M/cnn-tsan.so" --threads 4 --iterations 10 --batch 3
echo "sanitizers: no reports"
