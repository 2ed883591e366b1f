// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="warp-reductions=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="warp-reductions=0" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{warp-reductions=1}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" --split-input-file | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// Row sums of a 64x512 matrix with warp-reductions on: one warp per row (the
// lane is the innermost parallel dim, 64 x 32 threads), each lane strides
// over the row by 32 from the fill's identity, a butterfly of 5 xor shuffles
// combines the lanes, lane 0 stores through the fused epilogue (x 0.5).
// CHECK-LABEL: func.func private @rowsum
// CHECK: gpu.launch
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %[[LANE:[0-9]+]] to %c512 step %c32{{.*}} iter_args(%{{.*}} = %cst
// CHECK: memref.load %arg1
// CHECK: arith.addf
// CHECK: %[[S16:.*]], %{{.*}} = gpu.shuffle  xor %[[SUM]], %c16_i32
// CHECK: arith.addf %[[SUM]], %[[S16]]
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: arith.mulf
// CHECK: memref.store {{.*}}, %arg2
// The shuffles become shfl.sync.bfly in PTX.
// PTX-COUNT-5: shfl.sync.bfly.b32
// OFF-LABEL: func.func private @rowsum
// OFF-NOT: gpu.shuffle
#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#e = affine_map<(d0) -> (d0)>
module {
  func.func private @rowsum(%x: memref<64x512xf32>, %y: memref<64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %half = arith.constant 0.5 : f32
    %t = memref.alloc() : memref<64xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64xf32>)
    linalg.generic {indexing_maps = [#in, #row], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x512xf32>) outs(%t : memref<64xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel"]}
        ins(%t : memref<64xf32>) outs(%y : memref<64xf32>) {
    ^bb0(%v: f32, %o: f32):
      %m = arith.mulf %v, %half : f32
      linalg.yield %m : f32
    }
    memref.dealloc %t : memref<64xf32>
    return
  }
}

// -----

// The same with the reduced dim kept (keepdims, the output map's constant 0:
// how softmax and normalization rows come out of the lowering).
// CHECK-LABEL: func.func private @rowsum_keepdims
// CHECK: scf.for %{{.*}} = %{{.*}} to %c512 step %c32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store {{.*}}[%{{.*}}, %c0{{.*}}] : memref<64x1xf32>
// OFF-LABEL: func.func private @rowsum_keepdims
// OFF-NOT: gpu.shuffle
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#kept = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func private @rowsum_keepdims(%x: memref<64x512xf32>, %y: memref<64x1xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<64x1xf32>)
    linalg.generic {indexing_maps = [#in2, #kept], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x512xf32>) outs(%y : memref<64x1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
}
