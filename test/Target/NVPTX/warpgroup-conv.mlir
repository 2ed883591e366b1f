// Hopper convolutions (sm_90a): a channels-last convolution of f16/bf16
// memrefs into f32 is an implicit GEMM on the warpgroup-MMA kernel. The host
// encodes an im2col map of the (padded) activation: BM output pixels of 64
// channels per copy, each spatial dim walked over the window of output
// positions ((out - 1) * stride + 1 wide, `upper` relative to the last
// row) in steps of the stride; and a tile map of the weights (one tap's
// 64 channels x 64 filters of HWCF weights, or BN filters x 64 channels of
// FHWC ones). Each K step is one filter tap's 64 channels: an im2col copy at
// the tap's filter offsets and the weights' copy at that tap. 32 to 63
// channels still take it (the boxes' channels past the end are
// out-of-bounds zeros); a depthwise convolution and one of fewer than 32
// channels keep the mma.sync strategy.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// A 3x3 convolution of stride 1 on a 58 x 58 input padded to it: 8 x 56 x 56
// output pixels; the window's last row is 58 - 1 - 2 (upper -2).
// IR-LABEL: func.func private @conv3x3(
// IR-DAG: %[[MA:.*]] = kiln.im2col_map %{{.*}}, %{{.*}} pixels 256 channels 64 lower [0, 0] upper [-2, -2] strides [1, 1] swizzle 128 : memref<8x58x58x64xf16>
// IR-DAG: %[[MB:.*]] = kiln.tile_map %{{.*}}, %{{.*}} box [1, 1, 64, 64] swizzle 128 : memref<3x3x64x128xf16>
// IR: gpu.launch {{.*}} in (%{{.*}} = %c1, %{{.*}} = %c98, %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c640,
// 9 taps x 1 slice of 64 channels (98 tiles fill the GPU: no K split).
// IR: %[[END:.*]] = arith.minui %{{.*}}, %c9_i32
// IR: scf.for %{{.*}} = %c0_i32 to %[[END]]
// IR: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[{{.*}}] im2col[{{.*}}] {mode = #nvvm.tma_load_mode<im2col>}
// IR: nvvm.cp.async.bulk.tensor.shared.cluster.global
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// The bias and ReLU after it run on the accumulators read back from shared
// memory; the output is f16, 8 channels of a pixel per store.
// IR: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xf32>
// IR: arith.maximumf
// IR: llvm.store {{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr
// IR-NOT: linalg.generic
// A strided 1x1 convolution (ResNet's downsample): the window is the
// output positions' rows, 2 apart (56 - 1 - 54: upper -55 + 1).
// IR-LABEL: func.func private @conv1x1_s2(
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels 128 channels 64 lower [0, 0] upper [-1, -1] strides [2, 2] swizzle 128 : memref<4x56x56x256xf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [128, 1, 1, 64] swizzle 128 : memref<512x1x1x256xf16>
// 4 slices of 64 channels.
// IR: %[[END:.*]] = arith.minui %{{.*}}, %c4_i32
// IR: scf.for %{{.*}} = %c0_i32 to %[[END]]
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// A read of a zero-padded copy reads the copy's source through a window
// that starts 1 before it (the padding as out-of-bounds zeros): the fill
// and the copy go away.
// IR-LABEL: func.func private @conv_padded(
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels 256 channels 64 lower [-1, -1] upper [-1, -1] strides [1, 1] swizzle 128 : memref<8x56x56x64xf16>
// IR-NOT: linalg.map
// IR-NOT: memref.copy
// IR-NOT: linalg.copy
// IR: gpu.launch
// 32 channels: one K step per tap, a box of 64 channels over 32.
// IR-LABEL: func.func private @conv_c32(
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels {{[0-9]+}} channels 64 {{.*}} : memref<8x58x58x32xf16>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [1, 1, 64, 64] swizzle 128 : memref<3x3x32x64xf16>
// IR: scf.for %{{.*}} = %c0_i32 to %{{.*}}
// IR: nvvm.wgmma.mma_async
// IR-LABEL: func.func private @conv_c16(
// IR-NOT: kiln.im2col_map
// IR: nvvm.mma.sync

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry conv3x3_kernel(
// PTX: .param .align 64 .b8 conv3x3_kernel_param_0[128],
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-LABEL: .visible .entry conv1x1_s2_kernel(
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16

#in3 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d6)>
#in_s2 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d6)>
#hwcf = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#fhwc = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
module {
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
  func.func private @conv1x1_s2(%x: memref<4x56x56x256xf16>, %w: memref<512x1x1x256xf16>, %y: memref<4x28x28x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4x28x28x512xf32>)
    linalg.generic {indexing_maps = [#in_s2, #fhwc, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<4x56x56x256xf16>, memref<512x1x1x256xf16>) outs(%y : memref<4x28x28x512xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @conv_padded(%x: memref<8x56x56x64xf16>, %w: memref<3x3x64x128xf16>, %y: memref<8x56x56x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %hzero = arith.constant 0.0 : f16
    %p = memref.alloc() : memref<8x58x58x64xf16>
    linalg.map outs(%p : memref<8x58x58x64xf16>)
      (%init: f16) {
        linalg.yield %hzero : f16
      }
    %sv = memref.subview %p[0, 1, 1, 0] [8, 56, 56, 64] [1, 1, 1, 1] : memref<8x58x58x64xf16> to memref<8x56x56x64xf16, strided<[215296, 3712, 64, 1], offset: 3776>>
    memref.copy %x, %sv : memref<8x56x56x64xf16> to memref<8x56x56x64xf16, strided<[215296, 3712, 64, 1], offset: 3776>>
    linalg.fill ins(%zero : f32) outs(%y : memref<8x56x56x128xf32>)
    linalg.generic {indexing_maps = [#in3, #hwcf, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%p, %w : memref<8x58x58x64xf16>, memref<3x3x64x128xf16>) outs(%y : memref<8x56x56x128xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    memref.dealloc %p : memref<8x58x58x64xf16>
    return
  }
  func.func private @conv_c32(%x: memref<8x58x58x32xf16>, %w: memref<3x3x32x64xf16>, %y: memref<8x56x56x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<8x56x56x64xf32>)
    linalg.generic {indexing_maps = [#in3, #hwcf, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<8x58x58x32xf16>, memref<3x3x32x64xf16>) outs(%y : memref<8x56x56x64xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
  func.func private @conv_c16(%x: memref<8x58x58x16xf16>, %w: memref<3x3x16x64xf16>, %y: memref<8x56x56x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<8x56x56x64xf32>)
    linalg.generic {indexing_maps = [#in3, #hwcf, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<8x58x58x16xf16>, memref<3x3x16x64xf16>) outs(%y : memref<8x56x56x64xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    return
  }
}
