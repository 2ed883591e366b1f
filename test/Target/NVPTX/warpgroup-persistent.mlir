// Persistent Hopper matmuls (kiln-map-kernels-to-gpu persistent=on|auto,
// kilnc --gpu-persistent): one block per SM (132, at most one per tile), each
// looping over tiles blockIdx.x, + 132, ... in groups of 8 M-tiles; the
// shared-memory ring goes on across tiles (its position, an iter_arg of the
// tile loop, offsets every K step's stage and mbarrier parity), and after a
// tile's last wgmma group the consumers give its last stage back before
// storing, so that the next tile's copies overlap the stores, which go
// through a staging area of their own past the ring. Split K is never
// persistent. off is the one-tile-per-block kernel of warpgroup-mma.mlir;
// auto (the default) takes the persistent one for 8-bit products of at
// most 128 columns, more tiles than SMs and at most 32 K steps whose
// tile's staging fits beside two stages as it is. The PTX run assembles with ptxas where present
// (warpgroup-persistent-kilnc.test). The tiles are the four-warpgroup ones
// (tiles=...): the cost model's 192 x 128 would change the tile arithmetic
// checked here.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' persistent=on tiles=256x128,128x128,256x64,128x64" | FileCheck %s --check-prefix=ON
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' persistent=auto tiles=256x128,128x128,256x64,128x64" | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=256x128,128x128,256x64,128x64" | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a' persistent=on tiles=256x128,128x128,256x64,128x64}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' persistent=maybe" 2>&1 | FileCheck %s --check-prefix=BAD

