// Hopper matmuls (sm_90a): a matmul or batched matmul of f16/bf16 memrefs
// into f32 becomes host tile maps (kiln.tile_map) and one warp-specialized
// kernel of TMA copies and wgmma.mma_async, its epilogue (bias, ReLU, the
// cast to f16) applied to the accumulators and column pairs stored
// together; on sm_90 (no wgmma) and for a K
// that is not a multiple of 8 the same ops take the mma.sync strategy.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90'" | FileCheck %s --check-prefix=SM90
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// IR-LABEL: func.func private @mm(
// IR-DAG: %[[MA:.*]] = kiln.tile_map %{{.*}}, %{{.*}} box [128, 64] swizzle 128 : memref<512x256xf16>
// IR-DAG: %[[MB:.*]] = kiln.tile_map %{{.*}}, %{{.*}} box [64, 64] swizzle 128 : memref<256x384xf16>
// A small problem takes 128 x 64 tiles (6 stages of 24 KiB) to fill the SMs.
// IR: %[[SMEM:.*]] = arith.constant 148576 : i32
// IR: gpu.launch {{.*}} in (%{{.*}} = %c6, %{{.*}} = %c4, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c384, {{.*}}) dynamic_shared_memory_size %[[SMEM]]
// IR-DAG: builtin.unrealized_conversion_cast %[[MA]] : vector<16xi64> to !llvm.ptr
// IR-DAG: builtin.unrealized_conversion_cast %[[MB]] : vector<16xi64> to !llvm.ptr
// IR: nvvm.mbarrier.init
// IR: nvvm.fence.mbarrier.init
// IR: nvvm.mbarrier.arrive.expect_tx
// IR: nvvm.cp.async.bulk.tensor.shared.cluster.global
// IR: nvvm.mbarrier.try_wait.parity
// IR: nvvm.wgmma.fence.aligned
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// IR: nvvm.wgmma.commit.group.sync.aligned
// IR: nvvm.wgmma.wait.group.sync.aligned 1
// IR: nvvm.mbarrier.arrive
// IR: nvvm.wgmma.wait.group.sync.aligned 0
// IR: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
// IR-NOT: linalg.matmul
// Few tiles and a long K (BERT's FFN down-projection at batch 1): 12 tiles
// of 128 x 64 leave most SMs idle, so K splits into 10 parts of 5 steps
// (grid z); each part's sums go to a scratch buffer from 0, and a second
// launch (a thread per output) adds the parts to the fill and applies the
// epilogue (bias, cast to f16).
// IR-LABEL: func.func private @mm_split_k(
// IR: %[[PARTS:.*]] = kiln.buffer %{{.*}} : memref<10x128x768xf32>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c12, %{{.*}} = %c1, %{{.*}} = %c10) threads
// IR: arith.minui %{{.*}}, %c48_i32
// IR: gpu.launch {{.*}} in (%{{.*}} = %c384{{.*}}) threads({{.*}}) in (%{{.*}} = %c256,
// IR-COUNT-10: memref.load %[[PARTS]]
// IR: arith.truncf
// IR: memref.store %{{.*}} : memref<128x768xf16>
// Many tiles: 256 x 128 (4 consumer warpgroups, 4 stages of 48 KiB).
// IR-LABEL: func.func private @mm_large(
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [256, 64] swizzle 128 : memref<4096x64xf16>
// IR: %[[SMEM:.*]] = arith.constant 197696 : i32
// IR: gpu.launch {{.*}} in (%{{.*}} = %c32, %{{.*}} = %c16, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c640, {{.*}}) dynamic_shared_memory_size %[[SMEM]]
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
// Where 256 x 128 leaves the last wave partly empty (288 tiles, 3 waves of
// 132): 192 x 128, 396 tiles in 3 full waves, three consumer warpgroups.
// (K = 1024: a K of at most 768 takes the ping-pong tile, @short_k.)
// IR-LABEL: func.func private @mm_mid(
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [192, 64] swizzle 128 : memref<4096x1024xf16>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c18, %{{.*}} = %c22, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c512, {{.*}})
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
// A matmul of K at most 768 (16- or 8-bit, one batch, no transcendental
// epilogue) of at least two tiles a block takes the ping-pong tile
// (Problem::shortK: BERT-base's QKV product, 4096 x 2304 x 768); one of
// fewer tiles (BERT at batch 1, 128 x 3072 x 768: 24 tiles) and one of K =
// 1024 (@mm_mid) do not.
// IR-LABEL: func.func private @short_k(
// IR-SAME: "4096x2304x768: tile 128x128x64, wgmma m64n128k16, 4 stages, ping-pong: 2 consumer warpgroups taking turns on whole tiles and a producer warpgroup, persistent: 132 blocks over 576 tiles"
// IR-LABEL: func.func private @short_k_few_tiles(
// IR-SAME: "128x3072x768: tile 128x64x64, wgmma m64n64k16, 6 stages, 3 warpgroups, split-K 2"]
// A linalg.generic matmul as ONNX MatMul lowers ([batch, seq, K] x [K, N],
// mixed precision's casts in the body): A read as 4096 x 768; the epilogue
// indexes C's three dims from the row.
// IR-LABEL: func.func private @dense_3d(
// IR: %[[AV:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<32x128x1024xf16> into memref<4096x1024xf16>
// IR: kiln.tile_map %{{.*}}, %[[AV]] box [192, 64] swizzle 128 : memref<4096x1024xf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [64, 64] swizzle 128 : memref<1024x2304xf16>
// IR: gpu.launch
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>
// The tile leaves through the idle ring: once every consumer is past its
// last wgmma, the accumulator pairs go to shared memory, and each thread
// reads 8 adjacent columns back, runs the epilogue on them and stores them
// with one 16-byte store (element by element if the output is not 16-byte
// aligned).
// A thread's chunk is the same 8 columns in every pass, so the bias (one
// value per column) is loaded once for them, before the barriers (its
// latency passes while the consumers wait and stage), not in each pass.
// IR-COUNT-8: memref.load %{{.*}}[%{{.*}}] : memref<2304xf32>
// IR: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// IR: nvvm.barrier id = %{{.*}} number_of_threads = %c384
// IR-COUNT-16: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// IR: nvvm.barrier id = %{{.*}} number_of_threads = %c384
// IR-NOT: memref.load %{{.*}}[%{{.*}}] : memref<2304xf32>
// IR-COUNT-2: llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// IR-NOT: memref.load %{{.*}}[%{{.*}}] : memref<2304xf32>
// IR: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// IR-COUNT-8: memref.store %{{.*}} : memref<32x128x2304xf16>
// IR-NOT: linalg.generic
// The same with f32 operands (no wgmma type): another strategy.
// IR-LABEL: func.func private @dense_3d_f32(
// IR-NOT: kiln.tile_map
// Attention's products as the ONNX exports lower them: Q [b, s, h, d] x
// K [b, s, h, d] -> [b, h, s, s] (B K-major: boxes of 64 keys x 64, wgmma
// B <col>) and P [b, h, s, s] x V [b, s, h, d] -> [b, h, s, d] (B N-major
// with the heads between); 4-d tile maps, a box of 1 along each batch dim.
// IR-LABEL: func.func private @attn_qk(
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 128, 1, 64] swizzle 128 : memref<2x128x12x64xf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 64, 1, 64] swizzle 128 : memref<2x128x12x64xf16>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c24)
// IR: arith.remui %{{.*}}, %c12
// IR: arith.divui %{{.*}}, %c12
// IR-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// IR-LABEL: func.func private @attn_pv(
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 1, 128, 64] swizzle 128 : memref<2x12x128x128xf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 64, 1, 64] swizzle 128 : memref<2x128x12x64xf16>
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// IR-LABEL: func.func private @bmm(
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 128, 64] swizzle 128 : memref<4x200x64xbf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 64, 64] swizzle 128 : memref<4x64x96xbf16>
// IR: gpu.launch
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// IR-LABEL: func.func private @mm_bias_relu_f16(
// IR: gpu.launch
// IR: nvvm.wgmma.mma_async
// IR: memref.load %{{.*}}[%{{.*}}] : memref<384xf16>
// IR: nvvm.barrier id
// IR: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xf32>
// IR: arith.maximumf
// IR: arith.truncf {{.*}} : f32 to f16
// IR: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// IR-NOT: gpu.launch
// A residual read at C's own point from a buffer laid out as the output:
// where its base (and every such operand's) is 16-byte aligned, each
// thread loads its chunk of every pass up front (a 128 x 64 tile: 4 passes
// x 16 bytes, before the first pass's shared loads), and the passes take their 8 values
// from those; else each pass loads its elements one by one.
// IR-LABEL: func.func private @mm_residual_f16(
// IR: nvvm.wgmma.mma_async
// IR: memref.load %{{.*}}[%{{.*}}] : memref<384xf16>
// IR: nvvm.barrier id
// IR: scf.if %{{.*}} -> (vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>)
// IR-COUNT-4: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// IR: } else {
// IR-COUNT-4: llvm.mlir.undef : vector<8xf16>
// IR: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xf32>
// IR: scf.if %{{.*}} -> (f16, f16, f16, f16, f16, f16, f16, f16)
// IR-COUNT-8: llvm.extractelement
// IR: } else {
// IR-COUNT-8: memref.load %{{.*}} : memref<512x384xf16>
// IR: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// IR-LABEL: func.func private @mm_odd_k(
// IR-NOT: kiln.tile_map
// IR: nvvm.mma.sync
// IR-LABEL: func.func private @mm_f32(
// IR-NOT: kiln.tile_map
// IR: gpu.launch

