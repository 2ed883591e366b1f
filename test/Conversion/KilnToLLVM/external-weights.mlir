// RUN: kiln-opt %s --split-input-file --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s

// kiln.external_weight becomes kiln_rt_external_weight(ctx, index) (a
// pointer into the mapped weights file, or the instance's device copy on a
// device target), wrapped in a static memref descriptor; a null pointer ends
// the run like a failed allocation. The signature keeps the weight records.

// CHECK: llvm.func @kiln_rt_external_weight(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @kiln_model_main(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK: %[[P:.*]] = llvm.call @kiln_rt_external_weight(%[[CTX]], %[[I:.*]]) : (!llvm.ptr, i64) -> !llvm.ptr
// CHECK: llvm.insertvalue %[[P]]
// CHECK: llvm.icmp "eq"
// CHECK: llvm.cond_br
// CHECK: llvm.mlir.global external constant @kiln_model_signature("kiln-signature 1\0Aarena 0\0Ainput x f32 1 4\0Aweights-file m.weights 0123456789abcdef 128\0Aweight a f32 1 4 64 16\0Aweight w f32 1 4 80 16\0A\00")
module {
  func.func private @k(%a: memref<4xf32>, %b: memref<4xf32>) attributes {kiln.kernel, llvm.emit_c_interface} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 4\0Aweights-file m.weights 0123456789abcdef 128\0Aweight a f32 1 4 64 16\0Aweight w f32 1 4 80 16\0A"} {
    %w = kiln.external_weight %ctx [1] : memref<4xf32>
    %x = kiln.input %ctx [0] : memref<4xf32>
    kiln.launch %ctx @k(%w, %x) : memref<4xf32>, memref<4xf32>
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}

// -----

// On a device target the weights are fixed per instance: the run stays
// graph-capturable.
// CHECK-LABEL: llvm.func @kiln_model_main
// CHECK: llvm.call @kiln_rt_external_weight
// CHECK: @kiln_model_signature("kiln-signature 1\0Aarena 0\0Aweight w f32 1 4 64 16\0Adevice cuda sm_90\0Akernels 0\0Aweights 0\0Agraph-capturable\0A\00")
module attributes {kiln.device = "cuda sm_90", kiln.num_weights = 0 : i64} {
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "weight w f32 1 4 64 16\0A"} {
    %w = kiln.external_weight %ctx [0] : memref<4xf32>
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}