// BERT-base's fused QKV at batch 32 x 128 (4096 x 2304 x 768, 12 K steps):
// 576 tiles of 128 x 128, 132 blocks. Tile t: group t / (8 x 18), M-tile
// 8 group + t % 8, N-tile (t % 144) / 8.
// ON-LABEL: func.func private @dense_3d(
// ON-SAME: persistent: 132 blocks over 576 tiles
// ON: gpu.launch {{.*}} in (%{{.*}} = %c132, %{{.*}} = %c1, %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c384, {{.*}} dynamic_shared_memory_size %c201856_i32
// The producer (thread 0): the tile loop, the ring position carried.
// ON: %[[PT:.*]] = scf.for %[[T:.*]] = %{{.*}} to %c576_i32 step %c132_i32 iter_args(%[[PRING:.*]] = %{{.*}}) -> (i32)
// ON: arith.divui %[[T]], %c144_i32
// ON: scf.for %{{.*}} = %{{.*}} to %c12_i32 step %c1_i32
// ON: arith.addi %{{.*}}, %[[PRING]] : i32
// ON: nvvm.mbarrier.try_wait.parity
// ON: nvvm.mbarrier.arrive.expect_tx
// ON-COUNT-3: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ON: scf.yield %{{.*}} : i32
// The consumers: the same tiles; K steps at the ring's position, the first
// one peeled (its first wgmma overwrites the accumulators, and it releases
// no earlier stage).
// ON: scf.for %[[CT:.*]] = %{{.*}} to %c576_i32 step %c132_i32 iter_args(%[[CRING:.*]] = %{{.*}}) -> (i32)
// ON: arith.addi %{{.*}}, %[[CRING]] : i32
// ON: nvvm.mbarrier.try_wait.parity
// ON: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// ON-COUNT-3: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// ON: nvvm.wgmma.wait.group.sync.aligned 1
// ON-NOT: nvvm.mbarrier.arrive
// ON: scf.for {{.*}} to %c12_i32 step %c1_i32{{.*}} iter_args
// ON: arith.addi %{{.*}}, %[[CRING]] : i32
// ON: nvvm.mbarrier.try_wait.parity
// ON-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// ON: nvvm.wgmma.wait.group.sync.aligned 1
// ON: nvvm.mbarrier.arrive
// ON: nvvm.wgmma.wait.group.sync.aligned 0
// ON-NEXT: arith.subi
// ON-NEXT: arith.addi %[[CRING]],
// ON: nvvm.mbarrier.arrive
// The epilogue (bias, cast to f16) through a staging area of its own past
// the ring (4 stages of 32 KiB and their barriers, 131200 bytes, then
// 128 x 136 words: 201856 bytes with the alignment's 1024), which the
// producer is not filling with the next tile's stages: the accumulators
// in, the bias loaded once per thread, 8 columns a 16-byte store.
// ON: %[[STAGE:.*]] = arith.addi %{{.*}}, %c131200_i32 : i32
// ON-COUNT-8: memref.load %{{.*}}[%{{.*}}] : memref<2304xf32>
// ON: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// ON: llvm.store {{.*}} : vector<2xf32>, !llvm.ptr<3>
// ON: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// ON: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// ON: arith.addi %[[CRING]], %c12_i32
// 4096^3: persistent when asked (64 K steps). 256 x 128's staging (136 KiB)
// and two stages do not fit a block's 227 KiB: the cost model's best tile
// that does, 128 x 128 (1024 tiles).
// ON-LABEL: func.func private @mm_long_k(
// ON-SAME: tile 128x128x64, {{.*}}persistent: 132 blocks over 1024 tiles
// Partial tiles (2000 x 3000, K 1000 = 16 steps, the last partly out of
// bounds): the stores' bounds checks as without persistence.
// ON-LABEL: func.func private @mm_odd(
// ON-SAME: persistent: 132 blocks over 384 tiles
// ON: arith.cmpi ult, %{{.*}}, %c2000_i32
// ON: arith.cmpi ult, %{{.*}}, %c3000_i32
// ResNet-50's late 1x1 convolution as a GEMM: 25 M-tiles of 128 (staged,
// as above), the last group of 8 holds 1 (its size min(25 - first, 8)).
// ON-LABEL: func.func private @mm_rn50(
// ON-SAME: persistent: 132 blocks over 400 tiles
// ON: %[[SIZE:.*]] = arith.minui %{{.*}}, %c8_i32
// ON: arith.remui %{{.*}}, %[[SIZE]]
// Split K stays one tile per block (grid z the parts).
// ON-LABEL: func.func private @mm_split_k(
// ON-NOT: persistent
// ON-SAME: split-K 10
// ON: gpu.launch {{.*}} in (%{{.*}} = %c12, %{{.*}} = %c1, %{{.*}} = %c10)
// Batched (bf16): tile t of batch t / 4 (2 x 2 tiles each).
// ON-LABEL: func.func private @bmm(
// ON-SAME: persistent: 16 blocks over 16 tiles
// ON: scf.for %[[BT:.*]] = %{{.*}} to %c16_i32 step %c16_i32{{.*}} iter_args
// ON: arith.divui %[[BT]], %c4_i32
// ON: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[%{{.*}}, %{{.*}}, %{{.*}}]
// ON: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// TF32: B transposed first, then the persistent kernel.
// ON-LABEL: func.func private @mm_tf32(
// ON-SAME: persistent: 96 blocks over 96 tiles
// ON: gpu.launch {{.*}} in (%{{.*}} = %c24, %{{.*}} = %c16,
// ON: gpu.launch {{.*}} in (%{{.*}} = %c96,
// ON: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// A channels-last convolution: each tile's first pixel from its M-tile.
// ON-LABEL: func.func private @conv3x3(
// ON-SAME: persistent: 132 blocks over 196 tiles
// ON: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} im2col
// ON: arith.maximumf

