// RUN: kiln-opt %s --split-input-file --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s

// A device program with a symbolic dim and no host reads of device data is
// graph-capturable: the runtime captures one graph per input shape.
// CHECK: @kiln_model_signature("kiln-signature 1\0Aarena 0\0Ainput x f32 1 ?N\0Aoutput y f32 1 ?N\0Adevice cuda sm_90\0Akernels 1\0Aweights 0\0Agraph-capturable\0A\00")
module attributes {gpu.container_module, kiln.device = "cuda sm_90", kiln.num_weights = 0 : i64} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "IMAGE">]
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 ?N\0Aoutput y f32 1 ?N\0A"} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %f = arith.constant 1.0 : f32
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%f : f32)
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}

// -----

// A host read of device data (a count a kernel computed) is not: the run's
// launches depend on values only the device knows.
// CHECK: @kiln_model_signature("kiln-signature 1\0Aarena 0\0Ainput x f32 1 ?N\0Adevice cuda sm_90\0Akernels 1\0Aweights 0\0A\00")
module attributes {gpu.container_module, kiln.device = "cuda sm_90", kiln.num_weights = 0 : i64} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "IMAGE">]
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 ?N\0A"} {
    %c0i = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %count = memref.alloc() : memref<1xi64>
    %f = arith.constant 1.0 : f32
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%f : f32)
    %n = kiln.read %ctx, %count[%c0i] : memref<1xi64>
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}
