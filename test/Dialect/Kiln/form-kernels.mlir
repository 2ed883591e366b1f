// RUN: kiln-opt %s -split-input-file --kiln-form-kernels | FileCheck %s

// One kernel per compute op. The fill of a matmul's init and the empty
// tensors come into the kernel; the weight and the dynamic size are inputs;
// the result sizes are computed on the host (dims).
// CHECK-LABEL: func @matmul_relu
// CHECK-SAME: %[[X:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<4x4xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]]
// CHECK: %[[K0:.*]] = kiln.kernel "kernel_0" ins(%[[X]], %[[W]], %[[N]] : tensor<?x4xf32>, tensor<4x4xf32>, index) dims(%{{.*}}) -> (tensor<?x4xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<4x4xf32>, %[[M:.*]]: index):
// CHECK: tensor.empty(%[[M]])
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: kiln.yield
// CHECK: kiln.kernel "kernel_1" ins(%[[K0]], %[[N]] : tensor<?x4xf32>, index)
// CHECK: linalg.generic
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_relu(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  %e2 = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<?x4xf32>) outs(%e2 : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %cst : f32
    linalg.yield %m : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// An init fill with two users is cloned into each kernel (writing it costs
// what reading it would), not made a kernel of its own.
// CHECK-LABEL: func @shared_fill
// CHECK: kiln.kernel "kernel_0"
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: kiln.kernel "kernel_1"
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln.kernel
func.func @shared_fill(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Outputs that are not a kernel's own result (an input, a reshape view, a
// value returned twice) get a copy kernel, so the host program can write each
// output straight into the caller's buffer.
// CHECK-LABEL: func @outputs_need_copies
// CHECK: %[[R:.*]] = tensor.reshape
// CHECK: %[[C0:.*]] = kiln.kernel "kernel_0" ins(%{{.*}} : tensor<2x3xf32>)
// CHECK: linalg.copy
// CHECK: %[[C1:.*]] = kiln.kernel "kernel_1" ins(%[[R]] : tensor<6xf32>)
// CHECK: linalg.copy
// CHECK: %[[C2:.*]] = kiln.kernel "kernel_2" ins(%[[R]] : tensor<6xf32>)
// CHECK: return %[[C0]], %[[C1]], %[[C2]]
func.func @outputs_need_copies(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>) {
  %s = arith.constant dense<[6]> : tensor<1xindex>
  %r = tensor.reshape %x(%s) : (tensor<2x3xf32>, tensor<1xindex>) -> tensor<6xf32>
  return %x, %r, %r : tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>
}