// auto (the default): float products keep one tile per block.
// AUTO-NOT: persistent: {{.*}}wgmma m64n{{[0-9]+}}k16
// AUTO-NOT: persistent: {{.*}}wgmma m64n{{[0-9]+}}k8
// AUTO-LABEL: func.func private @dense_3d(
// AUTO: gpu.launch {{.*}} in (%{{.*}} = %c18, %{{.*}} = %c32, %{{.*}} = %c1)
// 8-bit products of at most 128 columns and more tiles than SMs whose
// tile's staging fits beside two stages as it is: four K steps of N = 128
// (layer 2's first 1x1 convolutions) keep 128 x 128 with its 4 stages.
// One step of N = 256 (layer 1's block ends) and two of N = 1024 stay one
// tile per block: wider products lost with the persistent kernel.
// AUTO-LABEL: func.func private @int8_one_step(
// AUTO-NOT: persistent
// AUTO-SAME: tile 256x128x128, wgmma m64n128k32 u8xs8, 4 stages, 5 warpgroups"]
// AUTO-LABEL: func.func private @int8_four_steps(
// AUTO-SAME: 50176x128x512: tile 128x128x128, wgmma m64n128k32 u8xs8, 4 stages, 3 warpgroups, persistent: 132 blocks over 392 tiles
// AUTO: gpu.launch {{.*}} in (%{{.*}} = %c132, {{.*}} dynamic_shared_memory_size %c201856_i32
// AUTO-LABEL: func.func private @int8_two_steps_wide(
// AUTO-NOT: persistent
// AUTO-SAME: tile 256x128x128, wgmma m64n128k32 u8xs8, 4 stages, 5 warpgroups"]
// on: persistent, each with the best tile whose staging fits with two
// stages (256 x 128 does not: 128 x 128).
// ON-LABEL: func.func private @int8_one_step(
// ON-SAME: tile 128x128x128, wgmma m64n128k32 u8xs8, 2 stages, 3 warpgroups, persistent: 132 blocks over 3136 tiles
// ON-LABEL: func.func private @int8_two_steps_wide(
// ON-SAME: tile 128x128x128, wgmma m64n128k32 u8xs8, 3 stages, 3 warpgroups, persistent: 132 blocks over 784 tiles

