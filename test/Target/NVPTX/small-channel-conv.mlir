// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80'" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' tensor-cores=0" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a'" --split-input-file | FileCheck %s --check-prefix=HOPPER

// A stem convolution (an RGB image, 3 channels, 7x7 window at stride 2,
// NHWC with HWCF filters, f16 with f32 accumulation, a bias and ReLU after
// it): its window K = 7 * 7 * 3 = 147 goes into an im2col buffer padded to
// 152 ([8, 32, 32, 152], zeros past 147) and the filters into [152, 32];
// the matmul of the two takes the tensor-core path (the matrix
// instruction, with the bias and ReLU applied before the store).
// CHECK-LABEL: func.func private @stem
// CHECK-DAG: %[[COLS:.*]] = kiln.buffer %arg0 : memref<8x32x32x152xf16>
// CHECK-DAG: %[[FILT:.*]] = kiln.buffer %arg0 : memref<152x32xf16>
// The im2col copy: thread x of a block is k (152 of 160 threads; its window
// position from k clamped to 146 once, zero past 147), thread y one of 3
// pixels, each thread copying its k of 4 pixels 3 apart (12 pixels a
// block, 683 blocks for 8192).
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c683, {{.*}}) threads(%[[TX:[^,]*]], {{.*}}) in (%{{.*}} = %c160, %{{.*}} = %c3,
// CHECK: arith.cmpi ult, %[[TX]], %c152
// CHECK: arith.minui %[[TX]], %c146
// CHECK: arith.divui %{{.*}}, %c21
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[TX]], %c147
// CHECK: memref.load %arg1
// CHECK: arith.select %[[IN]]
// CHECK-COUNT-4: memref.store %{{.*}}, %[[COLS]][%{{.*}}, %{{.*}}, %{{.*}}, %[[TX]]]
// The filters' copy.
// CHECK: gpu.launch
// CHECK: memref.load %arg2
// CHECK: memref.store %{{.*}}, %[[FILT]]
// The matmul on the matrix instruction, reading both copies.
// CHECK: gpu.launch
// CHECK-DAG: %[[COLS]]
// CHECK-DAG: %[[FILT]]
// CHECK: nvvm.mma.sync
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %arg4
// On sm_90a the matmul is a warpgroup contraction of M = 8 * 32 * 32.
// HOPPER: kiln.gpu_contractions = ["8192x32x152: tile {{.*}}wgmma
// Without tensor cores the convolution stays as it was.
// OFF-LABEL: func.func private @stem
// OFF-NOT: memref<8x32x32x152xf16>
// OFF-NOT: mma.sync
// OFF: return
#a = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh * 2 + kh, ow * 2 + kw, c)>
#w = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#o = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
#id = affine_map<(n, h, w, f) -> (n, h, w, f)>
#ch = affine_map<(n, h, w, f) -> (f)>
module {
  func.func private @stem(%x: memref<8x69x69x3xf16>, %w: memref<7x7x3x32xf16>, %bias: memref<32xf16>, %y: memref<8x32x32x32xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %hzero = arith.constant 0.0 : f16
    %acc = memref.alloc() : memref<8x32x32x32xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<8x32x32x32xf32>)
    linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<8x69x69x3xf16>, memref<7x7x3x32xf16>) outs(%acc : memref<8x32x32x32xf32>) {
    ^bb0(%in: f16, %wt: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %wt : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%acc, %bias : memref<8x32x32x32xf32>, memref<32xf16>) outs(%y : memref<8x32x32x32xf16>) {
    ^bb0(%v: f32, %b: f16, %o: f16):
      %0 = arith.extf %b : f16 to f32
      %1 = arith.addf %v, %0 : f32
      %2 = arith.truncf %1 : f32 to f16
      %3 = arith.maximumf %2, %hzero : f16
      linalg.yield %3 : f16
    }
    memref.dealloc %acc : memref<8x32x32x32xf32>
    return
  }
}

// -----

// The same for an int8 stem (u8 activations with their channels padded to
// 4, s8 filters, i32 sums): K = 7 * 7 * 4 = 196 padded to 208 (the integer
// instructions' 16), the filters K-major [64, 208] (8-bit warpgroup MMA
// reads B K-major only: no transpose launch on sm_90a).
// CHECK-LABEL: func.func private @stem_int8
// CHECK-DAG: %[[COLS:.*]] = kiln.buffer %arg0 : memref<8x32x32x208xi8>
// CHECK-DAG: %[[FILT:.*]] = kiln.buffer %arg0 : memref<64x208xi8>
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c224, %{{.*}} = %c2,
// CHECK: arith.minui %{{.*}}, %c195
// CHECK: arith.cmpi ult, %{{.*}}, %c196
// CHECK-COUNT-4: memref.store %{{.*}}, %[[COLS]]
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[FILT]]
// CHECK: gpu.launch
// CHECK: nvvm.mma.sync
// HOPPER-LABEL: func.func private @stem_int8
// HOPPER-SAME: kiln.gpu_contractions = ["8192x64x208: tile {{.*}}wgmma m64n64k32 u8xs8
// HOPPER-NOT: K-major
// HOPPER: return
// OFF-LABEL: func.func private @stem_int8
// OFF-NOT: memref<64x208xi8>
// OFF: return
#a8 = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh * 2 + kh, ow * 2 + kw, c)>
#w8 = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#o8 = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
module {
  func.func private @stem_int8(%x: memref<8x69x69x4xi8>, %w: memref<7x7x4x64xi8>, %y: memref<8x32x32x64xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<8x32x32x64xi32>)
    linalg.generic {indexing_maps = [#a8, #w8, #o8], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<8x69x69x4xi8>, memref<7x7x4x64xi8>) outs(%y : memref<8x32x32x64xi32>) {
    ^bb0(%in: i8, %wt: i8, %out: i32):
      %0 = arith.extui %in : i8 to i32
      %1 = arith.extsi %wt : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %out, %2 : i32
      linalg.yield %3 : i32
    }
    return
  }
}
