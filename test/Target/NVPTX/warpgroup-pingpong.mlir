// Ping-pong Hopper matmuls (--gpu-tiles=128x128/pingpong): a persistent
// block (132, at most one per tile) of a producer warpgroup and two
// consumer warpgroups, each taking whole 128 x 128 tiles (two m64n128
// wgmma row blocks) in turns: consumer c takes the block's tiles c, c + 2,
// ... (tile blockIdx.x + 132 c, step 264; its ring position c x 12 K steps,
// + 24 a tile), so one consumer's epilogue runs beside the other's
// products. Named barriers order the main loops: consumer 0 waits on
// barrier 4 before each tile but its first, consumer 1 on barrier 3 before
// each; each arrives on the other's (256 threads) after its main loop when
// the block has a next tile (an arrival for every wait). A stage is
// released by its one consumer (the empty barriers count 128 arrivals).
// The producer gives up registers (setmaxnreg 40) for the consumers' 232:
// two row blocks of accumulators. Each consumer stages its row blocks in
// turn through its own 64 rows past the ring (named barrier 1 + c, 128
// threads). The PTX assembles without spills or serialized wgmma
// (wgmma-serialization.test, warpgroup-tiles-kilnc.test).
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128/pingpong" | FileCheck %s
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128/ping" 2>&1 | FileCheck %s --check-prefix=BAD

// BERT-base's fused QKV at batch 32 x 128 (4096 x 2304 x 768, 12 K steps
// of 64 f16): 576 tiles. 4 stages of 32 KiB and their barriers (131200
// bytes), then two consumers' 64 x 136 words (69632): 201856 bytes with
// the alignment's 1024.
// CHECK-LABEL: func.func private @dense_3d(
// CHECK-SAME: tile 128x128x64, wgmma m64n128k16, 4 stages, ping-pong: 2 consumer warpgroups taking turns on whole tiles and a producer warpgroup, persistent: 132 blocks over 576 tiles
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %c132, %{{.*}} = %c1, %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c384, {{.*}} dynamic_shared_memory_size %c201856_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c128_i32
// CHECK: nvvm.barrier0
// The producer: every tile of the block, in order.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: scf.for %{{.*}} = %{{.*}} to %c576_i32 step %c132_i32 iter_args
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-3: nvvm.cp.async.bulk.tensor.shared.cluster.global
// The consumers.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: %[[CW:.*]] = arith.addi %{{.*}}, %c-1_i32
// CHECK: %[[WAIT:.*]] = arith.subi %c4_i32, %[[CW]]
// CHECK: %[[GIVE:.*]] = arith.addi %[[CW]], %c3_i32
// CHECK: %[[FIRST:.*]] = arith.muli %[[CW]], %c132_i32
// CHECK: %[[START:.*]] = arith.addi %{{.*}}, %[[FIRST]]
// CHECK: %[[RING0:.*]] = arith.muli %[[CW]], %c12_i32
// CHECK: scf.for %[[T:.*]] = %[[START]] to %c576_i32 step %c264_i32 iter_args(%[[RING:.*]] = %[[RING0]]) -> (i32)
// CHECK: %[[NEXT:.*]] = arith.addi %[[T]], %c132_i32
// CHECK: %[[HASNEXT:.*]] = arith.cmpi ult, %[[NEXT]], %c576_i32
// CHECK: scf.if
// CHECK: nvvm.barrier id = %[[WAIT]] number_of_threads = %c256_i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// The first step: both row blocks' accumulators overwritten.
// CHECK-COUNT-2: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK-COUNT-6: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.for {{.*}} to %c12_i32{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) ->
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.if %[[HASNEXT]] {
// CHECK: nvvm.barrier.arrive id = %[[GIVE]] number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// The two row blocks through the consumer's own staging rows, in turn.
// CHECK: %[[STAGING:.*]] = arith.addi %{{.*}}, %c131200_i32
// CHECK: %[[OWN:.*]] = arith.muli %[[CW]], %c34816_i32
// CHECK: arith.addi %[[STAGING]], %[[OWN]]
// CHECK: %[[BAR:.*]] = arith.addi %[[CW]], %c1_i32
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %[[BAR]] number_of_threads = %c128_i32
// CHECK: nvvm.barrier id = %[[BAR]] number_of_threads = %c128_i32
// CHECK: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// CHECK: %[[BAR2:.*]] = arith.addi %[[CW]], %c1_i32
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %[[BAR2]] number_of_threads = %c128_i32
// CHECK: nvvm.barrier id = %[[BAR2]] number_of_threads = %c128_i32
// CHECK: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// CHECK: arith.addi %[[RING]], %c24_i32

// BAD: gpu-tiles: '128x128/ping' is not a tile
#mA8 = affine_map<(d0, d1, d2) -> (d0, d2)>
#mBt8 = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC8 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#in3 = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh + kh, ow + kw, c)>
#hwcf = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#out = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
module {
  func.func private @dense_3d(%a: memref<32x128x768xf16>, %w: memref<768x2304xf16>, %bias: memref<2304xf32>, %y: memref<32x128x2304xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<32x128x2304xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<32x128x2304xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %w : memref<32x128x768xf16>, memref<768x2304xf16>) outs(%t : memref<32x128x2304xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%bias, %t : memref<2304xf32>, memref<32x128x2304xf32>) outs(%y : memref<32x128x2304xf16>) {
    ^bb0(%bi: f32, %in: f32, %out: f16):
      %s = arith.addf %bi, %in : f32
      %h = arith.truncf %s : f32 to f16
      linalg.yield %h : f16
    }
    memref.dealloc %t : memref<32x128x2304xf32>
    return
  }
}
