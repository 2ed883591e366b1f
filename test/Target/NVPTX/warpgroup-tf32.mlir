// Hopper (sm_90a) f32 contractions marked kiln.tf32 (--precision=tf32):
// the TMA-fed warpgroup kernel with wgmma.mma_async m64nNk8 .tf32, both
// operands K-major (wgmma has no transpose for tf32): K steps of 32 f32
// (128-byte swizzle rows, boxes of BM x 32 and BN x 32), four k8 wgmmas per
// stage. An N-major B (a [K, N] matmul operand, HWCF convolution weights)
// is first transposed into a K-major scratch buffer by a launch of 32 x 33
// shared-memory tiles; a B whose K is not next to its N (attention's V
// [b, s, h, d]) takes the mma.sync m16n8k8 strategy; an unmarked f32
// contraction stays exact (no tensor cores). On sm_90 (no wgmma) the marked
// ones take mma.sync.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90'" | FileCheck %s --check-prefix=SM90
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// IR-LABEL: func.func private @mm_tf32(
// IR-SAME: kiln.gpu_contractions = ["B transposed to K-major for TF32 wgmma: 1 x 512 x 768", "1024x768x512: tile 128x64x32, wgmma m64n64k8 tf32, 6 stages, 3 warpgroups, B transposed to K-major first"]
// IR: %[[BT:.*]] = kiln.buffer %{{.*}} : memref<768x512xf32>
// IR: %[[SRC:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<512x768xf32> into memref<393216xf32>
// IR: %[[DST:.*]] = memref.collapse_shape %[[BT]] {{\[\[}}0, 1]] : memref<768x512xf32> into memref<393216xf32>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c24, %{{.*}} = %c16, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c8, %{{.*}} = %c1{{.*}}) workgroup(%[[TILE:.*]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// IR-COUNT-4: memref.load %[[SRC]]
// IR: gpu.barrier
// IR-COUNT-4: memref.store %{{.*}}, %[[DST]]
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [128, 32] swizzle 128 : memref<1024x512xf32>
// IR: kiln.tile_map %{{.*}}, %[[BT]] box [64, 32] swizzle 128 : memref<768x512xf32>
// IR: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c384, {{.*}}) dynamic_shared_memory_size
// IR: nvvm.cp.async.bulk.tensor.shared.cluster.global
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// IR-NOT: linalg.matmul
// A K-major B (Gemm's transB, attention's K): read as it is.
// IR-LABEL: func.func private @mm_tf32_kmajor(
// IR-NOT: kiln.buffer
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [128, 32] swizzle 128 : memref<1024x512xf32>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [64, 32] swizzle 128 : memref<768x512xf32>
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// A channels-last convolution: im2col copies of 32 channels, the HWCF
// weights transposed to FHWC ([576] x [64] -> [64] x [576]).
// IR-LABEL: func.func private @conv_tf32(
// IR: %[[W:.*]] = kiln.buffer %{{.*}} : memref<64x3x3x64xf32>
// IR: memref.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : memref<3x3x64x64xf32> into memref<36864xf32>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c2, %{{.*}} = %c18, %{{.*}} = %c1) threads
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels 128 channels 32 lower [0, 0] upper [-2, -2] strides [1, 1] swizzle 128 : memref<8x34x34x64xf32>
// IR: kiln.tile_map %{{.*}}, %[[W]] box [64, 1, 1, 32] swizzle 128 : memref<64x3x3x64xf32>
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// IR-LABEL: func.func private @attn_pv_tf32(
// IR-SAME: "128x64x128 (batch 24): tile 64x64x16, matrix instruction 16x8x8 tf32, 8 warps of 32"
// IR-NOT: kiln.tile_map
// IR: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>
// IR-LABEL: func.func private @mm_fp32(
// IR-NOT: kiln.tile_map
// IR-NOT: nvvm.wgmma
// IR-NOT: nvvm.mma.sync
// IR: return

// SM90-NOT: kiln.tile_map
// SM90-NOT: nvvm.wgmma
// SM90: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry mm_tf32_kernel(
// PTX-DAG: ld.global.b32
// PTX-DAG: st.shared.b32
// PTX-DAG: bar.sync
// PTX-DAG: ld.shared.b32
// PTX-LABEL: .visible .entry mm_tf32_kernel_0(
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
// PTX-NOT: cvt.rna.tf32
// PTX-LABEL: .visible .entry mm_tf32_kmajor_kernel(
// PTX: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
// PTX-LABEL: .visible .entry conv_tf32_kernel_1(
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
// PTX-LABEL: .visible .entry attn_pv_tf32_kernel(
// PTX: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// PTX-LABEL: .visible .entry mm_fp32_kernel(
// PTX-NOT: wgmma
// PTX-NOT: mma.sync
// PTX: fma.rn.f32
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#cx = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh + kh, ow + kw, c)>
#cw = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#cy = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
module {
  func.func private @mm_tf32(%a: memref<1024x512xf32>, %b: memref<512x768xf32>, %y: memref<1024x768xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1024x768xf32>)
    linalg.matmul {kiln.tf32} ins(%a, %b : memref<1024x512xf32>, memref<512x768xf32>) outs(%y : memref<1024x768xf32>)
    return
  }
  func.func private @mm_tf32_kmajor(%a: memref<1024x512xf32>, %b: memref<768x512xf32>, %y: memref<1024x768xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1024x768xf32>)
    linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<1024x512xf32>, memref<768x512xf32>) outs(%y : memref<1024x768xf32>) attrs = {kiln.tf32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @conv_tf32(%x: memref<8x34x34x64xf32>, %w: memref<3x3x64x64xf32>, %y: memref<8x32x32x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<8x32x32x64xf32>)
    linalg.generic {indexing_maps = [#cx, #cw, #cy], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<8x34x34x64xf32>, memref<3x3x64x64xf32>) outs(%y : memref<8x32x32x64xf32>) attrs = {kiln.tf32} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @attn_pv_tf32(%p: memref<2x12x128x128xf32>, %v: memref<2x128x12x64xf32>, %y: memref<2x12x128x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2x12x128x64xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
        ins(%p, %v : memref<2x12x128x128xf32>, memref<2x128x12x64xf32>) outs(%y : memref<2x12x128x64xf32>) attrs = {kiln.tf32} {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %2 = arith.mulf %a, %b : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @mm_fp32(%a: memref<1024x512xf32>, %b: memref<512x768xf32>, %y: memref<1024x768xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1024x768xf32>)
    linalg.matmul ins(%a, %b : memref<1024x512xf32>, memref<512x768xf32>) outs(%y : memref<1024x768xf32>)
    return
  }
}