// SM90-NOT: kiln.tile_map
// SM90-NOT: nvvm.wgmma
// SM90: nvvm.mma.sync

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry mm_kernel(
// PTX: .param .align 64 .b8 mm_kernel_param_0[128],
// PTX: .param .align 64 .b8 mm_kernel_param_1[128],
// PTX: cvta.param.u64
// PTX-DAG: mbarrier.init.shared.b64
// PTX-DAG: mbarrier.try_wait.parity.shared.b64
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.fence.sync.aligned
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-DAG: wgmma.commit_group.sync.aligned
// PTX-DAG: wgmma.wait_group.sync.aligned 1
// PTX-DAG: wgmma.wait_group.sync.aligned 0
// PTX-DAG: mbarrier.arrive.shared.b64
// PTX-LABEL: .visible .entry attn_qk_kernel(
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX-LABEL: .visible .entry bmm_kernel(
// PTX-DAG: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @mm(%a: memref<512x256xf16>, %b: memref<256x384xf16>, %y: memref<512x384xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x384xf32>)
    linalg.matmul ins(%a, %b : memref<512x256xf16>, memref<256x384xf16>) outs(%y : memref<512x384xf32>)
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
  func.func private @mm_large(%a: memref<4096x64xf16>, %b: memref<64x4096xf16>, %y: memref<4096x4096xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x4096xf32>)
    linalg.matmul ins(%a, %b : memref<4096x64xf16>, memref<64x4096xf16>) outs(%y : memref<4096x4096xf32>)
    return
  }
  func.func private @mm_mid(%a: memref<4096x1024xf16>, %b: memref<1024x2304xf16>, %y: memref<4096x2304xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x2304xf32>)
    linalg.matmul ins(%a, %b : memref<4096x1024xf16>, memref<1024x2304xf16>) outs(%y : memref<4096x2304xf32>)
    return
  }
  func.func private @short_k(%a: memref<4096x768xf16>, %b: memref<768x2304xf16>, %y: memref<4096x2304xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x2304xf32>)
    linalg.matmul ins(%a, %b : memref<4096x768xf16>, memref<768x2304xf16>) outs(%y : memref<4096x2304xf32>)
    return
  }
  func.func private @short_k_few_tiles(%a: memref<128x768xf16>, %b: memref<768x3072xf16>, %y: memref<128x3072xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<128x3072xf32>)
    linalg.matmul ins(%a, %b : memref<128x768xf16>, memref<768x3072xf16>) outs(%y : memref<128x3072xf32>)
    return
  }
  func.func private @dense_3d(%a: memref<32x128x1024xf16>, %w: memref<1024x2304xf16>, %bias: memref<2304xf32>, %y: memref<32x128x2304xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<32x128x2304xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<32x128x2304xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %w : memref<32x128x1024xf16>, memref<1024x2304xf16>) outs(%t : memref<32x128x2304xf32>) {
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
  func.func private @dense_3d_f32(%a: memref<32x128x768xf32>, %w: memref<768x2304xf32>, %y: memref<32x128x2304xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<32x128x2304xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %w : memref<32x128x768xf32>, memref<768x2304xf32>) outs(%y : memref<32x128x2304xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.mulf %in, %in_0 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @attn_qk(%q: memref<2x128x12x64xf16>, %k: memref<2x128x12x64xf16>, %y: memref<2x12x128x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2x12x128x128xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%q, %k : memref<2x128x12x64xf16>, memref<2x128x12x64xf16>) outs(%y : memref<2x12x128x128xf32>) {
    ^bb0(%a: f16, %b: f16, %out: f32):
      %0 = arith.extf %a : f16 to f32
      %1 = arith.extf %b : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @attn_pv(%p: memref<2x12x128x128xf16>, %v: memref<2x128x12x64xf16>, %y: memref<2x12x128x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2x12x128x64xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%p, %v : memref<2x12x128x128xf16>, memref<2x128x12x64xf16>) outs(%y : memref<2x12x128x64xf32>) {
    ^bb0(%a: f16, %b: f16, %out: f32):
      %0 = arith.extf %a : f16 to f32
      %1 = arith.extf %b : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @bmm(%a: memref<4x200x64xbf16>, %b: memref<4x64x96xbf16>, %y: memref<4x200x96xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4x200x96xf32>)
    linalg.batch_matmul ins(%a, %b : memref<4x200x64xbf16>, memref<4x64x96xbf16>) outs(%y : memref<4x200x96xf32>)
    return
  }
  func.func private @mm_bias_relu_f16(%a: memref<512x256xf16>, %b: memref<256x384xf16>, %bias: memref<384xf16>, %y: memref<512x384xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %zh = arith.constant 0.0 : f16
    %t = memref.alloc() : memref<512x384xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<512x384xf32>)
    linalg.matmul ins(%a, %b : memref<512x256xf16>, memref<256x384xf16>) outs(%t : memref<512x384xf32>)
    linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t, %bias : memref<512x384xf32>, memref<384xf16>) outs(%y : memref<512x384xf16>) {
    ^bb0(%in: f32, %bi: f16, %out: f16):
      %be = arith.extf %bi : f16 to f32
      %s = arith.addf %in, %be : f32
      %r = arith.maximumf %s, %zero : f32
      %h = arith.truncf %r : f32 to f16
      linalg.yield %h : f16
    }
    memref.dealloc %t : memref<512x384xf32>
    return
  }
  func.func private @mm_residual_f16(%a: memref<512x256xf16>, %b: memref<256x384xf16>, %bias: memref<384xf16>, %res: memref<512x384xf16>, %y: memref<512x384xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<512x384xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<512x384xf32>)
    linalg.matmul ins(%a, %b : memref<512x256xf16>, memref<256x384xf16>) outs(%t : memref<512x384xf32>)
    linalg.generic {indexing_maps = [#id, #bias, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t, %bias, %res : memref<512x384xf32>, memref<384xf16>, memref<512x384xf16>) outs(%y : memref<512x384xf16>) {
    ^bb0(%in: f32, %bi: f16, %r: f16, %out: f16):
      %be = arith.extf %bi : f16 to f32
      %re = arith.extf %r : f16 to f32
      %s = arith.addf %in, %be : f32
      %s2 = arith.addf %s, %re : f32
      %h = arith.truncf %s2 : f32 to f16
      linalg.yield %h : f16
    }
    memref.dealloc %t : memref<512x384xf32>
    return
  }
  func.func private @mm_odd_k(%a: memref<512x100xf16>, %b: memref<100x384xf16>, %y: memref<512x384xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x384xf32>)
    linalg.matmul ins(%a, %b : memref<512x100xf16>, memref<100x384xf16>) outs(%y : memref<512x384xf32>)
    return
  }
  func.func private @mm_f32(%a: memref<512x256xf32>, %b: memref<256x384xf32>, %y: memref<512x384xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x384xf32>)
    linalg.matmul ins(%a, %b : memref<512x256xf32>, memref<256x384xf32>) outs(%y : memref<512x384xf32>)
    return
  }
}
