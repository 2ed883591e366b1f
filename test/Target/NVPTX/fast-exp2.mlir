// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-nvptx-fast-exp2))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(kiln-nvptx-fast-exp2, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// The exponential kiln-erf-complement marks (its argument above -126)
// becomes the flush-to-zero instruction alone; an unmarked one stays
// math.exp2 (libdevice's, with its subnormal guard).
// CHECK-LABEL: gpu.func @marked
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%{{.*}}) : (f32) -> f32
// CHECK-NOT: math.exp2
// CHECK-LABEL: gpu.func @unmarked
// CHECK: math.exp2 %{{.*}} : f32
// PTX-LABEL: .entry marked(
// PTX: ex2.approx.ftz.f32
// PTX-NOT: setp
// PTX: ret;
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @marked(%x: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %e = math.exp2 %v {kiln.exp2_normal} : f32
      memref.store %e, %x[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @unmarked(%x: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %e = math.exp2 %v : f32
      memref.store %e, %x[%i] : memref<256xf32>
      gpu.return
    }
  }
}
