// Half-precision contractions on tensor cores down to PTX: f16 and bf16
// operands accumulated in f32 become mma.sync m16n8k16 (row x col), their
// operands read from shared slabs as K pairs (32-bit shared loads); with
// tensor-cores=0 (chips before sm_80) the same product is FMA code.
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90' tensor-cores=0}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_75 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=FMA
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90'" | FileCheck %s --check-prefix=IR

// IR-LABEL: func.func private @mm16
// IR: gpu.launch {{.*}} workgroup(%[[XS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>)
// IR: scf.for
// IR-COUNT-4: memref.store {{.*}}, %[[XS]]
// IR: gpu.barrier
// IR: vector.load %[[XS]]{{.*}} {alignment = 4 : i64} : memref<2x64x40xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// IR: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// IR-LABEL: func.func private @mm_bf16
// IR: llvm.bitcast {{.*}} : vector<2xbf16> to i32
// IR: nvvm.mma.sync

// CHECK-LABEL: .visible .entry mm16_kernel(
// CHECK-DAG: .shared .align 16 .b8 __wg_mm16_kernel_0[10240]
// CHECK-DAG: st.shared.b16
// CHECK-DAG: bar.sync
// CHECK-DAG: ld.shared.b32
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: st.global.b32
// CHECK-LABEL: .visible .entry mm_bf16_kernel(
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// FMA-LABEL: .visible .entry mm16_kernel(
// FMA-NOT: mma.sync
// FMA: fma.rn.f32
// FMA-LABEL: .visible .entry mm_bf16_kernel(
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
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
  func.func private @mm_bf16(%a: memref<512x100xbf16>, %b: memref<100x512xbf16>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
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
