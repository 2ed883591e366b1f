// The NVPTX codegen stage down to PTX (format=isa: LLVM's NVPTX backend, no
// ptxas): a matmul + bias + ReLU kernel becomes one shared-memory tiled
// kernel (barriers, shared loads/stores, fused epilogue), an elementwise
// kernel a plain one; one module holds every kernel.
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// CHECK: gpu.binary @kiln_kernels
// CHECK: .target sm_90
// CHECK-LABEL: .visible .entry matmul_bias_relu_kernel(
// CHECK-DAG: .shared .align 16 .b8 __wg_matmul_bias_relu_kernel_0[8704]
// CHECK-DAG: .shared .align 16 .b8 __wg_matmul_bias_relu_kernel_1[8704]
// CHECK-DAG: ld.global.b32
// CHECK-DAG: st.shared.b32
// CHECK-DAG: bar.sync
// CHECK-DAG: ld.shared.v4.b32
// CHECK-DAG: fma.rn.f32
// CHECK-DAG: st.global.b32
// CHECK-LABEL: .visible .entry scale_kernel(
// CHECK-NOT: bar.sync
// CHECK: {{(mul|add)}}.rn.f32
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#e2 = affine_map<(d0, d1) -> (d0, d1)>
#eb = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @matmul_bias_relu(%a: memref<256x128xf32>, %b: memref<128x512xf32>, %bias: memref<512xf32>, %y: memref<256x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<256x512xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<256x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<256x128xf32>, memref<128x512xf32>) outs(%t : memref<256x512xf32>) {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e2, #eb, #e2], iterator_types = ["parallel", "parallel"]}
        ins(%t, %bias : memref<256x512xf32>, memref<512xf32>) outs(%y : memref<256x512xf32>) {
    ^bb0(%v: f32, %c: f32, %o: f32):
      %s = arith.addf %v, %c : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<256x512xf32>
    return
  }
  func.func private @scale(%x: memref<?xf32>, %y: memref<?xf32>) attributes {kiln.kernel} {
    %two = arith.constant 2.0 : f32
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %m = arith.mulf %v, %two : f32
      linalg.yield %m : f32
    }
    return
  }
}
