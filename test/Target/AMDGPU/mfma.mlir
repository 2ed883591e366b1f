// The rocm codegen stage (AMDGPUTarget.cpp's pipeline, with the ISA as text
// instead of a code object): half contractions accumulated in f32 become
// MFMA 16x16x16 on gfx9 (waves of 64: gfx942, gfx90a, whose bf16 form is
// the _1k one) and WMMA 16x16x16 on gfx11 (waves of 32), their operands read
// from LDS; f32 ones become MFMA 16x16x4 f32 on gfx9 (full precision) and
// stay FMAs on gfx11, which has no f32 WMMA; a row reduction's butterfly reads the other lane through
// ds_bpermute (mbcnt gives the lane), one step per halving of the wave
// (6 on gfx9, 5 on gfx11).
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='rocm gfx942'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='rocm gfx1100'" | FileCheck %s --check-prefix=IR11
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='rocm gfx942'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, rocdl-attach-target{chip=gfx942 O=3 wave64=true}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-amdgpu-to-rocdl{chipset=gfx942}, convert-gpu-to-rocdl{chipset=gfx942}, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts))" | FileCheck %s --check-prefix=ROCDL
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='rocm gfx942'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, rocdl-attach-target{chip=gfx942 O=3 wave64=true}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-amdgpu-to-rocdl{chipset=gfx942}, convert-gpu-to-rocdl{chipset=gfx942}, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' -e 's/\\22/"/g' | FileCheck %s --check-prefix=GFX942
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='rocm gfx90a'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, rocdl-attach-target{chip=gfx90a O=3 wave64=true}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-amdgpu-to-rocdl{chipset=gfx90a}, convert-gpu-to-rocdl{chipset=gfx90a}, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' -e 's/\\22/"/g' | FileCheck %s --check-prefix=GFX90A
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='rocm gfx1100'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, rocdl-attach-target{chip=gfx1100 O=3 wave64=false}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-amdgpu-to-rocdl{chipset=gfx1100}, convert-gpu-to-rocdl{chipset=gfx1100}, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' -e 's/\\22/"/g' | FileCheck %s --check-prefix=GFX1100

// IR-LABEL: func.func private @mm16
// IR: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// IR: vector.load {{.*}} : memref<2x64x40xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// IR: amdgpu.mfma 16x16x16 {{.*}} : vector<4xf16>, vector<4xf16>, vector<4xf32>
// IR-LABEL: func.func private @mm_bf16
// IR: amdgpu.mfma 16x16x16 {{.*}} : vector<4xbf16>, vector<4xbf16>, vector<4xf32>
// IR-LABEL: func.func private @mm32
// IR: vector.load {{.*}} : memref<512x128xf32>, vector<4xf32>
// IR: amdgpu.mfma 16x16x4 {{.*}} : f32, f32, vector<4xf32>
// IR-LABEL: func.func private @rowsum
// IR: rocdl.mbcnt.lo
// IR: rocdl.mbcnt.hi
// IR-COUNT-6: rocdl.ds_bpermute

// IR11-LABEL: func.func private @mm16
// IR11: vector.load {{.*}} vector<16xf16>
// IR11: amdgpu.wmma 16x16x16 {{.*}} : vector<16xf16>, vector<16xf16>, vector<8xf32>
// IR11-LABEL: func.func private @mm32
// IR11-NOT: amdgpu.wmma
// IR11-LABEL: func.func private @rowsum
// IR11: rocdl.mbcnt.lo
// IR11-NOT: rocdl.mbcnt.hi
// IR11-COUNT-5: rocdl.ds_bpermute
// IR11-NOT: rocdl.ds_bpermute

// ROCDL: gpu.module @kiln_kernels [#rocdl.target<O = 3, chip = "gfx942">]
// ROCDL-LABEL: llvm.func @mm16_kernel(
// ROCDL-SAME: rocdl.kernel
// ROCDL: rocdl.mfma.f32.16x16x16f16
// ROCDL-LABEL: llvm.func @mm_bf16_kernel(
// ROCDL: rocdl.mfma.f32.16x16x16bf16.1k
// ROCDL-LABEL: llvm.func @rowsum_kernel(
// ROCDL: rocdl.ds_bpermute

// GFX942: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
// GFX942-LABEL: mm16_kernel:
// GFX942-DAG: ds_write_b16
// GFX942-DAG: s_barrier
// GFX942-DAG: ds_read2_b64
// GFX942-DAG: s_waitcnt lgkmcnt(0)
// GFX942-DAG: v_mfma_f32_16x16x16_f16
// GFX942-DAG: global_store_dword
// GFX942: .amdhsa_kernel mm16_kernel
// GFX942: .amdhsa_group_segment_fixed_size 20480
// GFX942-LABEL: mm_bf16_kernel:
// GFX942: v_mfma_f32_16x16x16_bf16
// GFX942-LABEL: mm32_kernel:
// GFX942: global_load_dwordx4
// GFX942: v_mfma_f32_16x16x4_f32
// GFX942-LABEL: rowsum_kernel:
// GFX942: ds_bpermute_b32

// GFX90A: .amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
// GFX90A-LABEL: mm16_kernel:
// GFX90A: v_mfma_f32_16x16x16f16
// GFX90A-LABEL: mm_bf16_kernel:
// GFX90A: v_mfma_f32_16x16x16bf16_1k
// GFX90A-LABEL: mm32_kernel:
// GFX90A: v_mfma_f32_16x16x4f32

// GFX1100: .amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
// GFX1100-LABEL: mm16_kernel:
// GFX1100-DAG: ds_load_b128
// GFX1100-DAG: v_wmma_f32_16x16x16_f16
// GFX1100-DAG: s_waitcnt
// GFX1100: .amdhsa_kernel mm16_kernel
// GFX1100: .amdhsa_wavefront_size32 1
// GFX1100-LABEL: mm_bf16_kernel:
// GFX1100: v_wmma_f32_16x16x16_bf16
// GFX1100-LABEL: mm32_kernel:
// GFX1100-NOT: v_wmma
// GFX1100-LABEL: rowsum_kernel:
// GFX1100: ds_bpermute_b32

#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#in = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
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
  func.func private @mm32(%a: memref<512x128xf32>, %b: memref<128x512xf32>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x128xf32>, memref<128x512xf32>) outs(%y : memref<512x512xf32>) {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
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
}
