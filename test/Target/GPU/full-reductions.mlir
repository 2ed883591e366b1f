// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="warp-reductions=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="warp-reductions=0" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{warp-reductions=1}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" --split-input-file | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// The least of a Gather's 32x128 i64 indices (the index-range check):
// one block of 16 warps, each thread striding over the flattened 4096
// elements by 512 from the fill's identity; a butterfly of 5 xor steps in
// each warp, a 64-bit value crossing lanes as two 32-bit halves; lane 0 of
// each warp writes its value to a shared slot; after a barrier the first
// thread combines the 16 slots in order and stores the result.
// CHECK-LABEL: func.func private @index_min
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c512{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) workgroup(%[[SLOTS:.*]] : memref<16xi64, #gpu.address_space<workgroup>>)
// CHECK: %[[ACC:.*]] = scf.for %{{.*}} = %[[TID:[a-z0-9_]+]] to %{{.*}} step %c512{{.*}} iter_args(%{{.*}} = %c9223372036854775807_i64)
// CHECK: arith.remui %{{.*}}, %c128
// CHECK: arith.divui %{{.*}}, %c128
// CHECK: memref.load %arg1
// CHECK: arith.minsi
// CHECK: arith.trunci %[[ACC]] : i64 to i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: arith.minsi %[[ACC]]
// CHECK-COUNT-8: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK-COUNT-16: memref.load %[[SLOTS]]
// CHECK: memref.store %{{.*}}, %arg2[] : memref<i64>
// The shuffles become 10 shfl.sync.bfly.b32, the slots shared memory.
// PTX: .shared .align {{[0-9]+}} .b8 {{.*}}[128]
// PTX-COUNT-10: shfl.sync.bfly.b32
// PTX: bar.sync 0
// Without warp reductions it stays one thread.
// OFF-LABEL: func.func private @index_min
// OFF: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// OFF-NOT: gpu.shuffle
#in = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
module {
  func.func private @index_min(%x: memref<32x128xi64>, %y: memref<i64>) attributes {kiln.kernel} {
    %max = arith.constant 9223372036854775807 : i64
    linalg.fill ins(%max : i64) outs(%y : memref<i64>)
    linalg.generic {indexing_maps = [#in, #all], iterator_types = ["reduction", "reduction"]}
        ins(%x : memref<32x128xi64>) outs(%y : memref<i64>) {
    ^bb0(%a: i64, %acc: i64):
      %m = arith.minsi %a, %acc : i64
      linalg.yield %m : i64
    }
    return
  }
}

// -----

// A float sum of a dynamic-size vector with a fused epilogue (a mean):
// the trip count is the run-time size, the epilogue applies once to the
// combined value.
// CHECK-LABEL: func.func private @mean
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c512
// CHECK: arith.addf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK-COUNT-15: arith.addf
// CHECK: arith.mulf
// CHECK: memref.store %{{.*}}, %arg2[] : memref<f32>
// A sum whose fill is not the identity (0.5): the combined value would
// count it once per thread, so it keeps the one-thread loop.
// CHECK-LABEL: func.func private @offset_sum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK-NOT: gpu.shuffle
// CHECK: return
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#e = affine_map<() -> ()>
module {
  func.func private @mean(%x: memref<?xf32>, %y: memref<f32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %scale = arith.constant 0.25 : f32
    %t = memref.alloc() : memref<f32>
    linalg.fill ins(%zero : f32) outs(%t : memref<f32>)
    linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
        ins(%x : memref<?xf32>) outs(%t : memref<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e, #e], iterator_types = []}
        ins(%t : memref<f32>) outs(%y : memref<f32>) {
    ^bb0(%v: f32, %o: f32):
      %m = arith.mulf %v, %scale : f32
      linalg.yield %m : f32
    }
    memref.dealloc %t : memref<f32>
    return
  }
  func.func private @offset_sum(%x: memref<?xf32>, %y: memref<f32>) attributes {kiln.kernel} {
    %half = arith.constant 0.5 : f32
    linalg.fill ins(%half : f32) outs(%y : memref<f32>)
    linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]}
        ins(%x : memref<?xf32>) outs(%y : memref<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// A reduction to one value inside a loop keeps its one-thread form: the loop
// may run on the device as a whole (a single-thread launch), where another
// launch cannot nest.
// CHECK-LABEL: func.func private @in_loop
// CHECK-NOT: gpu.shuffle
// CHECK: return
#v2 = affine_map<(d0) -> (d0)>
#s2 = affine_map<(d0) -> ()>
module {
  func.func private @in_loop(%x: memref<64xi64>, %y: memref<i64>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %max = arith.constant 9223372036854775807 : i64
    scf.for %i = %c0 to %c4 step %c1 {
      linalg.fill ins(%max : i64) outs(%y : memref<i64>)
      linalg.generic {indexing_maps = [#v2, #s2], iterator_types = ["reduction"]}
          ins(%x : memref<64xi64>) outs(%y : memref<i64>) {
      ^bb0(%a: i64, %acc: i64):
        %m = arith.minsi %a, %acc : i64
        linalg.yield %m : i64
      }
    }
    return
  }
}
