#!/usr/bin/env bash
# Fails when a vendor's name appears in the generic runtime: everything in
# lib/Runtime but the driver folders under Drivers/, and the internal headers
# shared with the drivers (include/kiln/Runtime/{Common,Device,ModelAPI}.h).
# Generic code reaches a device only through kiln/Runtime/Device.h.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
cd "$root"
# Vendor words (any case), and driver-API identifiers (cuMemAlloc, CUresult,
# CU_STREAM_..., hipMalloc).
words='cuda|nvidia|nvvm|\bptx\b|rocm|\bhip\b|amdgpu|rocdl|\bsm_[0-9]'
apis='\bcu[A-Z][A-Za-z]+|\bCU[a-z_][A-Za-z_]*|\bhip[A-Z][A-Za-z]+'
files=$(find lib/Runtime -type f -not -path 'lib/Runtime/Drivers/*' | sort)
files="$files include/kiln/Runtime/Common.h include/kiln/Runtime/Device.h include/kiln/Runtime/ModelAPI.h"
# shellcheck disable=SC2086
hits=$(
  grep -n -i -E "$words" $files || true
  grep -n -E "$apis" $files || true
)
if [ -n "$hits" ]; then
  echo "vendor names in generic runtime code (move them to lib/Runtime/Drivers/<Kind>):"
  echo "$hits"
  exit 1
fi
echo "generic runtime is vendor-neutral: $(echo $files | wc -w) files checked"
