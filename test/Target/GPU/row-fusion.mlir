// RUN: kiln-opt %s --kiln-map-kernels-to-gpu --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="row-fusion=0" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" --split-input-file | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// A residual add and LayerNormalization as ONNX lowers them (the add, the
// mean's sum, the centering, the variance's sum of squares, the scaling):
// one launch; rows of 768 take a warp each (8 per block of 256 threads:
// 512 blocks for 32 x 128 rows), no barriers. A lane's 24 elements are
// unrolled, 4 adjacent ones at a time (16 bytes of f32: one vector load of
// x and of r, one vector store of y, per 4 steps; the scale and bias rows
// too): the sum and the centered rows, which only the chain reads, stay in
// registers (never stored), each sum ends in a butterfly of xor shuffles
// after which every lane holds it, and the later ops read it from
// registers (the sums' buffers, read by the chain only, are not written).
// Every element of the rows the chain reads and does not write (x, r) is
// loaded before the chain's first op: LLVM would not move a later op's
// loads above the stores between the ops. The scale and the bias, the
// same row for every row, are copied to shared memory once a block (16
// bytes a thread, after x and r) before one barrier, and read from there:
// from global memory ptxas issued their loads after the two reductions, in
// four rounds of L2 latency (BERT-base's int8 LayerNorm, 2026-12-07). No
// prefetch of the rows of weights: prefetch.L1 before the loads made
// BERT-base's LayerNorms 3.4x slower on an H100 (2026-12-07).
// CHECK-LABEL: func.func private @add_layernorm
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c512, {{.*}}) threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) workgroup(%[[S:.*]] : memref<768xf32, #gpu.address_space<workgroup>>, %[[B:.*]] : memref<768xf32, #gpu.address_space<workgroup>>) {
// CHECK-NOT: gpu.barrier
// CHECK-NOT: prefetch
// x and r loaded once per element.
// CHECK-COUNT-12: vector.load %{{.*}} {alignment = 16 : i64} : memref<32x128x768xf32>, vector<4xf32>
// The scale's and the bias's copies: 192 runs of 16 bytes each, one of
// each a thread of the first 192, both loads before the stores. (Not
// cp.async: ptxas moved those, holding no registers, after both
// reductions.)
// CHECK: arith.cmpi ult, %{{.*}}, %c192
// CHECK: %[[SV:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<1x1x768xf32>, vector<4xf32>
// CHECK: %[[BV:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<1x1x768xf32>, vector<4xf32>
// CHECK-NEXT: vector.store %[[SV]], %[[S]][%{{.*}}] {alignment = 16 : i64} : memref<768xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NEXT: vector.store %[[BV]], %[[B]][%{{.*}}] {alignment = 16 : i64} : memref<768xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// The add, the sums kept.
// CHECK-NOT: memref.store
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: {{memref|vector}}.{{load|store}}
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: {{memref|vector}}.{{load|store}}
// CHECK: vector.load %[[S]][%{{.*}}] {alignment = 16 : i64} : memref<768xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.load %[[B]][%{{.*}}] {alignment = 16 : i64} : memref<768xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NOT: memref<1x1x768xf32>
// CHECK: math.sqrt
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<32x128x768xf32>, vector<4xf32>
// CHECK-COUNT-5: vector.store %{{.*}} : memref<32x128x768xf32>, vector<4xf32>
// CHECK-NOT: memref.store
// CHECK-NOT: gpu.launch
// CHECK: return
// Off: a launch per op (the sums a warp per row).
// OFF-LABEL: func.func private @add_layernorm
// OFF-COUNT-5: gpu.launch
// PTX-LABEL: .visible .entry add_layernorm_kernel(
// PTX-NOT: prefetch
// PTX: st.shared.v4.b32
// PTX: st.shared.v4.b32
// PTX: bar.sync
// PTX-NOT: bar.sync
// PTX: shfl.sync.bfly.b32
// PTX-NOT: bar.sync
// PTX: ld.shared.v4.b32
// PTX-NOT: bar.sync
// PTX: ret;

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#bcast = affine_map<(d0, d1, d2) -> (0, 0, d2)>
module {
  func.func private @add_layernorm(%x: memref<32x128x768xf32>, %r: memref<32x128x768xf32>, %s: memref<1x1x768xf32>, %b: memref<1x1x768xf32>, %y: memref<32x128x768xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 7.680000e+02 : f32
    %one = arith.constant 1.000000e+00 : f32
    %eps = arith.constant 9.99999974E-6 : f32
    %a = memref.alloc() : memref<32x128x768xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %r : memref<32x128x768xf32>, memref<32x128x768xf32>) outs(%a : memref<32x128x768xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %0 = arith.addf %in, %in_6 : f32
      linalg.yield %0 : f32
    }
    %sum = memref.alloc() : memref<32x128x1xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<32x128x1xf32>)
    linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a : memref<32x128x768xf32>) outs(%sum : memref<32x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    %c = memref.alloc() : memref<32x128x768xf32>
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %sum : memref<32x128x768xf32>, memref<32x128x1xf32>) outs(%c : memref<32x128x768xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %0 = arith.divf %in_6, %n : f32
      %1 = arith.subf %in, %0 : f32
      linalg.yield %1 : f32
    }
    %sq = memref.alloc() : memref<32x128x1xf32>
    linalg.fill ins(%zero : f32) outs(%sq : memref<32x128x1xf32>)
    linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%c : memref<32x128x768xf32>) outs(%sq : memref<32x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.mulf %in, %in : f32
      %1 = arith.addf %out, %0 : f32
      linalg.yield %1 : f32
    }
    linalg.generic {indexing_maps = [#id, #row, #bcast, #bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%c, %sq, %s, %b : memref<32x128x768xf32>, memref<32x128x1xf32>, memref<1x1x768xf32>, memref<1x1x768xf32>) outs(%y : memref<32x128x768xf32>) {
    ^bb0(%in: f32, %in_6: f32, %in_7: f32, %in_8: f32, %out: f32):
      %0 = arith.divf %in_6, %n : f32
      %1 = arith.addf %0, %eps : f32
      %2 = math.sqrt %1 : f32
      %3 = arith.divf %one, %2 : f32
      %4 = arith.mulf %in, %3 : f32
      %5 = arith.mulf %4, %in_7 : f32
      %6 = arith.addf %5, %in_8 : f32
      linalg.yield %6 : f32
    }
    memref.dealloc %a : memref<32x128x768xf32>
    memref.dealloc %sum : memref<32x128x1xf32>
    memref.dealloc %c : memref<32x128x768xf32>
    memref.dealloc %sq : memref<32x128x1xf32>
    return
  }
}

