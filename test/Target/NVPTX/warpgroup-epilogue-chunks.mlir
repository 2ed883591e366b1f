// The staged epilogue's second pass (WarpgroupEpilogue.cpp) gives each of
// a warpgroup's 128 threads one chunk of 8 columns per pass. With BN = 192
// a row has 24 chunks, which do not divide 128: chunk i = 128 pass + tid
// is row i / 24, column 8 (i % 24), so the 64 x 24 chunks take 12 passes
// with a division each. (A pass of 128 / 24 = 5 whole rows left rows 60-63
// unstored and misplaced the last 8 threads' chunks: 128x192 and 192x192
// gave wrong results on an H100, docs/gpu-results/
// hopper-kilnc-gemm-h100-2026-12-06.log, "err inf".)
// RUN: kiln-opt %S/Inputs/wgmma-tiles.mlir --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x192" | FileCheck %s
// RUN: kiln-opt %S/Inputs/wgmma-tiles.mlir --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128" | FileCheck %s --check-prefix=POW2
// RUN: kiln-opt %S/Inputs/wgmma-tiles.mlir --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128" | FileCheck %s --check-prefix=PREFETCH

// The second pass loads the staged accumulators one pass ahead: pass 0's
// and pass 1's chunks (two 16-byte shared loads each) before pass 0's
// guarded epilogue and stores, where each pass used to load its own inside
// them.
// PREFETCH-LABEL: func.func private @full(
// PREFETCH: nvvm.barrier id
// PREFETCH: nvvm.barrier id
// PREFETCH-NOT: scf.if
// PREFETCH-COUNT-4: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// PREFETCH: scf.if

// CHECK-LABEL: func.func private @full(
// CHECK-SAME: tile 128x192x64
// CHECK-COUNT-12: arith.divui %{{.*}}, %c24_i32
// CHECK-NOT: arith.divui %{{.*}}, %c24_i32
// CHECK-LABEL: func.func private @filled(

// 16 chunks a row: 8 rows a pass, each pass's row the thread's own
// ltid / 16 (plus 8 pass).
// POW2-LABEL: func.func private @full(
// POW2: arith.divui %[[LT:[0-9]+]], %c16_i32
// POW2-COUNT-7: arith.divui %[[LT]], %c16_i32
// POW2-NOT: arith.divui %{{.*}}, %c16_i32
// POW2-LABEL: func.func private @filled(
