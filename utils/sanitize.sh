#!/usr/bin/env bash
# The runtime under AddressSanitizer + UndefinedBehaviorSanitizer: builds
# (once, then incrementally) the runtime's own tests, the signature parser's
# and kiln-run in build-san with clang-22 -fsanitize=address,undefined, then
# runs them; any sanitizer report fails (halt_on_error, leaks included).
# The fake models the runtime tests load are linked with the sanitized model
# runtime too. Run by the test suite (ctest: kiln-sanitizers).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# The fake models are shared objects linked with --no-undefined: the
# sanitizer runtimes are shared libraries (one copy, the test's and the
# models'), found through the rpath.
RT="$(clang-22 -print-resource-dir)/lib/linux"
LINK="-fsanitize=address,undefined -shared-libsan -Wl,-rpath,$RT"
if [ ! -f build-san/build.ninja ]; then
  cmake -G Ninja -B build-san -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS=$SAN" "-DCMAKE_CXX_FLAGS=$SAN" \
    "-DCMAKE_EXE_LINKER_FLAGS=$LINK" "-DCMAKE_SHARED_LINKER_FLAGS=$LINK" \
    "-DCMAKE_MODULE_LINKER_FLAGS=$LINK" \
    -DKILN_PYTHON="$ROOT/.venv/bin/python" > /tmp/kiln-build-san.log 2>&1 ||
    { cat /tmp/kiln-build-san.log; exit 1; }
fi
ninja -C build-san -j2 KilnRuntimeTests KilnSignatureTests kiln-run
# allocator_may_return_null: the tests ask for absurd sizes on purpose and
# expect RESOURCE_EXHAUSTED, as malloc gives without ASan.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build-san/test/Runtime/KilnSignatureTests --gtest_brief=1
build-san/test/Runtime/KilnRuntimeTests --gtest_brief=1
echo "sanitizers: no reports"
