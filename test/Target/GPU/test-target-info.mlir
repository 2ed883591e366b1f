// The vendor-neutral strategies on a made-up GPU (lib/Target/Test): waves of
// 64 lanes and a 32x32x8 matrix instruction laid out like AMD's MFMA, emitted
// as "kiln_test.mma". Everything vendor-specific below (the wave of 64, the
// 64-wide shuffles, the lane's group of 32, the 4-element K runs, 16
// accumulators per lane) comes from that target-info: a strategy that
// hard-coded NVIDIA's warp of 32 or mma.sync would fail here.
// RUN: kiln-opt %s --allow-unregistered-dialect --kiln-map-kernels-to-gpu="device=kiln-test-wave64" | FileCheck %s
// RUN: kiln-opt %s --allow-unregistered-dialect --kiln-map-kernels-to-gpu="device=kiln-test-wave64 tensor-cores=0" | FileCheck %s --check-prefix=FMA
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device=kiln-test-wave64 block-size=32" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device=bogus" 2>&1 | FileCheck %s --check-prefix=KIND

// CHECK: module attributes {{.*}}kiln.device = "kiln-test-wave64 w64"
// BLOCK: error: block-size must be a multiple of 64 in [64, 1024]
// KIND: error: no GPU target-info for device 'bogus' (registered: cuda, rocm, kiln-test-wave64)

// A row reduction: one wave per row, its lanes striding by 64 over the row,
// a butterfly of 6 xor shuffles 64 wide (offsets 32 down to 1), lane 0
// stores.
// CHECK-LABEL: func.func private @rowsum
// CHECK: gpu.launch
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %[[LANE:[0-9]+]] to %c512 step %c64{{.*}} iter_args(%{{.*}} = %cst
// CHECK: memref.load %arg1
// CHECK: %[[S32:.*]], %{{.*}} = gpu.shuffle  xor %[[SUM]], %c32_i32, %c64_i32 : f32
// CHECK: %[[A32:.*]] = arith.addf %[[SUM]], %[[S32]]
// CHECK: gpu.shuffle  xor %[[A32]], %c16_i32, %c64_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c64_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c64_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c64_i32{{.*}} : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c64_i32{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: memref.store {{.*}}, %arg2
#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @rowsum(%x: memref<64x512xf32>, %y: memref<64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<64xf32>)
    linalg.generic {indexing_maps = [#in, #row], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x512xf32>) outs(%y : memref<64xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    return
  }

// An f16 matmul accumulated in f32 on the matrix instruction: a 64 x 64 tile
// per block of 256 threads = 4 waves as 2 x 2, each 32 x 32 (one tile of the
// instruction); lane = (g, t) = (lane / 32, lane % 32). K advances 32 per
// slab in 4 steps of 8: A's register is the 4 K elements 4g.. of row t, B's
// those of column t; the 16 accumulators of a lane are column t, rows 4g +
// 8 (e / 4) + e % 4.
// CHECK-LABEL: func.func private @mm16
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{.*}} workgroup(%[[XS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>)
// CHECK: %[[LANEM:.*]] = arith.remui %[[TID:arg[0-9]+]], %c64{{.*}} : index
// CHECK: %[[WAVE:.*]] = arith.divui %[[TID]], %c64{{.*}} : index
// CHECK: %[[G:.*]] = arith.divui %[[LANEM]], %c32{{.*}} : index
// CHECK: %[[T:.*]] = arith.remui %[[LANEM]], %c32{{.*}} : index
// CHECK: %[[WM0:.*]] = arith.remui %[[WAVE]], %c2
// CHECK: %[[WM:.*]] = arith.muli %[[WM0]], %c32
// CHECK: %[[WN0:.*]] = arith.divui %[[WAVE]], %c2
// CHECK: %[[WN:.*]] = arith.muli %[[WN0]], %c32
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4{{.*}} : index
// CHECK: %[[K0:.*]] = arith.addi %[[K]], %c0{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.addi %[[WM]], %[[T]] : index
// CHECK: %[[R0:.*]] = arith.addi %[[ROW]], %c0{{.*}} : index
// CHECK: %[[A:.*]] = vector.load %[[XS]][%{{.*}}, %[[R0]], %[[K0]]] {alignment = 8 : i64} : memref<2x64x40xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: %[[COL:.*]] = arith.addi %[[WN]], %[[T]] : index
// CHECK: %[[C0:.*]] = arith.addi %[[COL]], %c0{{.*}} : index
// CHECK: %[[B:.*]] = vector.load %[[WS]][%{{.*}}, %[[C0]], %[[K0]]] {alignment = 8 : i64} : memref<2x64x40xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: "kiln_test.mma"(%[[A]], %[[B]], {{.*}}) {shape = array<i64: 32, 32, 8>} : (vector<4xf16>, vector<4xf16>, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-3: "kiln_test.mma"({{.*}}) {shape = array<i64: 32, 32, 8>}
// CHECK-NOT: "kiln_test.mma"
// CHECK: %[[CROW:.*]] = arith.muli %[[G]], %c4{{.*}} : index
// CHECK-COUNT-16: memref.store {{.*}} : memref<512x512xf32>
// CHECK-NOT: memref.store
// Without the matrix instruction: the f32 FMA tiles (slabs of 16 x (64 + 4)).
// FMA-LABEL: func.func private @mm16
// FMA: workgroup(%{{.*}} : memref<2x16x68xf32, #gpu.address_space<workgroup>>
// FMA-NOT: kiln_test.mma
// FMA: arith.mulf {{.*}} fastmath<contract>
  func.func private @mm16(%a: memref<512x128xf16>, %b: memref<128x512xf16>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x128xf16>, memref<128x512xf16>) outs(%y : memref<512x512xf32>) {
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
