// Tiled contractions on mma.sync with --gpu-async-copy (async-copy=1): the
// operands go through a ring of shared buffers filled by cp.async (16
// bytes, src-size 0 zero-fills what lies outside the problem or the K
// part), one commit_group per step, wait_group stages-2 at the top of each
// step, and ldmatrix fragment loads (.trans for an N-major operand). An
// operand that cannot be copied 16 bytes at a time (K of 100 elements)
// keeps the register double buffer; without the option nothing changes.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' async-copy=1" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_80' async-copy=1}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_80 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80'" | FileCheck %s --check-prefix=OFF --implicit-check-not=nvvm.cp.async --implicit-check-not=nvvm.ldmatrix

// IR-LABEL: func.func private @mm16
// IR-SAME: async copies in 4 stages
// IR: workgroup(%[[XS:.*]] : memref<4x64x32xf16, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<4x32x64xf16, #gpu.address_space<workgroup>>)
// IR: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// IR: nvvm.cp.async.commit.group
// IR: scf.for
// IR: nvvm.cp.async.wait.group 2
// IR: gpu.barrier
// IR: nvvm.cp.async.commit.group
// IR: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// IR: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// IR: nvvm.mma.sync
// IR-LABEL: func.func private @nt_bf16
// IR-SAME: async copies in 4 stages
// IR: workgroup({{.*}} : memref<4x64x32xbf16, #gpu.address_space<workgroup>>, {{.*}} : memref<4x64x32xbf16, #gpu.address_space<workgroup>>)
// IR: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
// IR-NOT: layout = #nvvm.mma_layout<col>
// IR: nvvm.mma.sync
// IR-LABEL: func.func private @k100_bf16
// IR-NOT: async copies
// IR: workgroup({{.*}} : memref<2x64x40xbf16, #gpu.address_space<workgroup>>
// IR-NOT: nvvm.cp.async
// IR-NOT: nvvm.ldmatrix
// IR: nvvm.mma.sync

// CHECK-LABEL: .visible .entry mm16_kernel(
// CHECK: .shared .align 16 .b8 __wg_mm16_kernel_0[16384]
// CHECK: .shared .align 16 .b8 __wg_mm16_kernel_1[16384]
// CHECK: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// CHECK: cp.async.commit_group;
// CHECK: cp.async.wait_group 2;
// CHECK: bar.sync 0;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-LABEL: .visible .entry nt_bf16_kernel(
// CHECK: cp.async.cg.shared.global
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-LABEL: .visible .entry k100_bf16_kernel(
// CHECK-NOT: cp.async
// CHECK-NOT: ldmatrix
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// OFF-LABEL: func.func private @mm16
// OFF: workgroup({{.*}} : memref<2x64x40xf16, #gpu.address_space<workgroup>>
// OFF-LABEL: func.func private @nt_bf16
// OFF-LABEL: func.func private @k100_bf16
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  // A partial tile along M (500) and a partial last slab along K (120).
  func.func private @mm16(%a: memref<500x120xf16>, %b: memref<120x512xf16>, %y: memref<500x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<500x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<500x120xf16>, memref<120x512xf16>) outs(%y : memref<500x512xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  // B K-major ([N, K]): both operands' fragments without .trans.
  func.func private @nt_bf16(%a: memref<512x128xbf16>, %b: memref<512x128xbf16>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x128xbf16>, memref<512x128xbf16>) outs(%y : memref<512x512xf32>) {
    ^bb0(%x: bf16, %w: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %we = arith.extf %w : bf16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  // K of 100: rows not a multiple of 16 bytes, the register double buffer.
  func.func private @k100_bf16(%a: memref<512x100xbf16>, %b: memref<100x512xbf16>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x100xbf16>, memref<100x512xbf16>) outs(%y : memref<512x512xf32>) {
    ^bb0(%x: bf16, %w: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %we = arith.extf %w : bf16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}
