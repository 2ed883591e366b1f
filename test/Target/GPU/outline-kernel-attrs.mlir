// kiln-outline-gpu-kernels: upstream outlining, and each gpu.func takes the
// entries of its launch's `kiln.kernel_attrs` (matched by position; a
// launch without them, and a launch_func already there, take none).
// RUN: kiln-opt %s --kiln-outline-gpu-kernels | FileCheck %s

// CHECK: gpu.launch_func @f_kernel::@f_kernel
// CHECK: gpu.launch_func @g_kernel::@g_kernel
// CHECK: gpu.launch_func @f_kernel_0::@f_kernel
// CHECK-LABEL: gpu.module @f_kernel
// CHECK: gpu.func @f_kernel() kernel attributes {{{.*}}nvvm.minctasm = 4 : i32{{.*}}}
// CHECK-LABEL: gpu.module @f_kernel_0
// CHECK: gpu.func @f_kernel() kernel attributes {known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
module attributes {gpu.container_module} {
  gpu.module @g_kernel {
    gpu.func @g_kernel() kernel {
      gpu.return
    }
  }
  func.func @f() {
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%x = %c1, %y = %c1, %z = %c1) {
      gpu.terminator
    } {kiln.kernel_attrs = {nvvm.minctasm = 4 : i32}}
    gpu.launch_func @g_kernel::@g_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%x = %c1, %y = %c1, %z = %c1) {
      gpu.terminator
    }
    return
  }
}
