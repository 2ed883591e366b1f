// Multicast tiles on sm_90a (--gpu-tiles=BMxBN/multicast; Tile::multicast):
// two blocks form a cluster that loads the larger of their two operand
// tiles once. 192x128 shares A (the pair's blocks are neighbours along N,
// cluster 2x1x1): each block copies 96 of the 192 rows with a
// .multicast::cluster bulk copy into both blocks' stage, whose `full`
// barrier counts the whole stage's bytes. 128x256 shares B (neighbours
// along M, cluster 1x2x1): from K-major rows (8-bit, after the transpose)
// or as one of the two 64-column boxes of each half of N-major f16 rows.
// Each stage's `empty` barrier counts the first lane of each consumer warp
// of both blocks (the peer's through mapa, mbarrier.arrive.shared::cluster).
// A relaxed cluster barrier follows the barriers' initialization (its
// fence orders the initialization); none ends the kernel: the consumers
// release the last stage too (to both blocks), and each producer waits for
// the releases of its last four stages (8 K steps of 64: ring positions 8
// to 11, parity 1) before it exits. A
// problem whose tiles along the pairing dim are odd (3136 x 1920: 15 tiles
// of 128 columns, 25 of 128 rows) takes the cost model's tile (a short-K
// matmul's: ping-pong), no cluster.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=192x128/multicast" | FileCheck %s --check-prefix=IRA
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x256/multicast" | FileCheck %s --check-prefix=IRB
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a' tiles=192x128/multicast}, canonicalize, gpu-launch-sink-index-computations, kiln-outline-gpu-kernels, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx84 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTXA
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a' tiles=128x256/multicast}, canonicalize, gpu-launch-sink-index-computations, kiln-outline-gpu-kernels, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx84 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTXB

#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @f16_mm(%a: memref<4096x512xf16>, %b: memref<512x2048xf16>, %y: memref<4096x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x2048xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<4096x512xf16>, memref<512x2048xf16>) outs(%y : memref<4096x2048xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @int8_mm(%a: memref<4096x768xi8>, %b: memref<768x2304xi8>, %y: memref<4096x2304xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<4096x2304xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<4096x768xi8>, memref<768x2304xi8>) outs(%y : memref<4096x2304xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @odd(%a: memref<3136x512xf16>, %b: memref<512x1920xf16>, %y: memref<3136x1920xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<3136x1920xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<3136x512xf16>, memref<512x1920xf16>) outs(%y : memref<3136x1920xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}

// IRA-LABEL: func.func private @f16_mm
// IRA-SAME: tile 192x128x64, wgmma m64n128k16, 4 stages, 4 warpgroups, clusters of 2 blocks along N sharing A's tile by multicast
// IRA: kiln.tile_map %arg0, %arg1 box [96, 64] swizzle 128 : memref<4096x512xf16>
// IRA: kiln.tile_map %arg0, %arg2 box [64, 64] swizzle 128 : memref<512x2048xf16>
// IRA: gpu.launch clusters({{.*}}) in ({{.*}} = %c2{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}) blocks({{.*}}) in ({{.*}} = %c16{{[_0-9]*}}, {{.*}} = %c22{{[_0-9]*}},
// IRA: %[[RANK:.*]] = nvvm.read.ptx.sreg.cluster.ctarank
// IRA: nvvm.mbarrier.init {{.*}}, %c24_i32 :
// IRA: nvvm.fence.mbarrier.init
// IRA: nvvm.cluster.arrive.relaxed
// IRA-NEXT: nvvm.cluster.wait
// IRA: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %c3_i16
// IRA-NOT: multicast_mask
// IRA-COUNT-4: nvvm.mbarrier.try_wait.parity {{.*}}, %c1_i32{{(_[0-9]+)?}}, %c10000000_i32
// IRA: nvvm.wgmma.mma_async
// IRA: nvvm.mbarrier.arrive {{.*}} : !llvm.ptr<3> -> i64
// IRA: %[[PEER:.*]] = arith.xori %[[RANK]], %c1_i32
// IRA-NEXT: %[[THERE:.*]] = nvvm.mapa {{.*}}, %[[PEER]] : !llvm.ptr<3> -> !llvm.ptr<7>
// IRA-NEXT: nvvm.mbarrier.arrive %[[THERE]] : !llvm.ptr<7>
// IRA: nvvm.wgmma.wait.group.sync.aligned 0
// IRA: nvvm.mapa
// IRA-NEXT: nvvm.mbarrier.arrive {{.*}} : !llvm.ptr<7>
// IRA-NOT: nvvm.cluster.arrive
// IRA: gpu.terminator
// IRA-LABEL: func.func private @int8_mm
// IRA-SAME: tile 192x128x128, wgmma m64n128k32 u8xs8, 4 stages, 4 warpgroups, clusters of 2 blocks along N sharing A's tile by multicast, B transposed to K-major first
// IRA-LABEL: func.func private @odd
// IRA-SAME: "3136x1920x512: tile 128x128x64, wgmma m64n128k16, 4 stages, ping-pong: 2 consumer warpgroups taking turns on whole tiles and a producer warpgroup, persistent: 132 blocks over 375 tiles"]
// IRA-NOT: clusters
// IRA: return

