// RUN: kiln-opt %s --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s
// RUN: kiln-opt %s --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=NEUTRAL

// A device target: gpu.launch_func becomes kiln_rt_launch_device(ctx,
// kernel index, name, grid, block, shared bytes, params), and the device
// image is embedded as kiln_model_device_image with its size and its kind
// (the signature's device kind, which picks the runtime's driver).

// CHECK: llvm.func @kiln_rt_launch_device(!llvm.ptr, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr)
// CHECK-LABEL: llvm.func @kiln_model_main(
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @__kiln_kernel_name_0
// CHECK: llvm.call @kiln_rt_launch_device(%{{.*}}, %{{.*}}, %[[NAME]],
// CHECK-DAG: llvm.mlir.global internal constant @__kiln_kernel_name_0("k\00")
// CHECK-DAG: llvm.mlir.global external constant @kiln_model_device_image("IMAGE") {addr_space = 0 : i32, alignment = 64 : i64}
// CHECK-DAG: llvm.mlir.global external constant @kiln_model_device_image_size(5 : i64)
// CHECK-DAG: llvm.mlir.global external constant @kiln_model_device_image_kind("cuda\00")
// CHECK-DAG: @kiln_model_signature("kiln-signature 1\0Aarena 0\0Adevice cuda sm_90\0Akernels 1\0Aweights 0\0Agraph-capturable\0A\00")

// The ABI names are device-neutral (ABI version 4).
// NEUTRAL-NOT: cuda_image
// NEUTRAL-NOT: launch_cuda
module attributes {gpu.container_module, kiln.device = "cuda sm_90", kiln.num_weights = 0 : i64} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, "IMAGE">]
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %f = arith.constant 1.0 : f32
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%f : f32)
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}
