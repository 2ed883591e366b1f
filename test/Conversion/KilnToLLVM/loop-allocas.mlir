// RUN: kiln-opt %s --convert-scf-to-cf --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s

// A launch inside a host loop (a Loop node's steps): its parameter array
// is a fixed-size alloca, which must sit in the entry block. Elsewhere
// LLVM gives it new stack on every step, and a decoder of 501 steps
// overflowed the stack (slanet on cuda, inside the CUDA driver).
// CHECK-LABEL: llvm.func @kiln_model_main(
// CHECK: llvm.alloca
// CHECK: llvm.br ^bb1
// CHECK-NOT: llvm.alloca
// CHECK: llvm.call @kiln_rt_launch_device(
// CHECK-NOT: llvm.alloca
// CHECK: llvm.return
module attributes {gpu.container_module, kiln.device = "cuda sm_90", kiln.num_weights = 0 : i64} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "IMAGE">]
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c501 = arith.constant 501 : index
    %f = arith.constant 1.0 : f32
    scf.for %i = %c0 to %c501 step %c1 {
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%f : f32)
    }
    %r = arith.constant 0 : i32
    return %r : i32
  }
}
