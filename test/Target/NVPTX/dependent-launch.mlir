// RUN: kiln-opt %s --kiln-nvptx-dependent-launch | FileCheck %s
// RUN: kiln-opt %s --kiln-nvptx-dependent-launch --kiln-nvptx-dependent-launch | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-nvptx-dependent-launch, gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// Every kernel waits for the previous kernel first, then lets the next one
// be launched; device functions that are not kernels are left alone, and a
// second run adds nothing. The module is marked for the signature.
// CHECK: module attributes {gpu.container_module, kiln.dependent_launch}
// CHECK-LABEL: llvm.func @first(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: llvm.mlir.constant
// CHECK-NOT: nvvm.griddepcontrol
// CHECK-LABEL: llvm.func @helper(
// CHECK-NOT: nvvm.griddepcontrol
// CHECK-LABEL: llvm.func @second(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: nvvm.griddepcontrol
// PTX-LABEL: .entry first(
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX-NEXT: st.global.b32
// PTX-LABEL: .entry second(
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @first(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %c = llvm.mlir.constant(1.0 : f32) : f32
      llvm.store %c, %p : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func @helper(%x: f32) -> f32 {
      llvm.return %x : f32
    }
    llvm.func @second(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.call @helper(%v) : (f32) -> f32
      llvm.store %w, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