// IRB-LABEL: func.func private @f16_mm
// IRB-SAME: tile 128x256x64, wgmma m64n256k16, 4 stages, 3 warpgroups, clusters of 2 blocks along M sharing B's tile by multicast
// IRB: kiln.tile_map %arg0, %arg1 box [128, 64] swizzle 128 : memref<4096x512xf16>
// IRB: kiln.tile_map %arg0, %arg2 box [64, 64] swizzle 128 : memref<512x2048xf16>
// IRB: gpu.launch clusters({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c2{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}) blocks({{.*}}) in ({{.*}} = %c8{{[_0-9]*}}, {{.*}} = %c32{{[_0-9]*}},
// IRB: nvvm.mbarrier.init {{.*}}, %c16_i32 :
// IRB: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} : !llvm.ptr<7>, !llvm.ptr
// IRB: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %c3_i16
// IRB-LABEL: func.func private @int8_mm
// IRB-SAME: tile 128x256x128, wgmma m64n256k32 u8xs8, 4 stages, 3 warpgroups, clusters of 2 blocks along M sharing B's tile by multicast
// IRB: kiln.tile_map {{.*}} box [128, 128] swizzle 128 : memref<2304x768xi8>
// IRB: gpu.launch clusters({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c2{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}) blocks({{.*}}) in ({{.*}} = %c9{{[_0-9]*}}, {{.*}} = %c32{{[_0-9]*}},
// IRB-LABEL: func.func private @odd
// IRB-NOT: clusters
// IRB: return

// PTXA: .entry f16_mm_kernel(
// PTXA: .explicitcluster
// PTXA-NEXT: .reqnctapercluster 2, 1, 1
// PTXA-DAG: mov.u32 {{.*}}%cluster_ctarank;
// PTXA-DAG: fence.mbarrier_init.release.cluster;
// PTXA-DAG: barrier.cluster.arrive.relaxed;
// PTXA: barrier.cluster.wait;
// PTXA: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTXA-COUNT-4: mbarrier.try_wait.parity.shared.b64 {{.*}}, 1, 10000000;
// PTXA: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTXA: mapa.shared::cluster.u64
// PTXA: mbarrier.arrive.shared::cluster.b64
// The last stage's release, to both blocks, after the main loop.
// PTXA: wgmma.wait_group.sync.aligned 0;
// PTXA: mapa.shared::cluster.u64
// PTXA: mbarrier.arrive.shared::cluster.b64
// PTXA-NOT: barrier.cluster
// PTXA: ret;
// PTXA: .entry int8_mm_kernel_0(
// PTXA: .reqnctapercluster 2, 1, 1
// PTXA: wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8
// PTXA: .entry odd_kernel(
// PTXA-NOT: {{reqnctapercluster|multicast|mapa|barrier.cluster}}
// PTXA: ret;

// PTXB: .entry f16_mm_kernel(
// PTXB: .reqnctapercluster 1, 2, 1
// PTXB: .entry int8_mm_kernel_0(
// PTXB: .reqnctapercluster 1, 2, 1
// PTXB: wgmma.mma_async.sync.aligned.m64n256k32.s32.u8.s8
