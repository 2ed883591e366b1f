// Hopper (sm_90a) 8-bit integer contractions (an int8 model's u8 x s8 and
// s8 x s8 products into i32): the TMA-fed warpgroup kernel with
// wgmma.mma_async m64nNk32 .s32.u8.s8 / .s32.s8.s8, each operand's
// signedness from its extension. K steps of 128 bytes (boxes of BM x 128
// and BN x 128 i8), four k32 wgmmas per stage; wgmma reads 8-bit operands
// K-major only, so an N-major B ([K, N] weights) is first transposed into a
// K-major scratch buffer (the TF32 path's 32 x 33 shared-memory launch).
// The first K step overwrites the accumulators (scale-d 0); a nonzero fill
// is an integer add after the K loop; split K's parts are i32 and their sum
// an integer add; the requantizing epilogue runs on the i32 accumulators.
// K not a multiple of 16 (the tile maps' 16-byte strides) and 16-bit
// operands keep to the tiled kernel (mma.sync m16n8k32, FMA code).
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx84 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// IR-LABEL: func.func private @mm_u8s8(
// IR-SAME: kiln.gpu_contractions = ["B transposed to K-major for 8-bit wgmma: 1 x 400 x 384", "512x384x400: tile 128x64x128, wgmma m64n64k32 u8xs8, 6 stages, 3 warpgroups, B transposed to K-major first"]
// IR: %[[BT:.*]] = kiln.buffer %{{.*}} : memref<384x400xi8>
// IR: gpu.launch {{.*}} workgroup(%{{.*}} : memref<32x33xi8, #gpu.address_space<workgroup>>)
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [128, 128] swizzle 128 : memref<512x400xi8>
// IR: kiln.tile_map %{{.*}}, %[[BT]] box [64, 128] swizzle 128 : memref<384x400xi8>
// IR: llvm.mlir.undef : !llvm.struct<(i32,
// IR: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 32>, D[<s32>, <zero>], A[<u8>, <one>, <row>], B[<s8>, <one>, <col>]
// IR-COUNT-3: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 32>, D[<s32>, <one>], A[<u8>, <one>, <row>], B[<s8>, <one>, <col>]
// IR: scf.for
// IR-COUNT-4: nvvm.wgmma.mma_async {{.*}}, D[<s32>, <one>], A[<u8>, <one>, <row>], B[<s8>, <one>, <col>]
// IR: nvvm.wgmma.wait.group.sync.aligned 0
// IR-NOT: llvm.mlir.constant({{.*}} : i32) : i32
// IR: memref.load %{{.*}} : memref<384xi32>
// IR: llvm.extractvalue
// IR: arith.addi %{{.*}}, %{{.*}} : i32
// IR: arith.sitofp
// IR: arith.mulf
// IR: math.roundeven
// IR: arith.fptosi {{.*}} : f32 to i8
// IR: memref.store {{.*}} : memref<512x384xi8>
// IR-NOT: linalg.generic
// A K-major B (Gemm's transB) read as it is; a fill of 7 added to the i32
// accumulators after the K loop; pairs of i32 stored together.
// IR-LABEL: func.func private @mm_s8s8_filled(
// IR-SAME: "1024x256x256: tile 128x64x128, wgmma m64n64k32 s8xs8, 6 stages, 3 warpgroups"
// IR-NOT: kiln.buffer
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [128, 128] swizzle 128 : memref<1024x256xi8>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [64, 128] swizzle 128 : memref<256x256xi8>
// IR: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 32>, D[<s32>, <zero>], A[<s8>, <one>, <row>], B[<s8>, <one>, <col>]
// IR: nvvm.wgmma.wait.group.sync.aligned 0
// IR-NEXT: %[[SEVEN:.*]] = llvm.mlir.constant(7 : i32) : i32
// IR-NEXT: llvm.extractvalue
// IR-NEXT: arith.addi %{{.*}}, %[[SEVEN]] : i32
// IR: llvm.store {{.*}} : vector<2xi32>, !llvm.ptr
// Split K (two 128 x 64 tiles, 32 K steps): 8 parts of i32 sums, added to
// the fill of 5 by a second launch.
// IR-LABEL: func.func private @mm_splitk(
// IR-SAME: "128x128x4096: tile 128x64x128, wgmma m64n64k32 u8xs8, 6 stages, 3 warpgroups, B transposed to K-major first, split-K 8"
// IR: %[[PARTS:.*]] = kiln.buffer %{{.*}} : memref<8x128x128xi32>
// IR: nvvm.wgmma.mma_async {{.*}}, D[<s32>, <zero>], A[<u8>, <one>, <row>], B[<s8>, <one>, <col>]
// IR: gpu.launch
// IR: %[[FIVE:.*]] = arith.constant 5 : i32
// IR: %[[P0:.*]] = memref.load %[[PARTS]]
// IR: arith.addi %[[FIVE]], %[[P0]] : i32
// IR-COUNT-7: memref.load %[[PARTS]]
// IR: memref.store {{.*}} : memref<128x128xi32>
// A channels-last convolution of 128 channels (FHWC weights): im2col
// copies of 128 bytes per filter tap.
// IR-LABEL: func.func private @conv_u8s8(
// IR-SAME: "3136x128x1152 (convolution 3x3, im2col copies): tile 128x64x128, wgmma m64n64k32 u8xs8, 6 stages, 3 warpgroups, split-K 2"
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels 128 channels 128 lower [0, 0] upper [-2, -2] strides [1, 1] swizzle 128 : memref<4x30x30x128xi8>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [64, 1, 1, 128] swizzle 128 : memref<128x3x3x128xi8>
// IR: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 32>, D[<s32>, <zero>], A[<u8>, <one>, <row>], B[<s8>, <one>, <col>]
// A ResNet-style 3x3 layer: 64 channels, so K steps of 64 bytes with the
// 64-byte swizzle (a 128-byte step would be half out-of-bounds zeros) and
// twice the table's 6 stages in the same shared memory; its input a copy
// zero-padded by 1 (an 8-bit zero point of 0: the copy goes, the window
// starts 1 before the source), and the requantization after it
// (per-channel [1, 1, 1, 64] bias and scale, a run-time zero point)
// applied from the accumulators: one launch. The descriptors' high bits:
// swizzle mode 2 (bit 63), 8-row groups 512 bytes apart (32 << 32),
// leading offset 16 (1 << 16); two k32 wgmmas a step (the peeled first
// step and the loop's).
// IR-LABEL: func.func private @conv_requant(
// IR-SAME: "12544x64x576 (convolution 3x3, im2col copies): tile 128x64x64, wgmma m64n64k32 u8xs8, 12 stages, 3 warpgroups"
// IR-NOT: linalg.map
// IR: kiln.im2col_map %{{.*}}, %{{.*}} pixels 128 channels 64 lower [-1, -1] upper [-1, -1] strides [1, 1] swizzle 64 : memref<4x56x56x64xi8>
// IR: kiln.tile_map %{{.*}}, %{{.*}} box [64, 1, 1, 64] swizzle 64 : memref<64x3x3x64xi8>
// IR: gpu.launch
// IR: llvm.mlir.constant(-9223371899415756800 : i64)
// IR-COUNT-2: nvvm.wgmma.mma_async
// IR: scf.for
// IR-COUNT-2: nvvm.wgmma.mma_async
// IR-NOT: nvvm.wgmma.mma_async
// IR: math.roundeven
// IR: memref.store {{.*}} : memref<4x56x56x64xi8>
// IR-NOT: gpu.launch
// IR-NOT: linalg.generic
// IR: return
// K = 200 (rows of 200 bytes, not a multiple of 16): mma.sync m16n8k32.
// IR-LABEL: func.func private @mm_k200(
// IR-SAME: matrix instruction 16x8x32 u8xs8
// IR-NOT: kiln.tile_map
// IR-NOT: nvvm.wgmma
// IR: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<s8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>
// 16-bit operands: neither.
// IR-LABEL: func.func private @mm_wide(
// IR-NOT: kiln.tile_map
// IR-NOT: nvvm.wgmma
// IR-NOT: nvvm.mma.sync
// IR: return

