#!/bin/bash
# The device runtime and its CUDA driver (lib/Runtime/Model, Drivers/CUDA)
# against a real GPU: the fake
# cuda models of test/Runtime with a real fatbin of cuda_smoke_kernels.cu,
# driven by cuda_smoke.c through the public API. Never run in CI.
#
#   run_cuda_smoke.sh build BUILD_DIR OUT_DIR   on the build machine (nvcc,
#                                               clang, a built BUILD_DIR)
#   run_cuda_smoke.sh run OUT_DIR               on the GPU machine
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
case "${1:-}" in
build)
  build=$(cd "$2" && pwd)
  mkdir -p "$3"
  out=$(cd "$3" && pwd)
  nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
  cc=${CC:-clang-22}
  "$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_90,code=compute_90 \
    -o "$out/kernels.fatbin" "$here/cuda_smoke_kernels.cu"
  {
    echo "__attribute__((aligned(64))) const unsigned char kiln_model_device_image[] = {"
    xxd -i < "$out/kernels.fatbin"
    echo "};"
    echo "const int64_t kiln_model_device_image_size = sizeof(kiln_model_device_image);"
    echo 'const char kiln_model_device_image_kind[] = "cuda";'
  } > "$out/image.h"
  # As kilnc links, but also exporting the fake's count of host-program runs.
  echo '{ global: kiln_model_api_v2; kiln_model_api_v1; kiln_fake_main_calls;'\
    ' local: *; };' \
    > "$out/exports.map"
  for variant in static dynamic; do
    defs=(-DKILN_FAKE_CUDA_IMAGE_HEADER="\"$out/image.h\"")
    [ "$variant" = dynamic ] && defs+=(-DKILN_FAKE_CUDA_DYNAMIC)
    "$cc" -O2 -fPIC -c "$root/test/Runtime/fake_cuda_model.c" \
      -I"$root/include" "${defs[@]}" -o "$out/$variant.o"
    "$cc" -shared -o "$out/$variant.so" "$out/$variant.o" \
      -Wl,--whole-archive "$build/lib/libKilnModelRuntime.a" \
      -Wl,--no-whole-archive \
      -Wl,--version-script="$out/exports.map" \
      -Wl,--no-undefined -ldl
  done
  "$cc" -O2 -std=gnu11 -Wall "$here/cuda_smoke.c" -I"$root/include" \
    "$build/lib/libkiln_runtime_static.a" -ldl -o "$out/cuda_smoke"
  rm -f "$out"/*.o
  ;;
run)
  out=$(cd "$2" && pwd)
  "$out/cuda_smoke" "$out/static.so" "$out/dynamic.so"
  if command -v compute-sanitizer > /dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$out/cuda_smoke" "$out/static.so" "$out/dynamic.so" | tail -n 3
  fi
  ;;
*)
  sed -n '2,9p' "$0"
  exit 2
  ;;
esac
