// RUN: kiln-opt %s --kiln-outline-kernels | FileCheck %s

// The model function becomes the host program: inputs from kiln.input, an
// intermediate kiln.buffer, the returned value in kiln.output, one kernel
// function per kiln.kernel in destination-passing style, the weight a global.

// CHECK: memref.global "private" constant @__kiln_constant_0 : memref<4x4xf32> = dense<1.000000e+00> {alignment = 64 : i64}
// CHECK-LABEL: func.func private @main_graph_kernel_0
// CHECK-SAME: (%[[A:.*]]: memref<?x4xf32>, %[[B:.*]]: memref<4x4xf32>, %[[N:.*]]: index, %[[OUT:.*]]: memref<?x4xf32>)
// CHECK-SAME: attributes {kiln.kernel, kiln.num_outputs = 1 : i64, llvm.emit_c_interface}
// CHECK: bufferization.to_tensor %[[A]] restrict
// CHECK: linalg.matmul
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[OUT]]
// CHECK-LABEL: func.func private @main_graph_kernel_1
// CHECK: func.func @kiln_model_main(%[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK-SAME: kiln.signature_io = "input x f32 2 ?N 4\0Aoutput y f32 2 ?N 4\0A"
// CHECK: %[[X:.*]] = kiln.input %[[CTX]][0] : memref<?x4xf32>
// CHECK: %[[W:.*]] = memref.get_global @__kiln_constant_0 : memref<4x4xf32>
// CHECK: %[[D:.*]] = memref.dim %[[X]]
// CHECK: %[[T:.*]] = kiln.buffer %[[CTX]](%[[D]]) : memref<?x4xf32>
// CHECK: kiln.launch %[[CTX]] @main_graph_kernel_0(%[[X]], %[[W]], %[[D]], %[[T]])
// CHECK: %[[Y:.*]] = kiln.output %[[CTX]][0] (%{{.*}}) : memref<?x4xf32>
// CHECK: kiln.launch %[[CTX]] @main_graph_kernel_1(%[[T]], %[[D]], %[[Y]])
// CHECK: return %{{.*}} : i32
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @main_graph(%arg0: tensor<?x4xf32> {kiln.dim_names = ["N", ""], kiln.name = "x"}) -> (tensor<?x4xf32> {kiln.dim_names = ["N", ""], kiln.name = "y"}) {
    %w = arith.constant dense<1.0> : tensor<4x4xf32>
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
    %0 = kiln.kernel "kernel_0" ins(%arg0, %w, %dim : tensor<?x4xf32>, tensor<4x4xf32>, index) dims(%dim) -> (tensor<?x4xf32>) {
    ^bb0(%a: tensor<?x4xf32>, %b: tensor<4x4xf32>, %n: index):
      %cst = arith.constant 0.000000e+00 : f32
      %2 = tensor.empty(%n) : tensor<?x4xf32>
      %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<?x4xf32>) -> tensor<?x4xf32>
      %4 = linalg.matmul ins(%a, %b : tensor<?x4xf32>, tensor<4x4xf32>) outs(%3 : tensor<?x4xf32>) -> tensor<?x4xf32>
      kiln.yield %4 : tensor<?x4xf32>
    }
    %dim_0 = tensor.dim %0, %c0 : tensor<?x4xf32>
    %1 = kiln.kernel "kernel_1" ins(%0, %dim : tensor<?x4xf32>, index) dims(%dim_0) -> (tensor<?x4xf32>) {
    ^bb0(%a: tensor<?x4xf32>, %n: index):
      %cst = arith.constant 0.000000e+00 : f32
      %2 = tensor.empty(%n) : tensor<?x4xf32>
      %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x4xf32>) outs(%2 : tensor<?x4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %4 = arith.maximumf %in, %cst : f32
        linalg.yield %4 : f32
      } -> tensor<?x4xf32>
      kiln.yield %3 : tensor<?x4xf32>
    }
    return %1 : tensor<?x4xf32>
  }
}
