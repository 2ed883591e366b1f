// Two blocks to a multiprocessor (--gpu-tiles=128x128/2: two consumer
// warpgroups and a producer warp, 288 threads, at most 113 KiB of shared
// memory each) carry no register bound for the vendor compiler: with
// kiln.kernel_attrs {nvvm.minctasm = 2} (PTX .minnctapersm 2, the twelfth
// session's) ptxas held ResNet-50 b64's int8 block ends to 96 registers
// with 40-56 bytes of spills, 1.3x-1.6x slower on an H100 (2026-12-07).
// Two blocks of 9 warps fit only at 96 registers or fewer (a quarter of
// the register file holds 5 of the 18 warps); the staged epilogue's order
// keeps those kernels at 90 (wgmma-serialization.test).
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128/2" | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90a' tiles=128x128/pingpong" | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90a' tiles=128x128/2}, canonicalize, gpu-launch-sink-index-computations, kiln-outline-gpu-kernels, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90a features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, kiln-nvptx-grid-constants, convert-nvvm-to-llvm, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func private @dense_3d(
// CHECK: gpu.launch blocks
// CHECK-SAME: threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c288
// CHECK-NOT: kiln.kernel_attrs
// CHECK: return
// ONE-LABEL: func.func private @dense_3d(
// ONE-NOT: kiln.kernel_attrs
// ONE: return
// PTX: .maxntid 288, 1, 1
// PTX-NOT: .minnctapersm
// PTX: ret;

module {
  func.func private @dense_3d(%a: memref<32x128x768xf16>, %w: memref<768x2304xf16>, %bias: memref<2304xf32>, %y: memref<32x128x2304xf16>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<32x128x2304xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<32x128x2304xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %w : memref<32x128x768xf16>, memref<768x2304xf16>) outs(%t : memref<32x128x2304xf32>) {
    ^bb0(%in: f16, %in_0: f16, %out: f32):
      %0 = arith.extf %in : f16 to f32
      %1 = arith.extf %in_0 : f16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %out, %2 : f32
      linalg.yield %3 : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%bias, %t : memref<2304xf32>, memref<32x128x2304xf32>) outs(%y : memref<32x128x2304xf16>) {
    ^bb0(%bi: f32, %in: f32, %out: f16):
      %s = arith.addf %bi, %in : f32
      %h = arith.truncf %s : f32 to f16
      linalg.yield %h : f16
    }
    memref.dealloc %t : memref<32x128x2304xf32>
    return
  }
}
