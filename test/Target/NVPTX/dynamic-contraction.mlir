// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80'" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80'" --split-input-file --canonicalize | FileCheck %s --check-prefix=CANON

// A matmul whose M is a run-time size (a symbolic batch x sequence): the
// tiled product on the matrix instruction still takes it, with tiles of 64
// (the tile and K split cannot be chosen from the size), a grid of
// ceil(M / 64) blocks along M computed before the launch, and the loads and
// stores bounds-checked against the run-time M.
// The report's line names the run-time dim.
// CHECK-LABEL: func.func private @dynamic_m
// CHECK-SAME: kiln.gpu_contractions = ["?x128x64: tile 64x64x32, matrix instruction 16x8x16
// CHECK: %[[M:.*]] = memref.dim %arg1, %c0
// CHECK: %[[GRID:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %[[GRID]]{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME: workgroup(%{{.*}} : memref<2x64x40xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x64x40xf16, #gpu.address_space<workgroup>>)
// CHECK: arith.cmpi ult, %{{.*}}, %[[M]]
// CHECK: nvvm.mma.sync
// CHECK: memref.store %{{.*}}, %arg3
// CANON-LABEL: func.func private @dynamic_m
// CANON: nvvm.mma.sync
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
module {
  func.func private @dynamic_m(%x: memref<?x64xf16>, %w: memref<64x128xf16>, %y: memref<?x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<?x128xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : memref<?x64xf16>, memref<64x128xf16>) outs(%y : memref<?x128xf32>) {
    ^bb0(%in: f16, %wt: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %wt : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
}

// -----

// A run-time K (attention's P x V over a symbolic sequence): the K loop's
// trip count is ceil(K / 32) slabs, read before the launch; K past the end
// is zero in the slabs.
// CHECK-LABEL: func.func private @dynamic_k
// CHECK-SAME: ["256x128x?: tile 64x64x32
// CHECK: %[[K:.*]] = memref.dim %arg1, %c1
// CHECK: %[[SLABS:.*]] = arith.ceildivui %{{.*}}, %c32
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[SLABS]]
// CHECK: nvvm.mma.sync
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (k, n)>
#c2 = affine_map<(m, n, k) -> (m, n)>
module {
  func.func private @dynamic_k(%x: memref<256x?xf16>, %w: memref<?x128xf16>, %y: memref<256x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<256x128xf32>)
    linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : memref<256x?xf16>, memref<?x128xf16>) outs(%y : memref<256x128xf32>) {
    ^bb0(%in: f16, %wt: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %wt : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
}