// -----

// Softmax over rows of 128 (attention's scores): the max, the
// exponentials, their sum and the division in one launch of a warp per row
// (6144 blocks of 8); the max's fill (-inf) is its identity.
// The scores are loaded once (a lane's 4 adjacent ones in one load, for
// the max and the exponentials: runs of 8, 16 bytes of the f16 result,
// would exceed a lane's 128 / 32 = 4 elements, so runs are 4), the
// exponentials stay in registers for the sum and the division: only the
// f16 result is stored, 4 elements a store.
// CHECK-LABEL: func.func private @softmax
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c6144, {{.*}}) threads({{.*}}) in (%{{.*}} = %c256,
// CHECK-NOT: prefetch
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<32x12x128x128xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.maximumf
// CHECK-NOT: memref.load %{{.*}} : memref<32x12x128x128xf32>
// CHECK-COUNT-4: math.exp
// CHECK-NOT: memref.store %{{.*}} : memref<32x12x128x128xf32>
// CHECK: arith.divf
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<32x12x128x128xf16>, vector<4xf16>
// CHECK-NOT: memref.store %{{.*}} : memref<32x12x128x128xf16>
// CHECK-NOT: gpu.launch
// Rows longer than 2048 take a block each: the warps' partial sums go
// through shared memory between barriers, the first thread combines them.
// CHECK-LABEL: func.func private @long_rows
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c64, {{.*}}) threads({{.*}}) in (%{{.*}} = %c512, {{.*}}) workgroup(%[[P:.*]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8192{{[_0-9]*}} step %c512{{[_0-9]*}} iter_args
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK-COUNT-16: memref.load %[[P]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8192{{[_0-9]*}} step %c512{{[_0-9]*}} {
// CHECK: arith.divf
// CHECK-NOT: gpu.launch
// A row op that reads another row (a shifted window) keeps a launch per op.
// CHECK-LABEL: func.func private @not_row_local
// CHECK-COUNT-3: gpu.launch
#id2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#prev = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
module {
  func.func private @softmax(%x: memref<32x12x128x128xf32>, %y: memref<32x12x128x128xf16>) attributes {kiln.kernel} {
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %m = memref.alloc() : memref<32x12x128x1xf32>
    linalg.fill ins(%ninf : f32) outs(%m : memref<32x12x128x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : memref<32x12x128x128xf32>) outs(%m : memref<32x12x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.maximumf %out, %in : f32
      linalg.yield %0 : f32
    }
    %e = memref.alloc() : memref<32x12x128x128xf32>
    linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %m : memref<32x12x128x128xf32>, memref<32x12x128x1xf32>) outs(%e : memref<32x12x128x128xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %0 = arith.subf %in, %in_0 : f32
      %1 = math.exp %0 : f32
      linalg.yield %1 : f32
    }
    %s = memref.alloc() : memref<32x12x128x1xf32>
    linalg.fill ins(%zero : f32) outs(%s : memref<32x12x128x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : memref<32x12x128x128xf32>) outs(%s : memref<32x12x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %s : memref<32x12x128x128xf32>, memref<32x12x128x1xf32>) outs(%y : memref<32x12x128x128xf16>) {
    ^bb0(%in: f32, %in_0: f32, %out: f16):
      %0 = arith.divf %in, %in_0 : f32
      %1 = arith.truncf %0 : f32 to f16
      linalg.yield %1 : f16
    }
    return
  }
  func.func private @long_rows(%x: memref<64x8192xf32>, %y: memref<64x8192xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    %s = memref.alloc() : memref<64x1xf32>
    linalg.fill ins(%zero : f32) outs(%s : memref<64x1xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<64x8192xf32>) outs(%s : memref<64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<64x8192xf32>, memref<64x1xf32>) outs(%y : memref<64x8192xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %0 = arith.divf %in, %in_0 : f32
      linalg.yield %0 : f32
    }
    return
  }
  func.func private @not_row_local(%x: memref<32x12x128x128xf32>, %y: memref<32x12x128x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    %s = memref.alloc() : memref<32x12x128x1xf32>
    %e = memref.alloc() : memref<32x12x128x128xf32>
    linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<32x12x128x128xf32>) outs(%e : memref<32x12x128x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = math.exp %in : f32
      linalg.yield %0 : f32
    }
    linalg.fill ins(%zero : f32) outs(%s : memref<32x12x128x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : memref<32x12x128x128xf32>) outs(%s : memref<32x12x128x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#prev, #row2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %s : memref<32x12x128x128xf32>, memref<32x12x128x1xf32>) outs(%y : memref<32x12x128x128xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %0 = arith.divf %in, %in_0 : f32
      linalg.yield %0 : f32
    }
    return
  }
}

// -----

// 100 rows: the last block's four warps past the end skip the row under a
// guard, so the scale's and the bias's copies (half: 96 runs of 8) and
// their barrier come before it, where every thread of the block reaches
// them.
// CHECK-LABEL: func.func private @ragged_layernorm
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c13, {{.*}}) threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) workgroup(%[[S:.*]] : memref<768xf16, #gpu.address_space<workgroup>>, %[[B:.*]] : memref<768xf16, #gpu.address_space<workgroup>>) {
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c100
// CHECK: arith.cmpi ult, %{{.*}}, %c96
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<768xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<768xf16>, vector<8xf16>
// CHECK-NEXT: vector.store %{{.*}}, %[[S]][%{{.*}}] {alignment = 16 : i64}
// CHECK-NEXT: vector.store %{{.*}}, %[[B]][%{{.*}}] {alignment = 16 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK-NOT: gpu.barrier
// CHECK: vector.load %[[S]]
// CHECK-NOT: gpu.barrier
// CHECK: return

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0, 0)>
#bcast2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @ragged_layernorm(%x: memref<100x768xf32>, %s: memref<768xf16>, %b: memref<768xf16>, %y: memref<100x768xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 7.680000e+02 : f32
    %eps = arith.constant 9.99999974E-6 : f32
    %sum = memref.alloc() : memref<100x1xf32>
    linalg.fill ins(%zero : f32) outs(%sum : memref<100x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : memref<100x768xf32>) outs(%sum : memref<100x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      linalg.yield %0 : f32
    }
    %c = memref.alloc() : memref<100x768xf32>
    linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : memref<100x768xf32>, memref<100x1xf32>) outs(%c : memref<100x768xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %0 = arith.divf %in_6, %n : f32
      %1 = arith.subf %in, %0 : f32
      linalg.yield %1 : f32
    }
    %sq = memref.alloc() : memref<100x1xf32>
    linalg.fill ins(%zero : f32) outs(%sq : memref<100x1xf32>)
    linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%c : memref<100x768xf32>) outs(%sq : memref<100x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.mulf %in, %in : f32
      %1 = arith.addf %out, %0 : f32
      linalg.yield %1 : f32
    }
    linalg.generic {indexing_maps = [#id2, #row2, #bcast2, #bcast2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c, %sq, %s, %b : memref<100x768xf32>, memref<100x1xf32>, memref<768xf16>, memref<768xf16>) outs(%y : memref<100x768xf16>) {
    ^bb0(%in: f32, %in_6: f32, %in_7: f16, %in_8: f16, %out: f16):
      %0 = arith.divf %in_6, %n : f32
      %1 = arith.addf %0, %eps : f32
      %2 = math.rsqrt %1 : f32
      %3 = arith.mulf %in, %2 : f32
      %4 = arith.extf %in_7 : f16 to f32
      %5 = arith.extf %in_8 : f16 to f32
      %6 = arith.mulf %3, %4 : f32
      %7 = arith.addf %6, %5 : f32
      %8 = arith.truncf %7 : f32 to f16
      linalg.yield %8 : f16
    }
    memref.dealloc %sum : memref<100x1xf32>
    memref.dealloc %c : memref<100x768xf32>
    memref.dealloc %sq : memref<100x1xf32>
    return
  }
}
