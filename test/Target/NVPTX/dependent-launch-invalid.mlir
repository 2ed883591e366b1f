// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-nvptx-dependent-launch | FileCheck %s

// kiln-nvptx-dependent-launch without kernels, and with a kernel it cannot
// change.

// No kernel: no mark (the signature says nothing).
// CHECK: module attributes {gpu.container_module} {
// CHECK-NOT: kiln.dependent_launch
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @helper(%x: f32) -> f32 {
      llvm.return %x : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kernel without a body: its launches cannot wait for the previous kernel}}
    llvm.func @external(%p: !llvm.ptr<1>) attributes {nvvm.kernel}
  }
}
