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
// The im2col copy by rows: a block per row of 32 output pixels (8 x 32
// blocks of 256 threads) stages the 7 input rows the row's windows read (3
// channels x 7 rows x 69 columns) in shared memory beside a table of each
// k's offset there (-1 past 147), then writes the row's 32 x 152 values 8
// at a time.
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c256, {{.*}}) threads(%[[TX:[^,]*]], {{.*}}) in (%{{.*}} = %c256_{{[0-9]+}}, {{.*}}) workgroup(%[[ROWS:.*]] : memref<1449xf16, #gpu.address_space<workgroup>>, %[[TAB:.*]] : memref<152xi32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[K:.*]] = %[[TX]] to %c152{{[_0-9]*}} step %c256{{[_0-9]*}}
// CHECK: arith.minui %[[K]], %c146{{[_0-9]*}}
// CHECK: arith.divui %{{.*}}, %c21{{[_0-9]*}}
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[K]], %c147{{[_0-9]*}}
// CHECK: arith.select %[[IN]], %{{.*}}, %c-1{{[_0-9]*}}
// CHECK: memref.store %{{.*}}, %[[TAB]][%[[K]]]
// CHECK: scf.for %[[E:.*]] = %[[TX]] to %c1449{{[_0-9]*}} step %c256{{[_0-9]*}}
// CHECK: memref.load %arg1
// CHECK: memref.store %{{.*}}, %[[ROWS]][%[[E]]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %[[TX]] to %c608{{[_0-9]*}} step %c256{{[_0-9]*}}
// CHECK-COUNT-8: memref.load %[[ROWS]]
// CHECK: %[[V:.*]] = vector.from_elements {{.*}} : vector<8xf16>
// CHECK: vector.store %[[V]], %[[COLS]][{{.*}}] {alignment = 16 : i64} : memref<8x32x32x152xf16>, vector<8xf16>
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
// 4, s8 filters, i32 sums). A pixel's 4 channels are one 32-bit word and
// adjacent taps adjacent columns, so the copy is packed: each window row
// takes 8 taps (7 and a zero one: its filters are zeros), K = 7 * 8 * 4 =
// 224, and 16 bytes of a row of cols are 4 adjacent words of one staged
// row. The filters K-major [64, 224] (8-bit warpgroup MMA reads B K-major
// only: no transpose launch on sm_90a).
// CHECK-LABEL: func.func private @stem_int8
// CHECK-DAG: %[[COLS:.*]] = kiln.buffer %arg0 : memref<8x32x32x224xi8>
// CHECK-DAG: %[[FILT:.*]] = kiln.buffer %arg0 : memref<64x224xi8>
// The rows: 7 rows x (69 + 1) words, the last column zeros; no table.
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256_{{[0-9]+}}, {{.*}}) workgroup(%[[ROWS:.*]] : memref<490xi32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %c490
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %{{.*}}, %c69
// CHECK-COUNT-4: memref.load %arg1
// CHECK: %[[W:.*]] = arith.select %[[INSIDE]], %{{.*}}, %{{.*}} : i32
// CHECK: memref.store %[[W]], %[[ROWS]][%[[E]]]
// CHECK: gpu.barrier
// 32 pixels x 14 runs of 16 bytes: 4 word loads each.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c448
// CHECK-COUNT-4: memref.load %[[ROWS]]
// CHECK: %[[V:.*]] = vector.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>
// CHECK: vector.store %[[V]], %[[COLS]][{{.*}}] {alignment = 16 : i64} : memref<8x32x32x224xi8>, vector<16xi8>
// The filters: taps kw = 7 of each window row (k / 4 % 8 >= 7) are zeros.
// CHECK: gpu.launch
// CHECK: arith.remui %{{.*}}, %c8
// CHECK: arith.minui %{{.*}}, %c6
// CHECK: arith.cmpi ult, %{{.*}}, %c7
// CHECK: memref.store %{{.*}}, %[[FILT]]
// CHECK: gpu.launch
// CHECK: nvvm.mma.sync
// HOPPER-LABEL: func.func private @stem_int8
// HOPPER-SAME: kiln.gpu_contractions = ["8192x64x224: tile {{.*}}wgmma m64n64k32 u8xs8
// HOPPER-NOT: K-major
// HOPPER: return
// OFF-LABEL: func.func private @stem_int8
// OFF-NOT: memref<64x224xi8>
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

// -----

// A network's stem as kilnc bufferizes it: the NCHW f32 image cast to NHWC
// half, copied into a zero-padded buffer (3 on each side), and the
// convolution reading that. The im2col copy reads the image itself (its
// rows are the image's: coalesced), permuted, cast and bounds-checked: the
// cast, the fill and the copy go away with their buffers.
// CHECK-LABEL: func.func private @stem_nchw
// CHECK-NOT: memref<2x32x32x3xf16>
// CHECK-NOT: memref<2x38x38x3xf16>
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %c32, {{.*}}) threads({{.*}}) workgroup(%[[ROWS:.*]] : memref<777xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<152xi32, #gpu.address_space<workgroup>>)
// CHECK: scf.for
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %c777{{[_0-9]*}}
// CHECK-DAG: arith.subi %{{.*}}, %c3{{[_0-9]*}}
// CHECK-DAG: arith.cmpi ult, %{{.*}}, %c32{{[_0-9]*}}
// CHECK: %[[X:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x3x32x32xf32>
// CHECK: %[[H:.*]] = arith.truncf %[[X]] : f32 to f16
// CHECK: %[[V:.*]] = arith.select %{{.*}}, %[[H]], %cst
// CHECK: memref.store %[[V]], %[[ROWS]][%[[E]]]
// CHECK: gpu.barrier
// CHECK: vector.store
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg
// CHECK: return
#perm = affine_map<(n, h, w, c) -> (n, c, h, w)>
#id4 = affine_map<(n, h, w, c) -> (n, h, w, c)>
#ap = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh * 2 + kh, ow * 2 + kw, c)>
#wp = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#op = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
#chp = affine_map<(n, h, w, f) -> (f)>
module {
  func.func private @stem_nchw(%x: memref<2x3x32x32xf32>, %w: memref<7x7x3x32xf16>, %bias: memref<32xf16>, %y: memref<2x16x16x32xf16>) attributes {kiln.kernel} {
    %hzero = arith.constant 0.0 : f16
    %zero = arith.constant 0.0 : f32
    %nhwc = memref.alloc() {alignment = 64 : i64} : memref<2x32x32x3xf16>
    linalg.generic {indexing_maps = [#perm, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%x : memref<2x3x32x32xf32>) outs(%nhwc : memref<2x32x32x3xf16>) {
    ^bb0(%in: f32, %out: f16):
      %0 = arith.truncf %in : f32 to f16
      linalg.yield %0 : f16
    }
    %padded = memref.alloc() {alignment = 64 : i64} : memref<2x38x38x3xf16>
    linalg.map outs(%padded : memref<2x38x38x3xf16>)
      (%init: f16) {
        linalg.yield %hzero : f16
      }
    %view = memref.subview %padded[0, 3, 3, 0] [2, 32, 32, 3] [1, 1, 1, 1] : memref<2x38x38x3xf16> to memref<2x32x32x3xf16, strided<[4332, 114, 3, 1], offset: 351>>
    memref.copy %nhwc, %view : memref<2x32x32x3xf16> to memref<2x32x32x3xf16, strided<[4332, 114, 3, 1], offset: 351>>
    %acc = memref.alloc() {alignment = 64 : i64} : memref<2x16x16x32xf32>
    linalg.fill ins(%zero : f32) outs(%acc : memref<2x16x16x32xf32>)
    linalg.generic {indexing_maps = [#ap, #wp, #op], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%padded, %w : memref<2x38x38x3xf16>, memref<7x7x3x32xf16>) outs(%acc : memref<2x16x16x32xf32>) {
    ^bb0(%in: f16, %wt: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %wt : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    linalg.generic {indexing_maps = [#id4, #chp, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%acc, %bias : memref<2x16x16x32xf32>, memref<32xf16>) outs(%y : memref<2x16x16x32xf16>) {
    ^bb0(%v: f32, %b: f16, %o: f16):
      %0 = arith.extf %b : f16 to f32
      %1 = arith.addf %v, %0 : f32
      %2 = arith.truncf %1 : f32 to f16
      %3 = arith.maximumf %2, %hzero : f16
      linalg.yield %3 : f16
    }
    return
  }
}

// -----

// A row too wide for shared memory (3 channels x 7 rows x 4000 columns):
// the im2col copy of a thread per k and pixel, reading the input as it is.
// CHECK-LABEL: func.func private @wide_row
// CHECK: gpu.launch {{.*}} threads(%[[TX:[^,]*]], {{.*}}) in (%{{.*}} = %c160, %{{.*}} = %c3,
// CHECK-NOT: workgroup
// CHECK: arith.minui %[[TX]], %c146{{[_0-9]*}}
// CHECK-COUNT-4: memref.store
// CHECK: gpu.launch
#aw = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh + kh, ow + kw, c)>
#ww = affine_map<(n, oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>
#ow = affine_map<(n, oh, ow, f, kh, kw, c) -> (n, oh, ow, f)>
module {
  func.func private @wide_row(%x: memref<1x7x4000x3xf16>, %w: memref<7x7x3x32xf16>, %y: memref<1x1x3994x32xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<1x1x3994x32xf32>)
    linalg.generic {indexing_maps = [#aw, #ww, #ow], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<1x7x4000x3xf16>, memref<7x7x3x32xf16>) outs(%y : memref<1x1x3994x32xf32>) {
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
