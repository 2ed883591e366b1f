// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512 parallel=false l1-bytes=49152" | FileCheck %s --check-prefix=L48K
// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512 parallel=false l1-bytes=16384" | FileCheck %s --check-prefix=L16K
// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512" | FileCheck %s --check-prefix=TASKS

// The reduction block of a register tile comes from the L1 size: the
// largest power of two of k steps whose panel of B (32 columns of f32, 128
// bytes a step) fills at most two thirds of L1: 256 steps (32 KiB) of a
// 48 KiB L1, 64 (8 KiB) of a 16 KiB one.
// L48K-LABEL: func.func private @mm(
// L48K: scf.for %{{.*}} = %c0 to %c1024 step %c256 {
// L16K-LABEL: func.func private @mm(
// L16K: scf.for %{{.*}} = %c0 to %c1024 step %c64 {
module {
  func.func private @mm(%x: memref<64x1024xf32>, %w: memref<1024x64xf32>, %y: memref<64x64xf32>) attributes {kiln.kernel} {
    linalg.matmul ins(%x, %w : memref<64x1024xf32>, memref<1024x64xf32>) outs(%y : memref<64x64xf32>)
    return
  }
}

// -----

// The split into tasks: a channels-last depthwise convolution re-reads
// only its small weights (they stay in cache) when split along its rows,
// so it splits along its outermost dim like the ops around it (14 tasks of
// one output row), not along the channels (12 tasks of 32).
// TASKS-LABEL: func.func @dw_tasks(
// TASKS: kiln.parallel_for @dw_tasks_p0({{.*}}) tasks 14 :
#in = affine_map<(n, h, w, c, kh, kw) -> (n, h + kh, w + kw, c)>
#wt = affine_map<(n, h, w, c, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, h, w, c, kh, kw) -> (n, h, w, c)>
module {
  func.func @dw_tasks(%x: memref<1x16x16x384xf32>, %w: memref<3x3x384xf32>, %y: memref<1x14x14x384xf32>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<1x16x16x384xf32>, memref<3x3x384xf32>) outs(%y : memref<1x14x14x384xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// An odd number of tasks is split again: 15 tasks of 64 channels would run
// as 8 and 7 on two threads, so each is split into the 7 output columns
// (105 tasks, 53 and 52), task i taking channels (i / 7) * 64 and column
// i mod 7. The columns re-read the tile's 3x3x64 weights, a few KiB.
// TASKS-LABEL: func.func private @dw_odd_p0(
// TASKS: scf.for %[[T:.*]] = %arg0 to %arg1
// TASKS: %[[COL:.*]] = arith.remui %[[T]], %c7
// TASKS: %[[TILE:.*]] = arith.divui %[[T]], %c7
// TASKS: %[[CH:.*]] = arith.muli %[[TILE]], %c64
// TASKS: memref.subview %arg2[0, 0, %[[COL]], %[[CH]]] [1, 9, 3, 64]
// TASKS: memref.subview %arg4[0, 0, %[[COL]], %[[CH]]] [1, 7, 1, 64]
// TASKS-LABEL: func.func @dw_odd(
// TASKS: kiln.parallel_for @dw_odd_p0({{.*}}) tasks 105 :
#in = affine_map<(n, h, w, c, kh, kw) -> (n, h + kh, w + kw, c)>
#wt = affine_map<(n, h, w, c, kh, kw) -> (kh, kw, c)>
#out = affine_map<(n, h, w, c, kh, kw) -> (n, h, w, c)>
module {
  func.func @dw_odd(%x: memref<1x9x9x960xf32>, %w: memref<3x3x960xf32>, %y: memref<1x7x7x960xf32>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<1x9x9x960xf32>, memref<3x3x960xf32>) outs(%y : memref<1x7x7x960xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}