// DEFAULT-LABEL: func.func private @dense_3d(
// DEFAULT: gpu.launch {{.*}} in (%{{.*}} = %c18, %{{.*}} = %c32, %{{.*}} = %c1)
// DEFAULT-NOT: step %c132_i32
// DEFAULT-LABEL: func.func private @mm_long_k(
// DEFAULT-NOT: persistent
// DEFAULT-LABEL: func.func private @int8_four_steps(
// DEFAULT-SAME: persistent: 132 blocks over 392 tiles

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry dense_3d_kernel(
// PTX-DAG: mbarrier.try_wait.parity.shared.b64
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-DAG: wgmma.wait_group.sync.aligned 1
// PTX-DAG: add.s32 {{.*}}, 132;
// PTX-DAG: setp.lt.u32 {{.*}}, 444;
// PTX: wgmma.wait_group.sync.aligned 0
// PTX-NEXT: mbarrier.arrive.shared.b64
// PTX-LABEL: .visible .entry mm_odd_kernel(
// PTX-LABEL: .visible .entry bmm_kernel(
// PTX-DAG: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-LABEL: .visible .entry conv3x3_kernel(
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.im2col

// BAD: persistent must be off, on or auto, not 'maybe'
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
  func.func private @mm_long_k(%a: memref<4096x4096xf16>, %b: memref<4096x4096xf16>, %y: memref<4096x4096xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x4096xf32>)
    linalg.matmul ins(%a, %b : memref<4096x4096xf16>, memref<4096x4096xf16>) outs(%y : memref<4096x4096xf32>)
    return
  }
  func.func private @mm_odd(%a: memref<2000x1000xf16>, %b: memref<1000x3000xf16>, %y: memref<2000x3000xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 1.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2000x3000xf32>)
    linalg.matmul ins(%a, %b : memref<2000x1000xf16>, memref<1000x3000xf16>) outs(%y : memref<2000x3000xf32>)
    return
  }
  func.func private @mm_rn50(%a: memref<3136x512xf16>, %b: memref<512x2048xf16>, %y: memref<3136x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<3136x2048xf32>)
    linalg.matmul ins(%a, %b : memref<3136x512xf16>, memref<512x2048xf16>) outs(%y : memref<3136x2048xf32>)
    return
  }
  func.func private @mm_split_k(%a: memref<128x3072xf16>, %b: memref<3072x768xf16>, %bias: memref<768xf32>, %y: memref<128x768xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<128x768xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<128x768xf32>)
    linalg.matmul ins(%a, %b : memref<128x3072xf16>, memref<3072x768xf16>) outs(%t : memref<128x768xf32>)
    linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<128x768xf32>, memref<768xf32>) outs(%y : memref<128x768xf16>) {
    ^bb0(%in: f32, %bi: f32, %out: f16):
      %s = arith.addf %in, %bi : f32
      %h = arith.truncf %s : f32 to f16
      linalg.yield %h : f16
    }
    memref.dealloc %t : memref<128x768xf32>
    return
  }
  func.func private @bmm(%a: memref<4x200x64xbf16>, %b: memref<4x64x96xbf16>, %y: memref<4x200x96xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4x200x96xf32>)
    linalg.batch_matmul ins(%a, %b : memref<4x200x64xbf16>, memref<4x64x96xbf16>) outs(%y : memref<4x200x96xf32>)
    return
  }
  func.func private @mm_tf32(%a: memref<1024x512xf32>, %b: memref<512x768xf32>, %y: memref<1024x768xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1024x768xf32>)
    linalg.matmul {kiln.tf32} ins(%a, %b : memref<1024x512xf32>, memref<512x768xf32>) outs(%y : memref<1024x768xf32>)
    return
  }
  func.func private @conv3x3(%x: memref<8x58x58x64xf16>, %w: memref<3x3x64x128xf16>, %bias: memref<128xf16>, %y: memref<8x56x56x128xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %hzero = arith.constant 0.0 : f16
    %t = memref.alloc() : memref<8x56x56x128xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<8x56x56x128xf32>)
    linalg.generic {indexing_maps = [#in3, #hwcf, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<8x58x58x64xf16>, memref<3x3x64x128xf16>) outs(%t : memref<8x56x56x128xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%t, %bias : memref<8x56x56x128xf32>, memref<128xf16>) outs(%y : memref<8x56x56x128xf16>) {
    ^bb0(%in: f32, %b: f16, %out: f16):
      %h = arith.truncf %in : f32 to f16
      %s = arith.addf %h, %b : f16
      %r = arith.maximumf %s, %hzero : f16
      linalg.yield %r : f16
    }
    memref.dealloc %t : memref<8x56x56x128xf32>
    return
  }
  // int8 (u8 x s8 -> i32, B K-major): one K step (ResNet-50 int8's layer-1
  // block ends at batch 64), four (layer 2's first 1x1 convolutions), two
  // of N = 1024 (layer 3's last).
  func.func private @int8_one_step(%a: memref<200704x64xi8>, %b: memref<256x64xi8>, %y: memref<200704x256xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<200704x256xi32>)
    linalg.generic {indexing_maps = [#mA8, #mBt8, #mC8], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<200704x64xi8>, memref<256x64xi8>) outs(%y : memref<200704x256xi32>) {
    ^bb0(%x: i8, %w: i8, %acc: i32):
      %0 = arith.extui %x : i8 to i32
      %1 = arith.extsi %w : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %acc, %2 : i32
      linalg.yield %3 : i32
    }
    return
  }
  func.func private @int8_four_steps(%a: memref<50176x512xi8>, %b: memref<128x512xi8>, %y: memref<50176x128xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<50176x128xi32>)
    linalg.generic {indexing_maps = [#mA8, #mBt8, #mC8], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<50176x512xi8>, memref<128x512xi8>) outs(%y : memref<50176x128xi32>) {
    ^bb0(%x: i8, %w: i8, %acc: i32):
      %0 = arith.extui %x : i8 to i32
      %1 = arith.extsi %w : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %acc, %2 : i32
      linalg.yield %3 : i32
    }
    return
  }
  func.func private @int8_two_steps_wide(%a: memref<12544x256xi8>, %b: memref<1024x256xi8>, %y: memref<12544x1024xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<12544x1024xi32>)
    linalg.generic {indexing_maps = [#mA8, #mBt8, #mC8], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<12544x256xi8>, memref<1024x256xi8>) outs(%y : memref<12544x1024xi32>) {
    ^bb0(%x: i8, %w: i8, %acc: i32):
      %0 = arith.extui %x : i8 to i32
      %1 = arith.extsi %w : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %acc, %2 : i32
      linalg.yield %3 : i32
    }
    return
  }
}
