// f32 contractions marked kiln.tf32 (--precision=tf32) on tensor cores down
// to PTX (sm_80 and newer): mma.sync m16n8k8 .tf32 (row x col), each staged
// element rounded once to TF32 (cvt.rna.tf32.f32) before it goes to shared
// memory, slabs of 16 f32 K per row padded by 16 bytes, fragments read as
// single 32-bit words; 128 x 128 tiles when they fill the GPU. An unmarked
// f32 contraction stays exact: FMA code, no mma.sync; chips before sm_80
// (or tensor-cores=0) ignore the mark.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_80'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_80 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_75'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_75 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=SM75
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' tensor-cores=0" | FileCheck %s --check-prefix=NOTC

// IR-LABEL: func.func private @mm_tf32(
// IR-SAME: kiln.gpu_contractions = ["512x512x128: tile 64x64x16, matrix instruction 16x8x8 tf32, 8 warps of 32"]
// IR: gpu.launch {{.*}} workgroup(%[[XS:.*]] : memref<2x64x20xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x64x20xf32, #gpu.address_space<workgroup>>)
// IR: scf.for
// IR: %[[R:.*]] = nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// IR: %[[F:.*]] = llvm.bitcast %[[R]] : i32 to f32
// IR: memref.store %[[F]], %[[XS]]
// IR: gpu.barrier
// IR: %[[A:.*]] = vector.load %[[XS]]{{.*}} {alignment = 4 : i64} : memref<2x64x20xf32, #gpu.address_space<workgroup>>, vector<1xf32>
// IR: %[[AE:.*]] = vector.extract %[[A]][0] : f32 from vector<1xf32>
// IR: llvm.bitcast %[[AE]] : f32 to i32
// IR: nvvm.mma.sync A[{{.*}}, {{.*}}, {{.*}}, {{.*}}] B[{{.*}}, {{.*}}] C[{{.*}}, {{.*}}, {{.*}}, {{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>}
// IR-LABEL: func.func private @mm_tf32_large(
// IR-SAME: "2048x2048x64: tile 128x128x16, matrix instruction 16x8x8 tf32, 8 warps of 32"
// IR: gpu.launch {{.*}} workgroup(%{{.*}} : memref<2x128x20xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x128x20xf32, #gpu.address_space<workgroup>>)
// IR-LABEL: func.func private @mm_fp32(
// IR-SAME: "512x512x128: tile 64x64x16, FMA, 8 warps of 32"
// IR-NOT: nvvm.convert.float.to.tf32
// IR-NOT: nvvm.mma.sync
// IR: return

// CHECK-LABEL: .visible .entry mm_tf32_kernel(
// CHECK-DAG: .shared .align 16 .b8 __wg_mm_tf32_kernel_0[10240]
// CHECK-DAG: cvt.rna.tf32.f32
// CHECK-DAG: st.shared.b32
// CHECK-DAG: bar.sync
// CHECK-DAG: ld.shared.b32
// CHECK-DAG: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK-DAG: st.global.b32
// CHECK-LABEL: .visible .entry mm_tf32_large_kernel(
// CHECK-DAG: .shared .align 16 .b8 __wg_mm_tf32_large_kernel_0[20480]
// CHECK-DAG: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK-LABEL: .visible .entry mm_fp32_kernel(
// CHECK-NOT: mma.sync
// CHECK-NOT: cvt.rna.tf32
// CHECK: fma.rn.f32

// SM75-LABEL: .visible .entry mm_tf32_kernel(
// SM75-NOT: mma.sync
// SM75-NOT: cvt.rna.tf32
// SM75: fma.rn.f32
// SM75-NOT: mma.sync

// NOTC-NOT: nvvm.mma.sync
// NOTC-NOT: nvvm.convert.float.to.tf32
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @mm_tf32(%a: memref<512x128xf32>, %b: memref<128x512xf32>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.matmul {kiln.tf32} ins(%a, %b : memref<512x128xf32>, memref<128x512xf32>) outs(%y : memref<512x512xf32>)
    return
  }
  func.func private @mm_tf32_large(%a: memref<2048x64xf32>, %b: memref<64x2048xf32>, %y: memref<2048x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2048x2048xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<2048x64xf32>, memref<64x2048xf32>) outs(%y : memref<2048x2048xf32>) attrs = {kiln.tf32} {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @mm_fp32(%a: memref<512x128xf32>, %b: memref<128x512xf32>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.matmul ins(%a, %b : memref<512x128xf32>, memref<128x512xf32>) outs(%y : memref<512x512xf32>)
    return
  }
}