// PTX: .version 8.4
// PTX: .target sm_90a
// PTX-LABEL: .visible .entry mm_u8s8_kernel(
// PTX-LABEL: .visible .entry mm_u8s8_kernel_0(
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8
// PTX-DAG: cvt.rn.f32.s32
// PTX-LABEL: .visible .entry mm_s8s8_filled_kernel(
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8
// PTX-LABEL: .visible .entry conv_u8s8_kernel(
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8
// PTX-LABEL: .visible .entry mm_k200_kernel(
// PTX-NOT: wgmma
// PTX: mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#mN = affine_map<(d0, d1) -> (d1)>
#mI = affine_map<(d0, d1) -> (d0, d1)>
#in3 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d6)>
#fhwc = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#e4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c4 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
#s4 = affine_map<(d0, d1, d2, d3) -> ()>
module {
  // u8 activations x s8 [K, N] weights, K = 400 (not a multiple of the
  // 128-byte step), requantized: int32 bias, scale, rounding, zero point,
  // clamp, narrowing to i8.
  func.func private @mm_u8s8(%a: memref<512x400xi8>, %b: memref<400x384xi8>, %bias: memref<384xi32>, %scale: memref<384xf32>, %y: memref<512x384xi8>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    %acc = memref.alloc() : memref<512x384xi32>
    linalg.fill ins(%zero : i32) outs(%acc : memref<512x384xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x400xi8>, memref<400x384xi8>) outs(%acc : memref<512x384xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    linalg.generic {indexing_maps = [#mI, #mN, #mN, #mI], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %bias, %scale : memref<512x384xi32>, memref<384xi32>, memref<384xf32>) outs(%y : memref<512x384xi8>) {
    ^bb0(%v: i32, %bv: i32, %sc: f32, %o: i8):
      %zp = arith.constant 3.0 : f32
      %lo = arith.constant -128.0 : f32
      %hi = arith.constant 127.0 : f32
      %t = arith.addi %v, %bv : i32
      %f = arith.sitofp %t : i32 to f32
      %q = arith.mulf %f, %sc : f32
      %rq = math.roundeven %q : f32
      %z = arith.addf %rq, %zp : f32
      %c0 = arith.maximumf %z, %lo : f32
      %c1 = arith.minimumf %c0, %hi : f32
      %i = arith.fptosi %c1 : f32 to i8
      linalg.yield %i : i8
    }
    memref.dealloc %acc : memref<512x384xi32>
    return
  }
  func.func private @mm_s8s8_filled(%a: memref<1024x256xi8>, %b: memref<256x256xi8>, %y: memref<1024x256xi32>) attributes {kiln.kernel} {
    %seven = arith.constant 7 : i32
    linalg.fill ins(%seven : i32) outs(%y : memref<1024x256xi32>)
    linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<1024x256xi8>, memref<256x256xi8>) outs(%y : memref<1024x256xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extsi %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %we, %xe : i32
      %r = arith.addi %m, %s : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @mm_splitk(%a: memref<128x4096xi8>, %b: memref<4096x128xi8>, %y: memref<128x128xi32>) attributes {kiln.kernel} {
    %five = arith.constant 5 : i32
    linalg.fill ins(%five : i32) outs(%y : memref<128x128xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<128x4096xi8>, memref<4096x128xi8>) outs(%y : memref<128x128xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @conv_u8s8(%x: memref<4x30x30x128xi8>, %w: memref<128x3x3x128xi8>, %y: memref<4x28x28x128xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<4x28x28x128xi32>)
    linalg.generic {indexing_maps = [#in3, #fhwc, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<4x30x30x128xi8>, memref<128x3x3x128xi8>) outs(%y : memref<4x28x28x128xi32>) {
    ^bb0(%xv: i8, %wv: i8, %s: i32):
      %xe = arith.extui %xv : i8 to i32
      %we = arith.extsi %wv : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @conv_requant(%x: memref<4x56x56x64xi8>, %w: memref<64x3x3x64xi8>, %bias: memref<1x1x1x64xi32>, %scale: memref<1x1x1x64xf32>, %zp: memref<i8>, %y: memref<4x56x56x64xi8>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : i8
    %zero = arith.constant 0 : i32
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 255.0 : f32
    %p = memref.alloc() : memref<4x58x58x64xi8>
    linalg.map outs(%p : memref<4x58x58x64xi8>)
      (%init: i8) {
        linalg.yield %c0 : i8
      }
    %v = memref.subview %p[0, 1, 1, 0] [4, 56, 56, 64] [1, 1, 1, 1] : memref<4x58x58x64xi8> to memref<4x56x56x64xi8, strided<[215296, 3712, 64, 1], offset: 3776>>
    memref.copy %x, %v : memref<4x56x56x64xi8> to memref<4x56x56x64xi8, strided<[215296, 3712, 64, 1], offset: 3776>>
    %acc = memref.alloc() : memref<4x56x56x64xi32>
    linalg.fill ins(%zero : i32) outs(%acc : memref<4x56x56x64xi32>)
    linalg.generic {indexing_maps = [#in3, #fhwc, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%p, %w : memref<4x58x58x64xi8>, memref<64x3x3x64xi8>) outs(%acc : memref<4x56x56x64xi32>) {
    ^bb0(%xv: i8, %wv: i8, %s: i32):
      %xe = arith.extui %xv : i8 to i32
      %we = arith.extsi %wv : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    linalg.generic {indexing_maps = [#e4, #c4, #c4, #s4, #e4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%acc, %bias, %scale, %zp : memref<4x56x56x64xi32>, memref<1x1x1x64xi32>, memref<1x1x1x64xf32>, memref<i8>) outs(%y : memref<4x56x56x64xi8>) {
    ^bb0(%a: i32, %b: i32, %sc: f32, %z: i8, %o: i8):
      %0 = arith.addi %a, %b : i32
      %1 = arith.sitofp %0 : i32 to f32
      %2 = arith.mulf %1, %sc : f32
      %3 = math.roundeven %2 : f32
      %4 = arith.uitofp %z : i8 to f32
      %5 = arith.addf %3, %4 : f32
      %6 = arith.maximumf %5, %lo : f32
      %7 = arith.minimumf %6, %hi : f32
      %8 = arith.fptosi %7 : f32 to i32
      %9 = arith.trunci %8 : i32 to i8
      linalg.yield %9 : i8
    }
    memref.dealloc %acc : memref<4x56x56x64xi32>
    memref.dealloc %p : memref<4x58x58x64xi8>
    return
  }
  func.func private @mm_k200(%a: memref<256x200xi8>, %b: memref<200x384xi8>, %y: memref<256x384xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<256x384xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<256x200xi8>, memref<200x384xi8>) outs(%y : memref<256x384xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @mm_wide(%a: memref<256x256xi16>, %b: memref<256x256xi16>, %y: memref<256x256xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<256x256xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<256x256xi16>, memref<256x256xi16>) outs(%y : memref<256x256xi32>) {
    ^bb0(%x: i16, %w: i16, %s: i32):
      %xe = arith.extsi %x : i16 to i32
      %we = arith.extsi %w : i16 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
}
